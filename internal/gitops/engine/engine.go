package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// Errors callers test with errors.Is.
var (
	// ErrAppNotFound: no application of that name.
	ErrAppNotFound = fmt.Errorf("application %w", errdefs.ErrNotFound)
	// ErrOperationRunning: a sync of the application is already running.
	ErrOperationRunning = fmt.Errorf("another sync operation is running: %w", errdefs.ErrConflict)
	// ErrHistoryNotFound: no history entry with that id.
	ErrHistoryNotFound = fmt.Errorf("history entry %w", errdefs.ErrNotFound)
	// ErrDeletionPending: a cascading delete deleted the app's resources but its PostDelete
	// hooks did not succeed: the app stays, deleting (a DeletionError condition says why), and
	// the engine retries the deletion until they do.
	ErrDeletionPending error = &kindError{"the application stays, deleting, until its PostDelete hooks succeed", errdefs.ErrConflict}
	// ErrDeletionRunning: a deletion of the application is running.
	ErrDeletionRunning error = &kindError{"a deletion of the application is running", errdefs.ErrConflict}
)

// kindError is an error of an errdefs kind whose message does not repeat the kind's.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Log attribute keys.
const (
	logKeyApp = "app"
	logKeyErr = "err"
)

// Engine runs Argo CD Applications against their clusters: refresh (git → render → diff →
// health), sync (waves, hooks, prune), automation (auto-sync on new revisions, self-heal on
// drift, retries), history and rollback, resource trees. Construct with New, add apps with
// Upsert, and call Run to start polling, watching and automation. Every method is safe for
// concurrent use.
type Engine struct {
	opts     Options
	log      *slog.Logger
	cache    *git.Cache
	renderer *render.Renderer
	resolver ClusterResolver
	reporter Reporter
	rules    *health.Checker // CEL rules (Options.HealthRules)
	checker  atomic.Pointer[health.Checker]
	settings atomic.Pointer[Settings]
	renders  *renderCache

	baseCtx    context.Context
	baseCancel context.CancelFunc

	mu       sync.Mutex
	apps     map[string]*appState
	byLabel  map[string]string
	clusters map[string]*cluster
	// projects are the AppProjects applications render (app of apps), by name.
	projects map[string]*childProject
	// appSets are the ApplicationSets applications render (app of apps), by name.
	appSets map[string]*childSet

	knownNamespaces sync.Map

	// tracked caches the lists adoption reads (see trackedObjects).
	trackedMu sync.Mutex
	tracked   map[string]trackedList
	queue     workqueue.TypedDelayingInterface[string]
	syncSem   chan struct{}
	bg        sync.WaitGroup
	running   atomic.Bool
	closing   atomic.Bool

	refreshes, dryRuns atomic.Int64
}

// appState is everything the engine holds for one application.
type appState struct {
	name, label string

	refreshMu sync.Mutex // one refresh of the app at a time

	mu           sync.Mutex
	app          *app.Application
	project      *app.AppProject
	specDigest   uint64
	status       AppStatus
	statusDigest string
	desired      *desiredSet
	inv          *inventory
	invCluster   string
	// adopted are objects Argo CD tracked for the app that it no longer renders, found when
	// the app first came to the cluster without an inventory (see adoptTracked).
	adopted       map[ResourceKey]bool
	adoptedDone   bool
	history       []HistoryEntry
	summary       Summary // of the last comparison that did not fail
	nextHistoryID int64
	autoSyncOff   bool
	last          lastSync
	heal          healState
	refreshFails  int
	condSince     map[string]time.Time
	op            *SyncResult // running
	opCancel      context.CancelCauseFunc
	lastOp        *SyncResult
	syncErr       string
	removed       bool
	// deleting is a cascading delete that could not finish (its PostDelete hooks failed); the
	// engine retries it. deleteRunning: Remove is running.
	deleting      *deletion
	deleteRunning bool
	// hooks are the hook objects syncs created and did not delete (their delete policy keeps
	// them): shown in the resource tree, deleted with the app.
	hooks []ObjRef
	// syncGen counts sync starts and ends: a comparison begun under another generation
	// predates a sync's effects and must not drive automation.
	syncGen uint64
	// owner is the application whose manifests define this one (app of apps; "" for an
	// application defined in git), ownerObj the manifest as the owner rendered it and
	// childHash its digest.
	owner     string
	ownerObj  *unstructured.Unstructured
	childHash uint64

	cmpMu sync.Mutex
	cmp   map[ResourceKey]*cmpEntry
}

// deletion is a pending cascading delete: the resources are deleted, the PostDelete hooks
// have not succeeded yet.
type deletion struct {
	cascade  bool
	since    time.Time
	err      string // why the last attempt did not finish
	attempts int
	retryAt  time.Time
}

// lastSync is what automation remembers of the last sync.
type lastSync struct {
	revision  string
	phase     OperationPhase
	temporary bool
	attempts  int // failed attempts at this revision
	retryAt   time.Time
}

type healState struct {
	attempts    int
	nextAt      time.Time
	last        time.Time
	times       []time.Time
	pausedUntil time.Time
}

// New returns an Engine.
func New(opts Options) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	checker, err := health.NewChecker(opts.HealthRules)
	if err != nil {
		return nil, fmt.Errorf("health rules: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		opts: opts, log: opts.Logger, cache: opts.Cache, renderer: opts.Renderer, resolver: opts.Clusters,
		reporter: opts.Reporter, rules: checker,
		renders: newRenderCache(opts.RenderCacheSize, opts.RenderCacheTTL),
		baseCtx: ctx, baseCancel: cancel,
		apps: map[string]*appState{}, byLabel: map[string]string{}, clusters: map[string]*cluster{},
		projects: map[string]*childProject{}, appSets: map[string]*childSet{},
		queue:   workqueue.NewTypedDelayingQueue[string](),
		syncSem: make(chan struct{}, opts.SyncConcurrency),
	}
	e.settings.Store(&opts.Settings)
	e.checker.Store(checker.WithCustomizations(opts.Settings.Health))
	return e, nil
}

