package workflows

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Ops are the operations on Workflows that `argo submit`, `stop`, `terminate`, `suspend`,
// `resume`, `retry` and `resubmit` do, acting through one identity's clients: the controller's
// own (Controller embeds its Ops), or another's — an Argo Events trigger acts as its Sensor's
// service account (NewOps with an impersonating config), so the API server checks what that
// account may do.
type Ops struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
	log  *slog.Logger
	now  func() time.Time
	// specOf reads a (Cluster)WorkflowTemplate's spec: from the controller's caches, or from
	// the API server.
	specOf func(ctx context.Context, ns, name string, clusterScope bool) (*WorkflowSpec, error)
}

// NewOps returns the operations acting with cfg's identity, without a controller: templates
// are read from the API server.
func NewOps(cfg *rest.Config, log *slog.Logger) (*Ops, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Ops{dyn: dyn, kube: kc, log: log, now: time.Now}
	o.specOf = func(ctx context.Context, ns, name string, cluster bool) (*WorkflowSpec, error) {
		t, err := o.getTemplate(ctx, ns, name, cluster)
		if err != nil {
			return nil, err
		}
		return &t.Spec, nil
	}
	return o, nil
}
