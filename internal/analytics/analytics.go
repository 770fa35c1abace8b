// Package analytics is the consuming half of the event bus: durable consumers (Handler) derive
// deployment records, applications' health history and daily activity counts from the events
// runtimes and the API publish, and the Service answers deployment listings and the four DORA
// metrics from them, computed in SQL on SQLite and PostgreSQL. Rebuild derives the same tables
// again from the source tables. Definitions: docs/analytics.md.
package analytics

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Defaults.
const (
	// DefaultFailureWindow is how long after a deployment a transition to Degraded, or a
	// rollback, makes it a failed change.
	DefaultFailureWindow = time.Hour
	// DefaultRange is the range of a DORA query without Since.
	DefaultRange = 30 * 24 * time.Hour
	// MaxRange bounds a DORA query's range.
	MaxRange = 366 * 24 * time.Hour
)

// Triggers of a deployment.
const (
	TriggerAutoSync = "auto-sync"
	TriggerManual   = "manual"
	TriggerRollback = "rollback"
)

// Results of a deployment.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
)

// Failure kinds: what makes a deployment a failed change (Query.Failures).
const (
	FailureSyncFailed = "sync-failed"
	FailureDegraded   = "degraded"
	FailureRollback   = "rollback"
)

// Buckets of a DORA series.
const (
	BucketDay   = "day"
	BucketWeek  = "week"
	BucketMonth = "month"
)

// Bands of the DORA metrics (docs/analytics.md gives the thresholds). BandNone: no data.
const (
	BandElite  = "elite"
	BandHigh   = "high"
	BandMedium = "medium"
	BandLow    = "low"
	BandNone   = "none"
)

// Deployment is one change that reached an environment: a finished sync (not a dry run) of a
// GitOps application.
type Deployment struct {
	ID          string
	RuntimeID   string
	Runtime     string
	Application string
	Project     string
	Cluster     string // the destination cluster's name, else its server URL
	Namespace   string
	Revision    string
	SyncID      int64
	Trigger     string // TriggerAutoSync, TriggerManual, TriggerRollback
	InitiatedBy string // as the runtime reported it: automated, selfHeal, user, rollback
	User        string
	Result      string // ResultSucceeded, ResultFailed
	Message     string
	Commit      Commit
	Images      []Image
	// Range is what the runtime reported the deployment brought from the application's source
	// repository (git log previous..revision); nil for runtimes that do not report it.
	Range *CommitRange
	// Commits are the deployment's commits from both sources, each SHA once: the range's
	// (newest first), then the images' build commits not in it. Filled in when deployments
	// are read.
	Commits    []DeployedCommit
	StartedAt  time.Time
	FinishedAt time.Time
	Duration   time.Duration
	// LeadTime is from the revision's commit to the finished deployment; -1 when the commit's
	// time is unknown.
	LeadTime time.Duration
	// DegradedAt is when the application turned Degraded within the failure window after this
	// deployment (before the next one); zero if it did not.
	DegradedAt time.Time
	// RolledBackAt is when the next deployment, within the failure window, rolled this one back.
	RolledBackAt time.Time
}

// Commit is the deployed revision's commit, where the runtime knew it.
type Commit struct {
	Author, Message string
	Time            time.Time
}

// Sources of a DeployedCommit.
const (
	// CommitSourceGit: the runtime's walk of the source repository between the previous
	// deployment's revision and this one.
	CommitSourceGit = "git"
	// CommitSourceImage: a deployed image's build commit (image enrichment).
	CommitSourceImage = "image"
)

