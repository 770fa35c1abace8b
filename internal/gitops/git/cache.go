package git

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/sync/singleflight"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Defaults for Options.
const (
	// DefaultTimeout bounds one network operation (ls-remote, fetch, push), as Argo CD bounds
	// its git commands.
	DefaultTimeout = 90 * time.Second
	// DefaultRefsTTL is how long one ref advertisement answers every Resolve of a repository.
	DefaultRefsTTL = 15 * time.Second
	// DefaultMaxCheckoutBytes bounds the files one snapshot may hold.
	DefaultMaxCheckoutBytes = 1 << 30
	// DefaultMaxFileBytes bounds one file read with ReadFile.
	DefaultMaxFileBytes = 32 << 20
	// DefaultPushAttempts is how often Commit tries to push before giving up with ErrConflict.
	DefaultPushAttempts = 5
)

// Log attribute keys.
const (
	logKeyRepo     = "repo"
	logKeySHA      = "sha"
	logKeyDuration = "duration"
)

// Options configure a Cache. Zero fields take the Default* values.
type Options struct {
	Logger           *slog.Logger
	Timeout          time.Duration
	RefsTTL          time.Duration // negative: never reuse an advertisement
	MaxCheckoutBytes int64
	MaxFileBytes     int64
	PushAttempts     int
	// Policy decides which repository URLs may be used and which addresses may be connected
	// to (see netpolicy); nil allows everything. The control plane and hosted runtimes pass
	// the operator's policy for URLs from tenants.
	Policy *netpolicy.Policy
}

