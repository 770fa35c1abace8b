package analytics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

type gitCommits struct{ cache *git.Cache }

func (g gitCommits) ReadCommit(ctx context.Context, repoURL, sha string) (string, string, time.Time, error) {
	repo := git.Repo{URL: repoURL}
	res, err := g.cache.Fetch(ctx, repo, sha)
	if err != nil {
		return "", "", time.Time{}, err
	}
	ci, err := g.cache.CommitInfo(ctx, repo, res.SHA)
	return ci.Message, ci.Author, ci.CommitTime, err
}

// A deployment whose images were reported shows the commits and issues it shipped: an image
// reported (through the API) for the deployed commit of a real git repository whose message
// carries issue keys, and an image a build pushed whose digest is reported later. Issue titles
// come from a fake Jira and GitHub (neither can run here).
func TestDeploymentImagesShowCommitsAndIssues(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, 1)
		acc := e.admin.AccountID

		dir := t.TempDir()
		gitCmd := func(args ...string) string {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@acme.test", "GIT_COMMITTER_NAME=Ann",
				"GIT_COMMITTER_EMAIL=ann@acme.test", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		gitCmd("init", "-q", "-b", "main")
		gitCmd("commit", "-q", "--allow-empty", "-m", "SHOP-12: faster checkout (acme/web#3)")
		sha := gitCmd("rev-parse", "HEAD")

		tracker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/rest/api/2/issue/SHOP-12":
				json.NewEncoder(w).Encode(map[string]any{"key": "SHOP-12", "fields": map[string]any{"summary": "Checkout is slow", "status": map[string]any{"name": "Done"}}})
			case "/repos/acme/web/issues/3":
				json.NewEncoder(w).Encode(map[string]any{"title": "Cache the cart", "state": "closed", "html_url": "https://github.com/acme/web/pull/3", "pull_request": map[string]any{}})
			default:
				http.NotFound(w, r)
			}
		}))
		defer tracker.Close()
		policy, err := netpolicy.Options{FileRepoDirs: []string{filepath.Dir(dir)}, PrivateNetworks: []string{"loopback"}}.Policy()
		if err != nil {
			t.Fatal(err)
		}
		cache, err := git.NewCache(t.TempDir(), git.Options{Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		imgs := images.New(images.Deps{Store: db, Keys: secrets.Generate(), Net: policy, Commits: gitCommits{cache}})
		for _, spec := range []images.TrackerSpec{{Name: "jira", Kind: images.TrackerJira, URL: tracker.URL}, {Name: "github", Kind: images.TrackerGitHub, URL: tracker.URL}} {
			if _, err := imgs.CreateTracker(ctx, e.admin, spec); err != nil {
				t.Fatal(err)
			}
		}
		e.svc = analytics.New(analytics.Deps{Store: db, Origins: imgs})

		// Reported before the deployment: found by the deployed commit.
		reported := "sha256:" + strings.Repeat("c", 64)
		if _, err := imgs.ReportImage(ctx, e.admin, images.Report{Image: "ghcr.io/acme/web:2.0", Digest: reported, Commit: sha, RepoURL: "file://" + dir}); err != nil {
			t.Fatal(err)
		}
		// Pushed by a build of another revision; its digest is reported after the deployment.
		rev1 := "1111111111111111111111111111111111111111"
		seedBuildImage(t, db, acc, rev1)

		web := app("web", "prod", "shop", "Healthy")
		if _, err := e.rts.Report(ctx, e.rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web}}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		e.report(t,
			synced("web", 1, "Succeeded", "automated", rev1, t0, t0.Add(time.Minute), &runtimev1.Commit{SHA: rev1}),
			synced("web", 2, "Succeeded", "automated", sha, t0.Add(10*time.Minute), t0.Add(11*time.Minute), &runtimev1.Commit{SHA: sha}))
		ds := e.waitFor(t, analytics.Filter{}, func(ds []analytics.Deployment) bool { return len(ds) == 2 })
		d2, d1 := ds[0], ds[1]
		if len(d2.Images) != 1 || d2.Images[0].Digest != reported || d2.Images[0].Repository != "ghcr.io/acme/web" {
			t.Fatalf("deployment 2's images: %+v", d2.Images)
		}
		im := d2.Images[0]
		if len(im.Commits) != 1 || im.Commits[0].SHA != sha || im.Commits[0].Message != "SHOP-12: faster checkout (acme/web#3)\n" || im.Commits[0].Author != "Ann" {
			t.Fatalf("deployment 2's commits: %+v", im.Commits)
		}
		if len(im.Issues) != 2 || im.Issues[0].Key != "SHOP-12" || im.Issues[0].Title != "Checkout is slow" || im.Issues[0].State != "Done" ||
			im.Issues[1].Key != "acme/web#3" || im.Issues[1].Title != "Cache the cart" || im.Issues[1].Kind != images.IssueKindPullRequest {
			t.Fatalf("deployment 2's issues: %+v", im.Issues)
		}
		if len(d1.Images) != 1 || len(d1.Images[0].Commits) != 0 || len(d1.Images[0].Issues) != 0 {
			t.Fatalf("deployment 1 before its image was reported: %+v", d1.Images)
		}

		// The build's image reported now, twice (a retried call): deployment 1 shows it, once.
		buildDigest := "sha256:" + fmt.Sprintf("%064d", 1)
		for range 2 {
			if _, err := imgs.ReportImage(ctx, e.admin, images.Report{Image: "acme/web@" + buildDigest, Commit: rev1, Branch: "feature/SHOP-7-cart",
				Message: "Cart refactor"}); err != nil {
				t.Fatal(err)
			}
		}
		ds = e.waitFor(t, analytics.Filter{}, func(ds []analytics.Deployment) bool { return len(ds) == 2 })
		im1 := ds[1].Images[0]
		if len(im1.Commits) != 1 || im1.Commits[0].SHA != rev1 || im1.Commits[0].Branch != "feature/SHOP-7-cart" ||
			len(im1.Issues) != 1 || im1.Issues[0].Key != "SHOP-7" || im1.Issues[0].Error != "tracker jira does not know it" {
			t.Fatalf("deployment 1 after its image was reported: %+v", im1)
		}
	})
}
