package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// `freshet image report` links an image to its commit and issues (titles from a tracker: a fake
// Jira, which cannot run here), `freshet images list` shows it once however often it was
// reported, bad input names the field, and a deployment of the commit shows them.
func TestImageCommands(t *testing.T) {
	jira := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rest/api/2/issue/SHOP-12" || r.Header.Get("Authorization") != "Bearer jira-pat" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"key": "SHOP-12", "fields": map[string]any{"summary": "Checkout is slow", "status": map[string]any{"name": "In Review"}}})
	}))
	defer jira.Close()
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.Net.PrivateNetworks = []string{"loopback"} }})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runIn(t, s.URL, key.Token, "", args...) }
	if code, _, errOut := run("image", "trackers", "create", "jira", "--kind", "jira", "--url", jira.URL, "--token", "jira-pat", "--scope", "SHOP"); code != 0 {
		t.Fatalf("trackers create: %d %s", code, errOut)
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	digest := "sha256:" + strings.Repeat("d", 64)
	var im client.ReportedImage
	for range 2 {
		code, out, errOut := run("image", "report", "--image", "ghcr.io/acme/web:1.0", "--digest", digest, "--commit", sha, "--issue", "SHOP-12",
			"--repo-url", "https://github.com/acme/web.git", "--message", "Faster checkout (#4)", "-o", "json")
		if code != 0 {
			t.Fatalf("image report: %d %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &im); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	if im.Repository != "ghcr.io/acme/web" || im.Commit == nil || im.Commit.SHA != sha || len(im.Issues) != 2 || im.Issues[0].Title != "Checkout is slow" ||
		im.Issues[1].Key != "acme/web#4" || im.Issues[1].Error == "" {
		t.Fatalf("reported: %+v", im)
	}
	code, out, errOut := run("images", "list", "-o", "json")
	var list []client.ReportedImage
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].ID != im.ID {
		t.Fatalf("images list: %d %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--image", "ghcr.io/acme/web", "--digest", "md5:0123", "--commit", sha}, "digest"},
		{[]string{"--image", "ghcr.io/acme/web", "--digest", digest, "--commit", sha, "--issue", "shop 12"}, "issues[0]"},
		{[]string{"--image", "ghcr.io/acme/web", "--digest", digest, "--commit", "xyz"}, "commit"},
	} {
		code, _, errOut := run(append([]string{"image", "report"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.field) {
			t.Errorf("%v: exit %d, %q: want a refusal naming %s", c.args, code, errOut, c.field)
		}
	}

	// A deployment of the commit shows the image with its commit and issues.
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := s.Runtimes().Authenticate(ctx, reg.Token)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	if _, err := s.Runtimes().Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true,
		Applications: []runtimev1.Application{{Name: "web", Project: "shop", RepoURL: "https://git.example/acme/deploy.git", DestName: "prod",
			DestServer: "https://kubernetes.default.svc", DestNamespace: "shop", Sync: "Synced", Health: "Healthy"}},
		Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: 1, Revision: sha, Phase: "Succeeded",
			InitiatedBy: "automated", StartedAt: at.Add(-time.Minute), FinishedAt: at, Commit: &runtimev1.Commit{SHA: sha}}}}}); err != nil {
		t.Fatal(err)
	}
	var ds []client.Deployment
	for deadline := time.Now().Add(20 * time.Second); len(ds) != 1; time.Sleep(20 * time.Millisecond) {
		code, out, errOut := run("deployments", "list", "-o", "json")
		if code != 0 || json.Unmarshal([]byte(out), &ds) != nil {
			t.Fatalf("deployments list: %d %s %s", code, out, errOut)
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployments: %s", out)
		}
	}
	if imgs := ds[0].Images; len(imgs) != 1 || imgs[0].Digest != digest || len(imgs[0].Commits) != 1 || imgs[0].Commits[0].SHA != sha ||
		len(imgs[0].Issues) != 2 || imgs[0].Issues[0].Key != "SHOP-12" || imgs[0].Issues[0].Title != "Checkout is slow" {
		t.Fatalf("deployment's images: %+v", ds[0].Images)
	}
	// GraphQL answers the same.
	var g struct {
		Deployments struct {
			Nodes []struct {
				Images []struct {
					Commits []struct{ SHA, RepoURL string }
					Issues  []struct{ Key, Title, State, Kind string }
				}
			}
		}
	}
	if err := s.Admin.GraphQL(ctx, `{ deployments(first: 10) { nodes { images { commits { sha repoUrl } issues { key title state kind } } } } }`, nil, &g); err != nil {
		t.Fatal(err)
	}
	if n := g.Deployments.Nodes; len(n) != 1 || len(n[0].Images) != 1 || n[0].Images[0].Commits[0].SHA != sha ||
		n[0].Images[0].Commits[0].RepoURL != "https://github.com/acme/web.git" || n[0].Images[0].Issues[0].State != "In Review" ||
		n[0].Images[0].Issues[0].Kind != "issue" {
		t.Fatalf("GraphQL deployments: %+v", g)
	}
}
