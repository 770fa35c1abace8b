package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// SyncOptions are the options of one sync, on top of the application's syncPolicy.
type SyncOptions struct {
	// Revision to sync to; "" is the app's target revision (a rollback passes a commit).
	Revision string
	// Prune deletes resources the app no longer renders. Off, they are reported
	// (pruneSkipped) and stay in the inventory.
	Prune bool
	// DryRun applies and prunes with the API server's dry-run: nothing changes, hooks do not
	// run, nothing is recorded in history.
	DryRun bool
	// Resources restricts the sync to these resources (selective sync: no hooks, and only the
	// selected resources are pruned).
	Resources []ResourceKey
	// SkipHooks applies the objects without running hooks (Argo CD's apply sync strategy).
	SkipHooks bool
	// Options add sync options to the app's syncPolicy.syncOptions for this sync
	// ("Replace=true", "ApplyOutOfSyncOnly=true", ...).
	Options app.SyncOptions
	// InitiatedBy is recorded in the result; "" means user.
	InitiatedBy Initiator
	// User is who asked for a user's sync or rollback (an email), recorded with it.
	User string
	// admittedAt is when an automated sync was admitted: its StartedAt (zero: now).
	admittedAt time.Time
}

// applied is an object written by a sync, for the health waits.
type applied struct {
	key ResourceKey
	gvr schema.GroupVersionResource
	rv  string
	// child is a child application (app of apps), applied at `at`.
	child string
	at    time.Time
}

type syncRun struct {
	e       *Engine
	st      *appState
	a       *app.Application
	cmp     *comparison
	cl      *cluster
	opts    SyncOptions
	syncOpt app.SyncOptions
	res     *SyncResult
	applied []applied
	respect bool
}

// errSyncFailed marks a failure already recorded in the result.
var errSyncFailed = errors.New("sync failed")

// runSync performs one sync of st's application. It never returns nil.
func (e *Engine) runSync(ctx context.Context, st *appState, opts SyncOptions) *SyncResult {
	if opts.InitiatedBy == "" {
		opts.InitiatedBy = InitiatedByUser
	}
	st.mu.Lock()
	a := st.app
	st.mu.Unlock()
	started := opts.admittedAt
	if started.IsZero() {
		started = e.now()
	}
	res := &SyncResult{Phase: PhaseRunning, DryRun: opts.DryRun, Prune: opts.Prune, InitiatedBy: opts.InitiatedBy, User: opts.User, StartedAt: started}
	// A running sync shows the commit it goes to from its start (the comparison confirms it).
	res.Revision = e.startRevision(ctx, a, opts.Revision)
	e.setOperation(st, res)
	e.emit(ctx, Event{Type: EventSyncStarted, App: st.name, Sync: copyResult(res), At: res.StartedAt})

	run := &syncRun{e: e, st: st, a: a, opts: opts, res: res}
	if a.Spec.SyncPolicy != nil {
		run.syncOpt = append(run.syncOpt, a.Spec.SyncPolicy.SyncOptions...)
	}
	run.syncOpt = append(run.syncOpt, opts.Options...)
	run.respect = run.syncOpt.Enabled("RespectIgnoreDifferences")

	err := run.execute(ctx)
	switch {
	case err == nil:
		res.Phase = PhaseSucceeded
		if res.Message == "" {
			res.Message = "successfully synced (all tasks run)"
			if opts.DryRun {
				res.Message = "dry run: nothing was changed"
			}
		}
	case errors.Is(err, errSyncFailed):
		// phase and message set where it failed
	default:
		if res.Phase == PhaseRunning {
			res.Phase = PhaseFailed
		}
		res.Message = err.Error()
		res.Temporary = res.Temporary || isTemporary(err)
	}
	if res.Phase == PhaseFailed && run.cmp != nil && run.cmp.desired != nil && !opts.DryRun && len(opts.Resources) == 0 {
		run.runSyncFail(ctx)
	}
	if run.cl != nil && !opts.DryRun {
		run.waitCaughtUp(ctx)
	}
	res.FinishedAt = e.now()
	e.finishSync(ctx, st, run, res)
	return copyResult(res)
}

