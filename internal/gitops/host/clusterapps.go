package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// Applications from the cluster: with Options.ClusterApps the host also runs the Application
// and AppProject custom resources (argoproj.io/v1alpha1) of one namespace, as Argo CD does, and
// writes each Application's status back to its status subresource in Argo CD's shape.
//
// A name is held by whichever origin registered it first (the installation repository is read
// before the cluster's resources at start, so git keeps its names across restarts); the other
// is refused with a condition naming both origins.

// clusterApps watches the Application and AppProject resources of a namespace.
type clusterApps struct {
	h  *Host
	ns string
	// home is the runtime's own namespace's watcher, for one of another namespace (whose
	// applications need their project's spec.sourceNamespaces); nil for the home itself,
	// whose others are the watchers of the other namespaces.
	home   *clusterApps
	others []*clusterApps
	dyn    dynamic.Interface
	queue  workqueue.TypedRateLimitingInterface[string] // "app/NAME", "status/NAME", "projects"
	apps   cache.GenericNamespaceLister
	projs  cache.GenericNamespaceLister
	sets   cache.GenericNamespaceLister

	mu sync.Mutex
	// managed are the resources the engine runs, with the generation last registered.
	managed map[string]int64
	// problems are each resource's current spec problem (invalid, or its name held by another
	// origin): written to its status conditions.
	problems map[string]problem
	projects map[string]*app.AppProject // the namespace's AppProjects that decode
	// ops are the operation requests last taken from each resource (see clusterops.go).
	ops map[string]*crOp
	// setGens are the ApplicationSet resources the controller runs, with the generation last
	// put; setProblems their current spec problems (see clustersets.go).
	setGens     map[string]int64
	setProblems map[string]problem
	// deleted are the resources (name → UID) whose deletion the engine finished: a stale
	// read of one still carrying the finalizer must not register it again (and run its
	// PostDelete hooks twice). Forgotten when the resource is gone.
	deleted map[string]types.UID
	wg      sync.WaitGroup // requested syncs running
}

// problem is a resource's spec problem and since when it has had it.
type problem struct {
	msg      string
	since    time.Time
	conflict bool // the name is held by another origin
}

// Condition types written to an Application resource's status, as Argo CD names them.
const (
	condInvalidSpec = "InvalidSpecError"
)

