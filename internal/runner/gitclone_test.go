package runner

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// A git-clone step with git: NAME clones owner/name from the git context's provider over real
// git HTTP with basic authentication; the token reaches git through the credential helper, so
// it is in neither the log nor the clone's .git/config.
func TestGitCloneThroughGitContext(t *testing.T) {
	const token = "gitctx-token-5f3a9"
	srv := gitserver.New(t, gitserver.WithBasicAuth("x-access-token", token))
	repo := srv.NewRepo("acme/svc")
	sha := repo.Commit("main", map[string]string{"VERSION": "1.2.3\n"}, "v1")
	wrong := gitserver.New(t, gitserver.WithBasicAuth("x-access-token", "other"))
	other := wrong.NewRepo("acme/svc")
	other.Commit("main", map[string]string{"VERSION": "9\n"}, "v9")

	dir := t.TempDir()
	exec, err := local.New(local.Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gits := []runnerv1.GitContext{{Name: "gh", Provider: "github", CloneURL: srv.URL(), Username: "x-access-token", Token: token}}
	run := func(t *testing.T, step string) (string, string, executor.Workspace) {
		t.Helper()
		ws, err := exec.Prepare(ctx, executor.Build{ID: "b-" + strings.ReplaceAll(t.Name(), "/", "-")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { exec.Cleanup(ctx, ws) })
		p, err := spec.Parse([]byte("version: '1.0'\nsteps:\n  clone:\n    type: git-clone\n" + step))
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		e := newEngine(runnerv1.Job{BuildID: "b1", Variables: map[string]string{"CF_REVISION": sha}, GitContexts: gits}, p, exec, ws, &log,
			func(runnerv1.StepState) {}, nil)
		runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		status, reason := e.run(runCtx)
		if strings.Contains(log.String(), token) || strings.Contains(reason, token) {
			t.Errorf("the token is in the log or reason:\n%s\n%s", log.String(), reason)
		}
		return status, reason + "\n" + log.String(), ws
	}

	t.Run("owner/name through the context", func(t *testing.T) {
		status, out, ws := run(t, "    repo: acme/svc\n    git: gh\n")
		if status != stSuccess || !strings.Contains(out, "cloned "+sha) {
			t.Fatalf("clone: %s\n%s", status, out)
		}
		got, err := os.ReadFile(filepath.Join(ws.Path, "svc", "VERSION"))
		if err != nil || string(got) != "1.2.3\n" {
			t.Fatalf("VERSION = %q, %v", got, err)
		}
		cfg, err := os.ReadFile(filepath.Join(ws.Path, "svc", ".git", "config"))
		if err != nil || strings.Contains(string(cfg), token) || !strings.Contains(string(cfg), srv.URL()+"/acme/svc.git") {
			t.Fatalf(".git/config (%v):\n%s", err, cfg)
		}
	})
	t.Run("a clone URL on the context's host", func(t *testing.T) {
		if status, out, _ := run(t, "    repo: "+repo.URL()+"\n    git: gh\n"); status != stSuccess {
			t.Fatalf("clone: %s\n%s", status, out)
		}
	})
	t.Run("without the context the server refuses", func(t *testing.T) {
		if status, out, _ := run(t, "    repo: "+repo.URL()+"\n"); status != stFailed {
			t.Fatalf("clone without credentials: %s\n%s", status, out)
		}
	})
	t.Run("explicit credentials also go through the helper", func(t *testing.T) {
		status, out, ws := run(t, "    repo: "+repo.URL()+"\n    credentials:\n      username: x-access-token\n      password: "+token+"\n")
		if status != stSuccess {
			t.Fatalf("clone: %s\n%s", status, out)
		}
		if cfg, _ := os.ReadFile(filepath.Join(ws.Path, "svc", ".git", "config")); strings.Contains(string(cfg), token) {
			t.Fatalf(".git/config holds the password:\n%s", cfg)
		}
	})
	t.Run("the token never goes to another host", func(t *testing.T) {
		status, out, _ := run(t, "    repo: "+other.URL()+"\n    git: gh\n")
		if status != stFailed || !strings.Contains(out, "not on git context gh's host") {
			t.Fatalf("clone from another host: %s\n%s", status, out)
		}
	})
	t.Run("an unknown context", func(t *testing.T) {
		status, out, _ := run(t, "    repo: acme/svc\n    git: nope\n")
		if status != stFailed || !strings.Contains(out, "not a git context of this pipeline") {
			t.Fatalf("unknown context: %s\n%s", status, out)
		}
	})
}

func TestCloneSourceRefuses(t *testing.T) {
	for _, c := range []struct{ yaml, field string }{
		{"    repo: acme/../x\n    git: gh\n", ""},
		{"    repo: https://u:p@git.example/a/b.git\n", "repo"},
		{"    repo: 'acme svc/x'\n    git: gh\n", "repo"},
	} {
		e, st := stepOf(t, "    type: git-clone\n"+c.yaml, nil)
		e.job.GitContexts = []runnerv1.GitContext{{Name: "gh", CloneURL: "https://github.com", Username: "u", Token: "t"}}
		_, err := e.executorStep(st)
		var fe *errdefs.FieldError
		if err == nil || c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
			t.Errorf("%q: %v, want refused on %q", c.yaml, err, c.field)
		}
	}
}

// Whatever repo, git context name and credentials a spec gives, a git-clone step's URL carries
// no credentials, and a context's token goes only to the context's origin.
func FuzzCloneSource(f *testing.F) {
	for _, s := range [][3]string{
		{"acme/svc", "gh", ""}, {"https://github.com/acme/svc.git", "gh", ""}, {"https://evil.example/a/b.git", "gh", ""},
		{"https://u:p@github.com/a/b.git", "", ""}, {"acme/../x", "gh", ""}, {"grp/sub/name", "gh", "user"}, {"//github.com@evil.example/x", "gh", ""},
		{"https://github.com:443/a/b", "gh", ""}, {"HTTPS://GITHUB.COM/a/b", "gh", ""}, {"a/b", "nope", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	const token = "fuzz-token-value"
	f.Fuzz(func(t *testing.T, repo, git, user string) {
		yaml := "    type: git-clone\n    repo: " + strconv.Quote(repo) + "\n"
		if git != "" {
			yaml += "    git: " + strconv.Quote(git) + "\n"
		}
		if user != "" {
			yaml += "    credentials:\n      username: " + strconv.Quote(user) + "\n      password: pw\n"
		}
		p, err := spec.Parse([]byte("version: '1.0'\nsteps:\n  s:\n" + yaml))
		if err != nil || p.Step("s") == nil {
			return
		}
		e := newEngine(runnerv1.Job{BuildID: "b1", GitContexts: []runnerv1.GitContext{{Name: "gh", CloneURL: "https://github.com", Username: "x", Token: token}}},
			p, nil, executor.Workspace{Path: "/ws"}, nil, func(runnerv1.StepState) {}, nil)
		got, u, pw, err := e.cloneSource(p.Step("s"))
		if err != nil {
			return
		}
		pu, perr := url.Parse(got)
		if perr != nil || pu.User != nil || strings.Contains(got, token) {
			t.Fatalf("clone URL %q (user %q): credentials in the URL", got, u)
		}
		if pw == token && (pu.Scheme != "https" || !strings.EqualFold(pu.Host, "github.com")) {
			t.Fatalf("the token goes to %q", got)
		}
	})
}