// startRevision is the commit a sync to revision ("" for the app's target revision) goes to,
// from the shared ref cache; the revision as named when it cannot be resolved.
func (e *Engine) startRevision(ctx context.Context, a *app.Application, revision string) string {
	if isMultiSource(a) {
		revs, err := sourceRevisions(revision, len(a.Spec.Sources))
		if err != nil {
			return revision
		}
		for i, src := range a.Spec.Sources {
			if src.IsChartRepo() {
				if ch, err := e.resolveChart(ctx, &a.Spec.Sources[i], revs[i]); err == nil {
					revs[i] = ch.Version
				} else if revs[i] == "" {
					revs[i] = src.TargetRevision
				}
				continue
			}
			rev := revs[i]
			if rev == "" {
				rev = src.TargetRevision
			}
			if r, err := e.cache.Resolve(ctx, e.repo(src.RepoURL), rev); err == nil {
				revs[i] = r.SHA
			} else {
				revs[i] = rev
			}
		}
		return strings.Join(revs, ",")
	}
	src := a.EffectiveSource()
	if src == nil {
		return revision
	}
	if src.IsChartRepo() {
		if ch, err := e.resolveChart(ctx, src, revision); err == nil {
			return ch.Version
		}
	}
	if revision == "" {
		revision = src.TargetRevision
	}
	r, err := e.cache.Resolve(ctx, e.repo(src.RepoURL), revision)
	if err != nil {
		return revision
	}
	return r.SHA
}

func (r *syncRun) fail(phase OperationPhase, temporary bool, format string, args ...any) error {
	r.res.Phase = phase
	r.res.Message = fmt.Sprintf(format, args...)
	r.res.Temporary = temporary
	return errSyncFailed
}

