// Package hostedkube places the platform's hosted runtimes on a platform-managed Kubernetes
// cluster. Each hosted runtime gets a namespace of its own (prefix + its runtime ID) holding
// what charts/freshet-runtime renders for it — the same chart, through the same code
// (manifests.Objects), that `freshet runtime install` applies — with a hosted overlay: no
// ClusterRole or ClusterRoleBinding (a hosted runtime has no rights on the platform's cluster:
// it deploys to its customer's clusters only), no service account token in the pod, `--hosted`
// on the runtime's command line, every object labelled with the account and runtime IDs, and
// the token's rotation time annotated on the pod template, so a rotation restarts the
// Deployment. The token is in the chart's Secret only; the Deployment mounts it as a file.
//
// Reconcile makes the cluster match the stored hosted runtimes: it applies (server-side apply)
// the objects of each one missing or out of date, and deletes the namespaces of runtimes no
// longer stored (deleted, or their account deleted).
package hostedkube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
)

// Names the provisioner gives and looks for.
const (
	// FieldManager is the server-side apply field manager of the provisioner.
	FieldManager = "freshet-hosted-runtimes"
	// DefaultNamespacePrefix starts the namespace of each hosted runtime.
	DefaultNamespacePrefix = "freshet-hosted-"
	// LabelHosted is "true" on every object the provisioner owns.
	LabelHosted = "freshet.dev/hosted-runtime"
	// LabelRuntimeID and LabelAccountID name the runtime and its account on every object.
	LabelRuntimeID = "freshet.dev/runtime-id"
	LabelAccountID = "freshet.dev/account-id"
	// AnnotationTokenUpdated is when the runtime's token was last set (its creation or its last
	// rotation), on the Namespace, the Secret and the Deployment's pod template.
	AnnotationTokenUpdated = "freshet.dev/token-updated"
	// HostedFlag is the runtime's command-line flag for a hosted runtime (agent.Options.Hosted).
	HostedFlag = "--hosted"
	// DeploymentName and SecretName are the chart's names for the runtime's Deployment and
	// token Secret.
	DeploymentName = "freshet-runtime"
	SecretName     = manifests.TokenSecretName
)

// Options configure the provisioner.
type Options struct {
	// NamespacePrefix starts each hosted runtime's namespace (default DefaultNamespacePrefix).
	NamespacePrefix string
	// Image is the freshet image the runtimes run (default manifests.DefaultImage at Version).
	Image   string
	Version string
	// Server is the control plane URL the runtimes dial from the cluster.
	Server string
}

// Validate fills the defaults and names the first bad option.
func (o *Options) Validate() error {
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = DefaultNamespacePrefix
	}
	if !strings.HasPrefix(o.Server, "http://") && !strings.HasPrefix(o.Server, "https://") {
		return errdefs.Invalid("hosted-runtimes-server", o.Server, "is not the http(s) URL runtimes on the cluster dial the control plane at")
	}
	// The longest namespace: the prefix and a runtime ID (26 characters after its prefix).
	if len(o.NamespacePrefix) > 30 || strings.Trim(strings.ToLower(o.NamespacePrefix), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
		!strings.HasSuffix(o.NamespacePrefix, "-") || strings.HasPrefix(o.NamespacePrefix, "-") || strings.ToLower(o.NamespacePrefix) != o.NamespacePrefix {
		return errdefs.Invalid("hosted-runtimes-namespace-prefix", o.NamespacePrefix, "is not a namespace prefix: up to 30 lowercase letters, digits and '-', ending in '-'")
	}
	return nil
}

// RESTConfig returns the cluster's client configuration: from kubeconfig, or in-cluster when it
// is empty (the control plane runs on the platform's cluster).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("hosted-runtimes-kubeconfig: not given, and not running in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("hosted-runtimes-kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// Cluster is the platform-managed cluster hosted runtimes are placed on.
type Cluster struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	opts Options
}

