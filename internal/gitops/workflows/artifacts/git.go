package artifacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// loadGit clones l.Repo (http or https) into path and checks out l.Revision (a branch, a tag
// or a commit; the remote's HEAD when empty). The clone's connections go through the policy
// (go-git's transports are process-wide: the policy travels in the context).
func (m *Mover) loadGit(ctx context.Context, l *Git, path string) error {
	u, err := url.Parse(l.Repo)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("git repo %q: only http and https repositories are supported", l.Repo)
	}
	if m.Policy != nil {
		ctx = netpolicy.NewContext(ctx, m.Policy)
	}
	installGitTransport()
	opts := &gogit.CloneOptions{URL: l.Repo, Depth: l.Depth, Tags: gogit.NoTags, RecurseSubmodules: gogit.NoRecurseSubmodules}
	if user, pass := m.getenv(l.UsernameEnv), m.getenv(l.PasswordEnv); user != "" || pass != "" {
		opts.Auth = &githttp.BasicAuth{Username: user, Password: pass}
	}
	rev := l.Revision
	if rev != "" && !isHash(rev) {
		// A branch or a tag: fetch just it.
		opts.SingleBranch = true
		opts.ReferenceName = plumbing.NewBranchReferenceName(rev)
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".git-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	repo, err := gogit.PlainCloneContext(ctx, tmp, false, opts)
	if err != nil && opts.ReferenceName != "" && (errors.Is(err, plumbing.ErrReferenceNotFound) || isNoMatchingRef(err)) {
		// Not a branch: try it as a tag.
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return err
		}
		opts.ReferenceName = plumbing.NewTagReferenceName(rev)
		repo, err = gogit.PlainCloneContext(ctx, tmp, false, opts)
		if err != nil && (errors.Is(err, plumbing.ErrReferenceNotFound) || isNoMatchingRef(err)) {
			return fmt.Errorf("git %s: revision %q: %w (no such branch or tag)", l.Repo, rev, ErrNotFound)
		}
	}
	if err != nil {
		if errors.Is(err, transport.ErrRepositoryNotFound) {
			return fmt.Errorf("git %s: %w", l.Repo, ErrNotFound)
		}
		return fmt.Errorf("git clone %s: %s", l.Repo, netpolicy.Describe(err))
	}
	if isHash(rev) {
		wt, err := repo.Worktree()
		if err != nil {
			return err
		}
		h, err := repo.ResolveRevision(plumbing.Revision(rev))
		if err != nil {
			return fmt.Errorf("git %s: revision %q: %w (not in the clone%s)", l.Repo, rev, ErrNotFound, depthHint(l.Depth))
		}
		if err := wt.Checkout(&gogit.CheckoutOptions{Hash: *h, Force: true}); err != nil {
			return fmt.Errorf("git %s: checkout %s: %w", l.Repo, rev, err)
		}
	}
	return os.Rename(tmp, path)
}

func depthHint(d int) string {
	if d > 0 {
		return fmt.Sprintf("; depth %d may not reach it", d)
	}
	return ""
}

func isNoMatchingRef(err error) bool {
	return err != nil && strings.Contains(err.Error(), "couldn't find remote ref")
}

func isHash(s string) bool {
	if len(s) < 7 || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

var installGit sync.Once

// installGitTransport makes go-git's http and https transports check each connection against
// the policy in the request's context.
func installGitTransport() {
	installGit.Do(func() {
		c := githttp.NewClient(&http.Client{Transport: netpolicy.ContextTransport()})
		client.InstallProtocol("http", c)
		client.InstallProtocol("https", c)
	})
}