func (r *syncRun) execute(ctx context.Context) error {
	e, opts := r.e, r.opts
	cmp := e.compare(ctx, r.st, opts.Revision, false)
	r.cmp = cmp
	if cmp.failed {
		msgs := make([]string, 0, len(cmp.conds))
		for _, c := range cmp.conds {
			msgs = append(msgs, c.Message)
		}
		return r.fail(PhaseError, cmp.temporary, "%s", strings.Join(msgs, "; "))
	}
	r.cl = cmp.cl
	if r.res.Revision != cmp.desired.sha {
		r.res.Revision = cmp.desired.sha
		e.setOperation(r.st, r.res)
	}
	if len(cmp.desired.forbidden) > 0 {
		msgs := make([]string, 0, len(cmp.desired.forbidden))
		for _, c := range cmp.desired.forbidden {
			msgs = append(msgs, c.Message)
		}
		return r.fail(PhaseFailed, false, "%s", strings.Join(msgs, "; "))
	}
	selected := func(k ResourceKey) bool { return true }
	selective := len(opts.Resources) > 0
	if selective {
		want := map[ResourceKey]bool{}
		for _, k := range opts.Resources {
			want[k] = true
		}
		selected = func(k ResourceKey) bool {
			if want[k] {
				return true
			}
			// A selection may leave out the namespace of namespaced resources.
			k2 := k
			k2.Namespace = ""
			return want[k2]
		}
	}

	// Plan.
	var applies, prunes, pruneLast []*resResult
	applyOutOfSyncOnly := r.syncOpt.Enabled("ApplyOutOfSyncOnly")
	for _, rr := range cmp.results {
		if !selected(rr.ref.ResourceKey) {
			continue
		}
		if rr.d == nil {
			if r.syncOpt.Enabled("PruneLast") || resourceOptionTrue(rr.live, "PruneLast") {
				pruneLast = append(pruneLast, rr)
			} else {
				prunes = append(prunes, rr)
			}
			continue
		}
		if applyOutOfSyncOnly && rr.status == DiffSynced {
			r.record(rr.ref, ResultSkipped, rr.d.wave, "synced; ApplyOutOfSyncOnly")
			continue
		}
		applies = append(applies, rr)
	}
	// A child application whose name another application holds fails the sync before
	// anything is applied.
	for _, rr := range applies {
		if rr.conflict {
			r.record(rr.ref, ResultFailed, rr.d.wave, rr.message)
			return r.fail(PhaseFailed, false, "%s (%s): %s", rr.d.key, rr.d.source, rr.message)
		}
	}
	if err := r.checkShared(ctx, applies); err != nil {
		return err
	}
	if err := r.checkMissingKinds(applies); err != nil {
		return err
	}
	if selective && len(applies)+len(prunes)+len(pruneLast) == 0 {
		return r.fail(PhaseFailed, false, "none of the selected resources is part of the application")
	}
	hooksOn := !opts.DryRun && !selective && !opts.SkipHooks
	hooks := map[HookType][]*desiredObj{}
	if hooksOn {
		for _, h := range cmp.desired.hooks {
			for _, t := range h.hookTypes {
				hooks[t] = append(hooks[t], h)
			}
		}
	}

	// Namespace and inventory first: a crash after this point still knows what it applied.
	destNS := r.a.Spec.Destination.Namespace
	if r.syncOpt.Enabled("CreateNamespace") && destNS != "" && !opts.DryRun {
		var labels, annotations map[string]string
		if m := r.a.Spec.SyncPolicy.ManagedNamespaceMetadata; m != nil {
			labels, annotations = m.Labels, m.Annotations
		}
		if err := e.ensureNamespace(ctx, r.cl, destNS, labels, annotations); err != nil {
			return r.fail(PhaseFailed, temporaryAPIError(err), "create namespace %s: %v", destNS, err)
		}
	}
	if !opts.DryRun {
		refs := make([]ObjRef, 0, len(applies))
		for _, rr := range applies {
			refs = append(refs, rr.ref)
		}
		if err := r.updateInventory(ctx, true, func(cur []ObjRef) []ObjRef { return mergeRefs(cur, refs) }); err != nil {
			return r.fail(PhaseError, isTemporary(err), "%v", err)
		}
	}

	// PreSync hooks.
	if err := r.runHooks(ctx, HookPreSync, hooks[HookPreSync]); err != nil {
		return err
	}
	// Sync phase, wave by wave: prunes, applies (kind order), Sync hooks, then wait for health
	// before the next wave.
	waveSet := map[int]bool{}
	for _, rr := range applies {
		waveSet[rr.d.wave] = true
	}
	for _, rr := range prunes {
		waveSet[syncWave(rr.live)] = true
	}
	for _, h := range hooks[HookSync] {
		waveSet[h.wave] = true
	}
	waves := make([]int, 0, len(waveSet))
	for w := range waveSet {
		waves = append(waves, w)
	}
	sort.Ints(waves)
	for i, w := range waves {
		if err := ctx.Err(); err != nil {
			return r.terminated(ctx)
		}
		for _, rr := range prunes {
			if syncWave(rr.live) == w {
				if err := r.prune(ctx, rr, w); err != nil {
					return err
				}
			}
		}
		var waveApplied []applied
		for _, rr := range applies {
			if rr.d.wave != w {
				continue
			}
			ap, err := r.apply(ctx, rr)
			if err != nil {
				return err
			}
			if ap != nil {
				waveApplied = append(waveApplied, *ap)
			}
		}
		var waveHooks []*desiredObj
		for _, h := range hooks[HookSync] {
			if h.wave == w {
				waveHooks = append(waveHooks, h)
			}
		}
		if err := r.runHooks(ctx, HookSync, waveHooks); err != nil {
			return err
		}
		more := i < len(waves)-1 || len(pruneLast) > 0 || len(hooks[HookPostSync]) > 0
		if more && !opts.DryRun {
			if err := r.waitHealthy(ctx, w, waveApplied); err != nil {
				return err
			}
		}
	}
	for _, rr := range pruneLast {
		if err := r.prune(ctx, rr, syncWave(rr.live)); err != nil {
			return err
		}
	}
	if len(hooks[HookPostSync]) > 0 {
		if err := r.runHooks(ctx, HookPostSync, hooks[HookPostSync]); err != nil {
			return err
		}
	}
	if !opts.DryRun {
		r.finalInventory(ctx, selective)
	}
	return nil
}

