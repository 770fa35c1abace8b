// Package images is image enrichment: images reported by CI builds (their runners report what
// they pushed) or through the API (modelled on Codefresh's report-image), each linked to the
// commit it was built from and to the issues and pull requests that commit names — keys parsed
// from the commit message and the branch name, or given with the report — with titles fetched
// through the account's issue-tracker integrations (Jira, GitHub, GitLab). Deployments find what
// they shipped through their images' digests (Origins). See docs/analytics.md, "Images".
package images

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/repourl"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// Bounds and timings.
const (
	maxTags       = 100
	maxMessage    = 2000
	maxBranch     = 255
	maxRepoURL    = 2048
	commitTimeout = 20 * time.Second
	// DefaultIssueTTL is how long a fetched issue is shown without asking its tracker again;
	// a failed fetch is tried again after DefaultIssueRetry.
	DefaultIssueTTL   = time.Hour
	DefaultIssueRetry = 5 * time.Minute
	// maxFetches bounds the issues one request fetches from trackers; the rest are shown
	// without a title until a later request.
	maxFetches = 20
)

// Image is a reported image with the commit it was built from and the issues that commit names.
type Image struct {
	ID         string
	Registry   string // the registry host (API reports) or registry context (builds)
	Repository string // the full repository, registry host included
	Digest     string
	Tags       []string
	BuildID    string // the build whose runner reported it; empty for an API report
	Commit     Commit
	Issues     []Issue
	ReportedBy string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Commit is the commit an image was built from, as far as the reports said.
type Commit struct {
	SHA, Branch, RepoURL, Message, Author string
	Time                                  time.Time
}

// Issue is an issue or pull request a commit names, with what its tracker answered (Title empty
// when no tracker is configured for it or it did not answer; Error says why).
type Issue struct {
	Key     string
	Tracker string
	Kind    string // issue, pull-request
	Title   string
	State   string
	URL     string
	Error   string
}

// Report is a report-image call.
type Report struct {
	Image   string   // the reference, [registry/]repository[:tag][@digest]
	Digest  string   // required unless Image carries it
	Tags    []string // more tags than Image's
	Commit  string   // the git commit SHA the image was built from
	Branch  string
	RepoURL string
	Message string   // the commit message; read from RepoURL when empty
	Issues  []string // issue keys given explicitly
}

// Store is the database the Service works on. *store.DB implements it.
type Store interface {
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error
	ListImageReports(ctx context.Context, accountID string, f store.ImageReportFilter, p paging.Page) ([]store.ImageReport, error)
	ImageReportsByDigest(ctx context.Context, accountID string, digests []string) ([]store.ImageReport, error)
	ListIssueTrackers(ctx context.Context, accountID string) ([]store.IssueTracker, error)
	Issues(ctx context.Context, accountID string, keys []string) ([]store.Issue, error)
	PutIssue(ctx context.Context, is store.Issue) error
}

var _ Store = (*store.DB)(nil)

// CommitReader reads a commit's message, author and time from a repository (the server's git
// cache under the operator's network policy).
type CommitReader interface {
	ReadCommit(ctx context.Context, repoURL, sha string) (message, author string, at time.Time, err error)
}

// Service records reported images and answers what they link to.
type Service struct {
	db      Store
	audit   *audit.Log
	keys    *secrets.Keyring
	net     *netpolicy.Policy
	commits CommitReader
	log     *slog.Logger
	now     func() time.Time
	ttl     time.Duration
}

// Deps are what the Service needs.
type Deps struct {
	Store Store
	// Audit records report-image calls and tracker changes; nil: a log on Store (when it can
	// hold one), else calls that fail are not recorded.
	Audit *audit.Log
	// Keys encrypt the trackers' tokens.
	Keys *secrets.Keyring
	// Net checks trackers' URLs and connects to them; nil allows every address.
	Net *netpolicy.Policy
	// Commits, when set, reads the message of a reported commit the report did not give.
	Commits CommitReader
	Log     *slog.Logger
	// Now is time.Now when nil.
	Now func() time.Time
	// IssueTTL is DefaultIssueTTL when zero.
	IssueTTL time.Duration
}

// New returns the image service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.IssueTTL <= 0 {
		d.IssueTTL = DefaultIssueTTL
	}
	if d.Net == nil {
		d.Net = netpolicy.Unrestricted()
	}
	if as, ok := d.Store.(audit.Store); ok && d.Audit == nil {
		d.Audit = audit.NewLog(as, d.Log)
	}
	return &Service{db: d.Store, audit: d.Audit, keys: d.Keys, net: d.Net, commits: d.Commits, log: d.Log, now: d.Now, ttl: d.IssueTTL}
}