// New returns the cluster cfg reaches, with o validated.
func New(cfg *rest.Config, o Options) (*Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{kube: kube, dyn: dyn, opts: o}, nil
}

// Namespace is the namespace of hosted runtime runtimeID.
func (c *Cluster) Namespace(runtimeID string) string {
	return c.opts.NamespacePrefix + strings.ReplaceAll(strings.ToLower(runtimeID), "_", "-")
}

// TokenUpdated is the value of AnnotationTokenUpdated for a credential.
func TokenUpdated(cr runtimes.HostedCredential) string {
	return cr.UpdatedAt.UTC().Format(time.RFC3339Nano)
}

// kinds maps the kinds the runtime chart renders in tunnel mode, its cluster-wide RBAC left
// out, to their resources.
var kinds = map[string]schema.GroupVersionResource{
	"Namespace":      {Version: "v1", Resource: "namespaces"},
	"ServiceAccount": {Version: "v1", Resource: "serviceaccounts"},
	"Secret":         {Version: "v1", Resource: "secrets"},
	"Service":        {Version: "v1", Resource: "services"},
	"Deployment":     {Group: "apps", Version: "v1", Resource: "deployments"},
}

// left out of a hosted runtime: rights on the platform's cluster, and an ingress (hosted
// runtimes are reached through the tunnel).
var leftOut = []string{"ClusterRole", "ClusterRoleBinding", "Ingress"}

