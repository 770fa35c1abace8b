package providers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
)

// Each provider's double checks the request its documented commit status API takes: method,
// path, authentication header and JSON fields (no real GitHub, GitLab, Gitea or Bitbucket can
// run here).
func TestPostStatusRequests(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	st := providers.Status{State: providers.StateFailure, Context: "freshet/app-ci", TargetURL: "https://ci.example/builds/b1", Description: "build #3 failed"}
	for _, c := range []struct {
		kind, user, repo, path, auth string
		want                         map[string]string
	}{
		{providers.GitHub, "", "acme/api", "/repos/acme/api/statuses/" + sha, "Bearer tok",
			map[string]string{"state": "failure", "target_url": st.TargetURL, "description": st.Description, "context": st.Context}},
		{providers.Gitea, "", "acme/api", "/api/v1/repos/acme/api/statuses/" + sha, "token tok",
			map[string]string{"state": "failure", "target_url": st.TargetURL, "description": st.Description, "context": st.Context}},
		{providers.GitLab, "", "grp/sub/api", "/api/v4/projects/grp%2Fsub%2Fapi/statuses/" + sha, "tok",
			map[string]string{"state": "failed", "target_url": st.TargetURL, "description": st.Description, "name": st.Context}},
		{providers.Bitbucket, "", "acme/api", "/repositories/acme/api/commit/" + sha + "/statuses/build", "Bearer tok",
			map[string]string{"key": st.Context, "state": "FAILED", "url": st.TargetURL, "name": st.Context, "description": st.Description}},
		{providers.Bitbucket, "alice", "acme/api", "/repositories/acme/api/commit/" + sha + "/statuses/build", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:tok")),
			map[string]string{"key": st.Context, "state": "FAILED", "url": st.TargetURL, "name": st.Context, "description": st.Description}},
	} {
		t.Run(c.kind+c.user, func(t *testing.T) {
			got := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got++
				auth := r.Header.Get("Authorization")
				if c.kind == providers.GitLab {
					auth = r.Header.Get("PRIVATE-TOKEN")
				}
				var body map[string]string
				data, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPost || r.URL.EscapedPath() != c.path || auth != c.auth || r.Header.Get("Content-Type") != "application/json" ||
					json.Unmarshal(data, &body) != nil || len(body) != len(c.want) {
					t.Errorf("%s %s auth %q type %q body %s", r.Method, r.URL.EscapedPath(), auth, r.Header.Get("Content-Type"), data)
				}
				for k, v := range c.want {
					if body[k] != v {
						t.Errorf("body %s = %q, want %q", k, body[k], v)
					}
				}
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"id":1}`))
			}))
			defer srv.Close()
			base := srv.URL
			cl, err := providers.New(c.kind, base, "tok", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.WithUsername(c.user).PostStatus(context.Background(), c.repo, sha, st); err != nil || got != 1 {
				t.Fatalf("PostStatus: %v after %d requests", err, got)
			}
		})
	}
}

// States map to each provider's words; errors tell what may pass from what will not.
func TestPostStatusStatesAndErrors(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var states []string
	code := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		states = append(states, body["state"])
		w.WriteHeader(code)
	}))
	defer srv.Close()
	for kind, want := range map[string]string{
		providers.GitHub: "pending success failure error", providers.Gitea: "pending success failure error",
		providers.GitLab: "running success failed canceled", providers.Bitbucket: "INPROGRESS SUCCESSFUL FAILED STOPPED",
	} {
		states = nil
		cl, _ := providers.New(kind, srv.URL, "tok", nil)
		for _, s := range []string{providers.StatePending, providers.StateSuccess, providers.StateFailure, providers.StateError} {
			if err := cl.PostStatus(context.Background(), "a/b", sha, providers.Status{State: s, Context: "c"}); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Join(states, " "); got != want {
			t.Errorf("%s states = %s, want %s", kind, got, want)
		}
	}
	cl, _ := providers.New(providers.GitHub, srv.URL, "tok", nil)
	for _, c := range []struct {
		code int
		want error
	}{{http.StatusBadGateway, errdefs.ErrUnavailable}, {http.StatusUnauthorized, errdefs.ErrForbidden}, {http.StatusNotFound, errdefs.ErrNotFound}} {
		code = c.code
		if err := cl.PostStatus(context.Background(), "a/b", sha, providers.Status{State: providers.StatePending}); !errors.Is(err, c.want) {
			t.Errorf("HTTP %d: %v, want %v", c.code, err, c.want)
		}
	}
	for _, bad := range []struct{ repo, sha, state string }{{"a", sha, "pending"}, {"a/../b", sha, "pending"}, {"a/b", "HEAD", "pending"}, {"a/b", sha, "weird"}} {
		if err := cl.PostStatus(context.Background(), bad.repo, bad.sha, providers.Status{State: bad.state}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%+v: %v, want invalid", bad, err)
		}
	}
}
