package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/ctrlloop"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Defaults of the controller.
const (
	DefaultWorkers = 4
	// DefaultResync re-reads every Workflow this often even without an event.
	DefaultResync = 15 * time.Minute
	// DefaultExecutorImage is the image of the pods' init container: it holds the freshet
	// binary, which is copied into the pod and runs the step's command (`freshet emissary`).
	DefaultExecutorImage = "freshet/freshet"
	// DefaultExecutorPath is the freshet binary in DefaultExecutorImage.
	DefaultExecutorPath = "/usr/bin/freshet"
	// DefaultImagePullGrace is how long a pod may fail to pull its image (ErrImagePull,
	// ImagePullBackOff) or to make its container's config (CreateContainerConfigError: a
	// missing Secret or ConfigMap) before its node fails.
	DefaultImagePullGrace = 3 * time.Minute
	// DefaultPodCreateTimeout is how long a pod the API server refuses (a ResourceQuota, an
	// admission webhook) is tried again before its node fails.
	DefaultPodCreateTimeout = 5 * time.Minute
	retryBaseDelay          = 100 * time.Millisecond
	retryMaxDelay           = time.Minute
	staleRetry              = 100 * time.Millisecond
)

// Log keys.
const (
	logWorkflow = "workflow"
	logErr      = "err"
)

// Options configure a Controller.
type Options struct {
	// Namespace limits the controller to one namespace; empty watches every namespace.
	Namespace string
	Workers   int
	Resync    time.Duration
	Logger    *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// ExecutorImage and ExecutorPath: the image holding the freshet binary, and its path there
	// (DefaultExecutorImage, DefaultExecutorPath).
	ExecutorImage, ExecutorPath string
	// NodeSelector and Tolerations go on every pod whose template and workflow give none.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// OnFinished is told of every Workflow that has finished, once per finish (again after a
	// retry finishes it again), and of those finished already when the controller starts: the
	// runtime reports them to the control plane, which archives them. It must not block.
	OnFinished func(runtimev1.WorkflowRecord)
	// Archived reports whether the finish OnFinished was told of (by the Workflow's UID and
	// finish time) has reached the archive; a ttlStrategy deletes a Workflow only once it has,
	// so a crash or an unreachable control plane never loses a record. Nil: at once.
	Archived func(uid string, finishedAt time.Time) bool
	// Policy decides which addresses artifacts' URLs (S3 endpoints, HTTP URLs, git
	// repositories) may reach, in the controller and in the pods' emissary; nil: any (a hybrid
	// runtime's netpolicy.Unrestricted).
	Policy *netpolicy.Policy
	// ConfigNamespace is the runtime's namespace: its ConfigMap workflow-controller-configmap
	// may hold the default artifact repository (key artifactRepository), the ENTRYPOINT and CMD
	// of images (key images) and the default workflow deadline (key workflowDefaults).
	ConfigNamespace string
	// ImagePullGrace: DefaultImagePullGrace when 0.
	ImagePullGrace time.Duration
	// PodCreateTimeout: DefaultPodCreateTimeout when 0.
	PodCreateTimeout time.Duration
	// ResourceCheckInterval: how often a resource node whose successCondition or
	// failureCondition does not hold yet reads its object again; DefaultResourceCheckInterval
	// when 0.
	ResourceCheckInterval time.Duration
	// DefaultActiveDeadline bounds every Workflow without spec.activeDeadlineSeconds (0: none);
	// workflowDefaults' spec.activeDeadlineSeconds in workflow-controller-configmap overrides it.
	DefaultActiveDeadline time.Duration
}