// Objects renders the objects of hosted runtime cr: the runtime chart for it, with the hosted
// overlay (see the package comment).
func (c *Cluster) Objects(cr runtimes.HostedCredential) ([]*unstructured.Unstructured, error) {
	ns := c.Namespace(cr.RuntimeID)
	objs, err := manifests.Objects(manifests.Options{Name: cr.Name, Namespace: ns, Image: c.opts.Image, Version: c.opts.Version,
		Server: c.opts.Server, Token: cr.Token, AccessMode: runtimes.AccessTunnel, RuntimeID: cr.RuntimeID})
	if err != nil {
		return nil, err
	}
	updated := TokenUpdated(cr)
	var out []*unstructured.Unstructured
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: toJSONMap(o)}
		kind := u.GetKind()
		if slices.Contains(leftOut, kind) {
			continue
		}
		if _, ok := kinds[kind]; !ok {
			return nil, fmt.Errorf("the runtime chart renders a %s, which the hosted-runtime provisioner does not place", kind)
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelHosted], labels[LabelRuntimeID], labels[LabelAccountID] = "true", cr.RuntimeID, cr.AccountID
		u.SetLabels(labels)
		switch kind {
		case "Namespace", "Secret":
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[AnnotationTokenUpdated] = updated
			u.SetAnnotations(ann)
		case "Deployment":
			if err := hostedPod(u, updated); err != nil {
				return nil, err
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// hostedPod adds the hosted overlay to the runtime's Deployment: the token's rotation time on
// its pod template, no service account token, and --hosted on the runtime's command line.
func hostedPod(d *unstructured.Unstructured, updated string) error {
	ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationTokenUpdated] = updated
	if err := unstructured.SetNestedStringMap(d.Object, ann, "spec", "template", "metadata", "annotations"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(d.Object, false, "spec", "template", "spec", "automountServiceAccountToken"); err != nil {
		return err
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return errors.New("the runtime chart's Deployment has no container")
	}
	c0, _ := cs[0].(map[string]any)
	args, _ := c0["args"].([]any)
	c0["args"] = append(args, HostedFlag)
	return unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
}

// Apply server-side applies hosted runtime cr's objects, in the chart's order.
func (c *Cluster) Apply(ctx context.Context, cr runtimes.HostedCredential) error {
	objs, err := c.Objects(cr)
	if err != nil {
		return err
	}
	for _, u := range objs {
		gvr := kinds[u.GetKind()]
		var ri dynamic.ResourceInterface = c.dyn.Resource(gvr)
		if u.GetKind() != "Namespace" {
			ri = c.dyn.Resource(gvr).Namespace(u.GetNamespace())
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// Remove deletes hosted runtime runtimeID's namespace, and with it everything in it. A
// namespace already gone is fine.
func (c *Cluster) Remove(ctx context.Context, runtimeID string) error {
	return c.removeNamespace(ctx, c.Namespace(runtimeID))
}

func (c *Cluster) removeNamespace(ctx context.Context, ns string) error {
	bg := metav1.DeletePropagationBackground
	err := c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	return nil
}

// Result is what one Reconcile did.
type Result struct {
	Applied []string // runtime IDs whose objects were applied
	Removed []string // namespaces deleted: their runtime is no longer stored
	// Failed are the runtimes whose objects could not be applied, with why.
	Failed map[string]error
}

// Reconcile makes the cluster match creds, the stored hosted runtimes: each one's objects are
// applied when its namespace, Secret or Deployment is missing or its token changed since they
// were applied; a namespace of the provisioner's whose runtime is not in creds is deleted. An
// error reading the cluster stops it before any change (a temporary failure: try again).
func (c *Cluster) Reconcile(ctx context.Context, creds []runtimes.HostedCredential) (Result, error) {
	res := Result{Failed: map[string]error{}}
	sel := metav1.ListOptions{LabelSelector: LabelHosted + "=true"}
	nss, err := c.kube.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return res, fmt.Errorf("list the hosted runtimes' namespaces: %w", err)
	}
	secrets, err := c.kube.CoreV1().Secrets("").List(ctx, sel)
	if err != nil {
		return res, fmt.Errorf("list the hosted runtimes' secrets: %w", err)
	}
	deps, err := c.kube.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		return res, fmt.Errorf("list the hosted runtimes' deployments: %w", err)
	}
	nsUpdated := map[string]string{}
	terminating := map[string]bool{}
	for _, ns := range nss.Items {
		nsUpdated[ns.Name] = ns.Annotations[AnnotationTokenUpdated]
		terminating[ns.Name] = ns.DeletionTimestamp != nil
	}
	secretUpdated := map[string]string{}
	for _, s := range secrets.Items {
		if s.Name == SecretName {
			secretUpdated[s.Namespace] = s.Annotations[AnnotationTokenUpdated]
		}
	}
	depUpdated := map[string]string{}
	for _, d := range deps.Items {
		if d.Name == DeploymentName {
			depUpdated[d.Namespace] = d.Spec.Template.Annotations[AnnotationTokenUpdated]
		}
	}
	want := map[string]bool{}
	for _, cr := range creds {
		ns := c.Namespace(cr.RuntimeID)
		want[ns] = true
		u := TokenUpdated(cr)
		if nsUpdated[ns] == u && secretUpdated[ns] == u && depUpdated[ns] == u {
			continue
		}
		if terminating[ns] {
			res.Failed[cr.RuntimeID] = fmt.Errorf("namespace %s is still being deleted: placed again once it is gone", ns)
			continue
		}
		if err := c.Apply(ctx, cr); err != nil {
			res.Failed[cr.RuntimeID] = err
			continue
		}
		res.Applied = append(res.Applied, cr.RuntimeID)
	}
	for _, ns := range nss.Items {
		if want[ns.Name] || ns.DeletionTimestamp != nil || !strings.HasPrefix(ns.Name, c.opts.NamespacePrefix) {
			continue
		}
		if err := c.removeNamespace(ctx, ns.Name); err != nil {
			return res, err
		}
		res.Removed = append(res.Removed, ns.Name)
	}
	return res, nil
}

// toJSONMap round-trips an object through JSON so numbers are what unstructured expects.
func toJSONMap(o manifests.Object) map[string]any {
	b, _ := yaml.Marshal(o)
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	return m
}
