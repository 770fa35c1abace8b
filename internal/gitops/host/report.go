package host

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
)

// Reporter limits.
const (
	// maxQueued events wait for the control plane; beyond that the oldest are dropped and a
	// snapshot is sent instead once it answers again.
	maxQueued = 10000
	// maxBatch events go in one Report call.
	maxBatch = 500
	// batchDelay lets events that come together go together.
	batchDelay = 50 * time.Millisecond
	// maxSyncChanges resources are listed per reported sync.
	maxSyncChanges = 50
)

// ErrReportRejected is what a Sink returns when the control plane refused a report as invalid:
// the reporter drops it instead of retrying.
var ErrReportRejected = errors.New("report rejected")

// reporter turns the engine's events into runtime reports and sends them in order, in
// batches, retrying with backoff. The engine calls Report and never waits.
type reporter struct {
	sink func(context.Context, runtimev1.ReportRequest) error
	log  *slog.Logger
	spec func(name string) *app.Application
	// roles is the ProjectRolesListed event sent with each snapshot (every AppProject the
	// runtime runs: resources, git, rendered by applications); nil: none.
	roles func() runtimev1.AppEvent

	mu           sync.Mutex
	queue        []runtimev1.AppEvent
	needSnapshot bool
	wake         chan struct{}
	// archived: the finishes of Workflows (UID → finish time, Unix seconds) the control plane
	// has taken, for Host.WorkflowArchived; pruned when it passes maxArchived entries.
	archived map[string]archivedAt
}

// archivedAt is a Workflow finish the control plane took, and when it took it.
type archivedAt struct{ finished, at int64 }

// maxArchived finishes are remembered; beyond it, those taken more than an hour ago are forgotten
// (a Workflow whose ttlStrategy came due is deleted within seconds of its record being taken).
const maxArchived = 50000

func newReporter(sink func(context.Context, runtimev1.ReportRequest) error, log *slog.Logger) *reporter {
	return &reporter{sink: sink, log: log, needSnapshot: true, wake: make(chan struct{}, 1)}
}

// Report queues an engine event.
func (r *reporter) Report(_ context.Context, ev engine.Event) {
	if r.sink == nil {
		return
	}
	var spec *app.Application
	if r.spec != nil {
		spec = r.spec(ev.App)
	}
	out := runtimev1.AppEvent{Type: string(ev.Type), App: ev.App, At: ev.At, HealthFrom: string(ev.HealthFrom)}
	if ev.Status != nil {
		a := toReport(spec, *ev.Status)
		out.Application = &a
	}
	switch {
	case ev.History != nil:
		out.Sync = historyRecord(*ev.History, ev.Sync)
	case ev.Sync != nil:
		out.Sync = syncRecord(ev.Sync)
	}
	r.enqueue(out)
}

// enqueue queues an event for the control plane.
func (r *reporter) enqueue(out runtimev1.AppEvent) {
	r.mu.Lock()
	if len(r.queue) >= maxQueued {
		// The control plane has been away long: forget the details, send the whole state later.
		// Finished Workflows are not in a snapshot: they stay queued (as many as there are
		// finished Workflows in the cluster, which their ttlStrategy keeps until they are taken).
		kept := r.queue[:0]
		for _, ev := range r.queue {
			if ev.Workflow != nil {
				kept = append(kept, ev)
			}
		}
		r.queue, r.needSnapshot = kept, true
	}
	r.queue = append(r.queue, out)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run sends queued events (and a snapshot first, after a start or a failure) until ctx ends.
func (r *reporter) run(ctx context.Context, snapshot func() []runtimev1.Application) {
	if r.sink == nil {
		return
	}
	backoff := 500 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-time.After(30 * time.Second):
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(batchDelay):
		}
		for {
			r.mu.Lock()
			req := runtimev1.ReportRequest{}
			snap := r.needSnapshot
			n := min(len(r.queue), maxBatch)
			req.Events = append(req.Events, r.queue[:n]...)
			r.mu.Unlock()
			if snap {
				req.Snapshot, req.Applications = true, snapshot()
				if r.roles != nil {
					req.Events = append(req.Events, r.roles())
				}
				// Events from before the snapshot are in it; later ones follow in order.
			}
			if !snap && n == 0 {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := r.sink(cctx, req)
			cancel()
			if errors.Is(err, ErrReportRejected) {
				// Sending it again would be refused again: drop it rather than block every
				// later report behind it.
				r.log.Error("the control plane refused a report; dropping it", "err", err, "events", n, "snapshot", snap)
				err = nil
			}
			if err != nil {
				wait := backoff/2 + rand.N(backoff/2+1)
				r.log.Warn("reporting applications failed; retrying", "err", err, "in", wait.Round(time.Millisecond))
				backoff = min(backoff*2, 30*time.Second)
				r.mu.Lock()
				r.needSnapshot = true
				r.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				continue
			}
			backoff = 500 * time.Millisecond
			r.mu.Lock()
			if snap {
				r.needSnapshot = false
			}
			r.markArchived(req.Events)
			r.queue = r.queue[min(n, len(r.queue)):]
			more := len(r.queue) > 0
			r.mu.Unlock()
			if !more {
				break
			}
		}
	}
}