// Validate rejects nonsensical options.
func (o Options) Validate() error {
	switch {
	case o.Timeout < 0:
		return errdefs.Invalid("timeout", o.Timeout.String(), "must be positive (or zero for the default 90s)")
	case o.MaxCheckoutBytes < 0:
		return errdefs.Invalid("maxCheckoutBytes", fmt.Sprint(o.MaxCheckoutBytes), "must be positive (or zero for the default)")
	case o.MaxFileBytes < 0:
		return errdefs.Invalid("maxFileBytes", fmt.Sprint(o.MaxFileBytes), "must be positive (or zero for the default)")
	case o.PushAttempts < 0:
		return errdefs.Invalid("pushAttempts", fmt.Sprint(o.PushAttempts), "must be positive (or zero for the default 5)")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RefsTTL == 0 {
		o.RefsTTL = DefaultRefsTTL
	}
	if o.MaxCheckoutBytes == 0 {
		o.MaxCheckoutBytes = DefaultMaxCheckoutBytes
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.PushAttempts == 0 {
		o.PushAttempts = DefaultPushAttempts
	}
	return o
}

// Stats count the network work a Cache has done, for benchmarks and tests.
type Stats struct {
	LsRemotes int64 // ref advertisements requested
	Fetches   int64 // fetches started
	Checkouts int64 // snapshots materialized
	Pushes    int64 // pushes attempted
}

// Cache is the shared on-disk store of repositories. It is safe for concurrent use.
type Cache struct {
	dir       string
	opts      Options
	log       *slog.Logger
	sshPolicy string // the id ssh dials Options.Policy by

	mu    sync.Mutex
	repos map[string]*repoEntry // by cache key

	flights singleflight.Group

	snapMu sync.Mutex
	snaps  map[string]*snapEntry // by cache key + "/" + sha

	lsRemotes, fetches, checkouts, pushes atomic.Int64

	beforePush func() // test hook: runs just before each push
}

// repoEntry is one repository in the cache.
type repoEntry struct {
	key        string
	normalized string
	dir        string // bare repository

	mu   sync.Mutex // serialises every go-git operation on repo
	repo *gogit.Repository

	refsMu sync.Mutex
	refs   *advertisement
}

// advertisement is one ls-remote answer.
type advertisement struct {
	at   time.Time
	refs map[string]string // ref name → commit SHA (annotated tags peeled)
	head string            // the ref HEAD points at, if the server said
}

// NewCache opens (creating if needed) a cache rooted at dir. Snapshots left by an earlier
// process are removed; fetched repositories are kept.
func NewCache(dir string, opts Options) (*Cache, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("git cache dir %s: %w", dir, err)
	}
	for _, d := range []string{"repos", "tmp"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, fmt.Errorf("git cache dir: %w", err)
		}
	}
	for _, d := range []string{"snapshots", "tmp"} {
		if err := removeAll(filepath.Join(abs, d)); err != nil {
			return nil, fmt.Errorf("git cache: clean %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(abs, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("git cache dir: %w", err)
	}
	c := &Cache{
		dir: abs, opts: opts, log: opts.Logger,
		repos: map[string]*repoEntry{},
		snaps: map[string]*snapEntry{},
	}
	installLocalTransport()
	if opts.Policy != nil {
		installPolicyTransports()
		c.sshPolicy = registerSSHPolicy(opts.Policy)
	}
	return c, nil
}

// Dir is the cache's root directory.
func (c *Cache) Dir() string { return c.dir }

// Stats returns the counters so far.
func (c *Cache) Stats() Stats {
	return Stats{LsRemotes: c.lsRemotes.Load(), Fetches: c.fetches.Load(), Checkouts: c.checkouts.Load(), Pushes: c.pushes.Load()}
}

// entry returns the cache entry for repo's URL, creating it on first use. A URL the policy
// refuses has none.
func (c *Cache) entry(rawURL string) (*repoEntry, error) {
	norm, err := NormalizeURL(rawURL)
	if err != nil {
		return nil, err
	}
	if err := c.checkURL(rawURL); err != nil {
		return nil, err
	}
	key := cacheKey(norm)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.repos[key]
	if e == nil {
		e = &repoEntry{key: key, normalized: norm, dir: filepath.Join(c.dir, "repos", key)}
		c.repos[key] = e
	}
	return e, nil
}

// open returns the entry's go-git repository, initialising the bare repository on first use.
// The caller holds e.mu.
func (e *repoEntry) open() (*gogit.Repository, error) {
	if e.repo != nil {
		return e.repo, nil
	}
	r, err := gogit.PlainOpen(e.dir)
	if errors.Is(err, gogit.ErrRepositoryNotExists) {
		r, err = gogit.PlainInit(e.dir, true)
	}
	if err != nil {
		return nil, fmt.Errorf("open cache repository %s: %w", e.dir, err)
	}
	e.repo = r
	return r, nil
}

// Invalidate forgets the remembered ref advertisement of a repository, so the next Resolve asks
// the server (a push webhook, a hard refresh).
func (c *Cache) Invalidate(repoURL string) {
	e, err := c.entry(repoURL)
	if err != nil {
		return
	}
	e.refsMu.Lock()
	e.refs = nil
	e.refsMu.Unlock()
}

// shared runs fn once for all concurrent callers with the same key. fn runs under its own
// timeout, detached from any one caller's cancellation; each caller stops waiting when its own
// context ends.
func (c *Cache) shared(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	ch := c.flights.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(c.policyContext(context.WithoutCancel(ctx)), c.opts.Timeout)
		defer cancel()
		return fn(fctx)
	})
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Resolved is the commit a revision names.
type Resolved struct {
	SHA string // full commit SHA
	Ref string // the full ref name the revision matched ("refs/heads/main"), "" for a SHA
}

var (
	fullSHA  = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
	shortSHA = regexp.MustCompile(`^[0-9a-fA-F]{4,39}$`)
)

// Resolve returns the commit that revision names in repo now: a branch, a tag (annotated tags
// are peeled to their commit), a full ref name, HEAD (also for an empty revision), or a full or
// abbreviated commit SHA. Branch and tag lookups use one ref advertisement per repository per
// RefsTTL, shared by all callers; an abbreviated SHA needs a fetch.
func (c *Cache) Resolve(ctx context.Context, repo Repo, revision string) (Resolved, error) {
	e, err := c.entry(repo.URL)
	if err != nil {
		return Resolved{}, err
	}
	return c.resolve(ctx, e, repo, revision)
}

func (c *Cache) resolve(ctx context.Context, e *repoEntry, repo Repo, revision string) (Resolved, error) {
	rev := strings.TrimSpace(revision)
	if rev == "" {
		rev = "HEAD"
	}
	if fullSHA.MatchString(rev) {
		return Resolved{SHA: strings.ToLower(rev)}, nil
	}
	adv, err := c.advertise(ctx, e, repo)
	if err != nil {
		return Resolved{}, err
	}
	if r, ok := adv.lookup(rev); ok {
		return r, nil
	}
	if shortSHA.MatchString(rev) {
		if err := c.fetch(ctx, e, repo); err != nil {
			return Resolved{}, err
		}
		sha, err := e.resolvePrefix(rev)
		if err == nil {
			return Resolved{SHA: sha}, nil
		}
		if !errors.Is(err, ErrRevisionNotFound) {
			return Resolved{}, err
		}
	}
	return Resolved{}, &Error{Op: "resolve", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound,
		Err: fmt.Errorf("no branch, tag or commit %q; %s", rev, adv.summary())}
}

func (a *advertisement) lookup(rev string) (Resolved, bool) {
	if rev == "HEAD" {
		if sha, ok := a.refs["HEAD"]; ok {
			return Resolved{SHA: sha, Ref: a.head}, true
		}
		return Resolved{}, false
	}
	var candidates []string
	if strings.HasPrefix(rev, "refs/") {
		candidates = []string{rev}
	} else {
		candidates = []string{"refs/heads/" + rev, "refs/tags/" + rev}
	}
	for _, ref := range candidates {
		if sha, ok := a.refs[ref+"^{}"]; ok {
			return Resolved{SHA: sha, Ref: ref}, true
		}
		if sha, ok := a.refs[ref]; ok {
			return Resolved{SHA: sha, Ref: ref}, true
		}
	}
	return Resolved{}, false
}

// summary names some branches and tags, to make a "revision not found" actionable.
func (a *advertisement) summary() string {
	var branches, tags []string
	for ref := range a.refs {
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			branches = append(branches, b)
		} else if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok && !strings.HasSuffix(t, "^{}") {
			tags = append(tags, t)
		}
	}
	list := func(names []string) string {
		sort.Strings(names)
		if len(names) > 10 {
			return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
		}
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	return "branches: " + list(branches) + "; tags: " + list(tags)
}

// advertise returns the repository's refs, asking the server at most once per RefsTTL.
func (c *Cache) advertise(ctx context.Context, e *repoEntry, repo Repo) (*advertisement, error) {
	if a := e.cachedRefs(c.opts.RefsTTL); a != nil {
		return a, nil
	}
	v, err := c.shared(ctx, "ls-remote:"+e.key, func(ctx context.Context) (any, error) {
		if a := e.cachedRefs(c.opts.RefsTTL); a != nil {
			return a, nil
		}
		a, err := c.lsRemote(ctx, repo)
		if err != nil {
			return nil, err
		}
		e.refsMu.Lock()
		e.refs = a
		e.refsMu.Unlock()
		return a, nil
	})
	if err != nil {
		return nil, classifyRemote("ls-remote", repo.URL, err)
	}
	return v.(*advertisement), nil
}

func (e *repoEntry) cachedRefs(ttl time.Duration) *advertisement {
	e.refsMu.Lock()
	defer e.refsMu.Unlock()
	if e.refs != nil && ttl > 0 && time.Since(e.refs.at) < ttl {
		return e.refs
	}
	return nil
}

func (c *Cache) lsRemote(ctx context.Context, repo Repo) (*advertisement, error) {
	c.lsRemotes.Add(1)
	start := time.Now()
	tr, err := c.transportOptions(ctx, repo)
	if err != nil {
		return nil, err
	}
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{tr.url}})
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{
		Auth: tr.auth, CABundle: tr.caBundle, InsecureSkipTLS: tr.insecure, PeelingOption: gogit.AppendPeeled, ProxyOptions: tr.proxy,
		ClientCert: tr.clientCert, ClientKey: tr.clientKey,
	})
	if errors.Is(err, errEmptyRemote) {
		refs, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	a := &advertisement{at: time.Now(), refs: map[string]string{}}
	var headTarget string
	for _, r := range refs {
		switch r.Type() {
		case plumbing.HashReference:
			a.refs[r.Name().String()] = r.Hash().String()
		case plumbing.SymbolicReference:
			if r.Name() == plumbing.HEAD {
				headTarget = r.Target().String()
			}
		}
	}
	if headTarget != "" {
		a.head = headTarget
		if sha, ok := a.refs[headTarget]; ok {
			a.refs["HEAD"] = sha
		}
	}
	c.log.Debug("git ls-remote", logKeyRepo, redactURL(repo.URL), logKeyDuration, time.Since(start), "refs", len(a.refs))
	return a, nil
}

