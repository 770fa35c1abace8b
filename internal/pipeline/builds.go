package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// RunInput starts a build.
type RunInput struct {
	Branch        string
	SHA           string
	Repo          string // owner/name
	CommitMessage string
	CommitAuthor  string
	Variables     map[string]string
	TriggerType   string // manual (default), git, cron
	TriggerID     string
	RestartOf     string
	// DedupKey, when set, makes the build once per (TriggerID, DedupKey): a second queue with
	// the same key queues nothing and returns ErrDuplicate with the first build. The record is
	// written in the build's own transaction, so a crash cannot leave one without the other.
	DedupKey string
	// PayloadDigest, when set with DedupKey, also makes the build once per (TriggerID,
	// PayloadDigest): a webhook payload replayed under another delivery id is a duplicate too.
	PayloadDigest string
}

// ErrDuplicate is returned (wrapped in a *DuplicateError) when a build was already queued for
// the same trigger and dedup key.
var ErrDuplicate = fmt.Errorf("already queued: %w", errdefs.ErrConflict)

// DuplicateError names the build an earlier delivery queued.
type DuplicateError struct{ BuildID string }

func (e *DuplicateError) Error() string { return "already queued as build " + e.BuildID }
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// Run queues a build of the pipeline named by ref (ID or project/name).
func (s *Service) Run(ctx context.Context, p rbac.Principal, ref string, in RunInput) (_ Build, err error) {
	e := audit.Start(ctx, p, "build.run", "build", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.RunPipelines); err != nil {
		return Build{}, err
	}
	pl, err := s.resolvePipeline(ctx, p.AccountID, ref)
	if err != nil {
		return Build{}, err
	}
	if err := rbac.Authorize(p, rbac.ActRun, pipelineResource(pl)); err != nil {
		return Build{}, err
	}
	if in.TriggerType == "" {
		in.TriggerType = "manual"
	}
	return s.queue(ctx, pl, in, p.Actor(), e)
}

