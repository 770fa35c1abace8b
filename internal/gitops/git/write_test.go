package git_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

var author = git.Signature{Name: "Freshet", Email: "freshet@example.com"}

func TestCommitAndPush(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithBasicAuth("bot", "pw"))
	repo := srv.NewRepo("install")
	r := git.Repo{URL: repo.URL(), Credentials: git.Credentials{Username: "bot", Password: "pw"}}
	c := newCache(t, git.Options{})

	// The installation repository starts empty: the first commit is a root commit on main.
	res, err := c.Commit(ctx(t), r, git.CommitRequest{Message: "bootstrap", Author: author, Changes: []git.FileChange{
		{Path: "apps/guestbook.yaml", Content: []byte("kind: Application\n"), Create: true},
		{Path: "projects/default.yaml", Content: []byte("kind: AppProject\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "main" || res.Unchanged || len(res.Commit.Parents) != 0 || res.Commit.Author != author.Name {
		t.Errorf("bootstrap result = %+v", res)
	}
	if got, _ := repo.ReadFile("main", "apps/guestbook.yaml"); got != "kind: Application" {
		t.Errorf("server has %q", got)
	}
	if repo.RevParse("main") != res.Commit.SHA {
		t.Errorf("server main is %s, pushed %s", repo.RevParse("main"), res.Commit.SHA)
	}

	// `freshet app create` of an existing app is a conflict; nothing is pushed.
	_, err = c.Commit(ctx(t), r, git.CommitRequest{Message: "again", Author: author, Changes: []git.FileChange{
		{Path: "apps/guestbook.yaml", Content: []byte("x"), Create: true},
	}})
	if !errors.Is(err, git.ErrConflict) || !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("create of an existing file: err = %v, want ErrConflict", err)
	}
	_, err = c.Commit(ctx(t), r, git.CommitRequest{Message: "rm", Author: author, Changes: []git.FileChange{
		{Path: "apps/missing.yaml", Delete: true},
	}})
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("delete of a missing file: err = %v, want not found", err)
	}
	// Writing what is already there commits nothing.
	res2, err := c.Commit(ctx(t), r, git.CommitRequest{Message: "same", Author: author, Changes: []git.FileChange{
		{Path: "apps/guestbook.yaml", Content: []byte("kind: Application\n")},
	}})
	if err != nil || !res2.Unchanged || res2.Commit.SHA != res.Commit.SHA {
		t.Errorf("unchanged commit: %+v, %v", res2, err)
	}
	// Update and delete in one commit, on top of a commit someone else pushed.
	other := repo.Commit("main", map[string]string{"README.md": "hello\n"}, "someone else")
	res3, err := c.Commit(ctx(t), r, git.CommitRequest{Message: "update", Author: author, Changes: []git.FileChange{
		{Path: "apps/guestbook.yaml", Content: []byte("kind: Application # v2\n")},
		{Path: "projects/default.yaml", Delete: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res3.Commit.Parents) != 1 || res3.Commit.Parents[0] != other {
		t.Errorf("parents = %v, want [%s]", res3.Commit.Parents, other)
	}
	if _, ok := repo.ReadFile("main", "projects/default.yaml"); ok {
		t.Error("deleted file still on the server")
	}
	if got, _ := repo.ReadFile("main", "README.md"); got != "hello" {
		t.Errorf("the other writer's file was lost: %q", got)
	}

	// Bad requests name the field.
	for _, tc := range []struct {
		req   git.CommitRequest
		field string
	}{
		{git.CommitRequest{Author: author, Changes: []git.FileChange{{Path: "a"}}}, "message"},
		{git.CommitRequest{Message: "m", Changes: []git.FileChange{{Path: "a"}}}, "author"},
		{git.CommitRequest{Message: "m", Author: author}, "changes"},
		{git.CommitRequest{Message: "m", Author: author, Changes: []git.FileChange{{Path: "../x"}}}, "changes[0].path"},
		{git.CommitRequest{Message: "m", Author: author, Changes: []git.FileChange{{Path: ".git/config"}}}, "changes[0].path"},
		{git.CommitRequest{Message: "m", Author: author, Branch: "a..b", Changes: []git.FileChange{{Path: "a"}}}, "branch"},
	} {
		_, err := c.Commit(ctx(t), r, tc.req)
		if errdefs.Field(err) != tc.field {
			t.Errorf("%+v: err = %v, want a field error on %s", tc.req, err, tc.field)
		}
	}
}

// A push rejected because the branch moved is re-applied on the new tip and retried.
func TestCommitRebasesOnRejectedPush(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("install")
	repo.Commit("main", map[string]string{"a.yaml": "a\n"}, "init")
	c := newCache(t, git.Options{})
	raced := 0
	c.SetBeforePush(func() {
		if raced < 2 {
			raced++
			repo.Commit("main", map[string]string{fmt.Sprintf("other-%d.yaml", raced): "o\n"}, "racing writer")
		}
	})
	res, err := c.Commit(ctx(t), git.Repo{URL: repo.URL()}, git.CommitRequest{Message: "mine", Author: author,
		Changes: []git.FileChange{{Path: "b.yaml", Content: []byte("b\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 3 {
		t.Errorf("attempts = %d, want 3 (two rejections)", res.Attempts)
	}
	if log := repo.Log("main"); len(log) != 4 || log[0] != "mine" {
		t.Errorf("server log = %q, want mine on top of both racing commits", log)
	}
	for _, f := range []string{"a.yaml", "b.yaml", "other-1.yaml", "other-2.yaml"} {
		if _, ok := repo.ReadFile("main", f); !ok {
			t.Errorf("%s missing on the server", f)
		}
	}

	// A writer that always loses gives up with ErrConflict after PushAttempts.
	c2 := newCache(t, git.Options{PushAttempts: 2})
	n := 0
	c2.SetBeforePush(func() {
		n++
		repo.Commit("main", map[string]string{"race.yaml": fmt.Sprint(n)}, "always first")
	})
	_, err = c2.Commit(ctx(t), git.Repo{URL: repo.URL()}, git.CommitRequest{Message: "loser", Author: author,
		Changes: []git.FileChange{{Path: "c.yaml", Content: []byte("c\n")}}})
	if !errors.Is(err, git.ErrConflict) {
		t.Errorf("always rejected: err = %v, want ErrConflict", err)
	}
}

// Several runtimes (separate caches) committing at once all land.
func TestConcurrentWriters(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("install")
	repo.Commit("main", map[string]string{"init": "x"}, "init")
	const writers, each = 3, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		c := newCache(t, git.Options{PushAttempts: 20})
		wg.Go(func() {
			for i := range each {
				_, err := c.Commit(ctx(t), git.Repo{URL: repo.URL()}, git.CommitRequest{
					Message: fmt.Sprintf("w%d-%d", w, i), Author: author,
					Changes: []git.FileChange{{Path: fmt.Sprintf("apps/w%d-%d.yaml", w, i), Content: []byte("x"), Create: true}},
				})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if log := repo.Log("main"); len(log) != writers*each+1 {
		t.Errorf("server has %d commits, want %d", len(log), writers*each+1)
	}
}
