package rollouts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/ctrlloop"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Defaults of the controller.
const (
	DefaultWorkers = 4
	// DefaultResync re-reads every Rollout this often even without an event (Argo Rollouts: 15 min).
	DefaultResync  = 15 * time.Minute
	retryBaseDelay = 100 * time.Millisecond
	retryMaxDelay  = time.Minute
)

// errStaleCache: the informer's cache lags behind a change this controller made; the reconcile
// is tried again shortly without writing anything. errCollision: a ReplicaSet the Rollout does
// not own has the new revision's name.
var (
	errStaleCache = errors.New("rollouts: cache behind the cluster")
	errCollision  = errors.New("rollouts: ReplicaSet name collision")
)

const staleRetry = 100 * time.Millisecond

// Log keys.
const (
	logRollout = "rollout"
	logErr     = "err"
)

// Options configure a Controller.
type Options struct {
	// Namespace limits the controller to one namespace; empty watches every namespace.
	Namespace string
	Workers   int
	Resync    time.Duration
	Logger    *slog.Logger
	// Now is the clock (time.Now when nil); tests set it.
	Now func() time.Time
	// Policy decides which addresses analysis web metrics may reach (netpolicy.Unrestricted
	// when nil: a runtime in its customer's network).
	Policy *netpolicy.Policy
	// OnEvent, when set, receives the rollout's step transitions and phase changes (the
	// runtime turns them into reports to the control plane).
	OnEvent func(Event)
}

// Event is a phase change or step transition of one Rollout.
type Event struct {
	Namespace, Name string
	Message         string
	Phase           Phase
	Step            *int32
	Time            time.Time
}

// Controller reconciles Rollouts in one cluster: ReplicaSets per revision, Service selectors,
// steps, pauses, promotion and abort, and the Rollout's status.
type Controller struct {
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	opts  Options
	log   *slog.Logger
	queue ctrlloop.Queue

	rollouts    cache.GenericLister
	experiments cache.GenericLister
	rsLister    appslisters.ReplicaSetLister
	// deployLister: Deployments a workloadRef names.
	deployLister appslisters.DeploymentLister
	synced       []cache.InformerSynced

	// replaced holds, per Rollout key, the resourceVersion its last status write replaced (a
	// string): while the informer still holds that version, its status is older than what this
	// controller decided and wrote, and a reconcile on it would undo part of that (say, remove
	// the scale-down deadline it just set). The workqueue hands a key to one worker at a time.
	replaced sync.Map

	mu      sync.Mutex
	started bool
}

// New returns a controller for the cluster cfg reaches.
func New(cfg *rest.Config, opts Options) (*Controller, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Policy == nil {
		opts.Policy = netpolicy.Unrestricted()
	}
	return &Controller{kube: kc, dyn: dyn, opts: opts, log: opts.Logger}, nil
}

// Run installs the CRDs, watches Rollouts and their ReplicaSets, and reconciles until ctx ends.
// It may be called again after it returned an error.
func (c *Controller) Run(ctx context.Context) error {
	if err := EnsureCRDs(ctx, c.dyn); err != nil {
		return err
	}
	c.queue = ctrlloop.NewQueue(retryBaseDelay, retryMaxDelay)
	dynf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, c.opts.Resync, c.opts.Namespace, nil)
	ri := dynf.ForResource(RolloutsResource)
	c.rollouts = ri.Lister()
	if _, err := ri.Informer().AddEventHandler(ctrlloop.On(c.enqueueObject)); err != nil {
		return err
	}
	ei := dynf.ForResource(ExperimentsResource)
	c.experiments = ei.Lister()
	if _, err := ei.Informer().AddEventHandler(ctrlloop.On(c.enqueueExperiment)); err != nil {
		return err
	}
	kf := informers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.Resync, informers.WithNamespace(c.opts.Namespace), informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = PodTemplateHashLabel // only ReplicaSets of Rollouts
	}))
	rsi := kf.Apps().V1().ReplicaSets()
	c.rsLister = rsi.Lister()
	if _, err := rsi.Informer().AddEventHandler(ctrlloop.On(c.enqueueOwner)); err != nil {
		return err
	}
	df := informers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.Resync, informers.WithNamespace(c.opts.Namespace))
	di := df.Apps().V1().Deployments()
	c.deployLister = di.Lister()
	if _, err := di.Informer().AddEventHandler(ctrlloop.On(c.enqueueWorkloadUsers)); err != nil {
		return err
	}
	c.synced = []cache.InformerSynced{ri.Informer().HasSynced, ei.Informer().HasSynced, rsi.Informer().HasSynced, di.Informer().HasSynced}
	dynf.Start(ctx.Done())
	kf.Start(ctx.Done())
	df.Start(ctx.Done())
	defer dynf.Shutdown()
	defer kf.Shutdown()
	defer df.Shutdown()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return ctx.Err()
	}
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	c.log.Info("rollouts controller started", "workers", c.opts.Workers)
	ctrlloop.Work(ctx, c.queue, ctrlloop.Workers{N: c.opts.Workers, Reconcile: func(ctx context.Context, key string) (time.Duration, error) {
		if k, ok := strings.CutPrefix(key, experimentKeyPrefix); ok {
			return c.reconcileExperiment(ctx, k)
		}
		return c.reconcile(ctx, key)
	}, Permanent: func(err error) bool { return errors.Is(err, errdefs.ErrInvalid) }, Log: c.log, LogKey: logRollout})
	c.mu.Lock()
	c.started = false
	c.mu.Unlock()
	return nil
}