// Controller runs Workflows in one cluster: their pods, suspend and resource nodes, and their
// status.
type Controller struct {
	// Ops are the operations on Workflows (submit, stop, retry, …), acting as the controller.
	*Ops

	cfg    *rest.Config
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	disco  discovery.CachedDiscoveryInterface // the mapper's
	opts   Options
	log    *slog.Logger
	queue  ctrlloop.Queue

	workflows, templates, clusterTemplates, crons cache.GenericLister
	pods                                          corelisters.PodLister

	mu      sync.Mutex
	started bool
	written map[string]string // the resourceVersion each workflow had before this controller's last write
	// whenSkipped is, per CronWorkflow key, the last due time its spec.when skipped, so that a
	// skipped time is decided once (its Event, named for it, says so across restarts).
	whenSkipped map[string]time.Time
	// schedChanged is, per CronWorkflow key, a schedule that differs from its last-used-schedule
	// annotation and when this controller first saw it: no time before then is run.
	schedChanged map[string]schedChange
	saClient     map[string]dynamic.Interface
	reported     map[string]string // the UID and finish time last given to OnFinished, by key
	locks        *lockManager      // synchronization's mutexes and semaphores (sync.go)

	cfgMu    sync.Mutex
	ctrlCfg  *controllerConfig // workflow-controller-configmap, read at cfgAt
	cfgAt    time.Time
	imgMu    sync.Mutex
	imgCache map[string]imageEntry // images' ENTRYPOINT and CMD (images.go)
	refused  refusals
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
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
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
	if opts.ExecutorImage == "" {
		opts.ExecutorImage = DefaultExecutorImage
	}
	if opts.ExecutorPath == "" {
		opts.ExecutorPath = DefaultExecutorPath
	}
	if opts.Policy == nil {
		opts.Policy = netpolicy.Unrestricted()
	}
	if opts.ImagePullGrace <= 0 {
		opts.ImagePullGrace = DefaultImagePullGrace
	}
	if opts.PodCreateTimeout <= 0 {
		opts.PodCreateTimeout = DefaultPodCreateTimeout
	}
	disco := memory.NewMemCacheClient(dc)
	c := &Controller{imgCache: map[string]imageEntry{}, cfg: rest.CopyConfig(cfg), kube: kc, dyn: dyn, opts: opts, log: opts.Logger,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(disco), disco: disco,
		written: map[string]string{}, whenSkipped: map[string]time.Time{}, schedChanged: map[string]schedChange{}, saClient: map[string]dynamic.Interface{}, reported: map[string]string{}}
	c.Ops = &Ops{dyn: dyn, kube: kc, log: opts.Logger, now: opts.Now, specOf: c.templateSpec}
	return c, nil
}

// Run installs the CRDs, watches Workflows, their templates and their pods, and reconciles
// until ctx ends. It may be called again after it returned an error.
func (c *Controller) Run(ctx context.Context) error {
	if err := EnsureCRDs(ctx, c.dyn); err != nil {
		return err
	}
	c.queue = ctrlloop.NewQueue(retryBaseDelay, retryMaxDelay)
	dynf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, c.opts.Resync, c.opts.Namespace, nil)
	wi := dynf.ForResource(WorkflowsResource)
	c.workflows = wi.Lister()
	if _, err := wi.Informer().AddEventHandler(ctrlloop.On(c.enqueueObject)); err != nil {
		return err
	}
	ci := dynf.ForResource(CronWorkflowsResource)
	c.crons = ci.Lister()
	if _, err := ci.Informer().AddEventHandler(ctrlloop.On(c.enqueueCron)); err != nil {
		return err
	}
	ti := dynf.ForResource(WorkflowTemplatesResource)
	c.templates = ti.Lister()
	cdynf := dynamicinformer.NewDynamicSharedInformerFactory(c.dyn, c.opts.Resync)
	cti := cdynf.ForResource(ClusterWorkflowTemplatesResource)
	c.clusterTemplates = cti.Lister()
	kf := informers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.Resync, informers.WithNamespace(c.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelWorkflow }))
	pi := kf.Core().V1().Pods()
	c.pods = pi.Lister()
	if _, err := pi.Informer().AddEventHandler(ctrlloop.On(c.enqueuePod)); err != nil {
		return err
	}
	synced := []cache.InformerSynced{wi.Informer().HasSynced, ci.Informer().HasSynced, ti.Informer().HasSynced, cti.Informer().HasSynced, pi.Informer().HasSynced}
	dynf.Start(ctx.Done())
	cdynf.Start(ctx.Done())
	kf.Start(ctx.Done())
	defer dynf.Shutdown()
	defer cdynf.Shutdown()
	defer kf.Shutdown()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	c.locks = newLockManager(c.semaphoreLimit, func(wf string) { c.queue.Add(wf) }, c.opts.Now)
	if err := c.rebuildLocks(); err != nil {
		return err
	}
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	c.log.Info("workflow controller started", "workers", c.opts.Workers)
	ctrlloop.Work(ctx, c.queue, ctrlloop.Workers{N: c.opts.Workers, Reconcile: func(ctx context.Context, key string) (time.Duration, error) {
		if strings.HasPrefix(key, cronKeyPrefix) {
			return c.reconcileCron(ctx, key)
		}
		return c.reconcile(ctx, key)
	}, Log: c.log, LogKey: logWorkflow})
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
	// A CronWorkflow's Workflow changing changes its active list and history.
	if m, err := meta.Accessor(obj); err == nil && m.GetLabels()[LabelCronWorkflow] != "" {
		c.queue.Add(cronKeyPrefix + m.GetNamespace() + "/" + m.GetLabels()[LabelCronWorkflow])
	}
}