// Fetch makes sure the commit that revision names is in the cache and returns it. A repository
// is fetched only when the commit is missing, and concurrent callers share one fetch, so N
// applications on one repository cause one fetch per change.
func (c *Cache) Fetch(ctx context.Context, repo Repo, revision string) (Resolved, error) {
	e, err := c.entry(repo.URL)
	if err != nil {
		return Resolved{}, err
	}
	return c.fetchRevision(ctx, e, repo, revision)
}

func (c *Cache) fetchRevision(ctx context.Context, e *repoEntry, repo Repo, revision string) (Resolved, error) {
	r, err := c.resolve(ctx, e, repo, revision)
	if err != nil {
		return Resolved{}, err
	}
	if e.hasCommit(r.SHA) {
		return r, nil
	}
	// A fetch that was already running may have started before this commit was pushed, so a
	// miss after a shared fetch is worth one more.
	for range 2 {
		if err := c.fetch(ctx, e, repo); err != nil {
			return Resolved{}, err
		}
		if e.hasCommit(r.SHA) {
			return r, nil
		}
	}
	// Not reachable from any branch or tag: ask for the commit itself (servers allow it when
	// it is reachable, e.g. from a pull-request ref).
	if err := c.fetchCommit(ctx, e, repo, r.SHA); err == nil && e.hasCommit(r.SHA) {
		return r, nil
	}
	return Resolved{}, &Error{Op: "fetch", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound,
		Err: fmt.Errorf("commit %s (from %q) is not in the repository", r.SHA, revision)}
}