func (e *Engine) now() time.Time { return e.opts.Now() }

// Run refreshes every application now and then every PollInterval (jittered), reacts to
// watch events (self-heal, health transitions) and runs automated syncs, until ctx ends. It
// then waits for background syncs to stop and closes the cluster connections.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("engine: Run called twice")
	}
	defer e.Close()
	e.mu.Lock()
	for name := range e.apps {
		e.queue.Add(name)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for range e.opts.Workers {
		wg.Go(func() {
			for {
				name, shutdown := e.queue.Get()
				if shutdown {
					return
				}
				e.reconcile(ctx, name)
				e.queue.Done(name)
			}
		})
	}
	<-ctx.Done()
	e.queue.ShutDown()
	wg.Wait()
	return nil
}

// Close stops background syncs and cluster watches. Run calls it on return; call it yourself
// when not using Run.
func (e *Engine) Close() {
	e.closing.Store(true)
	e.mu.Lock()
	for _, st := range e.apps {
		st.mu.Lock()
		if st.opCancel != nil {
			st.opCancel(errors.New("engine stopped"))
		}
		st.mu.Unlock()
	}
	e.mu.Unlock()
	e.queue.ShutDown()
	e.bg.Wait()
	e.baseCancel()
	e.mu.Lock()
	for _, c := range e.clusters {
		c.stop()
	}
	e.mu.Unlock()
}

// Upsert adds or updates an application; project nil means the built-in default project. A
// changed spec is refreshed at once (when Run is running). Automated sync switched off by a
// rollback stays off. An application another application owns (app of apps) is not replaced:
// the error wraps ErrOwned.
func (e *Engine) Upsert(a *app.Application, project *app.AppProject) error {
	if project == nil {
		project = app.NewDefaultProject()
	}
	return e.upsert(a, project, "", nil, 0)
}

// upsert adds or updates an application; owner is the application that renders it ("" for
// one defined in git), with its manifest and digest. A child's project (nil) is resolved at
// each comparison.
func (e *Engine) upsert(a *app.Application, project *app.AppProject, owner string, ownerObj *unstructured.Unstructured, childHash uint64) error {
	if a == nil || a.Metadata.Name == "" {
		return errdefs.Invalid("metadata.name", "", "is required")
	}
	data, _ := json.Marshal(struct {
		A *app.Application
		P *app.AppProject
	}{a, project})
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	digest := hashAny(m)
	name := a.Metadata.Name
	e.mu.Lock()
	st := e.apps[name]
	if st != nil {
		st.mu.Lock()
		cur := st.owner
		st.mu.Unlock()
		if cur != owner {
			e.mu.Unlock()
			return fmt.Errorf("application %q: %s: %w", name, ownedMessage(KindApplication, name, cur), ErrOwned)
		}
	}
	if st == nil {
		st = &appState{name: name, label: appLabelValue(name), cmp: map[ResourceKey]*cmpEntry{}, condSince: map[string]time.Time{}}
		st.status = AppStatus{Name: name, Sync: Unknown, Health: health.Result{Status: health.Unknown}}
		st.status.OwnerKind, st.status.Owner = splitOwner(owner)
		st.owner = owner
		e.apps[name] = st
		e.byLabel[st.label] = name
	}
	e.mu.Unlock()
	st.mu.Lock()
	st.ownerObj, st.childHash = ownerObj, childHash
	changed := st.specDigest != digest
	if st.app != nil && st.app.Spec.Destination != a.Spec.Destination {
		st.desired, st.inv = nil, nil
		st.cmpMu.Lock()
		st.cmp = map[ResourceKey]*cmpEntry{}
		st.cmpMu.Unlock()
	}
	st.app, st.project, st.specDigest = a, project, digest
	st.status.Project = a.Spec.Project
	st.mu.Unlock()
	if changed {
		e.queue.Add(name)
	}
	return nil
}

