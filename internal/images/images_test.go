package images_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// gitCommits reads commits through a real git cache, as the server does.
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

// gitRepo makes a real git repository whose commits carry issue keys, and returns its
// directory and the SHAs of its commits, oldest first.
func gitRepo(t *testing.T, messages ...string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@acme.test", "GIT_COMMITTER_NAME=Dev",
			"GIT_COMMITTER_EMAIL=dev@acme.test", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	var shas []string
	for _, m := range messages {
		run("commit", "-q", "--allow-empty", "-m", m)
		shas = append(shas, run("rev-parse", "HEAD"))
	}
	return dir, shas
}

// tracker is a fake Jira and GitHub API (neither can run here): it answers the issues it
// holds and counts the requests, checking the credentials each kind sends.
type tracker struct {
	srv   *httptest.Server
	calls atomic.Int64
}

func newTracker(t *testing.T) *tracker {
	tr := &tracker{}
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.calls.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/jira/rest/api/2/issue/"):
			if u, p, ok := r.BasicAuth(); !ok || u != "bot@acme.test" || p != "jira-token" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			key := strings.TrimPrefix(r.URL.Path, "/jira/rest/api/2/issue/")
			if key != "PROJ-12" {
				http.Error(w, `{"errorMessages":["Issue does not exist"]}`, http.StatusNotFound)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"key": key, "fields": map[string]any{"summary": "Login fails for SSO users", "status": map[string]any{"name": "Done"}}})
		case strings.HasPrefix(r.URL.Path, "/github/repos/acme/web/issues/"):
			if r.Header.Get("Authorization") != "Bearer gh-token" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			switch strings.TrimPrefix(r.URL.Path, "/github/repos/acme/web/issues/") {
			case "3":
				json.NewEncoder(w).Encode(map[string]any{"title": "Add SSO login", "state": "closed", "html_url": "https://github.com/acme/web/pull/3", "pull_request": map[string]any{}})
			case "9":
				json.NewEncoder(w).Encode(map[string]any{"title": "Cache misses", "state": "open", "html_url": "https://github.com/acme/web/issues/9"})
			default:
				http.NotFound(w, r)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(tr.srv.Close)
	return tr
}

