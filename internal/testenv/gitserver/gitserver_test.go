package gitserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

func gitCLI(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestServeCommitsBranchesAndTags(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("org/apps")
	first := repo.Commit("main", map[string]string{"a/one.yaml": "one: 1\n", "README.md": "hi\n"}, "first")
	second := repo.Commit("main", map[string]string{"a/one.yaml": "one: 2\n"}, "second")
	repo.Tag("v1", first)
	repo.AnnotatedTag("v2", second, "release v2")
	feature := repo.Commit("feature", map[string]string{"b.yaml": "b: 1\n"}, "on a branch")
	third := repo.Delete("main", "remove readme", "README.md")

	out, err := gitCLI(t, t.TempDir(), "ls-remote", repo.URL())
	if err != nil {
		t.Fatalf("ls-remote: %v: %s", err, out)
	}
	for _, want := range []string{third + "\tHEAD", third + "\trefs/heads/main", feature + "\trefs/heads/feature", first + "\trefs/tags/v1", second + "\trefs/tags/v2^{}"} {
		if !strings.Contains(out, want) {
			t.Errorf("ls-remote lacks %q:\n%s", want, out)
		}
	}
	if st := repo.Stats(); st.InfoRefs != 1 || st.UploadPacks != 0 {
		t.Errorf("after ls-remote stats = %+v, want 1 advertisement and no pack", st)
	}

	dst := filepath.Join(t.TempDir(), "clone")
	if out, err := gitCLI(t, "", "clone", "--quiet", repo.URL(), dst); err != nil {
		t.Fatalf("clone: %v: %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "a/one.yaml")); string(b) != "one: 2\n" {
		t.Errorf("a/one.yaml = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dst, "README.md")); !os.IsNotExist(err) {
		t.Errorf("README.md still present after Delete: %v", err)
	}
	if st := repo.Stats(); st.UploadPacks != 1 {
		t.Errorf("after clone stats = %+v, want one upload-pack", st)
	}
	if got, _ := repo.ReadFile("feature", "a/one.yaml"); got != "one: 2" {
		t.Errorf("feature branch starts from main's tip: a/one.yaml = %q", got)
	}
	if log := repo.Log("main"); len(log) != 3 || log[0] != "remove readme" {
		t.Errorf("log = %q", log)
	}

	// A push over HTTP is accepted and counted.
	if out, err := gitCLI(t, dst, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "--allow-empty", "-m", "pushed"); err != nil {
		t.Fatalf("commit: %v: %s", err, out)
	}
	if out, err := gitCLI(t, dst, "push", "--quiet", "origin", "HEAD:main"); err != nil {
		t.Fatalf("push: %v: %s", err, out)
	}
	if st := repo.Stats(); st.ReceivePacks != 1 {
		t.Errorf("after push stats = %+v", st)
	}
	// The helper's next commit builds on the pushed one.
	repo.Commit("main", map[string]string{"c.yaml": "c\n"}, "after push")
	if log := repo.Log("main"); log[1] != "pushed" {
		t.Errorf("log = %q, want the pushed commit kept", log)
	}
	repo.ResetStats()
	if st := repo.Stats(); st != (gitserver.Stats{}) {
		t.Errorf("ResetStats left %+v", st)
	}
}

func TestBasicAuth(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithBasicAuth("alice", "s3cret"))
	repo := srv.NewRepo("private")
	repo.Commit("main", map[string]string{"x": "y"}, "init")

	if out, err := gitCLI(t, "", "ls-remote", repo.URL()); err == nil {
		t.Fatalf("ls-remote without credentials succeeded: %s", out)
	}
	if st := repo.Stats(); st.Unauthorized == 0 || st.InfoRefs != 0 {
		t.Errorf("stats = %+v, want the refusal counted and no advertisement", st)
	}
	withCreds := strings.Replace(repo.URL(), "://", "://alice:s3cret@", 1)
	if out, err := gitCLI(t, "", "ls-remote", withCreds); err != nil {
		t.Fatalf("ls-remote with credentials: %v: %s", err, out)
	}
}

func TestTLS(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithTLS())
	repo := srv.NewRepo("tls")
	repo.Commit("main", map[string]string{"x": "y"}, "init")
	if !strings.HasPrefix(repo.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL = %s", repo.URL())
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := gitCLI(t, "", "ls-remote", repo.URL()); err == nil {
		t.Fatalf("ls-remote trusted an unknown CA: %s", out)
	}
	t.Setenv("GIT_SSL_CAINFO", ca)
	if out, err := gitCLI(t, "", "ls-remote", repo.URL()); err != nil {
		t.Fatalf("ls-remote with the CA: %v: %s", err, out)
	}
}