func (c *Controller) enqueuePod(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok && p.Labels[LabelWorkflow] != "" {
		c.queue.Add(p.Namespace + "/" + p.Labels[LabelWorkflow])
	}
}

// reconcile runs one Workflow a step further and writes its status once.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	obj, err := c.workflows.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.written, key)
		delete(c.reported, key)
		c.mu.Unlock()
		c.locks.commit(key, nil, nil, true) // its locks go with it
		return 0, nil                       // deleted: its pods and claims go with it (owner references)
	}
	if err != nil {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured)
	c.mu.Lock()
	stale := c.written[key] == u.GetResourceVersion()
	c.mu.Unlock()
	if stale {
		return staleRetry, nil // the cache has not seen this controller's last write yet
	}
	if u.GetDeletionTimestamp() != nil {
		return c.finalizeDeleted(ctx, u)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return 0, err
	}
	now := c.opts.Now()
	wf, verr := Decode(data)
	if wf == nil {
		return 0, c.writeInvalid(ctx, u, verr, now)
	}
	if wf.Status.Phase.Completed() {
		c.locks.commit(key, nil, nil, true)
		c.finished(key, wf) // first: the archive hears of it before its ttlStrategy deletes it
		if d, done, err := c.collectClaims(ctx, u, wf); done || err != nil {
			return d, err
		}
		d, done, gcErr := c.collectArtifacts(ctx, u, wf)
		if done {
			return d, gcErr // the status changed: the next reconcile goes on
		}
		wait, err := c.collectFinished(ctx, wf, now)
		if gcErr != nil {
			// An unreachable store does not hold podGC and ttlStrategy back; GC is retried.
			c.log.Info("artifact GC failed; retrying", logWorkflow, key, logErr, gcErr)
			if wait == 0 || wait > gcRetry {
				wait = gcRetry
			}
		}
		return wait, err
	}
	if verr != nil {
		return 0, c.writeInvalid(ctx, u, verr, now)
	}
	spec := &wf.Spec
	st := *wf.Status.deepCopy()
	if ref := wf.Spec.WorkflowTemplateRef; ref != nil {
		tspec := st.StoredWorkflowTemplateSpec
		if tspec == nil {
			s, err := c.templateSpec(ctx, wf.Namespace, ref.Name, ref.ClusterScope)
			if apierrors.IsNotFound(err) {
				kind := "WorkflowTemplate"
				if ref.ClusterScope {
					kind = "ClusterWorkflowTemplate"
				}
				return 0, c.writeInvalid(ctx, u, fmt.Errorf("spec.workflowTemplateRef: %s %q not found", kind, ref.Name), now)
			}
			if err != nil {
				return 0, err
			}
			tspec = s
		}
		spec = mergeSpec(&wf.Spec, tspec)
		if err := ValidateSpec(spec, "spec"); err != nil {
			return 0, c.writeInvalid(ctx, u, fmt.Errorf("spec.workflowTemplateRef %q: %w", ref.Name, err), now)
		}
		st.StoredWorkflowTemplateSpec = tspec
	}
	cfg, err := c.controllerConfig(ctx)
	if err != nil {
		return 0, err
	}
	if cfg.defaults != nil {
		merged, err := cfg.defaults.Apply(spec)
		if err == nil {
			err = ValidateSpec(merged, "spec")
		}
		if err != nil {
			return 0, c.writeInvalid(ctx, u, fmt.Errorf("under workflowDefaults of ConfigMap %s/%s: %w", c.opts.ConfigNamespace, ControllerConfigMap, err), now)
		}
		spec = merged
		cfg.defaults.ApplyMetadata(wf)
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{LabelWorkflow: name}))
	if err != nil {
		return 0, err
	}
	var deadline *int64
	if c.opts.DefaultActiveDeadline > 0 {
		secs := int64(max(c.opts.DefaultActiveDeadline/time.Second, 1))
		deadline = &secs
	}
	o := &operation{ctx: ctx, cl: c, wf: wf, spec: spec, nodes: map[string]*NodeStatus{}, pods: map[string]*corev1.Pod{},
		now: now, locks: c.locks, globals: globalScope(wf, spec), tmplSpecs: map[string]*WorkflowSpec{}, defaultDeadline: deadline, refused: &c.refused,
		opts: podOptions{executorImage: c.opts.ExecutorImage, executorPath: c.opts.ExecutorPath,
			nodeSelector: c.opts.NodeSelector, tolerations: c.opts.Tolerations, policy: c.opts.Policy,
			pullGrace: c.opts.ImagePullGrace, createTimeout: c.opts.PodCreateTimeout, resourceCheck: c.opts.ResourceCheckInterval}}
	for id, n := range st.Nodes {
		n := n
		o.nodes[id] = &n
	}
	for _, p := range pods {
		if metav1.IsControlledBy(p, wf) {
			o.pods[p.Name] = p
		}
	}
	o.operate(&st)
	st.Nodes = make(map[string]NodeStatus, len(o.nodes))
	for id, n := range o.nodes {
		st.Nodes[id] = *n
	}
	write := c.writeStatus
	if needsGCFinalizer(spec) && !slices.Contains(u.GetFinalizers(), FinalizerArtifactGC) {
		// Written with the status, whatever it is: the Workflow's artifacts go with it.
		u = u.DeepCopy()
		u.SetFinalizers(append(u.GetFinalizers(), FinalizerArtifactGC))
		write = func(ctx context.Context, u *unstructured.Unstructured, _ *Workflow, st WorkflowStatus) error {
			return c.putStatus(ctx, u, st)
		}
	}
	if err := write(ctx, u, wf, st); err != nil {
		if apierrors.IsConflict(err) {
			return staleRetry, nil
		}
		return 0, errors.Join(o.err, err)
	}
	c.locks.commit(key, o.sync.release, o.sync.waiting, o.sync.all)
	if o.err != nil {
		return 0, o.err
	}
	if st.Phase.Completed() {
		c.log.Info("workflow finished", logWorkflow, key, "phase", st.Phase, "message", st.Message)
		wf.Status = st
		c.finished(key, wf)
	}
	if spec.PodGC == nil && spec.TTLStrategy == nil {
		return o.requeue, nil
	}
	wait, _, err := c.collect(ctx, wf, spec, &st, pods, now)
	if err != nil {
		return 0, err
	}
	if wait > 0 && (o.requeue == 0 || wait < o.requeue) {
		return wait, nil
	}
	return o.requeue, nil
}