// Remove forgets an application. With cascade, every resource in its inventory is deleted
// (foreground propagation) and so is the inventory itself, as Argo CD's cascading delete.
//
// When the app's PostDelete hooks fail (or its deleted resources do not go within
// Options.HookTimeout), the app stays, deleting: no sync starts, its status has a
// DeletionError condition naming the hook and its failure, and the engine retries the
// deletion (backing off as failed refreshes do; a fixed hook in git is used by the next
// attempt) until the hooks succeed; the error wraps ErrDeletionPending. Remove called again
// retries at once; without cascade it stops waiting and forgets the app.
func (e *Engine) Remove(ctx context.Context, name string, cascade bool) (err error) {
	st, err := e.get(name)
	if err != nil {
		return err
	}
	st.mu.Lock()
	if st.deleteRunning {
		st.mu.Unlock()
		return fmt.Errorf("%q: %w", name, ErrDeletionRunning)
	}
	st.deleteRunning = true
	if st.opCancel != nil {
		st.opCancel(errors.New("application deleted"))
	}
	st.removed = true // no sync starts from here on; undone if the removal fails
	a := st.app
	pending := st.deleting != nil
	st.mu.Unlock()
	done := false
	defer func() {
		st.mu.Lock()
		st.deleteRunning = false
		if !done && st.deleting == nil {
			st.removed = false
		}
		st.mu.Unlock()
		if !done && pending && !errors.Is(err, ErrDeletionPending) {
			// A retry that failed before its hooks (the cluster did not answer, say): still
			// deleting; tried again later.
			err = e.deletionPending(st, cascade, err)
		}
	}()
	// A sync in flight may still be applying objects: wait until it has ended, so that nothing
	// it writes outlives the deletion below (seen: a child's automated sync recreated its
	// ConfigMap after its parent pruned it with cascade).
	e.awaitOpEnd(ctx, st)
	// Children first (app of apps): with cascade, their resources go too.
	if err := e.removeChildren(ctx, name, cascade); err != nil {
		return err
	}
	if cascade {
		cl, err := e.clusterFor(ctx, a.Spec.Destination)
		if err != nil {
			return err
		}
		refs, err := e.inventoryFor(ctx, st, cl)
		if err != nil {
			return err
		}
		postDelete := e.postDeleteHooks(ctx, st, cl)
		var deleted []ObjRef
		fg := metav1DeletePropagationForeground()
		var errs []error
		for _, ref := range refs {
			if isChildRef(ref) {
				continue // removed above
			}
			m, err := cl.mapping(ref.GVK(), false)
			if err != nil {
				continue
			}
			live := e.liveExtra(ctx, st, cl, ref)
			if live == nil || !ownedBy(live, name) {
				continue
			}
			if v, ok := resourceSyncOption(live, "Delete"); ok && strings.EqualFold(v, "false") {
				continue
			}
			if err := deleteObject(ctx, cl, m, ref, fg); err != nil {
				errs = append(errs, err)
			}
			deleted = append(deleted, ref)
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if len(postDelete) > 0 {
			if err := e.waitGone(ctx, cl, deleted); err != nil {
				return e.deletionPending(st, cascade, err)
			}
			if err := e.runPostDelete(ctx, st, cl, postDelete, pending); err != nil {
				return e.deletionPending(st, cascade, err)
			}
		}
		st.mu.Lock()
		hooks := append([]ObjRef(nil), st.hooks...)
		st.mu.Unlock()
		for _, ref := range hooks {
			if m, err := cl.mapping(ref.GVK(), false); err == nil {
				if err := deleteObject(ctx, cl, m, ref, fg); err != nil {
					return err
				}
			}
		}
		if err := e.deleteInventory(ctx, cl, name); err != nil {
			return err
		}
	}
	e.mu.Lock()
	delete(e.apps, name)
	delete(e.byLabel, st.label)
	e.mu.Unlock()
	done = true
	st.mu.Lock()
	st.deleting = nil
	st.mu.Unlock()
	e.emit(ctx, Event{Type: EventAppDeleted, App: name})
	return nil
}

// deletionPending records that a cascading delete of st could not finish (cause) and
// schedules the next attempt: the app stays, deleting. The error wraps ErrDeletionPending.
func (e *Engine) deletionPending(st *appState, cascade bool, cause error) error {
	now := e.now()
	st.mu.Lock()
	d := st.deleting
	if d == nil {
		d = &deletion{since: now}
		st.deleting = d
	}
	d.cascade, d.err = cascade, cause.Error()
	d.attempts++
	delay := e.retryDelay(d.attempts)
	d.retryAt = now.Add(delay)
	st.removed = true
	st.mu.Unlock()
	e.log.Warn("cascading delete not finished; the application stays, deleting", logKeyApp, st.name, "err", cause, "retry", delay)
	e.queue.Add(st.name) // its status shows it now; the retry comes at retryAt
	// The cause is text only: what it wraps (a NotFound, say) must not pass for the outcome.
	return fmt.Errorf("%s; %w (retried in %s)", cause, ErrDeletionPending, delay.Round(time.Second))
}

// retryDeletion runs a pending deletion's next attempt when it is due (in the background:
// hooks can run long), and says when to look again.
func (e *Engine) retryDeletion(ctx context.Context, st *appState) time.Duration {
	st.mu.Lock()
	d := st.deleting
	if d == nil || st.deleteRunning {
		st.mu.Unlock()
		return e.opts.PollInterval
	}
	wait := d.retryAt.Sub(e.now())
	cascade := d.cascade
	st.mu.Unlock()
	if wait > 0 {
		return wait
	}
	go func() {
		if err := e.Remove(ctx, st.name, cascade); err != nil && ctx.Err() == nil && !errors.Is(err, ErrDeletionRunning) {
			e.log.Info("deletion retried, not finished", logKeyApp, st.name, "err", err)
		}
	}()
	return e.retryDelay(d.attempts + 1)
}

// deletionCondition is the DeletionError condition of a pending deletion (st.mu held).
func (e *Engine) deletionCondition(st *appState, now time.Time) (Condition, bool) {
	d := st.deleting
	if d == nil {
		return Condition{}, false
	}
	next := "now"
	if w := d.retryAt.Sub(now); w > 0 {
		next = "in " + w.Round(time.Second).String()
	}
	return Condition{Type: ConditionDeletionError, Message: fmt.Sprintf(
		"the application is being deleted: its resources are deleted, but %s; it stays until its PostDelete hooks succeed: fix the hook (in git) or what it needs — the deletion is retried (attempt %d; retrying %s), or delete the application again to retry at once, or without cascade to stop waiting",
		d.err, d.attempts, next)}, true
}

// opEndWait bounds how long Remove waits for a cancelled sync to end.
const opEndWait = 30 * time.Second

// awaitOpEnd waits until st has no sync running (its operation was cancelled), for at most
// opEndWait or until ctx ends.
func (e *Engine) awaitOpEnd(ctx context.Context, st *appState) {
	t := time.NewTimer(opEndWait)
	defer t.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st.mu.Lock()
		running := st.opCancel != nil
		st.mu.Unlock()
		if !running {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.log.Warn("removing an application whose cancelled sync has not ended", logKeyApp, st.name)
			return
		case <-tick.C:
		}
	}
}

func (e *Engine) get(name string) (*appState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.apps[name]
	if st == nil {
		return nil, fmt.Errorf("%q: %w", name, ErrAppNotFound)
	}
	return st, nil
}