// queue creates a queued build of pl and records e in the same transaction.
func (s *Service) queue(ctx context.Context, pl store.Pipeline, in RunInput, by string, e *audit.Entry) (Build, error) {
	for k := range in.Variables {
		if !varNameRE.MatchString(k) {
			return Build{}, errdefs.Invalid("variables", k, "is not a variable name: use letters, digits and '_', not starting with a digit")
		}
	}
	if len(in.SHA) > 64 || len(in.Branch) > 255 {
		return Build{}, errdefs.Invalid("branch", in.Branch, "is too long")
	}
	cfg, err := decodeConfig(pl)
	if err != nil {
		return Build{}, err
	}
	now := s.now()
	specYAML, reason := pl.SpecYAML, ""
	if pl.SpecRepo != "" {
		rev := in.SHA
		if rev == "" {
			rev = in.Branch
		}
		data, sha, err := s.readSpec(ctx, pl.AccountID, pl.SpecRepo, pl.SpecPath, cfg.SpecContext, rev)
		if err != nil {
			reason = err.Error() // the build is recorded as failed: a push with a broken spec is visible
		} else {
			specYAML = data
			if in.SHA == "" {
				in.SHA = sha
			}
		}
	}
	b := store.Build{
		ID: store.NewID(store.PrefixBuild), AccountID: pl.AccountID, PipelineID: pl.ID, Status: StatusQueued,
		TriggerType: in.TriggerType, TriggerID: in.TriggerID, TriggeredBy: by, Repo: in.Repo, Branch: in.Branch, SHA: in.SHA,
		CommitMessage: in.CommitMessage, CommitAuthor: in.CommitAuthor, Variables: encodeJSON(orEmpty(in.Variables)),
		SpecYAML: specYAML, Labels: encodeJSON(orEmpty(cfg.RunnerLabels)), RestartOf: in.RestartOf, CreatedAt: now,
	}
	// The planned steps, pending, so a build shows its shape before a runner takes it. The plan
	// is made before the transaction: typed plugin steps are read from the step catalogue. A
	// deploy or helm step that names a cluster context the pipeline may not use refuses the
	// build before it starts: it is recorded as failed, naming the step and the context.
	var planned []runnerv1.StepState
	if reason == "" {
		if p, _, err := s.compileSpec(ctx, b.SpecYAML); err != nil {
			reason = err.Error() // a step catalogue that changed or cannot be read: visible on the build
		} else if err := s.checkClusters(ctx, pl.AccountID, cfg, p); err != nil {
			if !errors.Is(err, ErrClusterNotAllowed) {
				return Build{}, err
			}
			reason = err.Error()
		} else {
			planned = plannedSteps(p)
		}
	}
	if reason != "" {
		b.Status, b.Reason, b.FinishedAt = StatusFailed, reason, now
	}
	e.Resource(b.ID)
	var older []store.Build
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if cfg.TerminateOlder && b.Branch != "" {
			active, err := tx.ActiveBuilds(ctx, pl.AccountID, pl.ID)
			if err != nil {
				return err
			}
			for _, o := range active {
				if o.Branch == b.Branch {
					older = append(older, o)
				}
			}
		}
		if b.Status == StatusQueued {
			// A build that would run needs build minutes left this month.
			if err := s.admit(ctx, tx, pl.AccountID, billing.BuildMinutes); err != nil {
				return err
			}
		}
		if err := tx.CreateBuild(ctx, &b); err != nil {
			return err
		}
		// The planned steps, pending, so a build shows its shape before a runner takes it.
		if b.Status == StatusQueued {
			for _, st := range planned {
				if err := tx.UpsertStep(ctx, store.BuildStep{BuildID: b.ID, Name: st.Name, Stage: st.Stage, Position: st.Position, Status: st.Status}); err != nil {
					return err
				}
			}
		}
		if in.DedupKey != "" {
			prev, err := tx.RecordDelivery(ctx, store.Delivery{TriggerID: in.TriggerID, DeliveryID: in.DedupKey, PayloadDigest: in.PayloadDigest, BuildID: b.ID, CreatedAt: now})
			if errors.Is(err, errdefs.ErrConflict) {
				return &DuplicateError{BuildID: prev}
			}
			if err != nil {
				return err
			}
		}
		e.Detail("pipeline %s build #%d branch %q by %s", pl.Name, b.Number, b.Branch, in.TriggerType)
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Build{}, err
	}
	for _, o := range older {
		if err := s.terminate(ctx, o, fmt.Sprintf("terminated by newer build #%d of branch %s", b.Number, b.Branch)); err != nil {
			s.log.Warn("terminate older build", "build", o.ID, "err", err)
		}
	}
	s.queued()
	return toBuild(b, fullName(pl), nil)
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// GetBuild returns a build of p's account with its steps.
func (s *Service) GetBuild(ctx context.Context, p rbac.Principal, id string) (Build, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return Build{}, err
	}
	b, err := s.db.GetBuild(ctx, p.AccountID, id)
	if err != nil {
		return Build{}, err
	}
	if err := s.authorizeBuild(ctx, p, rbac.ActRead, b); err != nil {
		return Build{}, err
	}
	steps, err := s.db.ListSteps(ctx, b.ID)
	if err != nil {
		return Build{}, err
	}
	names, err := s.db.PipelineNames(ctx, b.AccountID, []string{b.PipelineID})
	if err != nil {
		return Build{}, err
	}
	imgs, err := s.db.ListBuildImages(ctx, b.AccountID, b.ID)
	if err != nil {
		return Build{}, err
	}
	out, err := toBuild(b, names[b.PipelineID], steps)
	if err != nil {
		return Build{}, err
	}
	for _, im := range imgs {
		out.Images = append(out.Images, toImage(im))
	}
	return out, nil
}

