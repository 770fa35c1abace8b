package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

const (
	// watchSyncTimeout bounds the wait for a new informer's first list.
	watchSyncTimeout = 30 * time.Second
	// mapperResetInterval limits discovery refreshes when a kind is unknown.
	mapperResetInterval = 2 * time.Second
	// requestTimeout bounds every request but watches.
	requestTimeout = 60 * time.Second
)

// cluster is the engine's connection to one destination cluster: clients, a discovery-backed
// REST mapper, and one shared informer per resource type the applications manage, filtered to
// objects carrying LabelApp. Refreshes read live state from these caches;
// nothing is fetched per object per refresh.
type cluster struct {
	host     string
	cfg      *rest.Config // without a request timeout (a followed log is a long request)
	dyn      dynamic.Interface
	watchDyn dynamic.Interface // no request timeout
	disc     discovery.CachedDiscoveryInterface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	log      *slog.Logger
	onEvent  func(label string)

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	watches   map[schema.GroupVersionResource]*watch
	lastReset time.Time

	invMu   sync.Mutex
	invAt   time.Time
	invAll  map[string]*inventory
	invUsed map[string]bool

	infoOnce    sync.Once
	kubeVersion string
	apiVersions []string
}

type watch struct {
	gvr     schema.GroupVersionResource
	inf     cache.SharedIndexInformer
	ready   chan struct{} // closed once the first list is in the cache
	errMu   sync.Mutex
	lastErr error
}

func newCluster(parent context.Context, cfg *rest.Config, qps float32, burst int, log *slog.Logger, onEvent func(string)) (*cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	if cfg.UserAgent == "" {
		cfg.UserAgent = "freshet-gitops-engine"
	}
	// Watches are long requests; everything else is bounded so a hung API server cannot stall
	// a refresh or a sync forever.
	watchDyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cfg.Host, err)
	}
	streamCfg := rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cfg.Host, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cfg.Host, err)
	}
	cached := memory.NewMemCacheClient(dc)
	ctx, cancel := context.WithCancel(parent)
	return &cluster{
		host: cfg.Host, cfg: streamCfg, dyn: dyn, watchDyn: watchDyn, disc: cached,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached),
		log:    log.With("cluster", cfg.Host), onEvent: onEvent,
		ctx: ctx, cancel: cancel,
		watches: map[schema.GroupVersionResource]*watch{},
	}, nil
}

func (c *cluster) stop() { c.cancel() }

// serverInfo returns the cluster's version and API versions (for Helm's .Capabilities).
func (c *cluster) serverInfo() (string, []string) {
	c.infoOnce.Do(func() {
		if v, err := c.disc.ServerVersion(); err == nil {
			c.kubeVersion = v.GitVersion
		}
		if groups, err := c.disc.ServerGroups(); err == nil {
			for _, g := range groups.Groups {
				for _, v := range g.Versions {
					c.apiVersions = append(c.apiVersions, v.GroupVersion)
				}
			}
			sort.Strings(c.apiVersions)
		}
	})
	return c.kubeVersion, c.apiVersions
}

// mapping finds the resource for a kind; an unknown kind refreshes discovery (at most every
// mapperResetInterval, or always with force: a CRD was just applied).
func (c *cluster) mapping(gvk schema.GroupVersionKind, force bool) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return m, err
	}
	c.mu.Lock()
	reset := force || time.Since(c.lastReset) > mapperResetInterval
	if reset {
		c.lastReset = time.Now()
	}
	c.mu.Unlock()
	if !reset {
		return nil, err
	}
	c.mapper.Reset()
	return c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func namespaced(m *meta.RESTMapping) bool {
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

func (c *cluster) resource(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if namespaced(m) {
		return c.dyn.Resource(m.Resource).Namespace(ns)
	}
	return c.dyn.Resource(m.Resource)
}

// ensureWatch starts the shared informer for a resource type (once) and waits, bounded, for
// its first list.
func (c *cluster) ensureWatch(ctx context.Context, gvr schema.GroupVersionResource) (*watch, error) {
	c.mu.Lock()
	w := c.watches[gvr]
	if w == nil {
		w = c.startWatch(gvr)
		c.watches[gvr] = w
	}
	c.mu.Unlock()
	select {
	case <-w.ready:
		return w, nil
	default:
	}
	w.errMu.Lock()
	failing := w.lastErr
	w.errMu.Unlock()
	if failing != nil {
		// It keeps retrying in the background; do not make every refresh wait for it.
		return nil, fmt.Errorf("watch %s: %w", gvr.String(), failing)
	}
	t := time.NewTimer(watchSyncTimeout)
	defer t.Stop()
	select {
	case <-w.ready:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		w.errMu.Lock()
		err := w.lastErr
		w.errMu.Unlock()
		if err == nil {
			err = errors.New("timed out")
		}
		return nil, fmt.Errorf("watch %s: %w", gvr.String(), err)
	}
}

// stripManagedFields keeps the caches lean: only ignoreDifferences.managedFieldsManagers
// read managed fields, from a GET of the object when its comparison is not cached.
func stripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}

func (c *cluster) startWatch(gvr schema.GroupVersionResource) *watch {
	inf := dynamicinformer.NewFilteredDynamicInformer(c.watchDyn, gvr, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = LabelApp }).Informer()
	w := &watch{gvr: gvr, inf: inf, ready: make(chan struct{})}
	_ = inf.SetTransform(stripManagedFields)
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		w.errMu.Lock()
		w.lastErr = err
		w.errMu.Unlock()
		c.log.Debug("watch error", "resource", gvr.String(), "err", err)
	})
	notify := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if v := u.GetLabels()[LabelApp]; v != "" {
				c.onEvent(v)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, n any) { notify(n) },
		DeleteFunc: notify,
	})
	go inf.RunWithContext(c.ctx)
	go func() {
		if cache.WaitForCacheSync(c.ctx.Done(), inf.HasSynced) {
			close(w.ready)
		}
	}()
	return w
}

// cached returns the live object from the informer of its type, if it has one.
func (c *cluster) cached(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, bool) {
	c.mu.Lock()
	w := c.watches[gvr]
	c.mu.Unlock()
	if w == nil {
		return nil, false
	}
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	obj, ok, err := w.inf.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// rvAtLeast reports whether resource version a is at or after b. Resource versions are
// opaque by contract but etcd-backed servers use increasing integers; anything else only
// compares equal.
func rvAtLeast(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x >= y
}

// temporary tells API errors worth retrying from permanent ones.
func temporaryAPIError(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsUnauthorized(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsRequestEntityTooLargeError(err), apierrors.IsUnsupportedMediaType(err), meta.IsNoMatchError(err):
		return false
	}
	// Server-side apply answers a patch that does not fit the schema with a 500.
	if msg := err.Error(); strings.Contains(msg, "failed to create typed patch object") || strings.Contains(msg, "failed to create typed live object") {
		return false
	}
	return true
}