// Status returns an application's last status.
func (e *Engine) Status(name string) (AppStatus, error) {
	st, err := e.get(name)
	if err != nil {
		return AppStatus{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.status, nil
}

// List returns every application's last status, by name.
func (e *Engine) List() []AppStatus {
	e.mu.Lock()
	states := make([]*appState, 0, len(e.apps))
	for _, st := range e.apps {
		states = append(states, st)
	}
	e.mu.Unlock()
	out := make([]AppStatus, 0, len(states))
	for _, st := range states {
		st.mu.Lock()
		out = append(out, st.status)
		st.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Refresh compares an application with git and its cluster now and returns its status. Any
// refresh asks the repository where the target revision points now (cached refs are dropped,
// as Argo CD resolves the revision on every refresh it is asked for); a hard refresh also
// forgets cached renders and comparisons.
func (e *Engine) Refresh(ctx context.Context, name string, hard bool) (AppStatus, error) {
	st, err := e.get(name)
	if err != nil {
		return AppStatus{}, err
	}
	st.mu.Lock()
	a := st.app
	st.mu.Unlock()
	for _, src := range appSources(a) {
		e.cache.Invalidate(src.RepoURL)
	}
	if hard {
		st.mu.Lock()
		st.desired = nil
		st.inv = nil
		st.mu.Unlock()
		st.cmpMu.Lock()
		st.cmp = map[ResourceKey]*cmpEntry{}
		st.cmpMu.Unlock()
		for _, src := range appSources(a) {
			if n, err := git.NormalizeURL(src.RepoURL); err == nil {
				e.renders.drop(n + "\x00")
			}
		}
		if isMultiSource(a) {
			e.renders.drop("multi\x00")
		}
		e.hardRefreshCharts(a)
	}
	status, _ := e.refresh(ctx, st, hard)
	// Automation (auto-sync, self-heal) runs in the reconcile loop: queue the app, so a new
	// commit found by this refresh is synced as Argo CD does after a refresh.
	e.queue.Add(name)
	return status, nil
}

// RefreshAll refreshes every application, Options.Workers at a time, and returns when all are
// done (polling uses the queue instead; this is for benchmarks and `refresh --all`).
func (e *Engine) RefreshAll(ctx context.Context) error {
	e.mu.Lock()
	states := make([]*appState, 0, len(e.apps))
	for _, st := range e.apps {
		states = append(states, st)
	}
	e.mu.Unlock()
	sem := make(chan struct{}, e.opts.Workers)
	var wg sync.WaitGroup
	for _, st := range states {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			e.refresh(ctx, st, false)
		})
	}
	wg.Wait()
	return ctx.Err()
}

// refresh compares and publishes the status.
func (e *Engine) refresh(ctx context.Context, st *appState, hard bool) (AppStatus, *comparison) {
	st.refreshMu.Lock()
	defer st.refreshMu.Unlock()
	e.refreshes.Add(1)
	cmp := e.compare(ctx, st, "", hard)
	st.mu.Lock()
	if cmp.failed {
		st.refreshFails++
	} else {
		st.refreshFails = 0
	}
	st.mu.Unlock()
	return e.publish(ctx, st, cmp), cmp
}

// Diff returns each resource's diff between live and the would-be object.
func (e *Engine) Diff(ctx context.Context, name string) ([]ResourceDiff, error) {
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	cmp := e.compare(ctx, st, "", false)
	if cmp.failed {
		return nil, comparisonError(cmp)
	}
	st.mu.Lock()
	a := st.app
	st.mu.Unlock()
	respect := a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.SyncOptions.Enabled("RespectIgnoreDifferences")
	return e.diffs(ctx, cmp, a.Spec.IgnoreDifferences, respect), nil
}

func comparisonError(cmp *comparison) error {
	msgs := make([]string, 0, len(cmp.conds))
	for _, c := range cmp.conds {
		msgs = append(msgs, c.Type+": "+c.Message)
	}
	return &unavailableError{msg: strings.Join(msgs, "; ")}
}

// unavailableError is errdefs.ErrUnavailable with a message that does not repeat the kind.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }
func (e *unavailableError) Unwrap() error { return errdefs.ErrUnavailable }

// Sync syncs an application now and returns the result (also for a failed sync: the error is
// for a sync that could not be attempted, e.g. ErrOperationRunning). Cancel ctx, or call
// Terminate, to stop it.
func (e *Engine) Sync(ctx context.Context, name string, opts SyncOptions) (*SyncResult, error) {
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := e.checkSyncWindows(st, opts.InitiatedBy, opts.DryRun); err != nil {
		return nil, err
	}
	if !e.beginOp(st, cancel) {
		st.mu.Lock()
		deleting := st.removed
		st.mu.Unlock()
		if deleting {
			return nil, fmt.Errorf("application %q is being deleted: no sync starts: %w", name, errdefs.ErrConflict)
		}
		return nil, ErrOperationRunning
	}
	return e.runSync(ctx, st, opts), nil
}

// Terminate stops an application's running sync; it reports whether one was running.
func (e *Engine) Terminate(name string) bool {
	st, err := e.get(name)
	if err != nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.opCancel == nil {
		return false
	}
	st.opCancel(errors.New("terminated by user"))
	return true
}

func (e *Engine) beginOp(st *appState, cancel context.CancelCauseFunc) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.opCancel != nil || st.removed {
		return false
	}
	st.opCancel = cancel
	return true
}

func (e *Engine) setOperation(st *appState, res *SyncResult) {
	st.mu.Lock()
	if st.op == nil {
		st.syncGen++ // the sync starts
	}
	st.op = copyResult(res)
	st.status.Operation = st.op
	st.mu.Unlock()
}

// RollbackResult is the outcome of a rollback.
type RollbackResult struct {
	Result *SyncResult  `json:"result"`
	Entry  HistoryEntry `json:"entry"`
	// AutoSyncDisabled: automated sync was on and the rollback switched it off (as Argo CD
	// does); Engine.SetAutoSync turns it back on.
	AutoSyncDisabled bool `json:"autoSyncDisabled,omitempty"`
}

// Rollback syncs an application to the revision of a history entry (with its current source
// options) and switches automated sync off, so the next poll does not undo it.
func (e *Engine) Rollback(ctx context.Context, name string, id int64, prune bool) (*RollbackResult, error) {
	return e.RollbackAs(ctx, name, id, prune, "")
}

// RollbackAs is Rollback recording who asked.
func (e *Engine) RollbackAs(ctx context.Context, name string, id int64, prune bool, user string) (*RollbackResult, error) {
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	// Checked before automated sync is switched off for a rollback that cannot run.
	if err := e.checkSyncWindows(st, InitiatedByRollback, false); err != nil {
		return nil, err
	}
	st.mu.Lock()
	var entry *HistoryEntry
	for i := range st.history {
		if st.history[i].ID == id {
			entry = &st.history[i]
		}
	}
	if entry == nil {
		ids := make([]string, 0, len(st.history))
		for _, h := range st.history {
			ids = append(ids, fmt.Sprint(h.ID))
		}
		st.mu.Unlock()
		return nil, fmt.Errorf("%d (history of %s has ids %s): %w", id, name, strings.Join(ids, ", "), ErrHistoryNotFound)
	}
	if err := rollbackSourcesMatch(st.app, entry); err != nil {
		st.mu.Unlock()
		return nil, err
	}
	out := &RollbackResult{Entry: *entry}
	if st.app.Spec.SyncPolicy.IsAutomated() && !st.autoSyncOff {
		st.autoSyncOff = true
		out.AutoSyncDisabled = true
	}
	st.status.AutoSyncDisabled = st.autoSyncOff
	st.mu.Unlock()
	res, err := e.Sync(ctx, name, SyncOptions{Revision: entry.Revision, Prune: prune, InitiatedBy: InitiatedByRollback, User: user})
	if err != nil {
		return out, err
	}
	out.Result = res
	return out, nil
}

// rollbackSourcesMatch checks that a rollback to a multi-source history entry can restore each
// source's revision: the application has the same number of sources, from the same
// repositories, as when the entry was synced (a rollback keeps the current source options).
func rollbackSourcesMatch(a *app.Application, entry *HistoryEntry) error {
	if len(entry.Sources) == 0 && !isMultiSource(a) {
		return nil
	}
	repos := func(srcs []app.Source) string {
		var out []string
		for _, s := range srcs {
			r := s.RepoURL
			if s.Chart != "" {
				r += " (chart " + s.Chart + ")"
			}
			out = append(out, r)
		}
		return strings.Join(out, ", ")
	}
	field := fmt.Sprintf("history[id=%d]", entry.ID)
	if len(entry.Sources) == 0 {
		return errdefs.Invalid(field, entry.Revision, fmt.Sprintf("was synced from one source; the application now has %d (%s): a rollback restores the revisions of the same sources", len(a.Spec.Sources), repos(a.Spec.Sources)))
	}
	cur := a.Spec.Sources
	if a.Spec.Source != nil {
		cur = []app.Source{*a.Spec.Source}
	}
	same := len(cur) == len(entry.Sources)
	for i := 0; same && i < len(cur); i++ {
		same = cur[i].RepoURL == entry.Sources[i].RepoURL && cur[i].Chart == entry.Sources[i].Chart
	}
	if !same {
		return errdefs.Invalid(field, entry.Revision, fmt.Sprintf("was synced from the sources %s; the application now has %s: a rollback restores each source's revision and needs the same sources in the same order", repos(entry.Sources), repos(cur)))
	}
	return nil
}

// SetAutoSync turns automated sync back on (or off) for an application whose spec asks for it.
func (e *Engine) SetAutoSync(name string, enabled bool) error {
	st, err := e.get(name)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.autoSyncOff = !enabled
	st.status.AutoSyncDisabled = !enabled
	st.mu.Unlock()
	e.queue.Add(name)
	return nil
}

// History returns an application's recorded syncs, oldest first.
func (e *Engine) History(name string) ([]HistoryEntry, error) {
	st, err := e.get(name)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]HistoryEntry(nil), st.history...), nil
}