// runSpec is the spec a Workflow runs (effectiveSpec) over the runtime's workflowDefaults. A
// ConfigMap that cannot be read, or defaults that do not apply, leave effectiveSpec.
func (c *Controller) runSpec(ctx context.Context, wf *Workflow) *WorkflowSpec {
	spec := effectiveSpec(wf)
	cfg, err := c.controllerConfig(ctx)
	if err != nil || cfg.defaults == nil {
		return spec
	}
	if merged, err := cfg.defaults.Apply(spec); err == nil {
		return merged
	}
	return spec
}

// collectFinished runs a finished Workflow's podGC and ttlStrategy.
func (c *Controller) collectFinished(ctx context.Context, wf *Workflow, now time.Time) (time.Duration, error) {
	spec := c.runSpec(ctx, wf)
	if spec.PodGC == nil && spec.TTLStrategy == nil {
		return 0, nil
	}
	pods, err := c.pods.Pods(wf.Namespace).List(labels.SelectorFromSet(labels.Set{LabelWorkflow: wf.Name}))
	if err != nil {
		return 0, err
	}
	wait, _, err := c.collect(ctx, wf, spec, &wf.Status, pods, now)
	return wait, err
}

// collectArtifacts deletes a finished Workflow's artifacts due on completion (artifactGC) and
// records it in the status; done is true when it wrote the status (the next reconcile goes on).
// What it could not delete is retried after gcRetry.
func (c *Controller) collectArtifacts(ctx context.Context, u *unstructured.Unstructured, wf *Workflow) (time.Duration, bool, error) {
	if wf.Status.ArtifactGCStatus != nil && wf.Status.ArtifactGCStatus.Done {
		return 0, false, nil
	}
	spec := c.runSpec(ctx, wf)
	if len(dueArtifacts(spec, &wf.Status, false)) == 0 {
		return 0, false, nil
	}
	st := *wf.Status.deepCopy()
	changed, gcErr := c.gcArtifacts(ctx, wf.Namespace, spec, &st, false)
	if !changed {
		return 0, false, gcErr
	}
	if err := c.putStatus(ctx, u, st); err != nil {
		if apierrors.IsConflict(err) {
			return staleRetry, true, nil
		}
		return 0, true, errors.Join(gcErr, err)
	}
	return 0, true, gcErr
}