// ListBuilds lists builds newest first, without their steps.
func (s *Service) ListBuilds(ctx context.Context, p rbac.Principal, f BuildFilter, page paging.Page) ([]Build, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	sf := store.BuildFilter{Status: f.Status, Branch: f.Branch}
	if f.Pipeline != "" {
		pl, err := s.resolvePipeline(ctx, p.AccountID, f.Pipeline)
		if err != nil {
			return nil, err
		}
		sf.PipelineID = pl.ID
	}
	tags := map[string]rbac.Attributes{} // of pipelines, read once each
	rows, err := visiblePage(page, func(pg paging.Page) ([]store.Build, error) { return s.db.ListBuilds(ctx, p.AccountID, sf, pg) },
		func(r store.Build) string { return r.ID },
		func(rows []store.Build) ([]store.Build, error) {
			if !p.Bound(rbac.KindBuilds) {
				return rows, nil
			}
			out := rows[:0]
			for _, b := range rows {
				t, ok := tags[b.PipelineID]
				if !ok {
					res, err := s.buildResource(ctx, p, b)
					if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
						return nil, err
					}
					t, tags[b.PipelineID] = res.Attrs, res.Attrs
				}
				if rbac.Visible(p, rbac.Resource{Kind: rbac.KindBuilds, Name: b.ID, Attrs: t}) {
					out = append(out, b)
				}
			}
			return out, nil
		})
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, b := range rows {
		if !seen[b.PipelineID] {
			seen[b.PipelineID] = true
			ids = append(ids, b.PipelineID)
		}
	}
	names, err := s.db.PipelineNames(ctx, p.AccountID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Build, len(rows))
	for i, r := range rows {
		if out[i], err = toBuild(r, names[r.PipelineID], nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Cancel terminates a build: a queued one at once, a running one by telling its runner, which
// kills the running step and reports it terminated.
func (s *Service) Cancel(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "build.cancel", "build", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.RunPipelines); err != nil {
		return err
	}
	b, err := s.db.GetBuild(ctx, p.AccountID, id)
	if err != nil {
		return err
	}
	if err := s.authorizeBuild(ctx, p, rbac.ActTerminate, b); err != nil {
		return err
	}
	if !Active(b.Status) {
		return fmt.Errorf("build %s is already %s: %w", id, b.Status, errdefs.ErrConflict)
	}
	if err := s.terminate(ctx, b, "terminated by "+p.Actor()); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error { return e.Commit(ctx, tx) })
}

// terminate ends a queued build now and asks the runner of a running one to stop it.
func (s *Service) terminate(ctx context.Context, b store.Build, reason string) error {
	ok, err := s.setBuildStatus(ctx, b.AccountID, b.ID, "", []string{StatusQueued}, StatusTerminated, reason, s.now())
	if err != nil || ok {
		return err
	}
	_, err = s.db.SetBuildStatus(ctx, b.AccountID, b.ID, "", []string{StatusRunning, StatusPendingApproval}, StatusTerminating, reason, time.Time{})
	s.queued() // the dispatcher pushes the cancel to the runner's stream
	return err
}