// Notify tells the engine a repository changed (a push webhook): its refs are fetched again
// and every application on it whose target revision may be the pushed one (revision "" means
// any) is refreshed now. It returns how many applications were queued.
func (e *Engine) Notify(repoURL, revision string) int {
	norm, err := git.NormalizeURL(repoURL)
	if err != nil {
		return 0
	}
	e.cache.Invalidate(repoURL)
	rev := strings.TrimPrefix(strings.TrimPrefix(revision, "refs/heads/"), "refs/tags/")
	e.mu.Lock()
	states := make([]*appState, 0, len(e.apps))
	for _, st := range e.apps {
		states = append(states, st)
	}
	e.mu.Unlock()
	n := 0
	for _, st := range states {
		st.mu.Lock()
		srcs := appSources(st.app)
		st.mu.Unlock()
		for _, src := range srcs {
			if u, err := git.NormalizeURL(src.RepoURL); err != nil || u != norm {
				continue
			}
			target := strings.TrimPrefix(strings.TrimPrefix(src.TargetRevision, "refs/heads/"), "refs/tags/")
			if rev == "" || target == "" || target == "HEAD" || target == rev || strings.HasPrefix(revision, target) {
				e.queue.Add(st.name)
				n++
				break
			}
		}
	}
	return n
}

// Stats count the engine's work, for benchmarks and tests.
type Stats struct {
	Refreshes int64 // comparisons run
	Renders   int64 // renders performed (the rest were served by the render cache)
	DryRuns   int64 // server-side apply dry-runs (the rest were served by the comparison cache)
}

