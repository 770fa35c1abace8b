package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// desiredSet is an application rendered at one commit and prepared for its destination.
type desiredSet struct {
	sha      string
	specHash uint64
	cluster  string
	commit   git.CommitInfo
	srcType  app.SourceType

	resources []*desiredObj // applied and compared
	hooks     []*desiredObj // run by syncs, not compared
	forbidden []Condition   // resources the project does not permit
	warnings  []Condition
}

// desiredObj is one rendered object prepared for apply: namespace defaulted, tracking label
// and annotation added.
type desiredObj struct {
	obj *unstructured.Unstructured
	key ResourceKey
	ref ObjRef

	mu         sync.Mutex        // a sync and a refresh may resolve the kind at once
	mapping    *meta.RESTMapping // nil while the cluster does not know the kind
	namespaced bool

	source    render.Location
	hash      uint64
	wave      int
	hookTypes []HookType
	policies  []DeletePolicy
	// noValidate: Validate=false (per resource or for the app): applied with
	// fieldValidation=Ignore.
	noValidate bool
	// child is set for an argoproj.io Application or AppProject: the engine creates it as
	// its own application or project instead of applying it (app of apps).
	child *childSpec
}

func (d *desiredObj) isHook() bool { return len(d.hookTypes) > 0 }

func (d *desiredObj) restMapping() *meta.RESTMapping {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mapping
}

func (d *desiredObj) setMapping(m *meta.RESTMapping) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mapping, d.namespaced = m, namespaced(m)
}

// cmpEntry caches one resource's comparison: it stays valid while the desired object and the
// live object (by resource version, or by content when only its status changed) stay the same.
type cmpEntry struct {
	desiredHash uint64
	ptrHash     uint64
	liveRV      string // "" for a confirmed-missing object
	liveHash    uint64
	status      DiffStatus
	message     string
	err         bool // the dry-run was refused (message says why)
}

// resResult is one resource in a comparison.
type resResult struct {
	d       *desiredObj // nil for an object that requires pruning
	ref     ObjRef
	live    *unstructured.Unstructured // from the cache or a GET: read-only
	status  DiffStatus
	health  health.Result
	message string
	err     bool
	// conflict: a child application's name is held by another application.
	conflict bool
}

// comparison is an application's desired state compared with its cluster.
type comparison struct {
	cl        *cluster
	desired   *desiredSet
	results   []*resResult // desired resources in apply order, then those requiring pruning
	inventory []ObjRef
	sync      SyncCode
	health    health.Result
	conds     []Condition
	// temporary: the failure (conds) may go away by itself (network, timeouts).
	temporary bool
	failed    bool // no usable comparison
	// syncGen is the app's sync generation when the comparison began.
	syncGen uint64
}