// validate checks r and turns it into the row to store. Every problem is errdefs.ErrInvalid
// naming the field.
func validate(r Report) (store.ImageReport, error) {
	ref, err := ParseRef("image", r.Image)
	if err != nil {
		return store.ImageReport{}, err
	}
	digest := r.Digest
	switch {
	case digest == "" && ref.Digest == "":
		return store.ImageReport{}, errdefs.Invalid("digest", "", "is required: give the image's manifest digest (sha256:…), or put it in image after '@'")
	case digest == "":
		digest = ref.Digest
	default:
		if err := ValidDigest("digest", digest); err != nil {
			return store.ImageReport{}, err
		}
		if ref.Digest != "" && ref.Digest != digest {
			return store.ImageReport{}, errdefs.Invalid("digest", digest, "differs from the digest in image ("+ref.Digest+")")
		}
	}
	row := store.ImageReport{Registry: ref.Registry, Repository: ref.Name(), Digest: digest}
	if ref.Tag != "" {
		row.Tags = append(row.Tags, ref.Tag)
	}
	if len(r.Tags) > maxTags {
		return store.ImageReport{}, errdefs.Invalid("tags", strconv.Itoa(len(r.Tags)), fmt.Sprintf("are more than %d tags", maxTags))
	}
	for i, t := range r.Tags {
		if !validTag(t) {
			return store.ImageReport{}, errdefs.Invalid(fmt.Sprintf("tags[%d]", i), t, "is not an image tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'")
		}
		row.Tags = union(row.Tags, []string{t})
	}
	if r.Commit != "" {
		if !validSHA(r.Commit) {
			return store.ImageReport{}, errdefs.Invalid("commit", r.Commit, "is not a git commit SHA: give 7 to 64 hex digits")
		}
		row.SHA = strings.ToLower(r.Commit)
	}
	if len(r.Branch) > maxBranch || strings.ContainsFunc(r.Branch, isControl) || strings.Contains(r.Branch, "..") {
		return store.ImageReport{}, errdefs.Invalid("branch", r.Branch, fmt.Sprintf("is not a branch name: at most %d characters, no control characters or '..'", maxBranch))
	}
	row.Branch = strings.TrimPrefix(r.Branch, "refs/heads/")
	if r.RepoURL != "" {
		if len(r.RepoURL) > maxRepoURL {
			return store.ImageReport{}, errdefs.Invalid("repoUrl", r.RepoURL, "is too long")
		}
		if _, err := repourl.Parse(r.RepoURL); err != nil {
			return store.ImageReport{}, errdefs.Invalid("repoUrl", r.RepoURL, "is not a git repository URL")
		}
		row.RepoURL = repourl.Redact(r.RepoURL)
	}
	row.CommitMessage = truncate(r.Message, maxMessage)
	if len(r.Issues) > MaxKeys {
		return store.ImageReport{}, errdefs.Invalid("issues", strconv.Itoa(len(r.Issues)), fmt.Sprintf("are more than %d issue keys", MaxKeys))
	}
	for i, k := range r.Issues {
		key, err := ParseKey(fmt.Sprintf("issues[%d]", i), k)
		if err != nil {
			return store.ImageReport{}, err
		}
		row.Issues = union(row.Issues, []string{key.String()})
	}
	return row, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func validSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// ReportImage records an image reported by a CI system, as p. Its issue keys are the ones
// given, then those in the commit message (read from the repository when not given) and in
// the branch name; #123 keys are resolved to the commit's repository. A second report of the
// same repository and digest merges into the first. Issue titles are fetched before it returns
// (a tracker that does not answer leaves the issue without a title, and does not fail the
// report).
func (s *Service) ReportImage(ctx context.Context, p rbac.Principal, r Report) (_ Image, err error) {
	e := audit.Start(ctx, p, "image.report", "image", "")
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.RunPipelines); err != nil {
		return Image{}, err
	}
	row, err := validate(r)
	if err != nil {
		return Image{}, err
	}
	e.Detail("%s@%s", row.Repository, row.Digest)
	if row.CommitMessage == "" && row.SHA != "" && r.RepoURL != "" && s.commits != nil {
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		msg, author, at, err := s.commits.ReadCommit(cctx, r.RepoURL, row.SHA)
		cancel()
		if err != nil {
			s.log.Info("report image: commit not read", "repo", row.RepoURL, "sha", row.SHA, "err", err)
		} else {
			row.CommitMessage, row.CommitAuthor, row.CommitTime = truncate(msg, maxMessage), author, at
		}
	}
	row.Issues = Resolve(union(row.Issues, union(ParseKeys(row.CommitMessage), BranchKeys(row.Branch))), row.RepoURL)
	if len(row.Issues) > MaxKeys {
		row.Issues = row.Issues[:MaxKeys]
	}
	now := s.now().UTC()
	row.ID, row.AccountID, row.ReportedBy, row.CreatedAt, row.UpdatedAt = store.NewID(store.PrefixImageReport), p.AccountID, p.Email, now, now
	var stored store.ImageReport
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if stored, _, err = tx.PutImageReport(ctx, row); err != nil {
			return err
		}
		e.Resource(stored.ID)
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Image{}, fmt.Errorf("report image: %w", err)
	}
	out, err := s.enrich(ctx, p.AccountID, []store.ImageReport{stored})
	if err != nil {
		return Image{}, err
	}
	return out[0], nil
}

