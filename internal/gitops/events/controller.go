package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/freshet-dev/freshet/internal/gitops/ctrlloop"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// Defaults of the controller.
const (
	DefaultWorkers = 2
	DefaultResync  = 15 * time.Minute
	retryBaseDelay = 200 * time.Millisecond
	retryMaxDelay  = time.Minute
)

// Status condition types, as Argo Events names them.
const (
	CondSourcesProvided      = "SourcesProvided"
	CondDependenciesProvided = "DependenciesProvided"
	CondTriggersProvided     = "TriggersProvided"
	CondConfigured           = "Configured"
	CondDeployed             = "Deployed"
	// CondTriggered is Freshet's: how the Sensor's last trigger went.
	CondTriggered = "Triggered"
)

// Reasons of the conditions.
const (
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonEventBusNotFound = "EventBusNotFound"
	ReasonEventBusFailed   = "EventBusNotReady"
	ReasonTriggerFailed    = "TriggerFailed"
)

const (
	logKey = "key"
	logErr = "err"
)

// Options configure a Controller.
type Options struct {
	// Namespace limits the controller to one namespace; empty watches every namespace.
	Namespace string
	Workers   int
	Resync    time.Duration
	Logger    *slog.Logger
	// NATS connects to the runtime's own NATS, for EventBuses of type jetstream (Argo would
	// deploy one); nil refuses them with a status message. The connection is shared.
	NATS func(ctx context.Context) (*nats.Conn, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Policy checks the URLs of http and nats triggers, before every request and at every
	// connection, and decides which servers the nats, minio, redis, redisStream, mqtt and amqp event sources may
	// reach (their URLs are tenants' input); nil: any (a hybrid runtime's netpolicy.Unrestricted).
	Policy *netpolicy.Policy
	// SlackAPI is the base URL of the Slack Web API slack triggers post to (DefaultSlackAPI
	// when empty): the operator's setting, checked against Policy as an http trigger's URL.
	SlackAPI string
}

// Controller runs EventSources, Sensors and EventBuses in one cluster.
type Controller struct {
	cfg    *rest.Config
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	opts   Options
	log    *slog.Logger
	queue  ctrlloop.Queue
	recent *webhook.Recent

	sources, sensors, buses cache.GenericLister

	mu       sync.Mutex
	started  bool
	conns    map[string]*busConn   // namespace/bus
	srcs     map[string]*sourceRun // namespace/name
	sens     map[string]*sensorRun // namespace/name
	saClient map[string]dynamic.Interface
	saOps    map[string]*workflows.Ops
	wg       sync.WaitGroup // the runs' goroutines
	secrets  secretCache
	// listeners counts the running listeners' goroutines (resource, nats, minio events).
	listeners atomic.Int64
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
	if opts.Policy == nil {
		opts.Policy = netpolicy.Unrestricted()
	}
	if opts.SlackAPI, err = slackAPIURL(opts.SlackAPI); err != nil {
		return nil, err
	}
	return &Controller{cfg: rest.CopyConfig(cfg), kube: kc, dyn: dyn, opts: opts, log: opts.Logger,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		recent: webhook.NewRecent(webhook.ReplayWindow, 0),
		conns:  map[string]*busConn{}, srcs: map[string]*sourceRun{}, sens: map[string]*sensorRun{},
		saClient: map[string]dynamic.Interface{}, saOps: map[string]*workflows.Ops{}}, nil
}

// Keys of the work queue: kind/namespace/name.
const (
	kindSource = "es"
	kindSensor = "sn"
	kindBus    = "eb"
)

// Run installs the CRDs, watches the three kinds and runs them until ctx ends. It may be
// called again after it returned an error.
func (c *Controller) Run(ctx context.Context) error {
	if err := EnsureCRDs(ctx, c.dyn); err != nil {
		return err
	}
	c.queue = ctrlloop.NewQueue(retryBaseDelay, retryMaxDelay)
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, c.opts.Resync, c.opts.Namespace, nil)
	var synced []cache.InformerSynced
	watch := func(kind string, inf cache.SharedIndexInformer) error {
		_, err := inf.AddEventHandler(ctrlloop.On(func(o any) { c.enqueue(kind, o) }))
		synced = append(synced, inf.HasSynced)
		return err
	}
	si, sni, bi := f.ForResource(EventSourcesResource), f.ForResource(SensorsResource), f.ForResource(EventBusResource)
	c.sources, c.sensors, c.buses = si.Lister(), sni.Lister(), bi.Lister()
	for _, w := range []struct {
		kind string
		inf  cache.SharedIndexInformer
	}{{kindSource, si.Informer()}, {kindSensor, sni.Informer()}, {kindBus, bi.Informer()}} {
		if err := watch(w.kind, w.inf); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	c.log.Info("events controller started", "workers", c.opts.Workers)
	ctrlloop.Work(ctx, c.queue, ctrlloop.Workers{N: c.opts.Workers, Reconcile: func(ctx context.Context, key string) (time.Duration, error) {
		return 0, c.reconcile(ctx, key)
	}, Log: c.log, LogKey: logKey})
	c.stopAll()
	return nil
}

// stopAll stops every source and sensor and closes the buses.
func (c *Controller) stopAll() {
	c.mu.Lock()
	c.started = false
	for k, r := range c.srcs {
		r.stop()
		delete(c.srcs, k)
	}
	sens := c.sens
	c.sens = map[string]*sensorRun{}
	c.mu.Unlock()
	for _, r := range sens {
		r.stop()
	}
	c.wg.Wait()
	c.mu.Lock()
	for k, b := range c.conns {
		b.close()
		delete(c.conns, k)
	}
	c.mu.Unlock()
}

// Healthy reports whether the controller's caches are synced and its workers run.
func (c *Controller) Healthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

func (c *Controller) enqueue(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(kind + "/" + key)
	}
}