// checkMissingKinds fails the sync, before anything is applied, when it would apply an object
// of a kind the cluster does not know and no CustomResourceDefinition of the app defines, as
// Argo CD's dry-run does — unless SkipDryRunOnMissingResource=true (on the resource or the
// app): then the object is applied in its wave once its kind exists (waiting up to
// Options.CRDWait).
func (r *syncRun) checkMissingKinds(applies []*resResult) error {
	if r.opts.DryRun {
		return nil
	}
	defined := map[string]bool{} // group/kind of the app's CRDs
	for _, d := range r.cmp.desired.resources {
		if d.key.Kind == "CustomResourceDefinition" && d.key.Group == "apiextensions.k8s.io" {
			g, _, _ := unstructured.NestedString(d.obj.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(d.obj.Object, "spec", "names", "kind")
			defined[g+"/"+k] = true
		}
	}
	appSkip := r.syncOpt.Enabled("SkipDryRunOnMissingResource")
	for _, rr := range applies {
		d := rr.d
		if d.child != nil || d.restMapping() != nil || defined[d.key.Group+"/"+d.key.Kind] || appSkip || resourceOptionTrue(d.obj, "SkipDryRunOnMissingResource") {
			continue
		}
		if m, err := r.cl.mapping(d.obj.GroupVersionKind(), true); err == nil {
			d.setMapping(m)
			continue
		}
		msg := fmt.Sprintf("the cluster does not know %s %s and no CustomResourceDefinition of the application defines it "+
			"(SkipDryRunOnMissingResource=true applies it once the kind exists)", d.obj.GetAPIVersion(), d.obj.GetKind())
		r.record(d.ref, ResultFailed, d.wave, msg)
		return r.fail(PhaseFailed, false, "%s (%s): %s", d.key, d.source, msg)
	}
	return nil
}

func (r *syncRun) terminated(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = ctx.Err()
	}
	return r.fail(PhaseFailed, false, "sync terminated: %v", cause)
}

func resourceOptionFalse(obj *unstructured.Unstructured, key string) bool {
	if obj == nil {
		return false
	}
	v, ok := resourceSyncOption(obj, key)
	return ok && strings.EqualFold(v, "false")
}

func resourceOptionTrue(obj *unstructured.Unstructured, key string) bool {
	if obj == nil {
		return false
	}
	v, ok := resourceSyncOption(obj, key)
	return ok && strings.EqualFold(v, "true")
}

func (r *syncRun) record(ref ObjRef, code ResultCode, wave int, msg string) {
	r.res.Resources = append(r.res.Resources, ResourceResult{ResourceKey: ref.ResourceKey, Version: ref.Version, Result: code, Wave: wave, Message: msg})
}