func newClusterApps(h *Host, ns string, dyn dynamic.Interface) *clusterApps {
	return &clusterApps{h: h, ns: ns, dyn: dyn, managed: map[string]int64{}, problems: map[string]problem{}, projects: map[string]*app.AppProject{}, ops: map[string]*crOp{}, setGens: map[string]int64{}, setProblems: map[string]problem{}, deleted: map[string]types.UID{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[string](
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cluster-apps"})}
}

// holder is the namespace of the resource that defines application name (in any watched
// namespace).
func (c *clusterApps) holder(name string) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	_, ok := c.managed[name]
	c.mu.Unlock()
	if ok {
		return c.ns, true
	}
	for _, o := range c.others {
		if ns, ok := o.holder(name); ok {
			return ns, true
		}
	}
	return "", false
}

// count is how many applications the cluster's resources define.
func (c *clusterApps) count() int {
	c.mu.Lock()
	n := len(c.managed)
	c.mu.Unlock()
	for _, o := range c.others {
		n += o.count()
	}
	return n
}

// namespaces lists the watched namespaces, the runtime's first.
func (c *clusterApps) namespaces() []string {
	out := []string{c.ns}
	for _, o := range c.others {
		out = append(out, o.ns)
	}
	return out
}

// retryRefused looks again at the resources refused because another origin held their name
// (after a load of the installation repository, which may have released it).
func (c *clusterApps) retryRefused() {
	if c == nil {
		return
	}
	for _, o := range c.others {
		o.retryRefused()
	}
	c.mu.Lock()
	var names []string
	for n, p := range c.problems {
		if p.conflict {
			names = append(names, n)
		}
	}
	c.mu.Unlock()
	for _, n := range names {
		c.queue.Add("app/" + n)
	}
}

// notify is called for every engine event: a managed app's status is written back, and the
// status of the ApplicationSet resource that generates it.
func (c *clusterApps) notify(name string) {
	for _, o := range c.others {
		o.notify(name)
	}
	c.mu.Lock()
	_, held := c.managed[name]
	c.mu.Unlock()
	if held {
		c.queue.Add("status/" + name)
	}
	if c.home != nil {
		return
	}
	if owner, err := c.h.eng.Owner(name); err == nil {
		if set, ok := strings.CutPrefix(owner, engine.AppSetOwner("")); ok {
			c.setChanged(set)
		}
	}
}

// run installs the CRDs, waits until the installation repository was read once (ready), then
// watches until ctx ends.
func (c *clusterApps) run(ctx context.Context, ready <-chan struct{}) error {
	defer c.wg.Wait()
	defer c.queue.ShutDown()
	var others sync.WaitGroup
	defer others.Wait()
	for _, o := range c.others {
		others.Add(1)
		go func() {
			defer others.Done()
			if err := o.run(ctx, ready); err != nil && ctx.Err() == nil {
				c.h.log.Error("watching Application resources stopped", "namespace", o.ns, "err", err)
			}
		}()
	}
	for backoff := time.Second; c.home == nil; backoff = min(2*backoff, time.Minute) {
		err := EnsureArgoCDCRDs(ctx, c.dyn)
		if err == nil {
			break
		}
		c.h.log.Warn("installing the Argo CD CRDs failed; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case <-ready:
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 10*time.Minute, c.ns, nil)
	ai := f.ForResource(ApplicationsResource)
	enqueue := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.queue.Add("app/" + u.GetName())
		} else if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if _, name, err := cache.SplitMetaNamespaceKey(t.Key); err == nil {
				c.queue.Add("app/" + name)
			}
		}
	}
	if _, err := ai.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue}); err != nil {
		return err
	}
	c.apps = ai.Lister().ByNamespace(c.ns)
	synced := []cache.InformerSynced{ai.Informer().HasSynced}
	if c.home == nil {
		// AppProjects and ApplicationSets are read in the runtime's own namespace only.
		if err := c.watchProjectsAndSets(f, &synced); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	if c.home == nil {
		c.loadProjects()
	}
	go func() { <-ctx.Done(); c.queue.ShutDown() }()
	for {
		key, quit := c.queue.Get()
		if quit {
			return nil
		}
		err := c.handle(ctx, key)
		if err != nil && ctx.Err() == nil {
			c.h.log.Warn("cluster application", "namespace", c.ns, "key", key, "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// watchProjectsAndSets adds the AppProject and ApplicationSet informers to f.
func (c *clusterApps) watchProjectsAndSets(f dynamicinformer.DynamicSharedInformerFactory, synced *[]cache.InformerSynced) error {
	pi := f.ForResource(AppProjectsResource)
	si := f.ForResource(ApplicationSetsResource)
	projects := func(any) { c.queue.Add("projects") }
	if _, err := pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: projects,
		UpdateFunc: func(_, n any) { projects(n) }, DeleteFunc: projects}); err != nil {
		return err
	}
	setEvent := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.queue.Add("appset/" + u.GetName())
		} else if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if _, name, err := cache.SplitMetaNamespaceKey(t.Key); err == nil {
				c.queue.Add("appset/" + name)
			}
		}
	}
	if _, err := si.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: setEvent,
		UpdateFunc: func(_, n any) { setEvent(n) }, DeleteFunc: setEvent}); err != nil {
		return err
	}
	c.sets = si.Lister().ByNamespace(c.ns)
	c.projs = pi.Lister().ByNamespace(c.ns)
	*synced = append(*synced, pi.Informer().HasSynced, si.Informer().HasSynced)
	return nil
}