// Stats returns counters since New.
func (e *Engine) Stats() Stats {
	return Stats{Refreshes: e.refreshes.Load(), Renders: e.renders.count(), DryRuns: e.dryRuns.Load()}
}

// clusterFor returns the engine's connection to a destination's cluster.
func (e *Engine) clusterFor(ctx context.Context, dest app.Destination) (*cluster, error) {
	cfg, err := e.resolver.Cluster(ctx, dest)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.clusters[cfg.Host]; c != nil {
		return c, nil
	}
	c, err := newCluster(e.baseCtx, cfg, e.opts.ClientQPS, e.opts.ClientBurst, e.log, e.onWatchEvent)
	if err != nil {
		return nil, err
	}
	e.clusters[cfg.Host] = c
	return c, nil
}

// ForgetCluster drops the engine's connection to the cluster at host (its credentials
// changed or it was removed); the next use connects again.
func (e *Engine) ForgetCluster(host string) {
	e.mu.Lock()
	c := e.clusters[host]
	delete(e.clusters, host)
	e.mu.Unlock()
	if c != nil {
		c.stop()
	}
}

// onWatchEvent: a managed object changed; refresh its app soon (events are coalesced).
func (e *Engine) onWatchEvent(label string) {
	e.mu.Lock()
	name, ok := e.byLabel[label]
	e.mu.Unlock()
	if ok {
		e.queue.AddAfter(name, e.opts.EventDebounce)
	}
}

func (e *Engine) emit(ctx context.Context, ev Event) {
	if ev.At.IsZero() {
		ev.At = e.now()
	}
	e.reporter.Report(ctx, ev)
}

// publish turns a comparison into the app's status and reports what changed.
func (e *Engine) publish(ctx context.Context, st *appState, cmp *comparison) AppStatus {
	now := e.now()
	_, project := e.appProject(st)
	st.mu.Lock()
	prev := st.status
	a := st.app
	s := AppStatus{Name: st.name, Project: a.Spec.Project, Sync: cmp.sync, Health: cmp.health, ReconciledAt: now,
		AutoSyncDisabled: st.autoSyncOff}
	s.OwnerKind, s.Owner = splitOwner(st.owner)
	if src := a.EffectiveSource(); src != nil {
		s.TargetRevision = src.TargetRevision
	}
	if cmp.desired != nil {
		s.Revision = cmp.desired.sha
		ci := cmp.desired.commit
		s.Commit = &ci
		s.SourceType = cmp.desired.srcType
	}
	if cmp.failed {
		// Keep what was known of the cluster; only the comparison is unknown.
		s.Resources, s.Revision, s.Commit, s.SourceType = prev.Resources, prev.Revision, prev.Commit, prev.SourceType
		if cmp.cl != nil && prev.Health.Status != "" {
			s.Health = prev.Health
		}
	} else {
		s.Resources = make([]ResourceStatus, 0, len(cmp.results))
		for _, r := range cmp.results {
			rs := ResourceStatus{ResourceKey: r.ref.ResourceKey, Version: r.ref.Version, Message: r.message}
			h := r.health
			rs.Health = &h
			switch r.status {
			case DiffSynced:
				rs.Status = Synced
			default:
				rs.Status = OutOfSync
			}
			if r.d != nil {
				rs.SyncWave, rs.Source = r.d.wave, r.d.source
			} else {
				rs.RequiresPruning = true
				rs.SyncWave = syncWave(r.live)
			}
			s.Resources = append(s.Resources, rs)
		}
		st.summary = summarize(a.Metadata.Annotations, cmp.results)
	}
	conds := append([]Condition(nil), cmp.conds...)
	if cmp.failed && cmp.temporary {
		delay := e.retryDelay(st.refreshFails + 1)
		conds[0].Message += fmt.Sprintf(" (attempt %d; retrying in %s)", st.refreshFails+1, delay.Round(time.Millisecond))
	}
	if st.syncErr != "" {
		conds = append(conds, Condition{Type: ConditionSyncError, Message: st.syncErr})
	}
	if now.Before(st.heal.pausedUntil) {
		conds = append(conds, Condition{Type: ConditionSelfHealPaused, Message: fmt.Sprintf(
			"the application's resources were changed and re-applied %d times within %s: another writer is changing them; self-heal resumes at %s",
			len(st.heal.times), e.opts.SelfHealWindow, st.heal.pausedUntil.Format(time.RFC3339))})
	}
	if c, ok := windowCondition(st, project, cmp, now); ok {
		conds = append(conds, c)
	}
	if c, ok := e.deletionCondition(st, now); ok {
		conds = append(conds, c)
	}
	seen := map[string]bool{}
	for i := range conds {
		if since, ok := st.condSince[conds[i].Type]; ok {
			conds[i].Since = since
		} else {
			conds[i].Since = now
			st.condSince[conds[i].Type] = now
		}
		seen[conds[i].Type] = true
	}
	for t := range st.condSince {
		if !seen[t] {
			delete(st.condSince, t)
		}
	}
	s.Conditions = conds
	if st.op != nil {
		s.Operation = st.op
	} else {
		s.Operation = st.lastOp
	}
	digest := statusDigest(s)
	changed := digest != st.statusDigest
	st.status, st.statusDigest = s, digest
	removed := st.removed && st.deleting == nil // a pending deletion is shown
	owner := st.owner
	st.mu.Unlock()
	if removed {
		return s
	}
	if changed && owner != "" && !strings.HasPrefix(owner, appSetOwnerPrefix) {
		// The owner shows this application's health and sync among its resources.
		e.queue.AddAfter(owner, e.opts.EventDebounce)
	}
	if changed {
		cp := s
		e.emit(ctx, Event{Type: EventAppChanged, App: st.name, Status: &cp, At: now})
	}
	if prev.Health.Status != s.Health.Status && !(cmp.failed && prev.Health.Status == "") {
		cp := s
		e.emit(ctx, Event{Type: EventHealthChanged, App: st.name, Status: &cp, HealthFrom: prev.Health.Status, At: now})
	}
	return s
}