// Restart queues a new build like an earlier one. With fromFailed, steps that succeeded in the
// earlier build are skipped (their results are kept in the new build's variables).
func (s *Service) Restart(ctx context.Context, p rbac.Principal, id string, fromFailed bool) (_ Build, err error) {
	if err := rbac.Allow(p, rbac.RunPipelines); err != nil {
		return Build{}, err
	}
	old, err := s.db.GetBuild(ctx, p.AccountID, id)
	if err != nil {
		return Build{}, err
	}
	if err := s.authorizeBuild(ctx, p, rbac.ActRun, old); err != nil {
		return Build{}, err
	}
	if Active(old.Status) {
		return Build{}, fmt.Errorf("build %s is still %s: cancel it first: %w", id, old.Status, errdefs.ErrConflict)
	}
	vars, err := decodeMap(old.Variables)
	if err != nil {
		return Build{}, fmt.Errorf("build %s: decode variables: %w", old.ID, err)
	}
	if fromFailed {
		steps, err := s.db.ListSteps(ctx, old.ID)
		if err != nil {
			return Build{}, err
		}
		var done []string
		for _, st := range steps {
			if st.Status == "success" {
				done = append(done, st.Name)
			}
		}
		vars[SkipStepsVariable] = strings.Join(done, ",")
	}
	e := audit.Start(ctx, p, "build.restart", "build", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	in := RunInput{Branch: old.Branch, SHA: old.SHA, Repo: old.Repo, CommitMessage: old.CommitMessage, CommitAuthor: old.CommitAuthor,
		Variables: vars, TriggerType: "restart", TriggerID: old.TriggerID, RestartOf: old.ID}
	pl, err := s.db.GetPipeline(ctx, p.AccountID, old.PipelineID)
	if err != nil {
		return Build{}, err
	}
	return s.queue(ctx, pl, in, p.Actor(), e)
}

// SkipStepsVariable lists, comma separated, the steps a restarted build skips because they
// succeeded before.
const SkipStepsVariable = "FRESHET_SKIP_STEPS"

// MaxApprovalComment is the longest comment an approval or denial keeps, in characters.
const MaxApprovalComment = 500

// checkApprovalComment refuses a comment that is too long, not UTF-8, or has control characters
// (it is shown in the step's message and the audit log).
func checkApprovalComment(c string) error {
	if !utf8.ValidString(c) {
		return errdefs.Invalid("comment", "", "is not UTF-8 text")
	}
	if n := utf8.RuneCountInString(c); n > MaxApprovalComment {
		return errdefs.Invalid("comment", string([]rune(c)[:32])+"…", fmt.Sprintf("is %d characters long; at most %d", n, MaxApprovalComment))
	}
	for _, r := range c {
		if unicode.IsControl(r) {
			return errdefs.Invalid("comment", c, "has a control character (a line break, tab or escape): write it on one line")
		}
	}
	return nil
}

// Approve records a decision on a build waiting at a pending-approval step, with an optional
// comment. The runner learns it on its next heartbeat.
func (s *Service) Approve(ctx context.Context, p rbac.Principal, id string, approve bool, comment string) (err error) {
	action := "build.approve"
	if !approve {
		action = "build.deny"
	}
	e := audit.Start(ctx, p, action, "build", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ApproveBuilds); err != nil {
		return err
	}
	comment = strings.TrimSpace(comment)
	if err := checkApprovalComment(comment); err != nil {
		return err
	}
	if b, err := s.db.GetBuild(ctx, p.AccountID, id); err != nil {
		return err
	} else if err := s.authorizeBuild(ctx, p, rbac.ActApprove, b); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		b, err := tx.GetBuild(ctx, p.AccountID, id)
		if err != nil {
			return err
		}
		if b.Status != StatusPendingApproval {
			return fmt.Errorf("build %s is %s, not waiting for approval: %w", id, b.Status, errdefs.ErrConflict)
		}
		steps, err := tx.ListSteps(ctx, b.ID)
		if err != nil {
			return err
		}
		for _, st := range steps {
			if st.Status == StatusPendingApproval {
				st.Message = decision(approve) + " by " + p.Actor()
				if comment != "" {
					st.Message += ": " + comment
				}
				if err := tx.UpsertStep(ctx, st); err != nil {
					return err
				}
				if comment != "" {
					e.Detail("step %s %s: %q", st.Name, decision(approve), comment)
				} else {
					e.Detail("step %s %s", st.Name, decision(approve))
				}
				if _, err := tx.SetBuildStatus(ctx, p.AccountID, b.ID, "", []string{StatusPendingApproval}, StatusRunning, "", time.Time{}); err != nil {
					return err
				}
				return e.Commit(ctx, tx)
			}
		}
		return fmt.Errorf("build %s has no step waiting for approval: %w", id, errdefs.ErrConflict)
	})
}

func decision(approve bool) string {
	if approve {
		return "approved"
	}
	return "denied"
}

// Build log limits: a build's log is cut at MaxLogBytes with a visible marker; lines longer
// than MaxLineBytes are cut by the runner.
const (
	MaxLogBytes  = 64 << 20
	MaxLineBytes = 64 << 10
)

// TruncationMarker ends a log cut at MaxLogBytes.
var TruncationMarker = []byte("\n[freshet] log truncated: the build's log reached " + strconv.Itoa(MaxLogBytes>>20) + " MiB\n")

// ReadLog returns up to max bytes of a build's log from offset.
func (s *Service) ReadLog(ctx context.Context, p rbac.Principal, id string, offset int64, max int) ([]byte, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, errdefs.Invalid("offset", strconv.FormatInt(offset, 10), "must be 0 or more")
	}
	b, err := s.db.GetBuild(ctx, p.AccountID, id)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeBuild(ctx, p, rbac.ActRead, b); err != nil {
		return nil, err
	}
	return s.db.ReadLog(ctx, b.ID, offset, max)
}