func (c *clusterApps) handle(ctx context.Context, key string) error {
	switch {
	case key == "projects":
		if c.home == nil {
			c.loadProjects()
			for _, o := range c.others {
				o.queue.Add("projects")
			}
			c.h.reportRoles()
			if err := c.writeProjectStatuses(ctx); err != nil && ctx.Err() == nil {
				c.h.log.Warn("AppProject status", "namespace", c.ns, "err", err)
			}
		}
		c.mu.Lock()
		names := make([]string, 0, len(c.managed))
		for n := range c.managed {
			names = append(names, n)
			c.managed[n] = -1 // re-register with the new projects
		}
		for n := range c.problems {
			names = append(names, n) // a project may now accept it
		}
		c.mu.Unlock()
		for _, n := range names {
			c.queue.Add("app/" + n)
		}
		return nil
	case strings.HasPrefix(key, "appset/"):
		return c.reconcileSet(ctx, strings.TrimPrefix(key, "appset/"))
	case strings.HasPrefix(key, "setstatus/"):
		return c.writeSetStatus(ctx, strings.TrimPrefix(key, "setstatus/"))
	case strings.HasPrefix(key, "status/"):
		return c.writeStatus(ctx, strings.TrimPrefix(key, "status/"))
	default:
		return c.reconcile(ctx, strings.TrimPrefix(key, "app/"))
	}
}

// loadProjects decodes the namespace's AppProjects; one that does not decode is left out (its
// apps are refused by the project that permits nothing) and logged.
func (c *clusterApps) loadProjects() {
	objs, _ := c.projs.List(labels.Everything())
	projects := map[string]*app.AppProject{}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil {
			continue
		}
		data, err := json.Marshal(cleanDoc(u, app.KindAppProject))
		if err != nil {
			continue
		}
		p, err := app.DecodeAppProject(data)
		if err != nil {
			c.h.log.Warn("AppProject resource not loaded", "namespace", c.ns, "name", u.GetName(), "err", err)
			continue
		}
		projects[p.Metadata.Name] = p
	}
	c.mu.Lock()
	c.projects = projects
	c.mu.Unlock()
}

// project is the project of a cluster application: an AppProject resource of the namespace,
// else one from the installation repository or a Git Source, else the built-in default, else
// one that permits nothing and says why.
func (c *clusterApps) project(a *app.Application) *app.AppProject {
	src := c
	if c.home != nil {
		src = c.home // AppProjects live in the runtime's own namespace
	}
	src.mu.Lock()
	p := src.projects[a.Spec.Project]
	src.mu.Unlock()
	if p != nil {
		return p
	}
	if p := c.h.project(a.Spec.Project); p != nil {
		return p
	}
	if a.Spec.Project == app.DefaultProject || a.Spec.Project == "" {
		return nil
	}
	p = &app.AppProject{APIVersion: app.APIVersion, Kind: app.KindAppProject}
	p.Metadata.Name = a.Spec.Project
	p.Spec.Description = fmt.Sprintf("project %q exists neither as an AppProject in namespace %s nor in the installation repository (%s/)", a.Spec.Project, src.ns, ProjectsDir)
	return p
}

// cleanDoc is the document the decoder reads from a resource: apiVersion, kind, the metadata
// Argo CD's YAML carries (name, namespace, labels, annotations, finalizers) and spec. Fields
// the API server adds (uid, resourceVersion, managedFields, status) are not the user's.
func cleanDoc(u *unstructured.Unstructured, kind string) map[string]any {
	meta := map[string]any{"name": u.GetName()}
	if v := u.GetNamespace(); v != "" {
		meta["namespace"] = v
	}
	if v := u.GetLabels(); len(v) > 0 {
		meta["labels"] = v
	}
	if v := u.GetAnnotations(); len(v) > 0 {
		v = maps.Clone(v)
		delete(v, "kubectl.kubernetes.io/last-applied-configuration")
		if len(v) > 0 {
			meta["annotations"] = v
		}
	}
	if v := u.GetFinalizers(); len(v) > 0 {
		meta["finalizers"] = v
	}
	doc := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": kind, "metadata": meta}
	if spec, ok := u.Object["spec"]; ok {
		doc["spec"] = spec
	}
	return doc
}

