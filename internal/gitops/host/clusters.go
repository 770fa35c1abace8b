package host

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// ClusterCredential is a managed cluster's access: kept by the runtime only, never sent to
// the control plane.
type ClusterCredential struct {
	Name     string `json:"name"`
	Server   string `json:"server"`
	CAData   []byte `json:"caData,omitempty"`
	Token    string `json:"token"`
	Insecure bool   `json:"insecure,omitempty"` // skip TLS verification (tests, never advised)
	// Labels select the cluster in ApplicationSet clusters generators.
	Labels    map[string]string `json:"labels,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
}

// Config is the REST config the engine uses for the cluster.
func (c ClusterCredential) Config() *rest.Config {
	return &rest.Config{Host: c.Server, BearerToken: c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData, Insecure: c.Insecure && len(c.CAData) == 0}}
}

var clusterName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate checks a credential before anything is stored.
func (c ClusterCredential) Validate() error {
	switch {
	case !clusterName.MatchString(c.Name):
		return errdefs.Invalid("name", c.Name, "is not a cluster name (lowercase letters, digits and '-', at most 63)")
	case c.Name == engine.InClusterName:
		return errdefs.Invalid("name", c.Name, "names the runtime's own cluster; choose another name")
	case c.Token == "":
		return errdefs.Invalid("token", "", "is required")
	}
	u, err := url.Parse(c.Server)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Hostname() == "" || u.User != nil {
		return errdefs.Invalid("server", c.Server, "is not the cluster's https:// API server URL (https://HOST[:PORT], no credentials)")
	}
	if inClusterHosts[strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")] {
		return errdefs.Invalid("server", c.Server, "is the runtime's own cluster ("+engine.InClusterName+")")
	}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		for _, msg := range validation.IsQualifiedName(k) {
			return errdefs.Invalid("labels", k, "is not a label key: "+msg)
		}
		for _, msg := range validation.IsValidLabelValue(c.Labels[k]) {
			return errdefs.Invalid("labels["+k+"]", c.Labels[k], "is not a label value: "+msg)
		}
	}
	if len(c.CAData) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CAData) {
		return errdefs.Invalid("caData", "", "holds no PEM certificate: give the cluster's CA certificates in PEM")
	}
	return nil
}

// inClusterHosts are the names of the runtime's own API server, in any case, port or form.
var inClusterHosts = map[string]bool{"kubernetes": true, "kubernetes.default": true, "kubernetes.default.svc": true,
	"kubernetes.default.svc.cluster.local": true}

// ClusterStore keeps managed clusters' credentials where the runtime lives.
type ClusterStore interface {
	List(ctx context.Context) ([]ClusterCredential, error)
	Put(ctx context.Context, c ClusterCredential) error
	Delete(ctx context.Context, name string) error
}

// FileClusterStore keeps credentials as files (mode 0600) in a directory: for runtimes on a
// host (`freshet up`).
type FileClusterStore struct{ Dir string }

// List implements ClusterStore.
func (s FileClusterStore) List(context.Context) ([]ClusterCredential, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ClusterCredential
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.Dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var c ClusterCredential
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Put implements ClusterStore: written to a temp file and renamed, so a crash leaves the old
// file or the new one.
func (s FileClusterStore) Put(_ context.Context, c ClusterCredential) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(s.Dir, c.Name+".json"))
}

// Delete implements ClusterStore.
func (s FileClusterStore) Delete(_ context.Context, name string) error {
	err := os.Remove(filepath.Join(s.Dir, name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// SecretClusterStore keeps credentials as Secrets in the runtime's namespace of its own
// cluster (as Argo CD's cluster Secrets): for runtimes in a Pod.
type SecretClusterStore struct {
	Client    kubernetes.Interface
	Namespace string
}

// ClusterSecretLabel marks the Secrets of SecretClusterStore.
const ClusterSecretLabel = "freshet.dev/cluster"

func clusterSecretName(name string) string { return "freshet-cluster-" + name }

// List implements ClusterStore.
func (s SecretClusterStore) List(ctx context.Context) ([]ClusterCredential, error) {
	l, err := s.Client.CoreV1().Secrets(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ClusterSecretLabel})
	if err != nil {
		return nil, err
	}
	var out []ClusterCredential
	for _, sec := range l.Items {
		var c ClusterCredential
		if err := json.Unmarshal(sec.Data["cluster"], &c); err != nil {
			return nil, fmt.Errorf("cluster secret %s: %w", sec.Name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Put implements ClusterStore.
func (s SecretClusterStore) Put(ctx context.Context, c ClusterCredential) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: clusterSecretName(c.Name), Namespace: s.Namespace,
		Labels: map[string]string{ClusterSecretLabel: c.Name}}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"cluster": b}}
	_, err = s.Client.CoreV1().Secrets(s.Namespace).Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = s.Client.CoreV1().Secrets(s.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
	}
	return err
}

// Delete implements ClusterStore.
func (s SecretClusterStore) Delete(ctx context.Context, name string) error {
	err := s.Client.CoreV1().Secrets(s.Namespace).Delete(ctx, clusterSecretName(name), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// loadClusters registers the stored managed clusters with the engine.
func (h *Host) loadClusters(ctx context.Context) error {
	if h.opts.ClusterStore == nil {
		return nil
	}
	cs, err := h.opts.ClusterStore.List(ctx)
	if err != nil {
		return fmt.Errorf("managed clusters: %w", err)
	}
	for _, c := range cs {
		h.clusters.Add(c.Name, c.Server, h.clusterConfig(c))
		h.clusters.SetLabels(c.Name, c.Labels)
	}
	return nil
}

// Clusters lists the runtime's clusters (names and servers, no credentials).
func (h *Host) Clusters() []engine.ClusterRef { return h.clusters.List() }

// clusterConfig is c's REST config, connecting only where the runtime's policy allows.
func (h *Host) clusterConfig(c ClusterCredential) *rest.Config {
	cfg := c.Config()
	if h.opts.Policy != nil {
		cfg.Dial = h.opts.Policy.DialContext
	}
	return cfg
}

// clusterError describes a failed call to a cluster's API server with what this process knows
// (a status and its reason, a refused or failed connection), never the body of the answer:
// the server URL comes from a user and may name something that is not a cluster.
func clusterError(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return fmt.Sprintf("the API server answered HTTP %d (%s)", st.Status().Code, st.Status().Reason)
	}
	if d := netpolicy.Describe(err); d != "" {
		return d
	}
	return "the answer is not a Kubernetes API server's"
}

func withTimeout(cfg *rest.Config) *rest.Config {
	cfg.Timeout = 15 * time.Second
	return cfg
}

// ClusterProbeInterval is how often the runtime checks that it reaches each of its clusters.
var ClusterProbeInterval = 30 * time.Second

// ClusterState is a cluster with its health as the runtime last checked it ("healthy", or
// "unreachable: …"; "" before the first check).
type ClusterState struct {
	engine.ClusterRef
	Health string `json:"health,omitempty"`
}

// ClusterStates lists the runtime's clusters with their last checked health.
func (h *Host) ClusterStates() []ClusterState {
	refs := h.clusters.List()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ClusterState, 0, len(refs))
	for _, r := range refs {
		out = append(out, ClusterState{ClusterRef: r, Health: h.clusterHealth[r.Name]})
	}
	return out
}

// probeClusters asks each cluster's API server for its version every ClusterProbeInterval.
func (h *Host) probeClusters(ctx context.Context) {
	for {
		for _, r := range h.clusters.List() {
			health := "healthy"
			if err := h.probe(ctx, r); err != nil {
				health = "unreachable: " + err.Error()
				if len(health) > 200 {
					health = health[:200] + "…"
				}
			}
			h.mu.Lock()
			if h.clusterHealth == nil {
				h.clusterHealth = map[string]string{}
			}
			h.clusterHealth[r.Name] = health
			h.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(ClusterProbeInterval):
		}
	}
}

func (h *Host) probe(ctx context.Context, r engine.ClusterRef) error {
	cfg, err := h.clusters.Cluster(ctx, app.Destination{Name: r.Name})
	if err != nil {
		return err
	}
	cfg = withTimeout(cfg)
	cfg.Timeout = 5 * time.Second
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err = kc.Discovery().ServerVersion(); err != nil {
		return errors.New(clusterError(err))
	}
	return nil
}