// mappingFor returns the REST mapping of a desired object, waiting (bounded) for a kind whose
// CRD this sync just applied.
func (r *syncRun) mappingFor(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	deadline := time.Now().Add(r.e.opts.CRDWait)
	for {
		m, err := r.cl.mapping(gvk, true)
		if err == nil || !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (r *syncRun) apply(ctx context.Context, rr *resResult) (*applied, error) {
	d := rr.d
	if d.child != nil {
		at := r.e.now()
		code, err := r.e.applyChild(r.st.name, d, r.opts.DryRun)
		if err != nil {
			r.record(d.ref, ResultFailed, d.wave, err.Error())
			return nil, r.fail(PhaseFailed, false, "%s (%s): %v", d.key, d.source, err)
		}
		r.record(d.ref, code, d.wave, "")
		if r.opts.DryRun || d.child.kind != KindApplication {
			return nil, nil
		}
		return &applied{key: d.key, child: d.key.Name, at: at}, nil
	}
	m := d.restMapping()
	if m == nil {
		var err error
		if m, err = r.mappingFor(ctx, d.obj.GroupVersionKind()); err != nil {
			r.record(d.ref, ResultFailed, d.wave, err.Error())
			return nil, r.fail(PhaseFailed, false, "%s (%s): %v", d.key, d.source, err)
		}
		d.setMapping(m)
	}
	ptrs := diff.Pointers(r.a.Spec.IgnoreDifferences, d.key.Group, d.key.Kind, d.key.Namespace, d.key.Name)
	ri := r.cl.resource(m, d.key.Namespace)
	var oi objIgnores
	live := rr.live
	if r.respect {
		oi = compileIgnores(r.a.Spec.IgnoreDifferences).forObject(d.key.Group, d.key.Kind, d.key.Namespace, d.key.Name)
		if len(oi.managers) > 0 && live != nil {
			// The watch caches drop managed fields; the managers' fields are read fresh.
			if cur, err := ri.Get(ctx, d.key.Name, metav1.GetOptions{}); err == nil {
				live = cur
			}
		}
	}
	obj, err := forApply(ctx, d, live, ptrs, oi, managedOf(live), r.respect)
	if err != nil {
		r.record(d.ref, ResultFailed, d.wave, err.Error())
		return nil, r.fail(PhaseFailed, false, "%s (%s): %v", d.key, d.source, err)
	}
	replace := r.syncOpt.Enabled("Replace") || resourceOptionTrue(d.obj, "Replace")
	var out *unstructured.Unstructured
	var dryRun []string
	if r.opts.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	if replace {
		out, err = r.replace(ctx, ri, obj, dryRun, d.noValidate)
	} else {
		out, err = serverApply(ctx, ri, d, obj, r.opts.DryRun)
	}
	if err != nil {
		if r.opts.DryRun && apierrors.IsNotFound(err) {
			// The namespace does not exist yet: a real sync creates it first.
			r.record(d.ref, ResultCreated, d.wave, "dry run: its namespace does not exist yet")
			return nil, nil
		}
		r.record(d.ref, ResultFailed, d.wave, dryRunMessage(err))
		return nil, r.fail(PhaseFailed, temporaryAPIError(err), "%s (%s): %s", d.key, d.source, dryRunMessage(err))
	}
	code := ResultConfigured
	switch {
	case rr.live == nil:
		code = ResultCreated
	case r.opts.DryRun && rr.status == DiffSynced:
		code = ResultUnchanged
	case !r.opts.DryRun && out.GetResourceVersion() == rr.live.GetResourceVersion():
		code = ResultUnchanged
	}
	r.record(d.ref, code, d.wave, "")
	if d.key.Kind == "CustomResourceDefinition" {
		r.cl.mapper.Reset()
	}
	if r.opts.DryRun {
		return nil, nil
	}
	if _, err := r.cl.ensureWatch(ctx, m.Resource); err != nil {
		return nil, r.fail(PhaseFailed, true, "%s: %v", d.key, err)
	}
	ap := applied{key: d.key, gvr: m.Resource, rv: out.GetResourceVersion()}
	r.applied = append(r.applied, ap)
	return &ap, nil
}

// replace creates or updates (PUT) the object: Replace=true.
func (r *syncRun) replace(ctx context.Context, ri interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
}, obj *unstructured.Unstructured, dryRun []string, noValidate bool) (*unstructured.Unstructured, error) {
	validation := ""
	if noValidate {
		validation = metav1.FieldValidationIgnore
	}
	cur, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, DryRun: dryRun, FieldValidation: validation})
	}
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	obj.SetResourceVersion(cur.GetResourceVersion())
	return ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRun, FieldValidation: validation})
}