// Healthy reports whether the controller's caches are synced and its workers run.
func (c *Controller) Healthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

func (c *Controller) enqueueObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueOwner(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Rollout" && ref.APIVersion == Group+"/"+Version {
		c.queue.Add(rs.Namespace + "/" + ref.Name)
	} else if ref != nil && ref.Kind == "Experiment" && ref.APIVersion == Group+"/"+Version {
		c.queue.Add(experimentKeyPrefix + rs.Namespace + "/" + ref.Name)
	}
}

// reconcile brings one Rollout a step closer to its spec. It returns when to look again. Errors
// wrapping errdefs.ErrInvalid are permanent (the spec must change); others are retried.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	obj, err := c.rollouts.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil // deleted: its ReplicaSets go with it (owner references)
	}
	if err != nil {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured)
	if u.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	if old, ok := c.replaced.Load(key); ok {
		if old == u.GetResourceVersion() {
			return staleRetry, nil // the cache has not seen this controller's last status yet
		}
		c.replaced.Delete(key)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return 0, err
	}
	now := c.opts.Now()
	ro, verr := Decode(data)
	if ro == nil {
		// Not even a Rollout's shape: say so in the status, as far as it can be written.
		return 0, errors.Join(verr, c.writeInvalid(ctx, u, nil, verr, now))
	}
	if verr != nil {
		return 0, errors.Join(verr, c.writeInvalid(ctx, u, ro, verr, now))
	}
	dep, err := c.resolveWorkload(ro)
	if errors.Is(err, errdefs.ErrInvalid) {
		return 0, errors.Join(err, c.writeInvalid(ctx, u, ro, err, now))
	}
	if err != nil {
		return 0, errors.Join(err, c.writeReconcileError(ctx, u, ro, err))
	}
	rss, err := c.replicaSets(ro)
	if err != nil {
		return 0, err
	}
	analysis, next, err := c.runAnalysis(ctx, ro, now)
	if err != nil {
		return 0, err
	}
	exp, err := c.runExperimentStep(ctx, ro, rss)
	if err != nil {
		return 0, err
	}
	runs, nextRun, err := c.runStrategyAnalyses(ctx, ro, now)
	if err != nil {
		return 0, err
	}
	p := compute(world{ro: ro, rss: rss, now: now, analysis: analysis, experiment: exp, runs: runs})
	for _, d := range []time.Duration{next, nextRun} {
		if d > 0 {
			p.after(d)
		}
	}
	status, err := c.carryOut(ctx, ro, p)
	if err == nil && dep != nil {
		err = c.scaleWorkload(ctx, ro, dep, p, &status)
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	switch {
	case errors.Is(err, errStaleCache):
		return staleRetry, nil // nothing written: the cache catches up first
	case errors.Is(err, errCollision):
		// Another object holds the new revision's name: a new hash, as Kubernetes' Deployment does.
		status, err = ro.Status.deepCopy(), nil
		n := int32(1)
		if status.CollisionCount != nil {
			n = *status.CollisionCount + 1
		}
		status.CollisionCount = &n
		p.requeue = staleRetry
	}
	if err != nil {
		// The plan's status assumed every change went through: keep the previous one, with the
		// error in its message.
		status = ro.Status.deepCopy()
		removeCondition(&status, ConditionInvalidSpec) // the spec is valid now
		status.Phase, _ = Calculate(&ro.Spec, &status)
		status.Message = "ReconciliationError: " + err.Error()
	}
	if werr := c.writeStatus(ctx, u, ro, status); werr != nil {
		if apierrors.IsConflict(werr) && err == nil {
			c.log.Debug("rollout changed meanwhile; again", logRollout, key)
			return staleRetry, nil // the cache was behind: decide again on the newer object
		}
		return 0, errors.Join(err, werr)
	}
	if err != nil {
		return 0, err
	}
	c.emit(ro, p, status, now)
	return p.requeue, nil
}