// compare renders the app (revision "" means its target revision) and compares it with the
// cluster. Failures become conditions on the comparison; it never returns nil.
func (e *Engine) compare(ctx context.Context, st *appState, revision string, hard bool) *comparison {
	st.mu.Lock()
	a, project, owner, gen := st.app, st.project, st.owner, st.syncGen
	st.mu.Unlock()
	if owner != "" || project == nil {
		project = e.resolveProject(a.Spec.Project)
	}
	cmp := &comparison{sync: Unknown, health: health.Result{Status: health.Unknown}, syncGen: gen}
	fail := func(typ string, err error, temporary bool) *comparison {
		c := Condition{Type: typ, Message: err.Error()}
		var re *render.Error
		if errors.As(err, &re) {
			c.Source = re.At
		}
		cmp.conds = append(cmp.conds, c)
		cmp.failed, cmp.temporary = true, temporary
		return cmp
	}
	src := a.EffectiveSource()
	if src == nil {
		return fail(ConditionInvalidSpec, errors.New("spec.source is required (or exactly one entry in spec.sources)"), false)
	}
	if err := project.Permits(a); err != nil {
		return fail(ConditionInvalidSpec, err, false)
	}
	cl, err := e.clusterFor(ctx, a.Spec.Destination)
	if err != nil {
		if isNoCluster(err) {
			return fail(ConditionNoCluster, err, false)
		}
		return fail(ConditionInvalidSpec, err, false)
	}
	cmp.cl = cl
	ds, err := e.desiredFor(ctx, st, a, project, cl, revision, hard)
	if err != nil {
		return fail(ConditionComparisonError, err, isTemporary(err))
	}
	cmp.desired = ds
	inv, err := e.inventoryFor(ctx, st, cl)
	if err != nil {
		return fail(ConditionComparisonError, err, isTemporary(err))
	}
	if adopted := e.adoptTracked(ctx, st, cl, ds); len(adopted) > 0 {
		st.mu.Lock()
		if st.inv != nil {
			inv = mergeRefs(st.inv.Resources, adopted)
			st.inv.Resources = inv
		}
		st.mu.Unlock()
	}
	cmp.inventory = inv
	cmp.conds = append(cmp.conds, ds.warnings...)
	cmp.conds = append(cmp.conds, ds.forbidden...)
	for _, w := range a.Warnings {
		cmp.conds = append(cmp.conds, Condition{Type: ConditionSpecWarning, Message: w})
	}
	for _, w := range project.Warnings {
		// The project's ignored fields and policy lines (a bad role policy names the role and line).
		cmp.conds = append(cmp.conds, Condition{Type: ConditionSpecWarning, Message: "AppProject " + project.Metadata.Name + ": " + w})
	}
	ign := compileIgnores(a.Spec.IgnoreDifferences)
	cmp.conds = append(cmp.conds, ign.conds...)
	if a.Spec.SyncPolicy != nil {
		cmp.conds = append(cmp.conds, ignoredOptionWarnings(a.Spec.SyncPolicy.SyncOptions, "spec.syncPolicy.syncOptions")...)
	}
	if v, ok := a.Metadata.Annotations[AnnotationCompareOptions]; ok {
		cmp.conds = append(cmp.conds, compareOptionWarnings(v, "metadata.annotations["+AnnotationCompareOptions+"]")...)
	}

	respect := a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.SyncOptions.Enabled("RespectIgnoreDifferences")
	keys := make(map[ResourceKey]bool, len(ds.resources))
	var compareErrs []string
	var src0 render.Location
	for _, d := range ds.resources {
		keys[d.key] = true
		var r *resResult
		if d.child != nil {
			r = e.compareChild(st.name, d)
			if r.conflict {
				cmp.conds = append(cmp.conds, Condition{Type: ConditionInvalidSpec, Source: d.source,
					Message: fmt.Sprintf("%s (%s): %s; it is not created", d.key, d.source, r.message)})
			}
		} else {
			r = e.compareResource(ctx, st, cl, d, ign, respect)
		}
		if r.err {
			if len(compareErrs) == 0 {
				src0 = d.source
			}
			compareErrs = append(compareErrs, fmt.Sprintf("%s (%s): %s", d.key, d.source, r.message))
		}
		cmp.results = append(cmp.results, r)
	}
	if ctx.Err() != nil {
		return fail(ConditionComparisonError, ctx.Err(), true)
	}
	if len(compareErrs) > 0 {
		cmp.conds = append(cmp.conds, Condition{Type: ConditionComparisonError, Source: src0,
			Message: "the API server refused the dry-run: " + strings.Join(compareErrs, "; ")})
	}
	// What the inventory lists and git no longer renders requires pruning.
	for _, ref := range inv {
		if keys[ref.ResourceKey] {
			continue
		}
		if isChildRef(ref) {
			if live := e.extraChild(st.name, ref); live != nil {
				cmp.results = append(cmp.results, &resResult{ref: ref, live: live, status: DiffExtra, health: health.Result{Status: health.Healthy}})
			}
			continue
		}
		live := e.liveExtra(ctx, st, cl, ref)
		if live == nil || !ownedBy(live, st.name) {
			continue // gone, or another application applies it now
		}
		cmp.results = append(cmp.results, &resResult{ref: ref, live: live, status: DiffExtra, health: e.health().Assess(live)})
	}
	cmp.sync = Synced
	worst := health.Result{Status: health.Healthy}
	for _, r := range cmp.results {
		if r.status == DiffExtra && ignoreExtraneous(r.live) {
			// compare-options: IgnoreExtraneous: shown as requiring pruning, but the app
			// stays Synced, as in Argo CD.
		} else if r.status != DiffSynced {
			cmp.sync = OutOfSync
		}
		if r.d != nil && health.Worse(r.health.Status, worst.Status) {
			worst = r.health
			if worst.Message != "" {
				worst.Message = r.ref.ResourceKey.String() + ": " + worst.Message
			}
		}
	}
	cmp.health = worst
	return cmp
}