func (r *syncRun) propagation() metav1.DeletionPropagation {
	switch v, _ := r.syncOpt.Get("PrunePropagationPolicy"); strings.ToLower(v) {
	case "background":
		return metav1.DeletePropagationBackground
	case "orphan":
		return metav1.DeletePropagationOrphan
	}
	return metav1.DeletePropagationForeground // Argo CD's default
}

func (r *syncRun) prune(ctx context.Context, rr *resResult, wave int) error {
	if v, ok := resourceSyncOption(rr.live, "Prune"); ok && strings.EqualFold(v, "false") {
		r.record(rr.ref, ResultPruneSkipped, wave, "Prune=false on the resource")
		return nil
	}
	if !r.opts.Prune {
		r.record(rr.ref, ResultPruneSkipped, wave, "requires pruning; prune is disabled")
		return nil
	}
	if isChildRef(rr.ref) {
		if !r.opts.DryRun {
			if err := r.e.removeChild(ctx, r.st.name, rr.ref); err != nil {
				r.record(rr.ref, ResultFailed, wave, err.Error())
				return r.fail(PhaseFailed, isTemporary(err), "prune %s: %v", rr.ref.ResourceKey, err)
			}
		}
		r.record(rr.ref, ResultPruned, wave, "")
		return nil
	}
	m, err := r.cl.mapping(rr.ref.GVK(), false)
	if err != nil {
		r.record(rr.ref, ResultFailed, wave, err.Error())
		return r.fail(PhaseFailed, false, "prune %s: %v", rr.ref.ResourceKey, err)
	}
	uid := rr.live.GetUID()
	policy := r.propagation()
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}}
	if r.opts.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err = r.cl.resource(m, rr.ref.Namespace).Delete(ctx, rr.ref.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.record(rr.ref, ResultFailed, wave, dryRunMessage(err))
		return r.fail(PhaseFailed, temporaryAPIError(err), "prune %s: %s", rr.ref.ResourceKey, dryRunMessage(err))
	}
	r.record(rr.ref, ResultPruned, wave, "")
	return nil
}

// waitHealthy waits until every object applied in a wave is no longer Progressing (Healthy,
// Degraded, Suspended...) in the cache, bounded by Options.HealthTimeout.
func (r *syncRun) waitHealthy(ctx context.Context, wave int, objs []applied) error {
	if len(objs) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, r.e.opts.HealthTimeout)
	defer cancel()
	t := time.NewTicker(r.e.opts.PollStep)
	defer t.Stop()
	for {
		var pending []string
		for _, a := range objs {
			if a.child != "" {
				if wait, why := r.e.childPending(a.child, a.at); wait {
					pending = append(pending, fmt.Sprintf("%s (%s)", a.key, why))
				}
				continue
			}
			live, ok := r.cl.cached(a.gvr, a.key.Namespace, a.key.Name)
			if !ok || !rvAtLeast(live.GetResourceVersion(), a.rv) {
				pending = append(pending, a.key.String()+" (not observed yet)")
				continue
			}
			if h := r.e.health().Assess(live); h.Status == health.Progressing {
				pending = append(pending, fmt.Sprintf("%s (%s)", a.key, h.Message))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-t.C:
		case <-wctx.Done():
			if ctx.Err() != nil {
				return r.terminated(ctx)
			}
			return r.fail(PhaseFailed, true, "wave %d: not healthy after %s: %s", wave, r.e.opts.HealthTimeout, strings.Join(pending, ", "))
		}
	}
}