// statusDigest identifies a status without its timestamps.
func statusDigest(s AppStatus) string {
	s.ReconciledAt = time.Time{}
	conds := make([]Condition, len(s.Conditions))
	for i, c := range s.Conditions {
		c.Since = time.Time{}
		if j := strings.Index(c.Message, " (attempt "); j > 0 {
			c.Message = c.Message[:j]
		}
		conds[i] = c
	}
	s.Conditions = conds
	data, _ := json.Marshal(s)
	return string(data)
}

// reconcile is one turn of the automation loop for an application.
func (e *Engine) reconcile(ctx context.Context, name string) {
	st, err := e.get(name)
	if err != nil {
		return
	}
	_, cmp := e.refresh(ctx, st, false)
	if ctx.Err() != nil {
		return
	}
	st.mu.Lock()
	deleting := st.deleting != nil
	st.mu.Unlock()
	if deleting {
		e.queue.AddAfter(name, e.retryDeletion(ctx, st))
		return
	}
	next := jitter(e.opts.PollInterval)
	st.mu.Lock()
	if cmp.failed && cmp.temporary {
		next = e.retryDelay(st.refreshFails)
	}
	st.mu.Unlock()
	if d := e.automate(ctx, st, cmp); d > 0 && d < next {
		next = d
	}
	e.queue.AddAfter(name, next)
}

func jitter(d time.Duration) time.Duration {
	return d - d/10 + time.Duration(rand.Int64N(int64(d/5)+1))
}

// retryDelay is the backoff of a refresh that failed n times in a row.
func (e *Engine) retryDelay(n int) time.Duration {
	d := e.opts.RetryBase
	for i := 1; i < n && d < e.opts.RetryMax; i++ {
		d *= 2
	}
	return min(d, e.opts.RetryMax)
}

// automate starts an automated sync when the policy asks for one; it returns how soon to look
// again (0: at the next poll).
func (e *Engine) automate(ctx context.Context, st *appState, cmp *comparison) time.Duration {
	_, project := e.appProject(st)
	st.mu.Lock()
	defer st.mu.Unlock()
	a := st.app
	pol := a.Spec.SyncPolicy
	if !pol.IsAutomated() || st.autoSyncOff || cmp.failed || st.opCancel != nil || st.removed {
		return 0
	}
	if cmp.syncGen != st.syncGen {
		// The comparison began before a sync started or ended: it may show the state the
		// sync was changing (a self-heal of what the sync just did). The sync queues the
		// app again when it ends.
		return 0
	}
	if cmp.sync != OutOfSync || len(cmp.desired.forbidden) > 0 {
		return 0
	}
	onlyPrune := true
	for _, r := range cmp.results {
		if r.status != DiffSynced && r.d != nil {
			onlyPrune = false
		}
	}
	if onlyPrune && !pol.Automated.Prune {
		return 0 // Argo CD: nothing an auto-sync without prune could fix
	}
	if len(cmp.desired.resources) == 0 && !pol.Automated.AllowEmpty {
		return 0
	}
	now := e.now()
	if wait, blocked := windowWait(a, project, now); blocked {
		return wait // publish shows the window as a condition
	}
	rev := cmp.desired.sha
	// An automated sync starts when it is admitted (self-heal's backoff counts from then), not
	// when its goroutine gets the sync slot and has resolved the revision.
	opts := SyncOptions{Prune: pol.Automated.Prune, InitiatedBy: InitiatedByAutomated, admittedAt: now}
	switch {
	case st.last.revision != rev:
		st.last = lastSync{revision: rev}
	case st.last.phase == PhaseFailed || st.last.phase == PhaseError:
		r := pol.Retry
		if r == nil || !st.last.temporary || (r.Limit >= 0 && int64(st.last.attempts) > r.Limit) {
			return 0 // Argo CD: no more automated attempts at this revision
		}
		if now.Before(st.last.retryAt) {
			return st.last.retryAt.Sub(now)
		}
	case st.last.phase == PhaseSucceeded:
		if !pol.Automated.SelfHeal {
			return 0
		}
		if wait := e.healGate(st, now); wait > 0 {
			return wait
		}
		opts.InitiatedBy = InitiatedBySelfHeal
	case st.last.phase == PhaseRunning:
		return 0
	}
	e.startBackgroundSync(ctx, st, opts)
	return 0
}

// healGate applies self-heal's backoff; it returns how long to wait, or 0 to heal now
// (recording the heal). st.mu is held.
func (e *Engine) healGate(st *appState, now time.Time) time.Duration {
	h := &st.heal
	if now.Before(h.pausedUntil) {
		return h.pausedUntil.Sub(now)
	}
	if now.Before(h.nextAt) {
		return h.nextAt.Sub(now)
	}
	keep := h.times[:0]
	for _, t := range h.times {
		if now.Sub(t) < e.opts.SelfHealWindow {
			keep = append(keep, t)
		}
	}
	h.times = keep
	if len(h.times) >= e.opts.SelfHealMaxPerWindow {
		h.pausedUntil = h.times[0].Add(e.opts.SelfHealWindow)
		return h.pausedUntil.Sub(now)
	}
	if !h.last.IsZero() && now.Sub(h.last) > e.opts.SelfHealMax {
		h.attempts = 0
	}
	delay := e.opts.SelfHealBase
	for i := 0; i < h.attempts && delay < e.opts.SelfHealMax; i++ {
		delay *= 2
	}
	delay = min(delay, e.opts.SelfHealMax)
	h.attempts++
	h.last = now
	h.times = append(h.times, now)
	h.nextAt = now.Add(delay)
	return 0
}

