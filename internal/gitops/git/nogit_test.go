package git_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
)

// Without a git binary (the freshet image is scratch), a local repository (file://, as a hosted
// runtime's installation repository) is still read and written: go-git's file transport would
// run git's upload-pack and receive-pack, so the cache serves file:// in process instead. go-git's
// transports are process-wide: the test runs itself again, with a PATH holding no git.
func TestLocalRepoWithoutGitBinary(t *testing.T) {
	const env = "FRESHET_TEST_GIT_NO_BINARY"
	if os.Getenv(env) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocalRepoWithoutGitBinary$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), env+"=1", "PATH="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestLocalRepoWithoutGitBinary") {
			t.Fatalf("without git on PATH: %v\n%s", err, out)
		}
		return
	}
	if p, err := exec.LookPath("git"); err == nil {
		t.Fatalf("git is on PATH: %s", p)
	}
	dir := filepath.Join(t.TempDir(), "installation.git")
	if _, err := gogit.PlainInitWithOptions(dir, &gogit.PlainInitOptions{Bare: true,
		InitOptions: gogit.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}}); err != nil {
		t.Fatal(err)
	}
	r := git.Repo{URL: "file://" + dir}
	c := newCache(t, git.Options{})
	// Empty: the branch is not there yet (not an unreachable repository).
	if _, err := c.Resolve(ctx(t), r, "main"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("resolve main of the empty repository: %v, want not found", err)
	}
	res, err := c.Commit(ctx(t), r, git.CommitRequest{Message: "add", Author: author, Changes: []git.FileChange{
		{Path: "apps/guestbook.yaml", Content: []byte("kind: Application\n"), Create: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c2 := newCache(t, git.Options{}) // a fresh cache reads it back from the repository
	got, err := c2.Fetch(ctx(t), r, "main")
	if err != nil || got.SHA != res.Commit.SHA {
		t.Fatalf("fetch main = %+v, %v; want the pushed %s", got, err, res.Commit.SHA)
	}
	b, err := c2.ReadFile(ctx(t), r, got.SHA, "apps/guestbook.yaml")
	if err != nil || string(b) != "kind: Application\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
}