type env struct {
	db    *store.DB
	svc   *images.Service
	admin rbac.Principal
	repo  string
	shas  []string
	tr    *tracker
	keys  *secrets.Keyring
}

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	ctx := context.Background()
	id := identity.New(identity.Deps{Store: db, Audit: audit.NewLog(db, nil)})
	if _, err := id.Bootstrap(ctx, "acme", "admin@acme.test", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	login, err := id.Login(ctx, "admin@acme.test", "correct-horse-battery", "")
	if err != nil {
		t.Fatal(err)
	}
	repo, shas := gitRepo(t, "PROJ-12: SSO login (acme/web#3)", "Fix cache misses, closes #9\n\nUTF-8 names")
	policy, err := netpolicy.Options{FileRepoDirs: []string{filepath.Dir(repo)}, PrivateNetworks: []string{"loopback"}}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := git.NewCache(t.TempDir(), git.Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, admin: login.Principal, repo: repo, shas: shas, tr: newTracker(t), keys: secrets.Generate()}
	e.svc = images.New(images.Deps{Store: db, Keys: e.keys, Net: policy, Commits: gitCommits{cache}})
	for _, spec := range []images.TrackerSpec{
		{Name: "jira", Kind: images.TrackerJira, URL: e.tr.srv.URL + "/jira", Username: "bot@acme.test", Token: "jira-token", Scope: []string{"PROJ"}},
		{Name: "github", Kind: images.TrackerGitHub, URL: e.tr.srv.URL + "/github", Token: "gh-token", Scope: []string{"acme"}},
	} {
		if _, err := e.svc.CreateTracker(ctx, e.admin, spec); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func digest(n int) string { return "sha256:" + strings.Repeat("0", 63) + string(rune('0'+n)) }

func issueTitles(is []images.Issue) map[string]string {
	out := map[string]string{}
	for _, i := range is {
		out[i.Key] = i.Title
		if i.Title == "" {
			out[i.Key] = "error: " + i.Error
		}
	}
	return out
}

// An image reported with its commit and the repository: the message is read from the real git
// repository, its keys linked to the issues and pull requests, their titles fetched from the
// trackers (once, then from the store).
func TestReportImageLinksCommitAndIssues(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		im, err := e.svc.ReportImage(ctx, e.admin, images.Report{Image: "ghcr.io/acme/web:1.0", Digest: digest(1), Commit: e.shas[0],
			Branch: "feature/PROJ-12-sso", RepoURL: "file://" + e.repo, Issues: []string{"OPS-4"}})
		if err != nil {
			t.Fatal(err)
		}
		if im.Repository != "ghcr.io/acme/web" || im.Registry != "ghcr.io" || strings.Join(im.Tags, ",") != "1.0" || im.Commit.SHA != e.shas[0] ||
			im.Commit.Message != "PROJ-12: SSO login (acme/web#3)\n" || im.Commit.Author != "Dev" || im.Commit.Time.IsZero() {
			t.Fatalf("reported image: %+v", im)
		}
		want := map[string]string{"OPS-4": "error: no issue tracker is configured for it", "PROJ-12": "Login fails for SSO users", "acme/web#3": "Add SSO login"}
		if got := issueTitles(im.Issues); len(got) != len(want) || got["OPS-4"] != want["OPS-4"] || got["PROJ-12"] != want["PROJ-12"] || got["acme/web#3"] != want["acme/web#3"] {
			t.Fatalf("issues: %v, want %v", got, want)
		}
		if im.Issues[0].Key != "OPS-4" || im.Issues[2].Kind != images.IssueKindPullRequest || im.Issues[2].URL != "https://github.com/acme/web/pull/3" {
			t.Fatalf("issues: %+v", im.Issues)
		}
		calls := e.tr.calls.Load()
		if calls != 2 {
			t.Fatalf("%d tracker calls, want 2", calls)
		}

		// The same image again, by digest in the reference, with another tag and issue: one
		// image, its tags and issues merged; the issues known are not fetched again.
		im2, err := e.svc.ReportImage(ctx, e.admin, images.Report{Image: "ghcr.io/acme/web:latest@" + digest(1), Issues: []string{"PROJ-12", "acme/web#9"}})
		if err != nil {
			t.Fatal(err)
		}
		if im2.ID != im.ID || strings.Join(im2.Tags, ",") != "1.0,latest" || im2.Commit.SHA != e.shas[0] || len(im2.Issues) != 4 || im2.Issues[3].Title != "Cache misses" {
			t.Fatalf("second report: %+v", im2)
		}
		if n := e.tr.calls.Load(); n != calls+1 {
			t.Fatalf("%d tracker calls after the second report, want %d", n, calls+1)
		}
		list, err := e.svc.ListImages(ctx, e.admin, images.ImageFilter{}, paging.Page{})
		if err != nil || len(list) != 1 {
			t.Fatalf("images: %+v, %v", list, err)
		}

		// A #123 key is resolved to the commit's repository (an https URL here); the message
		// is given, not read.
		im3, err := e.svc.ReportImage(ctx, e.admin, images.Report{Image: "ghcr.io/acme/worker", Digest: digest(2), Commit: e.shas[1],
			RepoURL: "https://github.com/acme/web.git", Message: "Fix cache misses, closes #9", Branch: "77-cache"})
		if err != nil {
			t.Fatal(err)
		}
		if got := issueTitles(im3.Issues); len(got) != 2 || got["acme/web#9"] != "Cache misses" || got["acme/web#77"] != "error: tracker github does not know it" {
			t.Fatalf("resolved issues: %v", got)
		}
		byCommit, err := e.svc.ListImages(ctx, e.admin, images.ImageFilter{Commit: strings.ToUpper(e.shas[1])}, paging.Page{})
		if err != nil || len(byCommit) != 1 || byCommit[0].ID != im3.ID {
			t.Fatalf("images of commit %s: %+v, %v", e.shas[1], byCommit, err)
		}
		recs, err := db.ListAudit(ctx, e.admin.AccountID, store.AuditFilter{Action: "image.report"}, paging.Page{})
		if err != nil || len(recs) != 3 || recs[0].Result != "success" || recs[0].ResourceID == "" {
			t.Fatalf("audit records of the reports: %+v, %v", recs, err)
		}
		origins, err := e.svc.Origins(ctx, e.admin.AccountID, []string{digest(1), digest(2), digest(3)})
		if err != nil || len(origins) != 2 || origins[digest(2)][0].Commit.SHA != e.shas[1] {
			t.Fatalf("origins: %+v, %v", origins, err)
		}
	})
}