// reconcile brings the engine in line with one Application resource.
func (c *clusterApps) reconcile(ctx context.Context, name string) error {
	obj, err := c.apps.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	u, _ := obj.(*unstructured.Unstructured)
	c.mu.Lock()
	gen, managed := c.managed[name]
	c.mu.Unlock()
	if u == nil {
		// Gone without our finalizer (or removed by another controller): the app stops being
		// managed, its resources stay.
		c.forget(name)
		c.mu.Lock()
		delete(c.deleted, name)
		c.mu.Unlock()
		if managed {
			if err := c.h.eng.Remove(ctx, name, false); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return err
			}
		}
		return nil
	}
	if u.GetDeletionTimestamp() != nil {
		cascade := slices.Contains(u.GetFinalizers(), CascadeFinalizer)
		c.mu.Lock()
		done := c.deleted[name] == u.GetUID()
		c.mu.Unlock()
		if done {
			// Its deletion finished; this is a read from before the finalizer went.
			if cascade {
				return c.removeFinalizer(ctx, u)
			}
			return nil
		}
		if !managed && cascade {
			// Deleted while no runtime watched (or before it first saw it): register the app
			// so that its resources, found through its inventory, are deleted with it. One
			// refused (invalid, or its name held elsewhere) has no resources of its own.
			if msg, _, err := c.register(u, false); err != nil {
				return err
			} else if msg == "" {
				managed = true
			}
		}
		if managed {
			if err := c.h.eng.Remove(ctx, name, cascade); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return fmt.Errorf("deleting application %s: %w", name, err)
			}
			c.forget(name)
			c.mu.Lock()
			c.deleted[name] = u.GetUID()
			c.mu.Unlock()
		}
		if cascade {
			return c.removeFinalizer(ctx, u)
		}
		return nil
	}
	// A status write or a resync changes nothing of the spec (the generation is the same).
	if !managed || gen != u.GetGeneration() {
		msg, conflict, err := c.register(u, managed)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if msg == "" {
			delete(c.problems, name)
		} else if c.problems[name].msg != msg {
			c.problems[name] = problem{msg: msg, since: time.Now(), conflict: conflict}
		}
		c.mu.Unlock()
		if err := c.writeStatus(ctx, name); err != nil {
			return err
		}
	}
	if u.Object["operation"] != nil {
		return c.operate(ctx, u)
	}
	return nil
}

// register decodes the resource and upserts it; the problem, when the spec is refused, is for
// its conditions. A managed app whose new spec is refused keeps running its previous one.
func (c *clusterApps) register(u *unstructured.Unstructured, managed bool) (msg string, conflict bool, err error) {
	name := u.GetName()
	data, err := json.Marshal(cleanDoc(u, app.KindApp))
	if err != nil {
		return "", false, err
	}
	a, derr := app.DecodeApplication(data)
	if derr != nil {
		// The document is one line of JSON: the decoder's line numbers say nothing here.
		return strings.ReplaceAll(fmt.Sprintf("Application %s/%s: %v", c.ns, name, derr), "line 1: ", ""), false, nil
	}
	project := c.project(a)
	if c.home != nil {
		// Another namespace than the runtime's: its project must list it, as in Argo CD.
		p := project
		if p == nil {
			p = app.NewDefaultProject()
		}
		if err := p.PermitsSourceNamespace(c.ns); err != nil {
			if managed {
				// It ran while the project listed the namespace: it stops.
				c.forget(name)
				if err := c.h.eng.Remove(context.Background(), name, false); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
					return "", false, err
				}
			}
			return fmt.Sprintf("Application %s/%s: %v", c.ns, name, err), false, nil
		}
	}
	// No load of the installation repository may run meanwhile: the name checks below and the
	// upsert are one step.
	c.h.loadMu.Lock()
	defer c.h.loadMu.Unlock()
	if !managed {
		if la, ok := c.h.loaded(name); ok {
			return fmt.Sprintf("application %q is defined twice: in %s (installation repository) and as the Application resource %s/%s; the first one registered (%s) keeps it: rename or remove one", name, la.file, c.ns, name, la.file), true, nil
		}
		if owner, err := c.h.eng.Owner(name); err == nil {
			if owner == "" {
				owner = "another origin"
			}
			return fmt.Sprintf("application %q is defined twice: by %s and as the Application resource %s/%s; the first one registered keeps it: rename or remove one", name, owner, c.ns, name), true, nil
		}
	}
	c.mu.Lock()
	c.managed[name] = u.GetGeneration()
	c.mu.Unlock()
	if err := c.h.eng.Upsert(a, project); err != nil {
		if !managed {
			c.forget(name)
		}
		if errors.Is(err, engine.ErrOwned) {
			return err.Error(), true, nil
		}
		if errors.Is(err, errdefs.ErrInvalid) {
			return err.Error(), false, nil
		}
		return "", false, err
	}
	return "", false, nil
}