// startBackgroundSync runs an automated sync in the background (st.mu is held).
func (e *Engine) startBackgroundSync(ctx context.Context, st *appState, opts SyncOptions) {
	sctx, cancel := context.WithCancelCause(ctx)
	st.opCancel = cancel
	st.last.phase = PhaseRunning
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer cancel(nil)
		select {
		case e.syncSem <- struct{}{}:
		case <-sctx.Done():
			st.mu.Lock()
			st.opCancel = nil
			st.last.phase = ""
			st.mu.Unlock()
			return
		}
		defer func() { <-e.syncSem }()
		e.log.Info("automated sync", logKeyApp, st.name, "reason", opts.InitiatedBy)
		e.runSync(sctx, st, opts)
		e.queue.Add(st.name)
	}()
}

// finishSync records a finished sync: history, automation state, conditions, events, and a
// fresh status.
func (e *Engine) finishSync(ctx context.Context, st *appState, run *syncRun, res *SyncResult) {
	var entry *HistoryEntry
	var cr *git.CommitRange
	if !res.DryRun && run.cmp != nil && run.cmp.desired != nil {
		cr = e.commitRange(ctx, st, run.cmp.desired.sha)
	}
	st.mu.Lock()
	st.op, st.opCancel = nil, nil
	st.syncGen++
	st.lastOp = copyResult(res)
	a := st.app
	if !res.DryRun {
		h := HistoryEntry{Revision: res.Revision, Phase: res.Phase, Message: res.Message, InitiatedBy: res.InitiatedBy, User: res.User,
			StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Duration: res.FinishedAt.Sub(res.StartedAt)}
		if src := a.EffectiveSource(); src != nil {
			h.Source = *src
		}
		if isMultiSource(a) {
			h.Sources = slices.Clone(a.Spec.Sources)
			if revs := strings.Split(res.Revision, ","); len(revs) == len(a.Spec.Sources) {
				h.Revisions = revs
			}
		}
		if run.cmp != nil && run.cmp.desired != nil {
			ci := run.cmp.desired.commit
			h.Commit = &ci
		}
		h.Range = cr
		changed := res.Changed()
		if len(changed) > maxHistoryChanged {
			changed = changed[:maxHistoryChanged]
		}
		h.Changed = changed
		st.nextHistoryID++
		h.ID = st.nextHistoryID
		st.history = append(st.history, h)
		limit := DefaultHistoryLimit
		if a.Spec.RevisionHistoryLimit != nil && *a.Spec.RevisionHistoryLimit > 0 {
			limit = int(*a.Spec.RevisionHistoryLimit)
		}
		if len(st.history) > limit {
			st.history = append([]HistoryEntry(nil), st.history[len(st.history)-limit:]...)
		}
		entry = &h
		// Automation memory.
		attempts := 0
		if st.last.revision == res.Revision && (res.Phase == PhaseFailed || res.Phase == PhaseError) {
			attempts = st.last.attempts + 1
		}
		st.last = lastSync{revision: res.Revision, phase: res.Phase, temporary: res.Temporary, attempts: attempts}
		if attempts > 0 {
			st.last.retryAt = e.now().Add(syncRetryDelay(a.Spec.SyncPolicy, attempts))
		}
		if res.Phase == PhaseSucceeded {
			st.syncErr = ""
		} else {
			st.syncErr = "sync failed: " + res.Message
			if res.Revision != "" {
				st.syncErr = fmt.Sprintf("sync to %s failed: %s", shortSHA(res.Revision), res.Message)
			}
		}
	}
	var invRefs []ObjRef
	if st.inv != nil {
		invRefs = st.inv.Resources
	}
	hist := append([]HistoryEntry(nil), st.history...)
	st.mu.Unlock()
	if !res.DryRun && run.cl != nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := e.writeInventory(wctx, run.cl, st.name, &inventory{Resources: invRefs, History: hist}); err != nil {
			e.log.Warn("history not stored", logKeyApp, st.name, logKeyErr, err)
		}
		cancel()
	}
	e.emit(ctx, Event{Type: EventSyncFinished, App: st.name, Sync: copyResult(res), History: entry})
	e.refresh(context.WithoutCancel(ctx), st, false)
	// Automation looks again with a comparison made after the sync (see syncGen).
	e.queue.Add(st.name)
}

// syncRetryDelay follows syncPolicy.retry.backoff (Argo CD's defaults: 5s, factor 2, at most
// 3m).
func syncRetryDelay(p *app.SyncPolicy, attempts int) time.Duration {
	base, factor, maxD := 5*time.Second, int64(2), 3*time.Minute
	if p != nil && p.Retry != nil && p.Retry.Backoff != nil {
		b := p.Retry.Backoff
		if d, err := app.ParseDuration(b.Duration); err == nil && b.Duration != "" {
			base = d
		}
		if b.Factor != nil && *b.Factor > 0 {
			factor = *b.Factor
		}
		if d, err := app.ParseDuration(b.MaxDuration); err == nil && b.MaxDuration != "" {
			maxD = d
		}
	}
	d := base
	for i := 1; i < attempts && d < maxD; i++ {
		d *= time.Duration(factor)
	}
	return min(d, maxD)
}

func shortSHA(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func hashAny(m map[string]any) uint64 {
	data, _ := json.Marshal(m)
	var h uint64 = 14695981039346656037
	for _, b := range data {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return h
}

// isTemporary tells failures worth retrying (network, timeouts, server overload) from
// permanent ones (bad manifests, permissions, missing repositories or revisions).
func isTemporary(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, render.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || chartTemporary(err) {
		return true
	}
	var ge *git.Error
	if errors.As(err, &ge) {
		return ge.Temporary()
	}
	var re *render.Error
	if errors.As(err, &re) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, errdefs.ErrInvalid) || errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, errdefs.ErrForbidden) {
		return false
	}
	return temporaryAPIError(err)
}