// carryOut applies p and, when restartAt is due, restarts the next pod; it returns the status
// to write.
func (c *Controller) carryOut(ctx context.Context, ro *Rollout, p *plan) (RolloutStatus, error) {
	status := p.status
	if err := c.apply(ctx, ro, p); err != nil {
		return status, err
	}
	if !p.restart {
		return status, nil
	}
	done, wait, err := c.restartPods(ctx, ro, p)
	if err != nil {
		return status, err
	}
	if done {
		t := *ro.Spec.RestartAt
		status.RestartedAt = &t
		status.Phase, status.Message = Calculate(&ro.Spec, &status)
	} else {
		p.after(wait)
	}
	return status, nil
}

// writeInvalid sets the InvalidSpec condition and the Degraded phase; nothing else changes.
func (c *Controller) writeInvalid(ctx context.Context, u *unstructured.Unstructured, ro *Rollout, verr error, now time.Time) error {
	var st RolloutStatus
	if ro != nil {
		st = ro.Status.deepCopy()
	} else if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &st) // a status that does not decode is replaced
	}
	setCondition(&st, now, ConditionInvalidSpec, corev1.ConditionTrue, reasonInvalidSpec, verr.Error())
	st.ObservedGeneration = fmt.Sprint(u.GetGeneration())
	st.Phase, st.Message = PhaseDegraded, fmt.Sprintf("%s: %s", ConditionInvalidSpec, verr.Error())
	var prev RolloutStatus
	if ro != nil {
		prev = ro.Status
	}
	if ro != nil && reflect.DeepEqual(prev, st) {
		return nil
	}
	return c.putStatus(ctx, u, st)
}

// writeReconcileError keeps the Rollout's last status, with a temporary error in its message.
func (c *Controller) writeReconcileError(ctx context.Context, u *unstructured.Unstructured, ro *Rollout, err error) error {
	st := ro.Status.deepCopy()
	removeCondition(&st, ConditionInvalidSpec)
	st.Phase, _ = Calculate(&ro.Spec, &st)
	st.Message = "ReconciliationError: " + err.Error()
	return c.writeStatus(ctx, u, ro, st)
}

// enqueueWorkloadUsers queues the Rollouts whose workloadRef names a Deployment that changed.
func (c *Controller) enqueueWorkloadUsers(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	list, err := c.rollouts.ByNamespace(d.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "workloadRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "workloadRef", "name")
		if kind == "Deployment" && name == d.Name {
			c.queue.Add(u.GetNamespace() + "/" + u.GetName())
		}
	}
}

// writeStatus writes st unless it equals what the Rollout holds.
func (c *Controller) writeStatus(ctx context.Context, u *unstructured.Unstructured, ro *Rollout, st RolloutStatus) error {
	if statusEqual(ro.Status, st) {
		return nil
	}
	return c.putStatus(ctx, u, st)
}

func statusEqual(a, b RolloutStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func (c *Controller) putStatus(ctx context.Context, u *unstructured.Unstructured, st RolloutStatus) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	obj := u.DeepCopy()
	obj.Object["status"] = m
	out, err := c.dyn.Resource(RolloutsResource).Namespace(u.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("write status: %w", err) // a conflict stays recognisable (apierrors.IsConflict)
	}
	if old := u.GetResourceVersion(); out.GetResourceVersion() != old {
		c.replaced.Store(u.GetNamespace()+"/"+u.GetName(), old)
	}
	return nil
}

// replicaSets are the ReplicaSets ro controls, oldest revision first.
func (c *Controller) replicaSets(ro *Rollout) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(ro.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == ro.UID {
			out = append(out, rs.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return revisionOf(out[i]) < revisionOf(out[j]) })
	return out, nil
}

