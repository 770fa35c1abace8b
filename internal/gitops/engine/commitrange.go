package engine

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/freshet-dev/freshet/internal/gitops/git"
)

// Bounds of a sync's commit range (HistoryEntry.Range): commit messages and authors are
// whatever someone pushed, so they are cut to these many bytes (the subject line only), and a
// range keeps its newest DeployCommits commits.
const (
	DeployCommits         = 50
	MaxCommitAuthorBytes  = 100
	MaxCommitSubjectBytes = 200
	commitRangeTimeout    = 10 * time.Second
)

// commitRange returns the commits between the app's previous successful sync and sha, for a
// single git source; nil when there is none to walk (multi-source, chart repository) or the
// walk failed (logged: the sync's record stands without it).
func (e *Engine) commitRange(ctx context.Context, st *appState, sha string) *git.CommitRange {
	st.mu.Lock()
	a := st.app
	if e.cache == nil || a == nil || isMultiSource(a) || sha == "" {
		st.mu.Unlock()
		return nil
	}
	src := a.EffectiveSource()
	if src == nil || src.IsChartRepo() {
		st.mu.Unlock()
		return nil
	}
	// The previous successful sync of the same repository; none: the first deployment.
	prev := ""
	for i := len(st.history) - 1; i >= 0; i-- {
		if h := st.history[i]; h.Phase == PhaseSucceeded && len(h.Revisions) == 0 {
			if sameRepo(h.Source.RepoURL, src.RepoURL) {
				prev = h.Revision
			}
			break
		}
	}
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitRangeTimeout)
	defer cancel()
	cr, err := e.cache.Log(ctx, e.repo(src.RepoURL), prev, sha, DeployCommits)
	if err != nil {
		e.log.Info("commits of the sync not listed", logKeyApp, st.name, "from", prev, "to", sha, logKeyErr, err)
		return nil
	}
	for i, c := range cr.Commits {
		cr.Commits[i] = git.CommitInfo{SHA: c.SHA, Author: cut(c.Author, MaxCommitAuthorBytes), AuthorTime: c.AuthorTime,
			CommitTime: c.CommitTime, Message: cut(c.Subject(), MaxCommitSubjectBytes)}
	}
	return &cr
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// sameRepo reports whether two repository URLs name the same repository.
func sameRepo(a, b string) bool {
	na, errA := git.NormalizeURL(a)
	nb, errB := git.NormalizeURL(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return na == nb
}
