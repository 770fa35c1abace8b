package git

import (
	"context"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Kinds of a commit range (CommitRange.Kind).
const (
	// RangeCommits: the commits reachable from the new revision and not from the previous one.
	RangeCommits = "range"
	// RangeFirst: nothing was synced before; the range is the revision's own commit.
	RangeFirst = "first"
	// RangeRollback: the new revision is an ancestor of the previous one; no commits arrive.
	RangeRollback = "rollback"
	// RangeUnchanged: the same revision again; no commits arrive.
	RangeUnchanged = "unchanged"
)

// maxRangeWalk bounds how many commits a range walk reads in all (the previous revision's
// ancestry included), so a range across unrelated histories costs at most this much.
const maxRangeWalk = 20000

// CommitRange is what a deployment brought: `git log from..to`, newest first, at most the
// asked-for number of commits (Truncated says there were more).
type CommitRange struct {
	Kind      string       `json:"kind"`
	From      string       `json:"from,omitempty"`
	To        string       `json:"to,omitempty"`
	Commits   []CommitInfo `json:"commits,omitempty"`
	Truncated bool         `json:"truncated,omitempty"`
}

// Log returns the commits between from (the previously deployed commit, "" for none) and to,
// both in the cache (after Fetch or Checkout), newest first (by commit time), at most max of
// them. A to that is an ancestor of from is a rollback: no commits.
func (c *Cache) Log(ctx context.Context, repo Repo, from, to string, max int) (CommitRange, error) {
	out := CommitRange{From: from, To: to}
	e, err := c.entry(repo.URL)
	if err != nil {
		return out, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return out, err
	}
	get := func(sha string) (*object.Commit, error) {
		cm, err := r.CommitObject(plumbing.NewHash(sha))
		if err != nil {
			return nil, &Error{Op: "log", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound, Err: fmt.Errorf("commit %s: %w", sha, err)}
		}
		return cm, nil
	}
	head, err := get(to)
	if err != nil {
		return out, err
	}
	if from == "" {
		out.Kind = RangeFirst
		out.Commits = []CommitInfo{commitInfo(head)}
		return out, nil
	}
	if from == to {
		out.Kind = RangeUnchanged
		return out, nil
	}
	base, err := get(from)
	if err != nil {
		return out, err
	}
	// The previous revision's ancestry (bounded), then to's commits that are not in it.
	seen := map[plumbing.Hash]bool{}
	budget := maxRangeWalk
	walk := func(start *object.Commit, visit func(*object.Commit) bool) error {
		stack := []*object.Commit{start}
		for len(stack) > 0 && budget > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			cm := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !visit(cm) {
				continue
			}
			budget--
			for _, p := range cm.ParentHashes {
				pc, err := r.CommitObject(p)
				if err != nil {
					continue // a shallow or partial history ends here
				}
				stack = append(stack, pc)
			}
		}
		return nil
	}
	ancestors := map[plumbing.Hash]bool{}
	if err := walk(base, func(cm *object.Commit) bool {
		if ancestors[cm.Hash] {
			return false
		}
		ancestors[cm.Hash] = true
		return true
	}); err != nil {
		return out, err
	}
	if ancestors[head.Hash] {
		out.Kind = RangeRollback
		return out, nil
	}
	var found []*object.Commit
	if err := walk(head, func(cm *object.Commit) bool {
		if seen[cm.Hash] || ancestors[cm.Hash] {
			return false
		}
		seen[cm.Hash] = true
		found = append(found, cm)
		return true
	}); err != nil {
		return out, err
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].Committer.When.After(found[j].Committer.When) })
	out.Kind = RangeCommits
	if max > 0 && len(found) > max {
		found, out.Truncated = found[:max], true
	}
	if budget <= 0 {
		out.Truncated = true
	}
	for _, cm := range found {
		out.Commits = append(out.Commits, commitInfo(cm))
	}
	return out, nil
}