func (e *repoEntry) hasCommit(sha string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return false
	}
	_, err = r.CommitObject(plumbing.NewHash(sha))
	return err == nil
}

func (e *repoEntry) resolvePrefix(prefix string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return "", err
	}
	h, err := r.ResolveRevision(plumbing.Revision(strings.ToLower(prefix)))
	if err != nil {
		return "", &Error{Op: "resolve", Kind: ErrRevisionNotFound, Err: err}
	}
	return h.String(), nil
}

var fetchRefSpecs = []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}

// fetch brings every branch and tag of the repository into the cache, once for all concurrent
// callers.
func (c *Cache) fetch(ctx context.Context, e *repoEntry, repo Repo) error {
	_, err := c.shared(ctx, "fetch:"+e.key, func(ctx context.Context) (any, error) {
		return nil, c.doFetch(ctx, e, repo, fetchRefSpecs, true)
	})
	return classifyRemote("fetch", repo.URL, err)
}

func (c *Cache) fetchCommit(ctx context.Context, e *repoEntry, repo Repo, sha string) error {
	_, err := c.shared(ctx, "fetch:"+e.key+":"+sha, func(ctx context.Context) (any, error) {
		return nil, c.doFetch(ctx, e, repo, []config.RefSpec{config.RefSpec(sha + ":refs/freshet/commits/" + sha)}, false)
	})
	return classifyRemote("fetch", repo.URL, err)
}

func (c *Cache) doFetch(ctx context.Context, e *repoEntry, repo Repo, specs []config.RefSpec, prune bool) error {
	tr, err := c.transportOptions(ctx, repo)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return err
	}
	c.fetches.Add(1)
	start := time.Now()
	remote := gogit.NewRemote(r.Storer, &config.RemoteConfig{Name: "origin", URLs: []string{tr.url}})
	err = remote.FetchContext(ctx, &gogit.FetchOptions{
		RefSpecs: specs, Auth: tr.auth, CABundle: tr.caBundle, InsecureSkipTLS: tr.insecure, ProxyOptions: tr.proxy,
		ClientCert: tr.clientCert, ClientKey: tr.clientKey,
		Force: true, Prune: prune, Tags: gogit.NoTags,
	})
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) || errors.Is(err, errEmptyRemote) {
		err = nil
	}
	c.log.Debug("git fetch", logKeyRepo, redactURL(repo.URL), logKeyDuration, time.Since(start), "error", err)
	return err
}