// finished tells OnFinished of a finished Workflow, once per UID, finish time and phase.
func (c *Controller) finished(key string, wf *Workflow) {
	if c.opts.OnFinished == nil {
		return
	}
	// In seconds: the status as stored (RFC 3339) has no finer time than the one just written.
	// A retry that ends within the second it began is told by its phase.
	mark := string(wf.UID) + "/" + strconv.FormatInt(wf.Status.FinishedAt.Unix(), 10) + "/" + string(wf.Status.Phase)
	c.mu.Lock()
	seen := c.reported[key] == mark
	c.reported[key] = mark
	c.mu.Unlock()
	if !seen {
		c.opts.OnFinished(Record(wf))
	}
}

func (s *WorkflowStatus) deepCopy() *WorkflowStatus {
	b, _ := json.Marshal(s)
	var out WorkflowStatus
	_ = json.Unmarshal(b, &out)
	return &out
}

// writeInvalid ends a Workflow that cannot run: phase Error, the message naming the field.
func (c *Controller) writeInvalid(ctx context.Context, u *unstructured.Unstructured, verr error, now time.Time) error {
	defer c.locks.commit(u.GetNamespace()+"/"+u.GetName(), nil, nil, true)
	var st WorkflowStatus
	if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &st)
	}
	if st.Phase.Completed() {
		return nil
	}
	st.Phase, st.Message = WorkflowError, "invalid spec: "+verr.Error()
	if st.StartedAt.IsZero() {
		st.StartedAt = metav1.NewTime(now)
	}
	st.FinishedAt = metav1.NewTime(now)
	c.log.Info("workflow refused", logWorkflow, u.GetNamespace()+"/"+u.GetName(), logErr, verr)
	err := c.putStatus(ctx, u, st)
	if apierrors.IsConflict(err) {
		return nil // changed meanwhile: the new version comes as an event
	}
	return err
}

func (c *Controller) writeStatus(ctx context.Context, u *unstructured.Unstructured, wf *Workflow, st WorkflowStatus) error {
	a, _ := json.Marshal(wf.Status)
	b, _ := json.Marshal(st)
	if string(a) == string(b) {
		return nil
	}
	return c.putStatus(ctx, u, st)
}