func (c *clusterApps) forget(name string) {
	c.mu.Lock()
	delete(c.managed, name)
	delete(c.problems, name)
	if rec := c.ops[name]; rec != nil && !rec.running {
		delete(c.ops, name)
	}
	c.mu.Unlock()
}

// removeFinalizer takes Argo CD's cascade finalizer off a resource being deleted (a JSON patch
// tested against the list read, so a concurrent change is retried).
func (c *clusterApps) removeFinalizer(ctx context.Context, u *unstructured.Unstructured) error {
	fins := u.GetFinalizers()
	keep := make([]string, 0, len(fins))
	for _, f := range fins {
		if f != CascadeFinalizer {
			keep = append(keep, f)
		}
	}
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/finalizers", "value": fins},
		{"op": "replace", "path": "/metadata/finalizers", "value": keep},
	})
	_, err := c.dyn.Resource(ApplicationsResource).Namespace(c.ns).Patch(ctx, u.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: ClusterAppsFieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// writeStatus writes an Application resource's status (a merge patch of the status
// subresource).
func (c *clusterApps) writeStatus(ctx context.Context, name string) error {
	c.mu.Lock()
	_, managed := c.managed[name]
	pr, hasProblem := c.problems[name]
	var rec *crOp
	if r := c.ops[name]; r != nil {
		cp := *r
		rec = &cp
	}
	c.mu.Unlock()
	var st *engine.AppStatus
	var x statusExtras
	if managed {
		if s, err := c.h.eng.Status(name); err == nil {
			st = &s
			x.history, _ = c.h.eng.History(name)
			x.summary, _ = c.h.eng.Summary(name)
		}
	}
	if st == nil && !hasProblem && rec == nil {
		return nil
	}
	x.op = rec
	x.historyLimit = engine.DefaultHistoryLimit
	if obj, err := c.apps.Get(name); err == nil {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "revisionHistoryLimit"); ok && n > 0 {
				x.historyLimit = int(n)
			}
			x.sources, _, _ = unstructured.NestedSlice(u.Object, "spec", "sources")
		}
	}
	status := argoStatus(st, pr, time.Now(), x)
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(ApplicationsResource).Namespace(c.ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: ClusterAppsFieldManager}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

const argoTime = time.RFC3339

func argoTimeOf(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(argoTime)
}

// statusExtras is what an Application resource's status shows besides the engine's status:
// the operation requested on the resource, history and summary.
type statusExtras struct {
	op           *crOp
	history      []engine.HistoryEntry
	historyLimit int   // spec.revisionHistoryLimit, else 10
	sources      []any // spec.sources of a multi-source app, for its history
	summary      engine.Summary
}

