package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// ErrNoCluster means the runtime has no cluster configured at all (`freshet up` without a
// kubeconfig): applications show a NoClusterConfigured condition.
var ErrNoCluster = &noClusterError{}

// noClusterError says what to do; it is errdefs.ErrUnavailable.
type noClusterError struct{}

func (*noClusterError) Error() string {
	return "no cluster configured: this runtime has no kubeconfig (freshet up: KUBECONFIG, ~/.kube/config or --kubeconfig; " +
		"freshet runtime: --kubeconfig, or run it in a cluster) and no managed cluster (freshet cluster add)"
}

func (*noClusterError) Unwrap() error { return errdefs.ErrUnavailable }

// InCluster names the runtime's own cluster, as in Argo CD.
const (
	InClusterName   = "in-cluster"
	InClusterServer = "https://kubernetes.default.svc"
)

// ClusterResolver gives the engine a REST config for an application's destination. Cluster
// credentials never leave the runtime: the resolver is the runtime's registry of clusters.
type ClusterResolver interface {
	// Cluster returns the config for dest (by Server or Name). It returns an error wrapping
	// ErrNoCluster when no cluster is configured, errdefs.ErrNotFound for an unknown one. The
	// engine keeps one connection per returned config Host.
	Cluster(ctx context.Context, dest app.Destination) (*rest.Config, error)
}

// Clusters is a ClusterResolver over a fixed set of registered clusters. It is safe for
// concurrent use.
type Clusters struct {
	mu       sync.RWMutex
	byName   map[string]*rest.Config
	byServer map[string]*rest.Config
	labels   map[string]map[string]string // by name
}

var _ ClusterResolver = (*Clusters)(nil)

// NewClusters returns an empty registry.
func NewClusters() *Clusters {
	return &Clusters{byName: map[string]*rest.Config{}, byServer: map[string]*rest.Config{}, labels: map[string]map[string]string{}}
}

// Add registers a cluster under a name and a server URL (either may be empty).
func (c *Clusters) Add(name, server string, cfg *rest.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name != "" {
		c.byName[name] = cfg
	}
	if server != "" {
		c.byServer[strings.TrimSuffix(server, "/")] = cfg
	}
}

// Remove unregisters the cluster of that name (and its server URL). It returns the removed
// config's Host ("" if there was none), for Engine.ForgetCluster.
func (c *Clusters) Remove(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := c.byName[name]
	if cfg == nil {
		return ""
	}
	delete(c.byName, name)
	delete(c.labels, name)
	for s, v := range c.byServer {
		if v == cfg {
			delete(c.byServer, s)
		}
	}
	return cfg.Host
}

// ClusterRef is a registered cluster's name, server URL and labels.
type ClusterRef struct {
	Name   string            `json:"name"`
	Server string            `json:"server"`
	Labels map[string]string `json:"labels,omitempty"`
}

// SetLabels sets a registered cluster's labels (the ApplicationSet clusters generator selects
// by them, as Argo CD's selects by its cluster secrets' labels).
func (c *Clusters) SetLabels(name string, labels map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(labels) == 0 {
		delete(c.labels, name)
		return
	}
	c.labels[name] = maps.Clone(labels)
}

// List returns the registered clusters by name, sorted.
func (c *Clusters) List() []ClusterRef {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]ClusterRef, 0, len(c.byName))
	for n, cfg := range c.byName {
		server := cfg.Host
		if n == InClusterName {
			server = InClusterServer
		}
		out = append(out, ClusterRef{Name: n, Server: server, Labels: maps.Clone(c.labels[n])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SetInCluster registers the runtime's own cluster as "in-cluster" and
// https://kubernetes.default.svc, and under its own host URL.
func (c *Clusters) SetInCluster(cfg *rest.Config) {
	c.Add(InClusterName, InClusterServer, cfg)
	c.Add("", cfg.Host, cfg)
}

// Cluster implements ClusterResolver.
func (c *Clusters) Cluster(_ context.Context, dest app.Destination) (*rest.Config, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.byName) == 0 && len(c.byServer) == 0 {
		return nil, ErrNoCluster
	}
	if dest.Name != "" {
		if cfg := c.byName[dest.Name]; cfg != nil {
			return rest.CopyConfig(cfg), nil
		}
		return nil, fmt.Errorf("destination name %q: no such cluster registered to this runtime (known: %s): %w", dest.Name, keys(c.byName), errdefs.ErrNotFound)
	}
	if cfg := c.byServer[strings.TrimSuffix(dest.Server, "/")]; cfg != nil {
		return rest.CopyConfig(cfg), nil
	}
	return nil, fmt.Errorf("destination server %q: no such cluster registered to this runtime (known: %s): %w", dest.Server, keys(c.byServer), errdefs.ErrNotFound)
}

func keys(m map[string]*rest.Config) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func isNoCluster(err error) bool { return errors.Is(err, ErrNoCluster) }
