package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// Durable consumer names. Every replica subscribes with the same names, so the replicas share
// the work: each event goes to one of them.
const (
	ConsumerGitOps = "analytics-gitops"
	ConsumerAudit  = "analytics-audit"
)

// Subjects the consumers read.
var (
	SubjectGitOps = bus.SubjectRoot + ".*." + runtimes.EventDomain + ".>"
	SubjectAudit  = bus.SubjectRoot + ".*.audit.>"
)

// ErrBadEvent is an event the handler cannot use (missing identity, an account that is not
// the subject's): it is dropped, never retried.
var ErrBadEvent = errors.New("bad analytics event")

// Handler runs the analytics consumers: GitOps events (finished syncs become deployment
// records, health transitions become the health history) and API events (daily activity
// counts). Deployments and health transitions are keyed by their identity, so an event
// delivered twice changes nothing; activity counts are kept once per event by the bus's ledger
// in the same transaction. Events are placed by the time they carry, so their arrival order
// does not matter.
type Handler struct {
	db     Store
	bus    *bus.Bus
	ledger bus.Ledger
	log    *slog.Logger
	window time.Duration
	// applied, when set, is called after an event's changes committed (for tests and the bench).
	applied func(subject string)
}

// HandlerDeps are what the Handler needs.
type HandlerDeps struct {
	Store  Store
	Bus    *bus.Bus
	Ledger bus.Ledger
	Log    *slog.Logger
	// FailureWindow is DefaultFailureWindow when zero.
	FailureWindow time.Duration
	// Applied, when set, is called after each event's changes committed. It must not block.
	Applied func(subject string)
}

// NewHandler returns the consumers' handler.
func NewHandler(d HandlerDeps) *Handler {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.FailureWindow <= 0 {
		d.FailureWindow = DefaultFailureWindow
	}
	return &Handler{db: d.Store, bus: d.Bus, ledger: d.Ledger, log: d.Log, window: d.FailureWindow, applied: d.Applied}
}

// Run subscribes the consumers and handles events until ctx ends. A subscription that cannot be
// made (the bus unreachable) is tried again with backoff: the events wait in the stream.
func (h *Handler) Run(ctx context.Context) error {
	subscribe := []func() (*bus.Subscription, error){
		func() (*bus.Subscription, error) {
			return bus.Subscribe(ctx, h.bus, ConsumerGitOps, SubjectGitOps, h.handleGitOps)
		},
		func() (*bus.Subscription, error) {
			return bus.Subscribe(ctx, h.bus, ConsumerAudit, SubjectAudit, h.handleAudit, bus.WithLedger(h.ledger))
		},
	}
	return bus.Hold(ctx, h.log.With("consumer", "analytics"), subscribe...)
}

// subjectEvent returns the event token of a freshet.<account>.<domain>.<event>… subject.
func subjectEvent(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) < 4 {
		return ""
	}
	return parts[3]
}

// gitopsEvent is a decoded GitOps event analytics uses: one of sync and health is set.
type gitopsEvent struct {
	sync    *runtimes.SyncFinished
	health  *runtimes.HealthChanged
	rollout *runtimes.RolloutChanged
}