// argoStatus is an Application's status in Argo CD's shape (a merge patch: absent parts are
// null, so they are removed). st nil is an application the engine does not run (refused).
func argoStatus(st *engine.AppStatus, pr problem, now time.Time, x statusExtras) map[string]any {
	var conds []any
	if pr.msg != "" {
		conds = append(conds, map[string]any{"type": condInvalidSpec, "message": pr.msg, "lastTransitionTime": argoTimeOf(pr.since)})
	}
	if st == nil {
		var opState any
		if os, ok := x.op.refusedState(nil); ok {
			opState = os
		}
		// Reconciled when the problem was found, not now: each status write is an update the
		// watch sees, and a time that moved would make every write ask for another (a write a
		// second for as long as the resource stays refused).
		reconciled := now
		if !pr.since.IsZero() {
			reconciled = pr.since
		}
		return map[string]any{
			"sync":           map[string]any{"status": string(engine.Unknown), "revision": nil},
			"health":         map[string]any{"status": "Unknown", "message": nil},
			"conditions":     conds,
			"resources":      nil,
			"operationState": opState,
			"reconciledAt":   argoTimeOf(reconciled),
		}
	}
	for _, cd := range st.Conditions {
		conds = append(conds, map[string]any{"type": cd.Type, "message": cd.Message, "lastTransitionTime": argoTimeOf(cd.Since)})
	}
	var res []any
	for _, r := range st.Resources {
		m := map[string]any{"version": r.Version, "kind": r.Kind, "name": r.Name, "status": string(r.Status)}
		if r.Group != "" {
			m["group"] = r.Group
		}
		if r.Namespace != "" {
			m["namespace"] = r.Namespace
		}
		if r.Health != nil {
			h := map[string]any{"status": string(r.Health.Status)}
			if r.Health.Message != "" {
				h["message"] = r.Health.Message
			}
			m["health"] = h
		}
		if r.RequiresPruning {
			m["requiresPruning"] = true
		}
		if r.Hook {
			m["hook"] = true
		}
		if r.SyncWave != 0 {
			m["syncWave"] = int64(r.SyncWave)
		}
		res = append(res, m)
	}
	health := map[string]any{"status": string(st.Health.Status), "message": nil}
	if st.Health.Message != "" {
		health["message"] = st.Health.Message
	}
	sync := map[string]any{"status": string(st.Sync), "revision": nil, "revisions": nil}
	if revs := strings.Split(st.Revision, ","); len(revs) > 1 {
		sync["revisions"] = revs // a multi-source app: each source's, as Argo CD writes it
	} else if st.Revision != "" {
		sync["revision"] = st.Revision
	}
	out := map[string]any{
		"sync": sync, "health": health, "conditions": conds, "resources": res,
		"reconciledAt": argoTimeOf(st.ReconciledAt), "operationState": nil,
		"history": argoHistory(x.history, x.historyLimit, x.sources),
		"summary": argoSummary(x.summary),
	}
	if st.SourceType != "" {
		out["sourceType"] = string(st.SourceType)
	}
	if op := st.Operation; op != nil {
		var rr []any
		for _, r := range op.Resources {
			m := map[string]any{"version": r.Version, "kind": r.Kind, "name": r.Name, "status": syncResultStatus(r.Result), "message": r.Message, "syncPhase": "Sync"}
			if r.Group != "" {
				m["group"] = r.Group
			}
			if r.Namespace != "" {
				m["namespace"] = r.Namespace
			}
			rr = append(rr, m)
		}
		for _, hk := range op.Hooks {
			m := map[string]any{"version": hk.Version, "kind": hk.Kind, "name": hk.Name, "hookType": string(hk.Type), "hookPhase": string(hk.Phase), "syncPhase": string(hk.Type)}
			if hk.Group != "" {
				m["group"] = hk.Group
			}
			if hk.Namespace != "" {
				m["namespace"] = hk.Namespace
			}
			rr = append(rr, m)
		}
		opSync := map[string]any{"revision": op.Revision}
		if op.Prune {
			opSync["prune"] = true
		}
		if op.DryRun {
			opSync["dryRun"] = true
		}
		var operation any = map[string]any{"sync": opSync, "initiatedBy": argoInitiator(op.InitiatedBy, op.User)}
		msg := op.Message
		if x.op.matches(op) {
			// Requested on the resource: the request as written, as Argo CD records it.
			operation = x.op.raw
			msg += x.op.warningsNote()
		}
		syncResult := map[string]any{"revision": op.Revision, "resources": rr}
		if revs := strings.Split(op.Revision, ","); len(revs) > 1 {
			syncResult["revisions"] = revs
			syncResult["revision"] = nil
		}
		out["operationState"] = map[string]any{
			"phase":      string(op.Phase),
			"message":    msg,
			"startedAt":  argoTimeOf(op.StartedAt),
			"finishedAt": argoTimeOf(op.FinishedAt),
			"operation":  operation,
			"syncResult": syncResult,
		}
	}
	if os, ok := x.op.refusedState(st.Operation); ok {
		out["operationState"] = os
	}
	return out
}