// Bad input is refused with the field named, and nothing is stored.
func TestReportImageBadInput(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		for _, c := range []struct {
			r     images.Report
			field string
		}{
			{images.Report{Image: "ghcr.io/acme/web", Digest: "md5:abc"}, "digest"},
			{images.Report{Image: "ghcr.io/acme/web", Digest: "sha256:" + strings.Repeat("A", 64)}, "digest"},
			{images.Report{Image: "ghcr.io/acme/web"}, "digest"},
			{images.Report{Image: "ghcr.io/acme/web@" + digest(1), Digest: digest(2)}, "digest"},
			{images.Report{Image: "ghcr.io/Acme/web", Digest: digest(1)}, "image"},
			{images.Report{Image: "", Digest: digest(1)}, "image"},
			{images.Report{Image: "web", Digest: digest(1), Issues: []string{"PROJ-1", "proj-2"}}, "issues[1]"},
			{images.Report{Image: "web", Digest: digest(1), Issues: []string{"#0"}}, "issues[0]"},
			{images.Report{Image: "web", Digest: digest(1), Commit: "not-a-sha"}, "commit"},
			{images.Report{Image: "web", Digest: digest(1), Branch: "a\nb"}, "branch"},
			{images.Report{Image: "web", Digest: digest(1), Tags: []string{"-x"}}, "tags[0]"},
		} {
			_, err := e.svc.ReportImage(ctx, e.admin, c.r)
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%+v: %v, want invalid %s", c.r, err, c.field)
			}
		}
		if list, err := e.svc.ListImages(ctx, e.admin, images.ImageFilter{}, paging.Page{}); err != nil || len(list) != 0 {
			t.Fatalf("images after bad reports: %+v, %v", list, err)
		}
		if recs, err := db.ListAudit(ctx, e.admin.AccountID, store.AuditFilter{Action: "image.report", Result: "failure"}, paging.Page{}); err != nil || len(recs) != 11 {
			t.Fatalf("audit records of the bad reports: %d, %v", len(recs), err)
		}
		if _, err := e.svc.ListImages(ctx, e.admin, images.ImageFilter{Digest: "sha1:x"}, paging.Page{}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Fatalf("listing by a bad digest: %v", err)
		}
		viewer := e.admin
		viewer.Role = rbac.Viewer
		if _, err := e.svc.ReportImage(ctx, viewer, images.Report{Image: "web", Digest: digest(1)}); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("a viewer's report: %v", err)
		}
	})
}