// decodeGitOps decodes the payload of an event on subject. A payload that does not decode,
// lacks the event's identity or names an account other than the subject's is ErrBadEvent; an
// event kind analytics does not use is the zero gitopsEvent. published stands in for a health
// transition's missing time.
func decodeGitOps(subject string, data []byte, published time.Time) (gitopsEvent, error) {
	account := bus.SubjectAccount(subject)
	switch subjectEvent(subject) {
	case runtimes.EventSyncFinished:
		var ev runtimes.SyncFinished
		if err := json.Unmarshal(data, &ev); err != nil {
			return gitopsEvent{}, fmt.Errorf("%w: %s: %w", ErrBadEvent, subject, err)
		}
		if ev.AccountID != account {
			return gitopsEvent{}, fmt.Errorf("%w: %s carries account %q", ErrBadEvent, subject, ev.AccountID)
		}
		if ev.RuntimeID == "" || ev.Application == "" || ev.FinishedAt.IsZero() {
			return gitopsEvent{}, fmt.Errorf("%w: %s without runtime, application or finish time", ErrBadEvent, subject)
		}
		return gitopsEvent{sync: &ev}, nil
	case runtimes.EventHealthChanged:
		var ev runtimes.HealthChanged
		if err := json.Unmarshal(data, &ev); err != nil {
			return gitopsEvent{}, fmt.Errorf("%w: %s: %w", ErrBadEvent, subject, err)
		}
		if ev.AccountID != account {
			return gitopsEvent{}, fmt.Errorf("%w: %s carries account %q", ErrBadEvent, subject, ev.AccountID)
		}
		if ev.At.IsZero() { // a runtime that did not say when: the stream stored it right after
			ev.At = published
		}
		if ev.RuntimeID == "" || ev.Application == "" || ev.To == "" || ev.At.IsZero() {
			return gitopsEvent{}, fmt.Errorf("%w: %s without runtime, application, health or time", ErrBadEvent, subject)
		}
		return gitopsEvent{health: &ev}, nil
	case runtimes.EventRolloutChanged:
		var ev runtimes.RolloutChanged
		if err := json.Unmarshal(data, &ev); err != nil {
			return gitopsEvent{}, fmt.Errorf("%w: %s: %w", ErrBadEvent, subject, err)
		}
		if ev.AccountID != account {
			return gitopsEvent{}, fmt.Errorf("%w: %s carries account %q", ErrBadEvent, subject, ev.AccountID)
		}
		if ev.RuntimeID == "" || ev.Application == "" || ev.Kind == "" || ev.At.IsZero() {
			return gitopsEvent{}, fmt.Errorf("%w: %s without runtime, application, kind or time", ErrBadEvent, subject)
		}
		return gitopsEvent{rollout: &ev}, nil
	}
	return gitopsEvent{}, nil
}

func (h *Handler) handleGitOps(ctx context.Context, m bus.Message[json.RawMessage]) error {
	ev, err := decodeGitOps(m.Subject, m.Data, m.Published)
	if err != nil {
		return bus.Permanent(err)
	}
	switch {
	case ev.sync != nil:
		err = h.db.Tx(ctx, func(tx *store.Tx) error { return ApplySyncFinished(ctx, tx, *ev.sync, h.window) })
	case ev.health != nil:
		err = h.db.Tx(ctx, func(tx *store.Tx) error { return ApplyHealthChanged(ctx, tx, *ev.health, h.window) })
	case ev.rollout != nil:
		err = h.db.Tx(ctx, func(tx *store.Tx) error { return ApplyRolloutChanged(ctx, tx, *ev.rollout, h.window) })
	default:
		return nil // an event analytics does not use
	}
	if errors.Is(err, ErrBadEvent) {
		return bus.Permanent(err)
	}
	if err == nil && h.applied != nil {
		h.applied(m.Subject)
	}
	return err
}

func (h *Handler) handleAudit(ctx context.Context, m bus.Message[events.Event]) error {
	ev := m.Data
	if ev.AccountID != bus.SubjectAccount(m.Subject) || ev.Action == "" || ev.Time.IsZero() {
		return bus.Permanent(fmt.Errorf("%w: %s: account %q, action %q, time %v", ErrBadEvent, m.Subject, ev.AccountID, ev.Action, ev.Time))
	}
	tx, ok := store.TxFrom(ctx)
	if !ok {
		return errors.New("analytics: the audit consumer runs without the ledger's transaction")
	}
	if err := tx.AddActivity(ctx, ev.AccountID, ev.Time, ev.Action, ev.Result); err != nil {
		return err
	}
	if h.applied != nil {
		h.applied(m.Subject)
	}
	return nil
}

// eventKey is a sync's identity: the runtime, the application, the runtime's ID of the sync and
// when it started (a runtime numbers an application's syncs from 1 again when it is created
// anew). The bus key of the event and a row of application_syncs give the same.
func eventKey(runtimeID, app string, syncID int64, started time.Time) string {
	return fmt.Sprintf("%s/%s/%d/%d", runtimeID, app, syncID, started.UnixMicro())
}