// markArchived remembers the Workflow finishes in events as taken by the control plane (r.mu is
// held). A report the control plane refused counts too: sending it again would be refused
// again, and holding its Workflows back from their ttlStrategy would keep them for ever.
func (r *reporter) markArchived(events []runtimev1.AppEvent) {
	now := time.Now().Unix()
	for _, ev := range events {
		if ev.Workflow == nil {
			continue
		}
		if r.archived == nil {
			r.archived = map[string]archivedAt{}
		}
		if len(r.archived) >= maxArchived {
			for uid, a := range r.archived {
				if now-a.at > 3600 {
					delete(r.archived, uid)
				}
			}
		}
		r.archived[ev.Workflow.UID] = archivedAt{finished: ev.Workflow.FinishedAt.Unix(), at: now}
	}
}

// workflowArchived reports whether the control plane took the finish of Workflow uid at
// finishedAt (to the second, as reported).
func (r *reporter) workflowArchived(uid string, finishedAt time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.archived[uid]
	return ok && a.finished == finishedAt.UTC().Truncate(time.Second).Unix()
}

// markDisconnected makes the next report a snapshot (the agent calls it after a reconnect).
func (r *reporter) markDisconnected() {
	r.mu.Lock()
	r.needSnapshot = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// toReport is an application's reported state: its spec (may be nil) and engine status.
func toReport(spec *app.Application, st engine.AppStatus) runtimev1.Application {
	a := runtimev1.Application{
		Name: st.Name, Project: st.Project, Owner: st.Owner, OwnerKind: st.OwnerKind, Sync: string(st.Sync), Health: string(st.Health.Status), HealthMessage: st.Health.Message,
		Revision: st.Revision, TargetRevision: st.TargetRevision, SourceType: string(st.SourceType),
		AutoSyncDisabled: st.AutoSyncDisabled, ReconciledAt: st.ReconciledAt, Commit: commit(st.Commit),
	}
	if spec != nil {
		a.Labels = spec.Metadata.Labels
		for k, v := range spec.Metadata.Annotations {
			if strings.HasPrefix(k, "codefresh.io/") || strings.HasPrefix(k, "freshet.dev/") {
				if a.Annotations == nil {
					a.Annotations = map[string]string{}
				}
				a.Annotations[k] = v
			}
		}
		if src := spec.EffectiveSource(); src != nil {
			a.RepoURL, a.Path = src.RepoURL, src.Path
			if a.TargetRevision == "" {
				a.TargetRevision = src.TargetRevision
			}
		}
		d := spec.Spec.Destination
		a.DestServer, a.DestName, a.DestNamespace = d.Server, d.Name, d.Namespace
		if p := spec.Spec.SyncPolicy; p.IsAutomated() {
			a.AutoSync, a.Prune, a.SelfHeal = true, p.Automated.Prune, p.Automated.SelfHeal
		}
	}
	for _, c := range st.Conditions {
		a.Conditions = append(a.Conditions, runtimev1.AppCondition{Type: c.Type, Message: c.Message, File: c.Source.File, Line: c.Source.Line, Since: c.Since})
	}
	for _, r := range st.Resources {
		if r.Hook {
			continue
		}
		ar := runtimev1.AppResource{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: string(r.Status), RequiresPrune: r.RequiresPruning}
		if r.Health != nil {
			ar.Health, ar.HealthMessage = string(r.Health.Status), r.Health.Message
		}
		a.Resources = append(a.Resources, ar)
	}
	if st.Operation != nil {
		a.Operation = syncRecord(st.Operation)
	}
	return a
}

func commit(c *git.CommitInfo) *runtimev1.Commit {
	if c == nil {
		return nil
	}
	return &runtimev1.Commit{SHA: c.SHA, Author: c.Author, Message: c.Subject(), Time: c.CommitTime}
}

// syncCommits is a history entry's commit range as reported (the engine bounds it already).
func syncCommits(r *git.CommitRange) *runtimev1.SyncCommits {
	if r == nil {
		return nil
	}
	out := &runtimev1.SyncCommits{Kind: r.Kind, From: r.From, Truncated: r.Truncated}
	for _, c := range r.Commits[:min(len(r.Commits), runtimev1.MaxSyncCommits)] {
		out.Commits = append(out.Commits, runtimev1.Commit{SHA: c.SHA, Author: c.Author, Message: c.Subject(), Time: c.CommitTime, AuthorTime: c.AuthorTime})
	}
	out.Truncated = out.Truncated || len(r.Commits) > runtimev1.MaxSyncCommits
	return out
}

func syncRecord(s *engine.SyncResult) *runtimev1.SyncRecord {
	out := &runtimev1.SyncRecord{Revision: s.Revision, Phase: string(s.Phase), Message: s.Message, InitiatedBy: string(s.InitiatedBy), User: s.User,
		DryRun: s.DryRun, Prune: s.Prune, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
	out.Changed = changes(s.Changed())
	return out
}

func historyRecord(h engine.HistoryEntry, s *engine.SyncResult) *runtimev1.SyncRecord {
	out := &runtimev1.SyncRecord{ID: h.ID, Revision: h.Revision, Phase: string(h.Phase), Message: h.Message, InitiatedBy: string(h.InitiatedBy), User: h.User,
		Commit: commit(h.Commit), Commits: syncCommits(h.Range), Changed: changes(h.Changed), StartedAt: h.StartedAt, FinishedAt: h.FinishedAt}
	if s != nil {
		out.Prune = s.Prune
	}
	return out
}

func changes(rs []engine.ResourceResult) []runtimev1.ResourceChange {
	var out []runtimev1.ResourceChange
	for _, r := range rs[:min(len(rs), maxSyncChanges)] {
		out = append(out, runtimev1.ResourceChange{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Result: string(r.Result), Message: r.Message})
	}
	return out
}
