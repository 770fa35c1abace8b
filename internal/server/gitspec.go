package server

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/pipeline"
)

var fullSHA = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)

// gitSpecs reads pipeline specs kept in git through a shared repo cache, where the operator's
// policy allows.
type gitSpecs struct {
	cache  *git.Cache
	policy *netpolicy.Policy
}

var _ pipeline.SpecSource = gitSpecs{}

// CheckRepoURL refuses a repository URL the operator's policy does not allow.
func (g gitSpecs) CheckRepoURL(field, repoURL string) error {
	return g.policy.CheckRepoURL(field, repoURL)
}

// ReadSpec reads path at revision (the default branch when empty). creds may hold GIT_TOKEN,
// or GIT_USERNAME and GIT_PASSWORD.
func (g gitSpecs) ReadSpec(ctx context.Context, repoURL string, creds map[string]string, revision, path string) ([]byte, string, error) {
	repo := git.Repo{URL: repoURL, Credentials: git.Credentials{Token: creds["GIT_TOKEN"], Username: creds["GIT_USERNAME"], Password: creds["GIT_PASSWORD"]}}
	if revision == "" {
		revision = "HEAD"
	}
	if !fullSHA.MatchString(revision) {
		// A branch must mean its head now, not what the cache saw within its refs TTL.
		g.cache.Invalidate(repoURL)
	}
	res, err := g.cache.Fetch(ctx, repo, revision)
	if err != nil {
		return nil, "", err
	}
	data, err := g.cache.ReadFile(ctx, repo, res.SHA, path)
	return data, res.SHA, err
}

// gitSteps reads the operator's step catalogue from git, at the configured revision.
type gitSteps struct {
	cache    *git.Cache
	url      string
	revision string
}

var _ pipeline.StepCatalog = gitSteps{}

// ReadStepFile reads path at the catalogue's revision (its head now, within the cache's refs
// TTL).
func (g gitSteps) ReadStepFile(ctx context.Context, path string) ([]byte, bool, error) {
	repo := git.Repo{URL: g.url}
	rev := g.revision
	if rev == "" {
		rev = "HEAD"
	}
	res, err := g.cache.Fetch(ctx, repo, rev)
	if err != nil {
		return nil, false, err
	}
	data, err := g.cache.ReadFile(ctx, repo, res.SHA, path)
	if errors.Is(err, git.ErrFileNotFound) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// gitCommits reads reported images' commits through the shared repo cache (whose policy is the
// operator's): public repositories only, no credentials.
type gitCommits struct{ cache *git.Cache }

var _ images.CommitReader = gitCommits{}

// ReadCommit fetches sha from repoURL and returns its message, author and commit time.
func (g gitCommits) ReadCommit(ctx context.Context, repoURL, sha string) (string, string, time.Time, error) {
	repo := git.Repo{URL: repoURL}
	res, err := g.cache.Fetch(ctx, repo, sha)
	if err != nil {
		return "", "", time.Time{}, err
	}
	ci, err := g.cache.CommitInfo(ctx, repo, res.SHA)
	if err != nil {
		return "", "", time.Time{}, err
	}
	return ci.Message, ci.Author, ci.CommitTime, nil
}