// CommitRange is the commits a runtime reported with a deployment, as stored with the record.
// Kind is runtimev1's: range, first, rollback or unchanged.
type CommitRange struct {
	Kind      string        `json:"kind"`
	From      string        `json:"from,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	Commits   []RangeCommit `json:"commits"`
}

// RangeCommit is one commit of a CommitRange, with the issue keys its message names
// (images.ParseKeys).
type RangeCommit struct {
	SHA        string    `json:"sha"`
	Author     string    `json:"author,omitempty"`
	Message    string    `json:"message,omitempty"`
	AuthorTime time.Time `json:"authorTime,omitzero"`
	Time       time.Time `json:"time,omitzero"`
	Issues     []string  `json:"issues,omitempty"`
}

// DeployedCommit is a commit a deployment shipped, with where Freshet learnt of it (Sources:
// CommitSourceGit, CommitSourceImage or both) and the issue keys its message names.
type DeployedCommit struct {
	SHA, Author, Message string
	AuthorTime, Time     time.Time
	Issues               []string
	Sources              []string
}

// Image is an image a CI build pushed for the deployed revision. Commits and Issues are what
// the reported images of its digest were built from (image enrichment); they are filled in
// when deployments are read, not stored with the record, so a report that arrives after the
// deployment shows too.
type Image struct {
	Registry   string   `json:"registry,omitempty"`
	Repository string   `json:"repository"`
	Tags       []string `json:"tags,omitempty"`
	Digest     string   `json:"digest"`
	BuildID    string   `json:"buildId,omitempty"`

	Commits []images.Commit `json:"-"`
	Issues  []images.Issue  `json:"-"`
}

// Origins links images to what they were built from: the reported images of each digest.
// *images.Service implements it.
type Origins interface {
	Origins(ctx context.Context, accountID string, digests []string) (map[string][]images.Image, error)
}

var _ Origins = (*images.Service)(nil)

// Filter narrows deployments and DORA metrics. Zero fields do not filter.
type Filter struct {
	App     string
	Runtime string // ID or name
	Cluster string // name or server URL
	// Apps, when AppsSet, limits to these applications — a product's, which the API resolves
	// through the products service — and an empty set selects nothing. At most MaxApps.
	Apps    []AppRef
	AppsSet bool
	Since   time.Time
	Until   time.Time
}

// AppRef is an application by its runtime's ID and its name.
type AppRef struct{ RuntimeID, App string }

// MaxApps bounds Filter.Apps.
const MaxApps = store.MaxFilterApps

func (f Filter) store() store.DeploymentFilter {
	out := store.DeploymentFilter{App: f.App, Runtime: f.Runtime, Cluster: f.Cluster, Since: f.Since, Until: f.Until, AppsSet: f.AppsSet}
	for _, a := range f.Apps {
		out.Apps = append(out.Apps, store.AppRef{RuntimeID: a.RuntimeID, App: a.App})
	}
	return out
}

// Service answers analytics queries.
type Service struct {
	db      Store
	origins Origins
	log     *slog.Logger
	window  time.Duration
}

// Deps are what the Service needs.
type Deps struct {
	Store Store
	Log   *slog.Logger
	// FailureWindow is DefaultFailureWindow when zero.
	FailureWindow time.Duration
	// Origins, when set, adds to deployments' images the commits and issues they were built
	// from.
	Origins Origins
}

// New returns the analytics service.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.FailureWindow <= 0 {
		d.FailureWindow = DefaultFailureWindow
	}
	return &Service{db: d.Store, origins: d.Origins, log: d.Log, window: d.FailureWindow}
}

// FailureWindow is the window after a deployment in which degraded health or a rollback makes
// it a failed change.
func (s *Service) FailureWindow() time.Duration { return s.window }

// ListDeployments returns the principal's account's deployments that f selects, newest first.
func (s *Service) ListDeployments(ctx context.Context, p rbac.Principal, f Filter, page paging.Page) ([]Deployment, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	rows, err := s.db.ListDeployments(ctx, p.AccountID, f.store(), page)
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	out := make([]Deployment, 0, len(rows))
	for _, r := range rows {
		d, err := deploymentFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := s.enrich(ctx, p.AccountID, out); err != nil {
		return nil, err
	}
	return out, nil
}

// enrich adds to ds' images the commits and issues of the reported images with their digests:
// each commit once (by SHA), each issue once (by key), in report order.
func (s *Service) enrich(ctx context.Context, accountID string, ds []Deployment) error {
	defer func() {
		for i := range ds {
			ds[i].Commits = mergeCommits(ds[i])
		}
	}()
	if s.origins == nil {
		return nil
	}
	var digests []string
	seen := map[string]bool{}
	for _, d := range ds {
		for _, im := range d.Images {
			if !seen[im.Digest] {
				seen[im.Digest] = true
				digests = append(digests, im.Digest)
			}
		}
	}
	if len(digests) == 0 {
		return nil
	}
	by, err := s.origins.Origins(ctx, accountID, digests)
	if err != nil {
		return fmt.Errorf("deployments' images: %w", err)
	}
	for i := range ds {
		for j := range ds[i].Images {
			im := &ds[i].Images[j]
			im.Commits, im.Issues = []images.Commit{}, []images.Issue{}
			shas, keys := map[string]bool{}, map[string]bool{}
			for _, o := range by[im.Digest] {
				if c := o.Commit; c.SHA != "" && !shas[c.SHA] {
					shas[c.SHA] = true
					im.Commits = append(im.Commits, c)
				}
				for _, is := range o.Issues {
					if !keys[is.Key] {
						keys[is.Key] = true
						im.Issues = append(im.Issues, is)
					}
				}
			}
		}
	}
	return nil
}

// mergeCommits is d's commits from its range and its images' build commits, each SHA once
// (a short SHA matches the full one it starts), the range's first.
func mergeCommits(d Deployment) []DeployedCommit {
	out := []DeployedCommit{}
	find := func(sha string) int {
		for i, c := range out {
			if sha != "" && (strings.HasPrefix(c.SHA, sha) || strings.HasPrefix(sha, c.SHA)) {
				return i
			}
		}
		return -1
	}
	if d.Range != nil {
		for _, c := range d.Range.Commits {
			if find(c.SHA) >= 0 {
				continue
			}
			out = append(out, DeployedCommit{SHA: c.SHA, Author: c.Author, Message: c.Message, AuthorTime: c.AuthorTime, Time: c.Time,
				Issues: append([]string{}, c.Issues...), Sources: []string{CommitSourceGit}})
		}
	}
	for _, im := range d.Images {
		for _, c := range im.Commits {
			if c.SHA == "" {
				continue
			}
			if i := find(c.SHA); i >= 0 {
				if !slices.Contains(out[i].Sources, CommitSourceImage) {
					out[i].Sources = append(out[i].Sources, CommitSourceImage)
				}
				if len(c.SHA) > len(out[i].SHA) {
					out[i].SHA = c.SHA
				}
				continue
			}
			keys := images.ParseKeys(c.Message)
			if keys == nil {
				keys = []string{}
			}
			out = append(out, DeployedCommit{SHA: c.SHA, Author: c.Author, Message: c.Message, Time: c.Time, Issues: keys, Sources: []string{CommitSourceImage}})
		}
	}
	return out
}

func deploymentFromRow(r store.Deployment) (Deployment, error) {
	d := Deployment{ID: r.ID, RuntimeID: r.RuntimeID, Runtime: r.Runtime, Application: r.App, Project: r.Project, Cluster: r.Cluster,
		Namespace: r.Namespace, Revision: r.Revision, SyncID: r.SyncID, Trigger: r.Trigger, InitiatedBy: r.InitiatedBy, User: r.User,
		Result: r.Result, Message: r.Message, Commit: Commit{Author: r.CommitAuthor, Message: r.CommitMessage, Time: r.CommitTime},
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, LeadTime: r.LeadTime, DegradedAt: r.DegradedAt, RolledBackAt: r.RolledBackAt}
	if !r.StartedAt.IsZero() && r.FinishedAt.After(r.StartedAt) {
		d.Duration = r.FinishedAt.Sub(r.StartedAt)
	}
	if r.Images != "" {
		if err := json.Unmarshal([]byte(r.Images), &d.Images); err != nil {
			return Deployment{}, fmt.Errorf("deployment %s: decode images: %w", r.ID, err)
		}
	}
	if r.Commits != "" {
		d.Range = &CommitRange{}
		if err := json.Unmarshal([]byte(r.Commits), d.Range); err != nil {
			return Deployment{}, fmt.Errorf("deployment %s: decode commits: %w", r.ID, err)
		}
	}
	d.Commits = mergeCommits(d)
	return d, nil
}

// ParseTime reads a time given as RFC 3339, or as a duration ago: Go's (36h, 90m) or whole
// days and weeks (30d, 2w). field names it in the error.
func ParseTime(field, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	bad := errdefs.Invalid(field, s, "is not a time: use RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (36h, 30d, 2w)")
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		v, err := strconv.Atoi(s[:n-1])
		if err != nil || v < 0 || v > 10000 {
			return time.Time{}, bad
		}
		unit := 24 * time.Hour
		if s[n-1] == 'w' {
			unit *= 7
		}
		return now.Add(-time.Duration(v) * unit), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, bad
	}
	return now.Add(-d), nil
}

// deploymentID is the ID of the deployment with event identity key that finished at t: 48
// bits of t's milliseconds, then 80 bits of the key's SHA-256, in the store's ID alphabet. IDs
// sort by finish time, and the same sync derived twice gets the same ID.
func deploymentID(key string, t time.Time) string {
	const crockford = "0123456789abcdefghjkmnpqrstvwxyz"
	sum := sha256.Sum256([]byte(key))
	ms := max(t.UnixMilli(), 0)
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16|uint64(binary.BigEndian.Uint16(sum[0:2])))
	copy(b[8:], sum[2:10])
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return PrefixDeployment + "_" + string(out[:])
}

// PrefixDeployment is the ID prefix of deployments.
const PrefixDeployment = "dep"

// trigger maps a sync's initiator to the deployment's trigger.
func trigger(initiatedBy string) string {
	switch strings.ToLower(initiatedBy) {
	case "rollback":
		return TriggerRollback
	case "user", "manual":
		return TriggerManual
	}
	return TriggerAutoSync
}

// result maps a sync's phase to the deployment's result.
func result(phase string) string {
	if phase == "Succeeded" {
		return ResultSucceeded
	}
	return ResultFailed
}