// ApplySyncFinished records the deployment a finished sync is, with the images its revision's
// builds pushed, and recomputes what followed the application's deployments around it. A sync
// recorded already changes nothing.
func ApplySyncFinished(ctx context.Context, w writer, ev runtimes.SyncFinished, window time.Duration) error {
	if ev.AccountID == "" || ev.RuntimeID == "" || ev.Application == "" || ev.FinishedAt.IsZero() {
		return fmt.Errorf("%w: sync-finished without account, runtime, application or finish time", ErrBadEvent)
	}
	// What follows recomputes rows other events change too: one account's events apply one
	// after the other.
	if err := w.LockAnalytics(ctx, ev.AccountID); err != nil {
		return err
	}
	d, err := deploymentRow(ctx, w, ev)
	if err != nil {
		return err
	}
	isNew, err := w.PutDeployment(ctx, d)
	if err != nil || !isNew {
		return err
	}
	return refreshAround(ctx, w, ev.AccountID, ev.RuntimeID, ev.Application, ev.FinishedAt, window)
}

// refreshAround recomputes what followed the application's deployments that finished within
// window of t, and the day statistics of the days they fall on.
func refreshAround(ctx context.Context, w writer, accountID, runtimeID, app string, t time.Time, window time.Duration) error {
	from, to := t.Add(-window), t.Add(window)
	if err := w.RefreshDeploymentFailures(ctx, accountID, runtimeID, app, from, to, window); err != nil {
		return err
	}
	return w.RefreshDeploymentStats(ctx, accountID, DayOf(from), DayOf(to))
}

// DayOf is t's day since 1970-01-01, UTC.
func DayOf(t time.Time) int64 { return int64(math.Floor(float64(t.Unix()) / 86400)) }

// LeadBucket is the lead-time bucket of d: 8 per doubling of the seconds, -1 for an unknown
// (negative) lead time.
func LeadBucket(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return int64(math.Floor(8 * math.Log2(d.Seconds()+1)))
}

func deploymentRow(ctx context.Context, w writer, ev runtimes.SyncFinished) (store.Deployment, error) {
	d, sha, err := deploymentOf(ev)
	if err != nil {
		return store.Deployment{}, err
	}
	ims, err := w.ImagesOfCommit(ctx, ev.AccountID, sha)
	if err != nil {
		return store.Deployment{}, fmt.Errorf("images of %s: %w", sha, err)
	}
	return d, withImages(&d, ims)
}

// deploymentOf is the deployment record of a finished sync, without its images, and the commit
// whose images it shipped.
func deploymentOf(ev runtimes.SyncFinished) (store.Deployment, string, error) {
	key := eventKey(ev.RuntimeID, ev.Application, ev.SyncID, ev.StartedAt)
	cluster := ev.DestName
	if cluster == "" {
		cluster = ev.DestServer
	}
	d := store.Deployment{ID: deploymentID(key, ev.FinishedAt), AccountID: ev.AccountID, EventKey: key, RuntimeID: ev.RuntimeID,
		Runtime: ev.Runtime, App: ev.Application, Project: ev.Project, Cluster: cluster, Namespace: ev.DestNamespace,
		Revision: ev.Revision, SyncID: ev.SyncID, Trigger: trigger(ev.InitiatedBy), InitiatedBy: ev.InitiatedBy, User: ev.User,
		Result: result(ev.Phase), Message: truncate(ev.Message, 1000), StartedAt: ev.StartedAt, FinishedAt: ev.FinishedAt, LeadTime: -1, LeadBucket: -1, Images: "[]"}
	sha := ev.Revision
	if c := ev.Commit; c != nil {
		d.CommitAuthor, d.CommitMessage, d.CommitTime = c.Author, truncate(c.Message, 1000), c.Time
		if !c.Time.IsZero() && !ev.FinishedAt.Before(c.Time) {
			d.LeadTime = ev.FinishedAt.Sub(c.Time)
			d.LeadBucket = LeadBucket(d.LeadTime)
		}
		if c.SHA != "" {
			sha = c.SHA
		}
	}
	if cr := commitRange(ev.Commits); cr != nil {
		enc, err := json.Marshal(cr)
		if err != nil {
			return store.Deployment{}, "", err
		}
		d.Commits = string(enc)
		// Lead time for changes from the range's earliest commit: the first change the
		// deployment shipped.
		if first := earliest(cr); !first.IsZero() && !ev.FinishedAt.Before(first) {
			d.LeadTime = ev.FinishedAt.Sub(first)
			d.LeadBucket = LeadBucket(d.LeadTime)
		}
	}
	return d, sha, nil
}