// waitCaughtUp waits (briefly) until the caches hold what the sync wrote, so the status
// computed right after a sync reflects it.
func (r *syncRun) waitCaughtUp(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		behind := false
		for _, a := range r.applied {
			if a.child != "" {
				continue
			}
			live, ok := r.cl.cached(a.gvr, a.key.Namespace, a.key.Name)
			if !ok || !rvAtLeast(live.GetResourceVersion(), a.rv) {
				behind = true
				break
			}
		}
		if !behind {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runHooks runs hooks of one type, wave by wave, each waited on until it completes. A failed
// hook fails the sync.
func (r *syncRun) runHooks(ctx context.Context, typ HookType, hooks []*desiredObj) error {
	for _, h := range hooks {
		if err := ctx.Err(); err != nil {
			return r.terminated(ctx)
		}
		hr := r.runHook(ctx, h, typ)
		r.res.Hooks = append(r.res.Hooks, hr)
		if hr.Phase != PhaseSucceeded {
			if ctx.Err() != nil {
				return r.terminated(ctx)
			}
			return r.fail(PhaseFailed, true, "%s hook %s failed: %s", typ, hr.ResourceKey, hr.Message)
		}
	}
	return nil
}

func (r *syncRun) runSyncFail(ctx context.Context) {
	var hooks []*desiredObj
	for _, h := range r.cmp.desired.hooks {
		for _, t := range h.hookTypes {
			if t == HookSyncFail {
				hooks = append(hooks, h)
			}
		}
	}
	if len(hooks) == 0 || r.e.closing.Load() {
		return
	}
	// SyncFail hooks run even when the sync was terminated: a fresh, bounded context.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.e.opts.HookTimeout)
	defer cancel()
	for _, h := range hooks {
		r.res.Hooks = append(r.res.Hooks, r.runHook(fctx, h, HookSyncFail))
	}
}

func (r *syncRun) runHook(ctx context.Context, h *desiredObj, typ HookType) HookResult {
	hr := HookResult{ResourceKey: h.key, Version: h.ref.Version, Type: typ, Wave: h.wave, Phase: PhaseRunning}
	failed := func(format string, args ...any) HookResult {
		hr.Phase, hr.Message = PhaseFailed, fmt.Sprintf(format, args...)
		return hr
	}
	m, err := r.mappingFor(ctx, h.obj.GroupVersionKind())
	if err != nil {
		return failed("%v", err)
	}
	ri := r.cl.resource(m, h.key.Namespace)
	obj := h.obj.DeepCopy()
	generated := obj.GetName() == ""
	if !generated && hasPolicy(h.policies, BeforeHookCreation) {
		if err := deleteAndWait(ctx, ri, obj.GetName(), r.e.opts.PollStep); err != nil {
			return failed("delete the previous %s: %v", h.key, err)
		}
		r.st.trackHook(h.ref, true)
	}
	var created *unstructured.Unstructured
	if generated {
		created, err = ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
	} else {
		created, err = ri.Apply(ctx, obj.GetName(), obj, applyOptions(false))
	}
	if err != nil {
		return failed("%s", dryRunMessage(err))
	}
	hr.Name = created.GetName()
	hookRef := h.ref
	hookRef.Name = hr.Name
	r.st.trackHook(hookRef, false)
	if _, err := r.cl.ensureWatch(ctx, m.Resource); err != nil {
		return failed("%v", err)
	}
	hctx, cancel := context.WithTimeout(ctx, r.e.opts.HookTimeout)
	defer cancel()
	t := time.NewTicker(r.e.opts.PollStep)
	defer t.Stop()
	for hr.Phase == PhaseRunning {
		if live, ok := r.cl.cached(m.Resource, h.key.Namespace, hr.Name); ok && rvAtLeast(live.GetResourceVersion(), created.GetResourceVersion()) {
			hr.Phase, hr.Message = r.hookPhase(live)
		}
		if hr.Phase != PhaseRunning {
			break
		}
		select {
		case <-t.C:
		case <-hctx.Done():
			hr.Phase, hr.Message = PhaseFailed, fmt.Sprintf("did not complete within %s", r.e.opts.HookTimeout)
			if ctx.Err() != nil {
				hr.Message = "sync terminated while the hook ran"
			}
		}
	}
	if (hr.Phase == PhaseSucceeded && hasPolicy(h.policies, HookSucceeded)) || (hr.Phase == PhaseFailed && hasPolicy(h.policies, HookFailed)) {
		bg := metav1.DeletePropagationBackground
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err := ri.Delete(dctx, hr.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		dcancel()
		hr.Deleted = err == nil || apierrors.IsNotFound(err)
		if hr.Deleted {
			r.st.trackHook(hookRef, true)
		}
	}
	return hr
}

// hookPhase: Jobs and Pods complete; any other kind succeeds once healthy.
func (r *syncRun) hookPhase(live *unstructured.Unstructured) (OperationPhase, string) {
	h := r.e.health().Assess(live)
	if live.GetKind() == "Pod" && live.GroupVersionKind().Group == "" {
		switch s, _, _ := unstructured.NestedString(live.Object, "status", "phase"); s {
		case "Succeeded":
			return PhaseSucceeded, h.Message
		case "Failed":
			return PhaseFailed, h.Message
		}
		return PhaseRunning, h.Message
	}
	switch h.Status {
	case health.Healthy, health.Suspended:
		return PhaseSucceeded, h.Message
	case health.Degraded:
		return PhaseFailed, h.Message
	}
	return PhaseRunning, h.Message
}

// deleteAndWait deletes an object (background propagation) and waits until it is gone.
func deleteAndWait(ctx context.Context, ri interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
}, name string, step time.Duration) error {
	bg := metav1.DeletePropagationBackground
	err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there after 60s: %w", ctx.Err())
		case <-time.After(step):
		}
	}
}