// argoInitiator is Argo CD's operation.initiatedBy: the user's name, or automated.
func argoInitiator(by engine.Initiator, user string) map[string]any {
	if by == engine.InitiatedByUser || by == engine.InitiatedByRollback {
		if user == "" {
			return map[string]any{}
		}
		return map[string]any{"username": user}
	}
	return map[string]any{"automated": true}
}

// argoHistory is status.history in Argo CD's shape: the successful syncs (Argo CD records no
// other), oldest first, at most limit (spec.revisionHistoryLimit). A multi-source app's entries
// have revisions and sources (the sources that sync used, each with its revision) instead of
// revision and source.
func argoHistory(hist []engine.HistoryEntry, limit int, sources []any) []any {
	var out []any
	for _, h := range hist {
		if h.Phase != engine.PhaseSucceeded {
			continue
		}
		e := map[string]any{
			"id": h.ID, "deployStartedAt": argoTimeOf(h.StartedAt), "deployedAt": argoTimeOf(h.FinishedAt),
			"initiatedBy": argoInitiator(h.InitiatedBy, h.User),
		}
		switch {
		case len(h.Sources) > 0:
			// The sources the sync used, each with its revision.
			srcs := make([]any, len(h.Sources))
			for i, src := range h.Sources {
				srcs[i] = sourceMap(src)
			}
			e["sources"] = srcs
			e["revisions"] = h.Revisions
			if len(h.Revisions) == 0 {
				e["revisions"] = strings.Split(h.Revision, ",")
			}
		case len(sources) > 0:
			// An entry recorded before sources were kept: the app's current ones.
			e["revisions"] = strings.Split(h.Revision, ",")
			e["sources"] = sources
		default:
			e["revision"] = h.Revision
			e["source"] = sourceMap(h.Source)
		}
		out = append(out, e)
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// sourceMap is a source in its JSON form (Argo CD's field names).
func sourceMap(s app.Source) map[string]any {
	var m map[string]any
	if data, err := json.Marshal(s); err == nil {
		_ = json.Unmarshal(data, &m)
	}
	return m
}

// argoSummary is status.summary: images and external URLs, absent parts left out.
func argoSummary(s engine.Summary) map[string]any {
	out := map[string]any{"images": nil, "externalURLs": nil}
	if len(s.Images) > 0 {
		out["images"] = s.Images
	}
	if len(s.ExternalURLs) > 0 {
		out["externalURLs"] = s.ExternalURLs
	}
	return out
}

// syncResultStatus maps a resource's sync result onto Argo CD's ResultCode.
func syncResultStatus(r engine.ResultCode) string {
	switch r {
	case engine.ResultPruned:
		return "Pruned"
	case engine.ResultPruneSkipped:
		return "PruneSkipped"
	case engine.ResultFailed:
		return "SyncFailed"
	}
	return "Synced"
}
