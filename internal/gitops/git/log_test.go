package git_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

func TestLogRange(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("log")
	var shas []string
	for i := range 5 {
		shas = append(shas, repo.Commit("main", map[string]string{"f.txt": fmt.Sprint(i)}, fmt.Sprintf("change %d\n\nbody %d", i, i)))
	}
	// A side branch off change 4, and main moving on.
	repo.Branch("side", shas[4])
	side := repo.Commit("side", map[string]string{"side.txt": "x"}, "PROJ-7 side work")
	main5 := repo.Commit("main", map[string]string{"f.txt": "5"}, "change 5")
	c := newCache(t, git.Options{})
	r := git.Repo{URL: repo.URL()}
	if _, err := c.Fetch(ctx(t), r, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fetch(ctx(t), r, "side"); err != nil {
		t.Fatal(err)
	}
	subjects := func(cr git.CommitRange) []string {
		var out []string
		for _, ci := range cr.Commits {
			out = append(out, ci.Subject())
		}
		return out
	}

	// Several commits: from is excluded, to included, newest first.
	cr, err := c.Log(ctx(t), r, shas[1], shas[4], 50)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Kind != git.RangeCommits || cr.Truncated || fmt.Sprint(subjects(cr)) != "[change 4 change 3 change 2]" {
		t.Errorf("Log(1..4) = %s %v %v", cr.Kind, cr.Truncated, subjects(cr))
	}
	if cr.Commits[0].SHA != shas[4] || cr.Commits[0].Author != gitserver.AuthorName || cr.Commits[0].AuthorTime.IsZero() {
		t.Errorf("newest commit = %+v", cr.Commits[0])
	}

	// Truncation keeps the newest.
	cr, err = c.Log(ctx(t), r, shas[0], shas[4], 2)
	if err != nil || cr.Kind != git.RangeCommits || !cr.Truncated || fmt.Sprint(subjects(cr)) != "[change 4 change 3]" {
		t.Errorf("Log(0..4, 2) = %s %v %v, %v", cr.Kind, cr.Truncated, subjects(cr), err)
	}

	// First deployment: the revision's own commit.
	cr, err = c.Log(ctx(t), r, "", shas[2], 50)
	if err != nil || cr.Kind != git.RangeFirst || fmt.Sprint(subjects(cr)) != "[change 2]" {
		t.Errorf("Log(..2) = %s %v, %v", cr.Kind, subjects(cr), err)
	}

	// Rollback to an older revision: no commits.
	cr, err = c.Log(ctx(t), r, shas[4], shas[1], 50)
	if err != nil || cr.Kind != git.RangeRollback || len(cr.Commits) != 0 {
		t.Errorf("Log(4..1) = %s %v, %v", cr.Kind, subjects(cr), err)
	}
	// The same revision again: no commits.
	cr, err = c.Log(ctx(t), r, shas[3], shas[3], 50)
	if err != nil || cr.Kind != git.RangeUnchanged || len(cr.Commits) != 0 {
		t.Errorf("Log(3..3) = %s %v, %v", cr.Kind, subjects(cr), err)
	}

	// Diverged histories: the side branch's commit, not main's newer one.
	cr, err = c.Log(ctx(t), r, main5, side, 50)
	if err != nil || cr.Kind != git.RangeCommits || fmt.Sprint(subjects(cr)) != "[PROJ-7 side work]" {
		t.Errorf("Log(main5..side) = %s %v, %v", cr.Kind, subjects(cr), err)
	}

	// A commit the cache does not have is an error naming it.
	if _, err := c.Log(ctx(t), r, shas[0], "0123456789012345678901234567890123456789", 50); !errors.Is(err, git.ErrRevisionNotFound) {
		t.Errorf("Log(unknown) err = %v", err)
	}
}