// putStatus writes st and the completed label with an update of the whole object (Argo's
// Workflow CRD has no status subresource), guarded by the resourceVersion read.
func (c *Controller) putStatus(ctx context.Context, u *unstructured.Unstructured, st WorkflowStatus) error {
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
	lbl := obj.GetLabels()
	if lbl == nil {
		lbl = map[string]string{}
	}
	lbl[LabelCompleted] = fmt.Sprint(st.Phase.Completed())
	obj.SetLabels(lbl)
	before := u.GetResourceVersion()
	if _, err := c.dyn.Resource(WorkflowsResource).Namespace(u.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	c.mu.Lock()
	c.written[u.GetNamespace()+"/"+u.GetName()] = before
	c.mu.Unlock()
	return nil
}

// createPod implements cluster.
func (c *Controller) createPod(ctx context.Context, pod *corev1.Pod) error {
	_, err := c.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// deletePod implements cluster.
func (c *Controller) deletePod(ctx context.Context, ns, name string) error {
	err := c.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// templateSpec implements cluster: from the informers' caches.
func (c *Controller) templateSpec(_ context.Context, ns, name string, clusterScope bool) (*WorkflowSpec, error) {
	var obj any
	var err error
	kind := "WorkflowTemplate"
	if clusterScope {
		kind = "ClusterWorkflowTemplate"
		obj, err = c.clusterTemplates.Get(name)
	} else {
		obj, err = c.templates.ByNamespace(ns).Get(name)
	}
	if err != nil {
		return nil, err
	}
	data, err := obj.(*unstructured.Unstructured).MarshalJSON()
	if err != nil {
		return nil, err
	}
	var t WorkflowTemplate
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s %q does not decode: %w", kind, name, decodeError(err, kind))
	}
	return &t.Spec, nil
}

func (c *Controller) clientAs(ns, sa string) (dynamic.Interface, error) {
	user := "system:serviceaccount:" + ns + ":" + sa
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.saClient[user]; d != nil {
		return d, nil
	}
	cfg := rest.CopyConfig(c.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if len(c.saClient) > 1000 {
		clear(c.saClient)
	}
	c.saClient[user] = d
	return d, nil
}

// rebuildLocks takes again the locks the Workflows' statuses record as held (at start,
// before any reconcile): no lock is lost or held twice across a restart.
func (c *Controller) rebuildLocks() error {
	objs, err := c.workflows.List(labels.Everything())
	if err != nil {
		return err
	}
	n := 0
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		raw, ok := u.Object["status"].(map[string]any)
		if !ok || raw["synchronization"] == nil {
			continue
		}
		b, _ := json.Marshal(raw)
		var st WorkflowStatus
		if json.Unmarshal(b, &st) != nil || st.Phase.Completed() {
			continue
		}
		for _, h := range holdsFromStatus(u.GetNamespace(), u.GetName(), st.Synchronization) {
			c.locks.reacquire(h)
			n++
		}
	}
	if n > 0 {
		c.log.Info("synchronization locks rebuilt from workflow statuses", "holds", n)
	}
	return nil
}

// semaphoreLimit implements cluster: the ConfigMap is read through the API (limits are
// cached for limitTTL by the lock manager).
func (c *Controller) semaphoreLimit(ctx context.Context, ns, name, key string) (int, error) {
	cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("%w: ConfigMap %s/%s (the semaphore's limit) not found", errLockConfig, ns, name)
	}
	if err != nil {
		return 0, err
	}
	return semaphoreLimitOf(cm, ns, name, key)
}

// createClaim implements cluster.
func (c *Controller) createClaim(ctx context.Context, wf *Workflow, pvc *corev1.PersistentVolumeClaim) error {
	claims := c.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	_, err := claims.Create(ctx, pvc, metav1.CreateOptions{FieldManager: FieldManager})
	if !apierrors.IsAlreadyExists(err) {
		if apierrors.IsInvalid(err) {
			return fmt.Errorf("%w: %v", errdefs.ErrInvalid, err)
		}
		return err
	}
	got, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(got.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == wf.UID }) {
		return fmt.Errorf("%s %w", pvc.Name, errClaimTaken)
	}
	return nil
}

// deleteClaim implements cluster.
func (c *Controller) deleteClaim(ctx context.Context, ns, name string) error {
	err := c.kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// collectClaims deletes the claims a finished Workflow still lists when volumeClaimGC says
// they are due (a deletion that failed when it finished); done is true when it wrote the status.
func (c *Controller) collectClaims(ctx context.Context, u *unstructured.Unstructured, wf *Workflow) (time.Duration, bool, error) {
	if len(wf.Status.PersistentVolumeClaims) == 0 {
		return 0, false, nil
	}
	spec := c.runSpec(ctx, wf)
	if !claimsDue(spec, wf.Status.Phase) {
		return 0, false, nil
	}
	st := *wf.Status.deepCopy()
	var kept []corev1.Volume
	var firstErr error
	for _, v := range st.PersistentVolumeClaims {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if err := c.deleteClaim(ctx, wf.Namespace, v.PersistentVolumeClaim.ClaimName); err != nil {
			kept = append(kept, v)
			firstErr = cmpErr(firstErr, err)
		}
	}
	if len(kept) == len(st.PersistentVolumeClaims) {
		if firstErr != nil {
			c.log.Info("pvc GC failed; retrying", logWorkflow, wf.Namespace+"/"+wf.Name, logErr, firstErr)
		}
		return gcRetry, false, nil
	}
	st.PersistentVolumeClaims = kept
	if err := c.putStatus(ctx, u, st); err != nil {
		if apierrors.IsConflict(err) {
			return staleRetry, true, nil
		}
		return 0, true, err
	}
	return 0, true, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

var _ cluster = (*Controller)(nil)