// Trackers' URLs go through the operator's policy: loopback is refused unless allowed; a tracker
// that does not answer leaves the issue without a title and does not fail the report.
func TestTrackerPolicy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		strict, err := netpolicy.Options{}.Policy()
		if err != nil {
			t.Fatal(err)
		}
		svc := images.New(images.Deps{Store: db, Keys: secrets.Generate(), Net: strict})
		for _, c := range []struct {
			spec  images.TrackerSpec
			field string
		}{
			{images.TrackerSpec{Name: "j2", Kind: images.TrackerJira, URL: e.tr.srv.URL}, "url"},
			{images.TrackerSpec{Name: "j2", Kind: images.TrackerJira, URL: "https://localhost/jira"}, "url"},
			{images.TrackerSpec{Name: "j2", Kind: images.TrackerJira, URL: "https://169.254.169.254/"}, "url"},
			{images.TrackerSpec{Name: "j2", Kind: images.TrackerJira, URL: "ftp://jira.example"}, "url"},
			{images.TrackerSpec{Name: "j2", Kind: images.TrackerJira}, "url"},
			{images.TrackerSpec{Name: "j2", Kind: "trello", URL: "https://trello.example"}, "kind"},
			{images.TrackerSpec{Name: "J 2", Kind: images.TrackerGitHub}, "name"},
			{images.TrackerSpec{Name: "j2", Kind: images.TrackerJira, URL: "https://jira.example", Scope: []string{"proj"}}, "scope[0]"},
		} {
			if _, err := svc.CreateTracker(ctx, e.admin, c.spec); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%+v: %v, want invalid %s", c.spec, err, c.field)
			}
		}
		if _, err := e.svc.CreateTracker(ctx, e.admin, images.TrackerSpec{Name: "jira", Kind: images.TrackerJira, URL: "https://jira.example"}); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("a second tracker named jira: %v", err)
		}
		// A tracker whose server is gone: the report is stored, the issue says why it has no title.
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		if err := e.svc.DeleteTracker(ctx, e.admin, "jira"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CreateTracker(ctx, e.admin, images.TrackerSpec{Name: "jira", Kind: images.TrackerJira, URL: gone.URL}); err != nil {
			t.Fatal(err)
		}
		im, err := e.svc.ReportImage(ctx, e.admin, images.Report{Image: "web", Digest: digest(5), Issues: []string{"PROJ-12"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Issues) != 1 || im.Issues[0].Title != "" || !strings.Contains(im.Issues[0].Error, "tracker jira unreachable") {
			t.Fatalf("issue of a tracker that is gone: %+v", im.Issues)
		}
		ts, err := e.svc.ListTrackers(ctx, e.admin)
		if err != nil || len(ts) != 2 || ts[1].Name != "jira" || !ts[0].HasToken || ts[1].HasToken {
			t.Fatalf("trackers: %+v, %v", ts, err)
		}

		// A tracker that never answers delays a report by the fetch budget (5 s), not by a
		// timeout per issue; the issues not asked yet say so.
		stop := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}))
		defer slow.Close()
		defer close(stop)
		if _, err := e.svc.CreateTracker(ctx, e.admin, images.TrackerSpec{Name: "a-slow", Kind: images.TrackerJira, URL: slow.URL, Scope: []string{"SLOW"}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		im, err = e.svc.ReportImage(ctx, e.admin, images.Report{Image: "web", Digest: digest(6), Issues: []string{"SLOW-1", "SLOW-2", "SLOW-3"}})
		if took := time.Since(start); err != nil || took > 8*time.Second {
			t.Fatalf("report with a tracker that hangs: %v after %v", err, took)
		}
		if len(im.Issues) != 3 || !strings.Contains(im.Issues[0].Error, "timed out") || im.Issues[1].Error != "not fetched yet" {
			t.Fatalf("issues of a tracker that hangs: %+v", im.Issues)
		}
	})
}

// Master-key rotation re-encrypts the trackers' tokens: after the old key is retired, titles are
// still fetched with each tracker's token.
func TestTrackerTokensSurviveKeyRotation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		old := e.keys.Primary()
		if _, err := e.keys.Rotate(); err != nil {
			t.Fatal(err)
		}
		n := 0
		err := db.Tx(ctx, func(tx *store.Tx) (err error) {
			n, err = images.ReencryptSecrets(ctx, tx, e.keys)
			return err
		})
		if err != nil || n != 2 {
			t.Fatalf("ReencryptSecrets = %d, %v; want 2 (the jira and github tokens)", n, err)
		}
		if err := e.keys.Retire(old); err != nil {
			t.Fatal(err)
		}
		im, err := e.svc.ReportImage(ctx, e.admin, images.Report{Image: "ghcr.io/acme/web:2.0", Digest: digest(2), Issues: []string{"PROJ-12", "acme/web#9"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := issueTitles(im.Issues); got["PROJ-12"] != "Login fails for SSO users" || got["acme/web#9"] != "Cache misses" {
			t.Fatalf("titles after rotation: %v", got)
		}
	})
}