// enqueueNamespace re-reads the sources and sensors of ns (their bus changed).
func (c *Controller) enqueueNamespace(ns string) {
	for kind, l := range map[string]cache.GenericLister{kindSource: c.sources, kindSensor: c.sensors} {
		objs, _ := l.ByNamespace(ns).List(labels.Everything())
		for _, o := range objs {
			c.enqueue(kind, o)
		}
	}
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, err := cache.SplitMetaNamespaceKey(rest)
	if err != nil {
		return nil
	}
	var l cache.GenericLister
	switch kind {
	case kindSource:
		l = c.sources
	case kindSensor:
		l = c.sensors
	case kindBus:
		l = c.buses
	}
	obj, err := l.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(kind, ns, name)
		return nil
	}
	if err != nil {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	if u.GetDeletionTimestamp() != nil {
		c.forget(kind, ns, name)
		return nil
	}
	switch kind {
	case kindSource:
		return c.reconcileSource(ctx, u)
	case kindSensor:
		return c.reconcileSensor(ctx, u)
	default:
		return c.reconcileBus(ctx, u)
	}
}

// forget stops what runs for a deleted resource.
func (c *Controller) forget(kind, ns, name string) {
	k := ns + "/" + name
	switch kind {
	case kindSource:
		c.mu.Lock()
		if r := c.srcs[k]; r != nil {
			r.stop()
			delete(c.srcs, k)
		}
		c.mu.Unlock()
	case kindSensor:
		c.mu.Lock()
		r := c.sens[k]
		delete(c.sens, k)
		c.mu.Unlock()
		if r != nil {
			r.stop() // outside the lock: its handler may need it
			// The Sensor is gone (or invalid): its durable consumer goes too.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = r.bus.js.DeleteConsumer(ctx, r.bus.stream, r.durable)
			cancel()
		}
	case kindBus:
		c.mu.Lock()
		b := c.conns[k]
		delete(c.conns, k)
		c.mu.Unlock()
		if b != nil {
			b.close()
			c.enqueueNamespace(ns)
		}
	}
}

// specHash identifies a resource's spec: what runs is replaced when it changes.
func specHash(u *unstructured.Unstructured) string {
	b, _ := json.Marshal(u.Object["spec"])
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// reconcileBus connects to an EventBus's JetStream and makes its stream.
func (c *Controller) reconcileBus(ctx context.Context, u *unstructured.Unstructured) error {
	ns, name := u.GetNamespace(), u.GetName()
	key := ns + "/" + name
	hash := specHash(u)
	data, _ := u.MarshalJSON()
	b, err := DecodeEventBus(data)
	if b == nil || err != nil {
		c.forget(kindBus, ns, name)
		return c.writeConditions(ctx, u, Condition{Type: CondConfigured, Status: "False", Reason: ReasonInvalidSpec, Message: "invalid spec: " + err.Error()},
			Condition{Type: CondDeployed, Status: "False", Reason: ReasonInvalidSpec, Message: "not deployed: the spec is invalid"})
	}
	c.mu.Lock()
	cur := c.conns[key]
	c.mu.Unlock()
	if cur != nil && cur.hash == hash {
		return c.writeConditions(ctx, u, Condition{Type: CondConfigured, Status: "True"},
			Condition{Type: CondDeployed, Status: "True", Message: "JetStream " + cur.desc + ", stream " + cur.stream})
	}
	conn, err := c.connect(ctx, ns, name, &b.Spec)
	if err != nil {
		_ = c.writeConditions(ctx, u, Condition{Type: CondConfigured, Status: "True"},
			Condition{Type: CondDeployed, Status: "False", Reason: ReasonEventBusFailed, Message: err.Error()})
		return err
	}
	conn.hash = hash
	c.mu.Lock()
	if old := c.conns[key]; old != nil {
		old.close()
	}
	c.conns[key] = conn
	c.mu.Unlock()
	c.enqueueNamespace(ns)
	return c.writeConditions(ctx, u, Condition{Type: CondConfigured, Status: "True"},
		Condition{Type: CondDeployed, Status: "True", Message: "JetStream " + conn.desc + ", stream " + conn.stream})
}

func (c *Controller) connect(ctx context.Context, ns, name string, s *EventBusSpec) (*busConn, error) {
	if s.JetStreamExotic != nil {
		// The URL is the tenant's: checked against the operator's policy, and every (re)dial
		// goes through it, as an event source's servers do.
		urls, err := natsURLs("spec.jetstreamExotic.url", s.JetStreamExotic.URL)
		if err != nil {
			return nil, err
		}
		for _, u := range urls {
			if err := c.opts.Policy.CheckServerURL("spec.jetstreamExotic.url", redact(u)); err != nil {
				return nil, err
			}
		}
		nc, err := nats.Connect(s.JetStreamExotic.URL, nats.Name("freshet-runtime-events"), nats.MaxReconnects(-1), nats.Timeout(5*time.Second),
			nats.SetCustomDialer(policyDialer{ctx, c.opts.Policy}))
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", redact(s.JetStreamExotic.URL), err)
		}
		b, err := openBus(ctx, nc, true, ns, name, "at "+redact(s.JetStreamExotic.URL))
		if err != nil {
			nc.Close()
			return nil, err
		}
		return b, nil
	}
	if c.opts.NATS == nil {
		return nil, errors.New("this runtime has no NATS of its own for a jetstream EventBus: start it with --events-nats-url, or use jetstreamExotic.url")
	}
	nc, err := c.opts.NATS(ctx)
	if err != nil {
		return nil, fmt.Errorf("the runtime's NATS: %w", err)
	}
	return openBus(ctx, nc, false, ns, name, "of the runtime")
}

