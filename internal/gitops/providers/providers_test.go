package providers_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
)

// recorded serves the providers' documented responses (testdata/, recorded in their formats:
// real providers are out of reach here) and records the requests it got.
type recorded struct {
	mu    sync.Mutex
	paths []string
	auth  []string
	srv   *httptest.Server
}

func serve(t *testing.T, routes map[string]func(w http.ResponseWriter, r *http.Request)) *recorded {
	rec := &recorded{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.paths = append(rec.paths, r.URL.RequestURI())
		rec.auth = append(rec.auth, r.Header.Get("Authorization")+"|"+r.Header.Get("PRIVATE-TOKEN"))
		rec.mu.Unlock()
		if h := routes[r.URL.Path]; h != nil {
			h(w, r)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write(file(t, "github-not-found.json"))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func file(t *testing.T, name string) []byte {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGitHubPagesAndOrgThenUser(t *testing.T) {
	var rec *recorded
	rec = serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"/users/acme/repos": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("page") == "2" {
				w.Write(file(t, "github-repos-page2.json"))
				return
			}
			w.Header().Set("Link", `<`+rec.srv.URL+`/users/acme/repos?page=2&per_page=100>; rel="next", <`+rec.srv.URL+`/users/acme/repos?page=2>; rel="last"`)
			w.Write(file(t, "github-repos-page1.json"))
		},
	})
	c, err := providers.New(providers.GitHub, rec.srv.URL, "ghp_secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := c.ListRepos(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(repos) != 3 || repos[0].FullName != "acme/guestbook" || repos[0].CloneURL != "https://github.com/acme/guestbook.git" ||
		!repos[1].Private || repos[1].DefaultBranch != "master" || repos[2].Name != "charts" || repos[0].UpdatedAt.IsZero() {
		t.Errorf("repos %+v", repos)
	}
	// The org listing 404s (acme is a user here), then the user's two pages.
	if len(rec.paths) != 3 || !strings.HasPrefix(rec.paths[0], "/orgs/acme/repos") || !strings.Contains(rec.paths[2], "page=2") {
		t.Errorf("requests %v", rec.paths)
	}
	for _, a := range rec.auth {
		if a != "Bearer ghp_secret|" {
			t.Errorf("auth header %q", a)
		}
	}
}

func TestGitHubErrorsSayWhatToDo(t *testing.T) {
	rec := serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"/user/repos": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(file(t, "github-bad-credentials.json"))
		},
		"/orgs/limited/repos": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", "1795000000")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"message": "API rate limit exceeded"}`))
		},
	})
	c, _ := providers.New(providers.GitHub, rec.srv.URL, "expired", nil)
	// The status says it; the body is not quoted (a base URL may name a service whose answers
	// must not be read through the runtime).
	if _, err := c.ListRepos(context.Background(), ""); !errors.Is(err, errdefs.ErrForbidden) || !strings.Contains(err.Error(), "refused the token") ||
		strings.Contains(err.Error(), "Bad credentials") {
		t.Errorf("bad token: %v", err)
	}
	if _, err := c.ListRepos(context.Background(), "limited"); !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "rate limit") {
		t.Errorf("rate limit: %v", err)
	}
	if _, err := c.ListRepos(context.Background(), "nobody"); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("unknown owner: %v", err)
	}
}

func TestGitLabGroupWithNextPageHeader(t *testing.T) {
	rec := serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"/api/v4/groups/platform/projects": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("page") == "" {
				w.Header().Set("X-Next-Page", "2")
			}
			w.Write(file(t, "gitlab-projects.json"))
		},
	})
	c, _ := providers.New(providers.GitLab, rec.srv.URL, "glpat-x", nil)
	repos, err := c.ListRepos(context.Background(), "platform")
	if err != nil {
		t.Fatal(err)
	}
	if len(repos) != 4 || repos[0].FullName != "platform/deploy" || !repos[0].Private || repos[1].Private ||
		repos[0].SSHURL != "git@gitlab.example.com:platform/deploy.git" {
		t.Errorf("repos %+v", repos)
	}
	if len(rec.paths) != 2 || !strings.Contains(rec.paths[0], "include_subgroups=true") || rec.auth[0] != "|glpat-x" {
		t.Errorf("requests %v %v", rec.paths, rec.auth)
	}
}

func TestGiteaUserRepos(t *testing.T) {
	rec := serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"/api/v1/user/repos": func(w http.ResponseWriter, r *http.Request) { w.Write(file(t, "gitea-repos.json")) },
	})
	c, _ := providers.New(providers.Gitea, rec.srv.URL, "gt", nil)
	repos, err := c.ListRepos(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(repos) != 1 || repos[0].FullName != "ops/gitops" || !repos[0].Private || rec.auth[0] != "token gt|" {
		t.Errorf("repos %+v, auth %v", repos, rec.auth)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ kind, base, token, field string }{
		{"sourcehut", "", "t", "provider"},
		{providers.Gitea, "", "t", "baseURL"},
		{providers.GitHub, "ftp://x", "t", "baseURL"},
		{providers.GitHub, "", "", "token"},
	} {
		_, err := providers.New(c.kind, c.base, c.token, nil)
		if errdefs.Field(err) != c.field {
			t.Errorf("New(%q, %q, %q): %v, want an error naming %s", c.kind, c.base, c.token, err, c.field)
		}
	}
	// Bitbucket takes commit statuses, but its repositories are not listed.
	bb, err := providers.New(providers.Bitbucket, "", "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bb.ListRepos(context.Background(), ""); errdefs.Field(err) != "provider" {
		t.Errorf("Bitbucket ListRepos: %v, want an error naming provider", err)
	}
}

// A next-page link to another host is refused (the token must not leak there).
func TestNextPageOnAnotherHostIsRefused(t *testing.T) {
	rec := serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"/user/repos": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", `<https://evil.example/user/repos?page=2>; rel="next"`)
			w.Write(file(t, "github-repos-page2.json"))
		},
	})
	c, _ := providers.New(providers.GitHub, rec.srv.URL, "t", nil)
	if _, err := c.ListRepos(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "another host") {
		t.Errorf("next page elsewhere: %v", err)
	}
}

// A redirect to another host is not followed: the token (in PRIVATE-TOKEN, which net/http
// would forward) stays with the provider.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	other := serve(t, nil)
	rec := serve(t, map[string]func(http.ResponseWriter, *http.Request){
		"/api/v4/projects": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.srv.URL+"/steal", http.StatusFound)
		},
	})
	c, _ := providers.New(providers.GitLab, rec.srv.URL, "glpat-secret", nil)
	if _, err := c.ListRepos(context.Background(), ""); !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "another host") {
		t.Errorf("redirect elsewhere: %v", err)
	}
	if len(other.paths) != 0 {
		t.Fatalf("the other host got %v (auth %v)", other.paths, other.auth)
	}
}

// Whatever a base URL answers, its body does not reach the error.
func TestErrorsDoNotQuoteTheBody(t *testing.T) {
	const secret = "internal-admin-page-4f2a"
	for _, status := range []int{200, 401, 403, 404, 418, 500} {
		rec := serve(t, map[string]func(http.ResponseWriter, *http.Request){
			"/api/v1/user/repos": func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				w.Write([]byte(`{"message": "` + secret + `", "error": "` + secret + `"} <html>` + secret))
			},
		})
		c, _ := providers.New(providers.Gitea, rec.srv.URL, "t", nil)
		if _, err := c.ListRepos(context.Background(), ""); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("HTTP %d: %v", status, err)
		}
	}
}