// ImageFilter narrows ListImages. Zero fields do not filter.
type ImageFilter struct {
	Repository string
	Digest     string
	Commit     string
}

// ListImages returns p's account's reported images (by builds and through the API), newest
// first, with their commits and issues.
func (s *Service) ListImages(ctx context.Context, p rbac.Principal, f ImageFilter, page paging.Page) ([]Image, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	if f.Digest != "" {
		if err := ValidDigest("digest", f.Digest); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.ListImageReports(ctx, p.AccountID, store.ImageReportFilter{Repository: f.Repository, Digest: f.Digest, SHA: strings.ToLower(f.Commit)}, page)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	return s.enrich(ctx, p.AccountID, rows)
}

// Origins returns, for account's images with one of digests, what built them: the reported
// images with their commits and issues, by digest. It is how deployment records show what
// they shipped; its caller has authorised the read.
func (s *Service) Origins(ctx context.Context, accountID string, digests []string) (map[string][]Image, error) {
	if len(digests) == 0 {
		return map[string][]Image{}, nil
	}
	rows, err := s.db.ImageReportsByDigest(ctx, accountID, digests)
	if err != nil {
		return nil, fmt.Errorf("images by digest: %w", err)
	}
	ims, err := s.enrich(ctx, accountID, rows)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]Image, len(ims))
	for _, im := range ims {
		out[im.Digest] = append(out[im.Digest], im)
	}
	return out, nil
}

// enrich turns rows into Images with their issues as the trackers answered, fetching the
// issues not known yet or stale (at most maxFetches).
func (s *Service) enrich(ctx context.Context, accountID string, rows []store.ImageReport) ([]Image, error) {
	var keys []string
	for _, r := range rows {
		keys = union(keys, r.Issues)
	}
	issues, err := s.issues(ctx, accountID, keys)
	if err != nil {
		return nil, err
	}
	out := make([]Image, 0, len(rows))
	for _, r := range rows {
		im := Image{ID: r.ID, Registry: r.Registry, Repository: r.Repository, Digest: r.Digest, Tags: nonNil(r.Tags), BuildID: r.BuildID,
			Commit:     Commit{SHA: r.SHA, Branch: r.Branch, RepoURL: r.RepoURL, Message: r.CommitMessage, Author: r.CommitAuthor, Time: r.CommitTime},
			ReportedBy: r.ReportedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Issues: []Issue{}}
		for _, k := range r.Issues {
			im.Issues = append(im.Issues, issues[k])
		}
		out = append(out, im)
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// union returns a followed by the elements of b it does not hold.
func union(a, b []string) []string {
	out := a
	for _, x := range b {
		dup := false
		for _, y := range out {
			dup = dup || x == y
		}
		if !dup {
			out = append(out, x)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Truncate shortens a commit message to what a report stores.
func Truncate(msg string) string { return truncate(msg, maxMessage) }

// finish writes e as denied or failed when the call failed (see audit.Log.Finish).
func (s *Service) finish(ctx context.Context, e *audit.Entry, err error) {
	if s.audit != nil {
		s.audit.Finish(ctx, e, err)
	}
}