// liveExtra finds a live object the inventory lists (nil when gone). Objects adopted from Argo
// CD's tracking carry no Freshet label, so the watch caches do not hold them: they are read
// with a GET.
func (e *Engine) liveExtra(ctx context.Context, st *appState, cl *cluster, ref ObjRef) *unstructured.Unstructured {
	m, err := cl.mapping(ref.GVK(), false)
	if err != nil {
		return nil
	}
	if _, err := cl.ensureWatch(ctx, m.Resource); err != nil {
		return nil
	}
	live, ok := cl.cached(m.Resource, ref.Namespace, ref.Name)
	if ok {
		return live
	}
	st.mu.Lock()
	adopted := st.adopted[ref.ResourceKey]
	st.mu.Unlock()
	if !adopted {
		return nil
	}
	obj, err := cl.resource(m, ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return obj
}

// ownedBy reports whether a live object was last applied for app: by Freshet's tracking id,
// else by Argo CD's (argocd.argoproj.io/tracking-id); an object with neither counts as the
// app's (the inventory lists it).
func ownedBy(live *unstructured.Unstructured, app string) bool {
	ann := live.GetAnnotations()
	if id, ok := ann[AnnotationTrackingID]; ok {
		return strings.HasPrefix(id, app+":")
	}
	if id, ok := ann[AnnotationArgoTrackingID]; ok {
		return strings.HasPrefix(id, app+":")
	}
	return true
}

func (e *Engine) inventoryFor(ctx context.Context, st *appState, cl *cluster) ([]ObjRef, error) {
	st.mu.Lock()
	if st.inv != nil && st.invCluster == cl.host {
		refs := st.inv.Resources
		st.mu.Unlock()
		return refs, nil
	}
	st.mu.Unlock()
	inv, err := e.readInventory(ctx, cl, st.name)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	fresh := st.inv == nil || st.invCluster != cl.host
	defer func() {
		st.mu.Unlock()
		if fresh && len(inv.Children) > 0 {
			e.restoreChildren(st.name, inv.Children)
		}
	}()
	if fresh {
		st.inv, st.invCluster = inv, cl.host
		if len(st.hooks) == 0 {
			st.hooks = inv.Hooks
		}
		if len(st.history) == 0 && len(inv.History) > 0 {
			// After a restart: history, and what automation needs to know of the last sync.
			st.history = inv.History
			for _, h := range inv.History {
				st.nextHistoryID = max(st.nextHistoryID, h.ID)
			}
			if st.last.revision == "" {
				h := inv.History[len(inv.History)-1]
				st.last = lastSync{revision: h.Revision, phase: h.Phase}
			}
		}
	}
	return st.inv.Resources, nil
}

// sourceHash identifies what an app's desired state is computed from, besides the commit.
func sourceHash(a *app.Application, src *app.Source) uint64 {
	data, _ := json.Marshal(struct {
		Name string
		Src  *app.Source
		Dest app.Destination
	}{a.Metadata.Name, src, a.Spec.Destination})
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return diff.Hash(m)
}

func (e *Engine) repo(url string) git.Repo {
	r := git.Repo{URL: url}
	if e.opts.Credentials != nil {
		r.Credentials = e.opts.Credentials(url)
	}
	return r
}

// desiredFor returns the app's desired state at revision (its target revision when ""),
// reusing the last one while the commit and the spec are unchanged and sharing renders
// across applications.
func (e *Engine) desiredFor(ctx context.Context, st *appState, a *app.Application, project *app.AppProject, cl *cluster, revision string, hard bool) (*desiredSet, error) {
	if isMultiSource(a) {
		return e.desiredMulti(ctx, st, a, project, cl, revision, hard)
	}
	src := a.EffectiveSource()
	if src.IsChartRepo() {
		return e.desiredChart(ctx, st, a, project, cl, src, revision, hard)
	}
	repo := e.repo(src.RepoURL)
	rev := revision
	if rev == "" {
		rev = src.TargetRevision
	}
	resolved, err := e.cache.Resolve(ctx, repo, rev)
	if err != nil {
		return nil, err
	}
	specHash := sourceHash(a, src) ^ e.prepareHash(a)
	st.mu.Lock()
	cur := st.desired
	st.mu.Unlock()
	if !hard && cur != nil && cur.sha == resolved.SHA && cur.specHash == specHash && cur.cluster == cl.host && !cur.hasUnknownKinds() {
		return cur, nil
	}
	normalized, err := git.NormalizeURL(src.RepoURL)
	if err != nil {
		return nil, err
	}
	destNS := a.Spec.Destination.Namespace
	kubeVersion, apiVersions := cl.serverInfo()
	// The key: what the render depends on. Directory and plain Kustomize output does not
	// depend on the app, so applications rendering the same path share one render.
	srcCopy := *src
	srcCopy.RepoURL, srcCopy.TargetRevision = "", ""
	optsJSON, _ := json.Marshal(srcCopy)
	key := normalized + "\x00" + resolved.SHA + "\x00" + string(optsJSON)
	typ := src.ExplicitType()
	// Jsonnet arguments may name the app ($ARGOCD_APP_NAME).
	perApp := typ == app.SourceTypeHelm || (src.Kustomize != nil && src.Kustomize.CommonAnnotationsEnvsubst) ||
		(src.Directory != nil && src.Directory.Jsonnet.HasVars())
	var snap *git.Snapshot
	defer func() {
		if snap != nil {
			snap.Release()
		}
	}()
	if typ == "" {
		// Detect Helm without rendering: Helm output depends on the release name and namespace.
		snap, err = e.cache.Checkout(ctx, repo, resolved.SHA)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(snap.Dir, filepath.FromSlash(strings.TrimPrefix(src.Path, "/")), "Chart.yaml")); err == nil {
			perApp = true
		}
	}
	if perApp {
		key += "\x00" + a.Metadata.Name + "\x00" + destNS + "\x00" + kubeVersion
	}
	entry, err := e.renders.get(ctx, key, func(ctx context.Context) (*renderEntry, error) {
		s, err := e.cache.Checkout(ctx, repo, resolved.SHA)
		if err != nil {
			return nil, err
		}
		defer s.Release()
		res, err := e.renderer.Render(ctx, render.Request{
			Root: s.Dir, Source: *src, AppName: a.Metadata.Name, Namespace: destNS,
			Revision: resolved.SHA, KubeVersion: kubeVersion, APIVersions: apiVersions, Charts: e.depFetcher(),
		})
		if err != nil {
			return nil, err
		}
		return &renderEntry{res: res, commit: s.Commit}, nil
	})
	if err != nil {
		return nil, err
	}
	ds := e.prepare(cl, a, project, entry)
	ds.sha, ds.specHash, ds.cluster = resolved.SHA, specHash, cl.host
	if revision == "" {
		st.mu.Lock()
		st.desired = ds
		st.mu.Unlock()
	}
	return ds, nil
}

