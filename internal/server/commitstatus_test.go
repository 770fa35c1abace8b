package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// githubDouble is GitHub's commit statuses API (POST /repos/{owner}/{repo}/statuses/{sha}):
// no real GitHub can run here. It records what it got and refuses tokens other than token.
type githubDouble struct {
	mu    sync.Mutex
	token string
	got   []map[string]string // each accepted request's JSON body, with "path"
	srv   *httptest.Server
}

func newGitHubDouble(t *testing.T, token string) *githubDouble {
	d := &githubDouble{token: token}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+d.token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var body map[string]string
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		body["path"] = r.URL.Path
		d.mu.Lock()
		d.got = append(d.got, body)
		d.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *githubDouble) requests() []map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]string(nil), d.got...)
}

// A build of a commit whose pipeline lists a git context reports pending when a runner takes
// it and success when it ends, through the outbox, the bus and the provider's API; a provider
// that refuses the token does not hold the build up, and the build's log says so.
func TestCommitStatusesReachTheProvider(t *testing.T) {
	for _, driver := range storetest_backends() {
		ctx := context.Background()
		s := servertest.StartWith(t, driver, servertest.Config{Edit: func(o *server.Options) {
			o.Net.PrivateNetworks, o.Net.ProviderHosts = []string{"loopback"}, []string{"*"}
		}})
		startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
		gh := newGitHubDouble(t, "ghp-status-token")
		const sha = "3f786850e387550fdab836ed7e6dc881de23001b"
		s.Admin.CreateProject(ctx, "p")
		for _, c := range []struct{ name, token string }{{"gh", "ghp-status-token"}, {"gh-bad", "revoked-token"}} {
			if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: c.name, Type: "git",
				Git: &client.GitContext{Provider: "github", URL: gh.srv.URL, Token: c.token}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: c.name, Spec: "version: '1.0'\nsteps:\n  a:\n    commands: ['echo hi']\n",
				Config: client.PipelineConfig{Contexts: []string{c.name}}}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := s.Admin.RunPipeline(ctx, "p/gh", client.RunRequest{Branch: "main", SHA: sha, Repo: "acme/svc"})
		if err != nil {
			t.Fatal(err)
		}
		waitBuild(t, s.Admin, b.ID, 60*time.Second, "success")
		var got []map[string]string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got = gh.requests(); len(got) >= 2 {
				break
			}
		}
		if len(got) != 2 {
			t.Fatalf("the double got %d statuses, want pending then success: %v", len(got), got)
		}
		for i, want := range []string{"pending", "success"} {
			r := got[i]
			if r["state"] != want || r["path"] != "/repos/acme/svc/statuses/"+sha || r["context"] != "freshet/p/gh" ||
				!strings.HasSuffix(r["target_url"], "/builds/"+b.ID) || !strings.HasPrefix(r["target_url"], "http") || r["description"] == "" {
				t.Errorf("status %d = %v, want %s for the build", i, r, want)
			}
		}

		// A refused token: the build still succeeds, and its log carries the warning.
		b, err = s.Admin.RunPipeline(ctx, "p/gh-bad", client.RunRequest{Branch: "main", SHA: sha, Repo: "acme/svc"})
		if err != nil {
			t.Fatal(err)
		}
		waitBuild(t, s.Admin, b.ID, 60*time.Second, "success")
		var log []byte
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if log, _ = s.Admin.BuildLog(ctx, b.ID, 0); strings.Contains(string(log), "commit status to github") {
				break
			}
		}
		if !strings.Contains(string(log), "warning: the success commit status to github (git context gh-bad) failed, not retried: github refused the token") ||
			strings.Contains(string(log), "revoked-token") {
			t.Fatalf("log of a build whose statuses were refused:\n%s", log)
		}
		if n := len(gh.requests()); n != 2 {
			t.Errorf("the double accepted %d statuses, want still 2", n)
		}
	}
}