// withImages sets d's images to ims (the builds' and reports' of its commit).
func withImages(d *store.Deployment, ims []store.BuildImage) error {
	if len(ims) == 0 {
		return nil
	}
	out := make([]Image, 0, len(ims))
	for _, im := range ims {
		out = append(out, Image{Registry: im.Registry, Repository: im.Repository, Tags: im.Tags, Digest: im.Digest, BuildID: im.BuildID})
	}
	enc, err := json.Marshal(out)
	if err != nil {
		return err
	}
	d.Images = string(enc)
	return nil
}

// ApplyHealthChanged records an application's health transition, placed by its time, and
// recomputes what followed the application's deployments before it. A transition recorded
// already changes nothing.
func ApplyHealthChanged(ctx context.Context, w writer, ev runtimes.HealthChanged, window time.Duration) error {
	if ev.AccountID == "" || ev.RuntimeID == "" || ev.Application == "" || ev.At.IsZero() || ev.To == "" {
		return fmt.Errorf("%w: health-changed without account, runtime, application, time or health", ErrBadEvent)
	}
	if err := w.LockAnalytics(ctx, ev.AccountID); err != nil {
		return err
	}
	cluster, _, err := w.AppCluster(ctx, ev.AccountID, ev.RuntimeID, ev.Application)
	if err != nil {
		return err
	}
	isNew, err := w.PutHealthEvent(ctx, store.HealthEvent{AccountID: ev.AccountID, RuntimeID: ev.RuntimeID, Runtime: ev.Runtime,
		App: ev.Application, Cluster: cluster, At: ev.At, Health: ev.To, From: ev.From, Revision: ev.Revision})
	if err != nil || !isNew {
		return err
	}
	return refreshAround(ctx, w, ev.AccountID, ev.RuntimeID, ev.Application, ev.At, window)
}

// commitRange is the stored form of the commits a runtime reported (validated by the runtimes
// package), with the issue keys of each message; nil when there are none to store.
func commitRange(c *runtimev1.SyncCommits) *CommitRange {
	if c == nil {
		return nil
	}
	out := &CommitRange{Kind: c.Kind, From: c.From, Truncated: c.Truncated, Commits: []RangeCommit{}}
	for _, cm := range c.Commits[:min(len(c.Commits), runtimev1.MaxSyncCommits)] {
		out.Commits = append(out.Commits, RangeCommit{SHA: cm.SHA, Author: truncate(cm.Author, runtimev1.MaxCommitAuthorBytes),
			Message: truncate(cm.Message, runtimev1.MaxCommitMessageBytes), AuthorTime: cm.AuthorTime, Time: cm.Time, Issues: images.ParseKeys(cm.Message)})
	}
	return out
}

// earliest is the earliest commit time in r; zero when it has none.
func earliest(r *CommitRange) time.Time {
	var t time.Time
	for _, c := range r.Commits {
		if !c.Time.IsZero() && (t.IsZero() || c.Time.Before(t)) {
			t = c.Time
		}
	}
	return t
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 { // not in the middle of a UTF-8 sequence
		n--
	}
	return s[:n]
}

// RolloutAbortedHealth is the from_health of the health transition an aborted rollout is
// recorded as.
const RolloutAbortedHealth = "RolloutAborted"

// ApplyRolloutChanged records what analytics derives from a Rollout's transition: an aborted
// update is the application's transition to Degraded at the abort (Argo CD's health of an
// aborted Rollout), so the deployment it follows counts as a failed change (`degraded`) and
// the abort starts an incident until the application is Healthy again. Other transitions
// (steps, phases, a completed update) change nothing here: the deployment is the sync's.
func ApplyRolloutChanged(ctx context.Context, w writer, ev runtimes.RolloutChanged, window time.Duration) error {
	if ev.Kind != runtimev1.RolloutAborted {
		return nil
	}
	msg := fmt.Sprintf("rollout %s/%s aborted", ev.Namespace, ev.Rollout)
	if ev.Revision > 0 {
		msg = fmt.Sprintf("rollout %s/%s aborted the update to revision %d", ev.Namespace, ev.Rollout, ev.Revision)
	}
	if ev.Message != "" {
		msg += ": " + ev.Message
	}
	return ApplyHealthChanged(ctx, w, runtimes.HealthChanged{AccountID: ev.AccountID, RuntimeID: ev.RuntimeID, Runtime: ev.Runtime,
		Application: ev.Application, From: RolloutAbortedHealth, To: "Degraded", Message: msg, At: ev.At}, window)
}