// updateInventory changes the app's inventory in memory and, with write, in the cluster
// (skipped when nothing changed).
func (r *syncRun) updateInventory(ctx context.Context, write bool, change func([]ObjRef) []ObjRef) error {
	cur, err := r.e.inventoryFor(ctx, r.st, r.cl)
	if err != nil {
		return err
	}
	next := change(cur)
	if sameRefs(cur, next) {
		return nil
	}
	r.st.mu.Lock()
	inv := &inventory{Resources: next, History: r.st.history}
	r.st.mu.Unlock()
	if write {
		if err := r.e.writeInventory(ctx, r.cl, r.st.name, inv); err != nil {
			return err
		}
	}
	r.st.mu.Lock()
	r.st.inv, r.st.invCluster = inv, r.cl.host
	r.st.mu.Unlock()
	return nil
}

func sameRefs(a, b []ObjRef) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[ResourceKey]string, len(a))
	for _, r := range a {
		seen[r.ResourceKey] = r.Version
	}
	for _, r := range b {
		if v, ok := seen[r.ResourceKey]; !ok || v != r.Version {
			return false
		}
	}
	return true
}

// finalInventory: after a full sync the inventory is what the app renders plus what still
// requires pruning; after a selective one, the old inventory minus what was pruned. It is
// written with the history when the sync finishes.
func (r *syncRun) finalInventory(ctx context.Context, selective bool) {
	pruned := map[ResourceKey]bool{}
	for _, rr := range r.res.Resources {
		if rr.Result == ResultPruned {
			pruned[rr.ResourceKey] = true
		}
	}
	var desired []ObjRef
	if !selective {
		for _, d := range r.cmp.desired.resources {
			desired = append(desired, d.ref)
		}
	}
	_ = r.updateInventory(ctx, false, func(cur []ObjRef) []ObjRef {
		var keep []ObjRef
		for _, ref := range mergeRefs(desired, cur) {
			if !pruned[ref.ResourceKey] {
				keep = append(keep, ref)
			}
		}
		return keep
	})
}

func copyResult(r *SyncResult) *SyncResult {
	if r == nil {
		return nil
	}
	c := *r
	c.Resources = append([]ResourceResult(nil), r.Resources...)
	c.Hooks = append([]HookResult(nil), r.Hooks...)
	return &c
}