// apply carries out a plan: the new ReplicaSet, scales, annotations, Service selectors and the
// history clean-up. It stops at the first error.
func (c *Controller) apply(ctx context.Context, ro *Rollout, p *plan) error {
	rsc := c.kube.AppsV1().ReplicaSets(ro.Namespace)
	// Every Service the strategy names must exist (and be this Rollout's to switch) before any
	// ReplicaSet changes: nothing is left half-switched.
	svcs := map[string]*corev1.Service{}
	for _, s := range p.services {
		svc, err := c.kube.CoreV1().Services(ro.Namespace).Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("service %q (spec.strategy.%s) does not exist", s.name, s.role)
		}
		if err != nil {
			return fmt.Errorf("read service %s: %w", s.name, err)
		}
		if owner := svc.Annotations[ManagedByAnnotation]; owner != "" && owner != ro.Name {
			return fmt.Errorf("service %q (spec.strategy.%s) is managed by Rollout %q", s.name, s.role, owner)
		}
		svcs[s.name] = svc
	}
	routers, err := c.prepareRouters(ctx, ro, p)
	if err != nil {
		return err
	}
	if p.create != nil {
		if _, err := rsc.Create(ctx, p.create, metav1.CreateOptions{FieldManager: FieldManager}); apierrors.IsAlreadyExists(err) {
			cur, gerr := rsc.Get(ctx, p.create.Name, metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("read ReplicaSet %s: %w", p.create.Name, gerr)
			}
			if ref := metav1.GetControllerOf(cur); ref != nil && ref.UID == ro.UID {
				return errStaleCache // ours, not in the cache yet
			}
			return errCollision
		} else if err != nil {
			return fmt.Errorf("create ReplicaSet %s: %w", p.create.Name, err)
		}
	}
	names := make([]string, 0, len(p.scale)+len(p.annotate))
	seen := map[string]bool{}
	for n := range p.scale {
		names, seen[n] = append(names, n), true
	}
	for n := range p.annotate {
		if !seen[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	// Scale-ups and annotations first, then scale-downs, so the pod count never dips first.
	sort.SliceStable(names, func(i, j int) bool { return !c.isDown(ro, p, names[i]) && c.isDown(ro, p, names[j]) })
	for _, n := range names {
		patch := map[string]any{}
		if r, ok := p.scale[n]; ok {
			patch["spec"] = map[string]any{"replicas": r}
		}
		if a := p.annotate[n]; len(a) > 0 {
			ann := map[string]any{}
			for k, v := range a {
				if v == nil {
					ann[k] = nil
				} else {
					ann[k] = *v
				}
			}
			patch["metadata"] = map[string]any{"annotations": ann}
		}
		if len(patch) == 0 {
			continue // a change planned and then cancelled
		}
		body, _ := json.Marshal(patch)
		if _, err := rsc.Patch(ctx, n, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update ReplicaSet %s: %w", n, err)
		}
	}
	for _, s := range p.services {
		if err := c.switchService(ctx, ro, svcs[s.name], s); err != nil {
			return err
		}
	}
	for _, w := range routers {
		if err := w(ctx); err != nil {
			return err
		}
	}
	for _, n := range p.remove {
		if err := rsc.Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old ReplicaSet %s: %w", n, err)
		}
	}
	return nil
}

func (c *Controller) isDown(ro *Rollout, p *plan, name string) bool {
	r, ok := p.scale[name]
	if !ok {
		return false
	}
	rs, err := c.rsLister.ReplicaSets(ro.Namespace).Get(name)
	return err == nil && r < specReplicas(rs)
}

// switchService points a Service's selector at a revision's pods.
func (c *Controller) switchService(ctx context.Context, ro *Rollout, svc *corev1.Service, s serviceSwitch) error {
	if svc.Spec.Selector[PodTemplateHashLabel] == s.hash && svc.Annotations[ManagedByAnnotation] == ro.Name {
		return nil
	}
	body, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{ManagedByAnnotation: ro.Name}},
		"spec":     map[string]any{"selector": map[string]any{PodTemplateHashLabel: s.hash}},
	})
	if _, err := c.kube.CoreV1().Services(ro.Namespace).Patch(ctx, s.name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("switch service %s: %w", s.name, err)
	}
	return nil
}

// restartPods deletes, one at a time and only while every replica is available, the pods of
// the stable revision created before spec.restartAt; the ReplicaSet replaces each. done: none
// is left.
func (c *Controller) restartPods(ctx context.Context, ro *Rollout, p *plan) (done bool, wait time.Duration, err error) {
	sel := labels.SelectorFromSet(labels.Set{PodTemplateHashLabel: p.status.StableRS})
	pods, err := c.kube.CoreV1().Pods(ro.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return false, 0, fmt.Errorf("list pods to restart: %w", err)
	}
	var old []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && pod.CreationTimestamp.Before(ro.Spec.RestartAt) {
			old = append(old, pod)
		}
	}
	if len(old) == 0 {
		return true, 0, nil
	}
	if p.status.AvailableReplicas < replicas(&ro.Spec) {
		return false, time.Second, nil // wait for the last replacement
	}
	sort.Slice(old, func(i, j int) bool { return old[i].CreationTimestamp.Before(&old[j].CreationTimestamp) })
	if err := c.kube.CoreV1().Pods(ro.Namespace).Delete(ctx, old[0].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return false, 0, fmt.Errorf("restart pod %s: %w", old[0].Name, err)
	}
	return false, time.Second, nil
}

func (c *Controller) emit(ro *Rollout, p *plan, st RolloutStatus, now time.Time) {
	for _, e := range p.events {
		c.log.Info("rollout "+e, logRollout, ro.Namespace+"/"+ro.Name, "phase", st.Phase)
		if c.opts.OnEvent != nil {
			c.opts.OnEvent(Event{Namespace: ro.Namespace, Name: ro.Name, Message: e, Phase: st.Phase, Step: st.CurrentStepIndex, Time: now})
		}
	}
}