func (ds *desiredSet) hasUnknownKinds() bool {
	for _, d := range ds.resources {
		if d.child == nil && d.restMapping() == nil {
			return true
		}
	}
	return false
}

// prepare turns rendered objects into what the engine applies: hooks separated, namespaces
// defaulted to the destination's (cleared for cluster-scoped kinds), the project's resource
// rules checked, and the tracking label and annotation set.
func (e *Engine) prepare(cl *cluster, a *app.Application, project *app.AppProject, entry *renderEntry) *desiredSet {
	ds := &desiredSet{commit: entry.commit, srcType: entry.res.Type}
	label := appLabelValue(a.Metadata.Name)
	destNS := a.Spec.Destination.Namespace
	if destNS == "" {
		destNS = metav1.NamespaceDefault
	}
	for _, w := range entry.res.Warnings {
		ds.warnings = append(ds.warnings, Condition{Type: ConditionSpecWarning, Message: w})
	}
	index := map[ResourceKey]int{}
	tracking := e.Settings()
	instanceOK := len(validation.IsValidLabelValue(a.Metadata.Name)) == 0
	if tracking.TrackingMethod.label() && !instanceOK {
		ds.warnings = append(ds.warnings, Condition{Type: ConditionSpecWarning, Message: fmt.Sprintf(
			"%s=%s: the application name %q is not a valid label value, so objects do not get the %s label (Argo CD refuses such names for label tracking; use annotation)",
			KeyTrackingMethod, tracking.TrackingMethod, a.Metadata.Name, tracking.instanceLabelKey())})
	}
	appNoValidate := false
	if a.Spec.SyncPolicy != nil {
		v, ok := a.Spec.SyncPolicy.SyncOptions.Get("Validate")
		appNoValidate = ok && strings.EqualFold(v, "false")
	}
	for _, o := range entry.res.Objects {
		obj := o.Object.DeepCopy()
		isHook, types := hookInfo(obj)
		if isHook && (len(types) == 0 || isSkipped(types)) {
			continue // Skip hooks and Helm hooks Argo CD does not run (test, delete, rollback)
		}
		gvk := obj.GroupVersionKind()
		if isArgoKind(gvk.Group, gvk.Kind) {
			// App of apps: created as the engine's own applications, not applied.
			d, cond := e.prepareChild(a, project, o, obj)
			if cond != nil {
				ds.forbidden = append(ds.forbidden, *cond)
				continue
			}
			if i, dup := index[d.key]; dup {
				ds.warnings = append(ds.warnings, Condition{Type: ConditionRepeatedResource, Source: o.Source,
					Message: fmt.Sprintf("%s appears more than once (%s and %s); the last one is used", d.key, ds.resources[i].source, o.Source)})
				ds.resources[i] = d
				continue
			}
			index[d.key] = len(ds.resources)
			ds.resources = append(ds.resources, d)
			continue
		}
		if e.opts.Refuse != nil {
			if err := e.opts.Refuse(gvk.Group, gvk.Kind); err != nil {
				ds.forbidden = append(ds.forbidden, Condition{Type: ConditionInvalidSpec, Source: o.Source,
					Message: fmt.Sprintf("%s %s (%s): %v", gvk.Kind, obj.GetName(), o.Source, err)})
				continue
			}
		}
		d := &desiredObj{obj: obj, source: o.Source, wave: syncWave(obj), hookTypes: types, noValidate: appNoValidate || resourceOptionFalse(obj, "Validate")}
		if m, err := cl.mapping(gvk, false); err == nil {
			d.mapping, d.namespaced = m, namespaced(m)
		} else {
			d.namespaced = true // unknown kinds: most custom resources are namespaced
		}
		if d.namespaced {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(destNS)
			}
		} else {
			obj.SetNamespace("")
		}
		if obj.GetName() == "" && obj.GetGenerateName() == "" {
			ds.forbidden = append(ds.forbidden, Condition{Type: ConditionComparisonError, Source: o.Source,
				Message: fmt.Sprintf("%s (%s): metadata.name is required", gvk.Kind, o.Source)})
			continue
		}
		d.key = KeyOf(obj)
		if d.key.Name == "" {
			d.key.Name = obj.GetGenerateName()
		}
		d.ref = ObjRef{ResourceKey: d.key, Version: gvk.Version}
		if err := project.PermitsResource(gvk.Group, gvk.Kind, d.namespaced); err != nil {
			ds.forbidden = append(ds.forbidden, Condition{Type: ConditionInvalidSpec, Source: o.Source,
				Message: fmt.Sprintf("%s (%s): %v", d.key, o.Source, err)})
			continue
		}
		if d.namespaced && obj.GetNamespace() != a.Spec.Destination.Namespace {
			if err := project.PermitsDestination(a.Spec.Destination.Server, a.Spec.Destination.Name, obj.GetNamespace()); err != nil {
				ds.forbidden = append(ds.forbidden, Condition{Type: ConditionInvalidSpec, Source: o.Source,
					Message: fmt.Sprintf("%s (%s): %v", d.key, o.Source, err)})
				continue
			}
		}
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelApp] = label
		if tracking.TrackingMethod.label() {
			if instanceOK {
				labels[tracking.instanceLabelKey()] = a.Metadata.Name
			}
		}
		obj.SetLabels(labels)
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationTrackingID] = trackingID(a.Metadata.Name, d.key)
		if tracking.TrackingMethod.annotation() {
			ann[AnnotationArgoTrackingID] = argoTrackingID(a.Metadata.Name, d.key)
		}
		obj.SetAnnotations(ann)
		for _, w := range resourceOptionWarnings(obj, d.key) {
			w.Source = o.Source
			ds.warnings = append(ds.warnings, w)
		}
		d.hash = diff.Hash(obj.Object)
		if d.isHook() {
			d.policies = deletePolicies(obj)
			ds.hooks = append(ds.hooks, d)
			continue
		}
		if i, dup := index[d.key]; dup {
			ds.warnings = append(ds.warnings, Condition{Type: ConditionRepeatedResource, Source: o.Source,
				Message: fmt.Sprintf("%s appears more than once (%s and %s); the last one is used", d.key, ds.resources[i].source, o.Source)})
			ds.resources[i] = d
			continue
		}
		index[d.key] = len(ds.resources)
		ds.resources = append(ds.resources, d)
	}
	sortForApply(ds.resources, func(d *desiredObj) *unstructured.Unstructured { return d.obj })
	sortForApply(ds.hooks, func(d *desiredObj) *unstructured.Unstructured { return d.obj })
	return ds
}