// busFor is the connected bus a source or sensor of ns uses, or the condition saying why not.
func (c *Controller) busFor(ns, name string) (*busConn, *Condition) {
	if name == "" {
		name = DefaultEventBus
	}
	c.mu.Lock()
	b := c.conns[ns+"/"+name]
	c.mu.Unlock()
	if b != nil {
		return b, nil
	}
	if _, err := c.buses.ByNamespace(ns).Get(name); apierrors.IsNotFound(err) {
		return nil, &Condition{Type: CondDeployed, Status: "False", Reason: ReasonEventBusNotFound,
			Message: fmt.Sprintf("EventBus %q not found in namespace %s: create it (spec.jetstream or spec.jetstreamExotic)", name, ns)}
	}
	return nil, &Condition{Type: CondDeployed, Status: "False", Reason: ReasonEventBusFailed,
		Message: fmt.Sprintf("EventBus %q is not ready: see its status", name)}
}

// writeConditions sets conds on the resource's status (the others kept) when they changed,
// with an update of the whole object guarded by the resourceVersion read (Argo's CRDs of these
// kinds have no status subresource).
func (c *Controller) writeConditions(ctx context.Context, u *unstructured.Unstructured, conds ...Condition) error {
	var st Status
	if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &st)
	}
	now := metav1.NewTime(c.opts.Now().UTC().Truncate(time.Second))
	changed := false
	for _, nc := range conds {
		found := false
		for i, oc := range st.Conditions {
			if oc.Type != nc.Type {
				continue
			}
			found = true
			if oc.Status != nc.Status || oc.Reason != nc.Reason || oc.Message != nc.Message {
				if oc.Status == nc.Status {
					nc.LastTransitionTime = oc.LastTransitionTime
				} else {
					nc.LastTransitionTime = now
				}
				st.Conditions[i] = nc
				changed = true
			}
		}
		if !found {
			nc.LastTransitionTime = now
			st.Conditions = append(st.Conditions, nc)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	b, _ := json.Marshal(st)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	obj := u.DeepCopy()
	obj.Object["status"] = m
	res := resourceOf(obj.GetKind())
	_, err := c.dyn.Resource(res).Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // changed or gone meanwhile: the new version comes as an event
	}
	if err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

func resourceOf(kind string) schema.GroupVersionResource {
	switch kind {
	case "EventSource":
		return EventSourcesResource
	case "Sensor":
		return SensorsResource
	}
	return EventBusResource
}

// saConfig is the controller's config acting as the service account ns/sa (impersonated).
func (c *Controller) saConfig(ns, sa string) (string, *rest.Config) {
	user := "system:serviceaccount:" + ns + ":" + sa
	cfg := rest.CopyConfig(c.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	return user, cfg
}

// clientAs is a client acting as the service account ns/sa (impersonated).
func (c *Controller) clientAs(ns, sa string) (dynamic.Interface, error) {
	user, cfg := c.saConfig(ns, sa)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.saClient[user]; d != nil {
		return d, nil
	}
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

// opsAs is the workflow engine's operations acting as the service account ns/sa.
func (c *Controller) opsAs(ns, sa string) (*workflows.Ops, error) {
	user, cfg := c.saConfig(ns, sa)
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.saOps[user]; o != nil {
		return o, nil
	}
	o, err := workflows.NewOps(cfg, c.log)
	if err != nil {
		return nil, err
	}
	if len(c.saOps) > 1000 {
		clear(c.saOps)
	}
	c.saOps[user] = o
	return o, nil
}