// serverApply is a forced server-side apply by the freshet field manager. With
// d.noValidate (Validate=false) fields the schema does not declare are dropped instead of
// refusing the object (see applyIgnoringUnknown).
func serverApply(ctx context.Context, ri dynamic.ResourceInterface, d *desiredObj, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	if !d.noValidate {
		return ri.Apply(ctx, d.key.Name, obj, applyOptions(dryRun))
	}
	return applyIgnoringUnknown(ctx, ri, d.key.Name, obj, dryRun)
}

// applyOptions: every write is a forced server-side apply by the freshet field manager.
func applyOptions(dryRun bool) metav1.ApplyOptions {
	o := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

// forApply returns the object to apply: with RespectIgnoreDifferences, the ignored fields take
// their live values so a sync leaves them alone — JSON pointers and jq paths by value, fields
// of the named managers (managed is the live object's managedFields) by leaving them out of
// the server-side apply.
func forApply(ctx context.Context, d *desiredObj, live *unstructured.Unstructured, ptrs []string, oi objIgnores, managed []metav1.ManagedFieldsEntry, respect bool) (*unstructured.Unstructured, error) {
	if !respect || live == nil || (len(ptrs) == 0 && oi.empty()) {
		return d.obj, nil
	}
	obj := d.obj.DeepCopy()
	for _, p := range ptrs {
		if v, ok := diff.Get(live.Object, p); ok {
			diff.Set(obj.Object, p, runtimeDeepCopy(v))
		} else {
			diff.RemovePointers(obj.Object, []string{p})
		}
	}
	if !oi.empty() {
		out, err := oi.respect(ctx, obj.Object, live.Object, managed)
		if err != nil {
			return nil, err
		}
		obj.Object = out
	}
	return obj, nil
}

func managedOf(live *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	if live == nil {
		return nil
	}
	return live.GetManagedFields()
}

func runtimeDeepCopy(v any) any {
	u := &unstructured.Unstructured{Object: map[string]any{"v": v}}
	return u.DeepCopy().Object["v"]
}

// compareResource compares one desired resource with its live object, with a server-side
// apply dry-run when the cached comparison no longer holds.
func (e *Engine) compareResource(ctx context.Context, st *appState, cl *cluster, d *desiredObj, ign *ignoreSet, respect bool) *resResult {
	r := &resResult{d: d, ref: d.ref}
	m := d.restMapping()
	if m == nil {
		var err error
		if m, err = cl.mapping(d.obj.GroupVersionKind(), false); err == nil {
			d.setMapping(m)
		} else {
			r.status, r.health = DiffMissing, health.Result{Status: health.Missing}
			r.message = fmt.Sprintf("the cluster does not know %s %s (its CustomResourceDefinition may be part of this sync)",
				d.obj.GetAPIVersion(), d.obj.GetKind())
			return r
		}
	}
	gvr := m.Resource
	if _, err := cl.ensureWatch(ctx, gvr); err != nil {
		r.status, r.message, r.err = DiffOutOfSync, err.Error(), true
		r.health = health.Result{Status: health.Unknown, Message: err.Error()}
		return r
	}
	ptrs := ign.pointers(d.key.Group, d.key.Kind, d.key.Namespace, d.key.Name)
	oi := ign.forObject(d.key.Group, d.key.Kind, d.key.Namespace, d.key.Name)
	ptrHash := hashStrings(append(ptrs[:len(ptrs):len(ptrs)], oi.sig))
	live, inCache := cl.cached(gvr, d.key.Namespace, d.key.Name)

	// Entries are immutable once stored: copy the pointer under the lock, replace to update.
	st.cmpMu.Lock()
	ce := st.cmp[d.key]
	st.cmpMu.Unlock()
	valid := ce != nil && ce.desiredHash == d.hash && ce.ptrHash == ptrHash
	var liveHash uint64
	if valid {
		switch {
		case !inCache && ce.liveRV == "":
			valid = true
		case inCache && ce.liveRV == live.GetResourceVersion():
			valid = true
		case inCache && ce.liveRV != "" && len(oi.managers) == 0:
			// With managedFieldsManagers, who owns a field matters too: a new version compares anew.
			liveHash = diff.Hash(diff.Normalize(live).Object)
			valid = liveHash == ce.liveHash
		default:
			valid = false
		}
	}
	if valid {
		r.live, r.status, r.message, r.err = live, ce.status, ce.message, ce.err
		r.health = e.health().Assess(live)
		if inCache && ce.liveRV != live.GetResourceVersion() {
			ne := *ce
			ne.liveRV = live.GetResourceVersion()
			st.cmpMu.Lock()
			st.cmp[d.key] = &ne
			st.cmpMu.Unlock()
		}
		return r
	}
	cacheable := true
	if !inCache {
		// Not labelled (yet): an object someone else created, or really missing.
		obj, err := cl.resource(m, d.key.Namespace).Get(ctx, d.key.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			live, cacheable = obj, false
		case apierrors.IsNotFound(err):
			live = nil
		default:
			r.status, r.message, r.err = DiffOutOfSync, err.Error(), true
			r.health = health.Result{Status: health.Unknown, Message: err.Error()}
			return r
		}
	}
	if inCache && len(oi.managers) > 0 {
		// The watch caches drop managed fields; managedFieldsManagers need them.
		obj, err := cl.resource(m, d.key.Namespace).Get(ctx, d.key.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			live = obj
		case apierrors.IsNotFound(err):
			live = nil
		default:
			r.status, r.message, r.err = DiffOutOfSync, err.Error(), true
			r.health = health.Result{Status: health.Unknown, Message: err.Error()}
			return r
		}
	}
	toApply, err := forApply(ctx, d, live, ptrs, oi, managedOf(live), respect)
	if err != nil {
		// A jq expression out of bounds: not comparable, and not cached.
		r.status, r.message, r.live = DiffOutOfSync, err.Error(), live
		r.health = e.health().Assess(live)
		return r
	}
	e.dryRuns.Add(1)
	predicted, err := serverApply(ctx, cl.resource(m, d.key.Namespace), d, toApply, true)
	switch {
	case live == nil:
		r.status = DiffMissing
		if err != nil && !apierrors.IsNotFound(err) {
			r.message, r.err = dryRunMessage(err), !temporaryAPIError(err)
			if temporaryAPIError(err) {
				cacheable = false
			}
		}
	case err != nil:
		r.status, r.message, r.err = DiffOutOfSync, dryRunMessage(err), !temporaryAPIError(err)
		if temporaryAPIError(err) {
			cacheable = false
		}
	default:
		p, l := diff.Normalize(predicted), diff.Normalize(live)
		diff.RemovePointers(p.Object, ptrs)
		diff.RemovePointers(l.Object, ptrs)
		if err := oi.remove(ctx, p, l, live.GetManagedFields()); err != nil {
			// A jq expression out of bounds: not comparable, and not cached.
			r.status, r.message, cacheable = DiffOutOfSync, err.Error(), false
		} else if diff.Equal(p, l) {
			r.status = DiffSynced
		} else {
			r.status = DiffOutOfSync
		}
	}
	r.live = live
	r.health = e.health().Assess(live)
	if cacheable && ctx.Err() == nil {
		ne := &cmpEntry{desiredHash: d.hash, ptrHash: ptrHash, status: r.status, message: r.message, err: r.err}
		if live != nil {
			ne.liveRV = live.GetResourceVersion()
			if liveHash == 0 {
				liveHash = diff.Hash(diff.Normalize(live).Object)
			}
			ne.liveHash = liveHash
		}
		st.cmpMu.Lock()
		st.cmp[d.key] = ne
		st.cmpMu.Unlock()
	}
	return r
}

func dryRunMessage(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se.ErrStatus.Message
	}
	return err.Error()
}

func hashStrings(s []string) uint64 {
	if len(s) == 0 {
		return 0
	}
	m := map[string]any{"p": strings.Join(s, "\x00")}
	return diff.Hash(m)
}

// diffs computes the unified diff of every resource, fresh (no caches), for `freshet app diff`.
func (e *Engine) diffs(ctx context.Context, cmp *comparison, ignores []app.ResourceIgnoreDifferences, respect bool) []ResourceDiff {
	var out []ResourceDiff
	ign := compileIgnores(ignores)
	for _, r := range cmp.results {
		rd, _ := e.diffOne(ctx, cmp, r, ign, respect)
		out = append(out, rd)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Status != DiffSynced && out[j].Status == DiffSynced })
	return out
}

// diffOne is one result's diff, with the would-be object it compared the live one with
// (normalized, ignored parts removed; nil for a resource that requires pruning).
func (e *Engine) diffOne(ctx context.Context, cmp *comparison, r *resResult, ign *ignoreSet, respect bool) (ResourceDiff, *unstructured.Unstructured) {
	rd := ResourceDiff{ResourceKey: r.ref.ResourceKey, Version: r.ref.Version, Status: r.status, Message: r.message}
	if r.d == nil {
		rd.Diff = diff.Unified(r.ref.String(), diff.Normalize(r.live), nil)
		return rd, nil
	}
	rd.Source = r.d.source
	ptrs := ign.pointers(r.ref.Group, r.ref.Kind, r.ref.Namespace, r.ref.Name)
	var predicted *unstructured.Unstructured
	oi := ign.forObject(r.ref.Group, r.ref.Kind, r.ref.Namespace, r.ref.Name)
	var managed []metav1.ManagedFieldsEntry
	if m := r.d.restMapping(); m != nil && r.live != nil && len(oi.managers) > 0 {
		// The watch caches drop managed fields.
		if obj, err := cmp.cl.resource(m, r.ref.Namespace).Get(ctx, r.ref.Name, metav1.GetOptions{}); err == nil {
			managed = obj.GetManagedFields()
		}
	}
	if m := r.d.restMapping(); m != nil {
		toApply, err := forApply(ctx, r.d, r.live, ptrs, oi, managed, respect)
		if err != nil {
			rd.Message = err.Error()
			toApply = r.d.obj
		}
		p, err := serverApply(ctx, cmp.cl.resource(m, r.ref.Namespace), r.d, toApply, true)
		if err == nil {
			predicted = p
		} else if !apierrors.IsNotFound(err) {
			rd.Message = dryRunMessage(err)
		}
	}
	if predicted == nil {
		predicted = r.d.obj
	}
	p, l := diff.Normalize(predicted), diff.Normalize(r.live)
	diff.RemovePointers(p.Object, ptrs)
	if l != nil {
		diff.RemovePointers(l.Object, ptrs)
	}
	if err := oi.remove(ctx, p, l, managed); err != nil {
		rd.Message = err.Error()
	}
	if r.status != DiffSynced {
		rd.Diff = diff.Unified(r.ref.String(), l, p)
	}
	return rd, p
}
