// Package hostedkube places the platform's hosted runtimes on a platform-managed Kubernetes
// cluster. Each hosted runtime gets a namespace of its own (prefix + its runtime ID) holding
// what charts/freshet-runtime renders for it — the same chart, through the same code
// (manifests.Objects), that `freshet runtime install` applies — with a hosted overlay: no
// ClusterRole or ClusterRoleBinding (a hosted runtime has no rights on the platform's cluster:
// it deploys to its customer's clusters only), no service account token in the pod, `--hosted`
// on the runtime's command line, every object labelled with the account and runtime IDs, and
// the token's rotation time annotated on the pod template, so a rotation restarts the
// Deployment, the operator's placement (node selector, tolerations) on the pod, and a
// NetworkPolicy that denies all ingress to the namespace's pods and allows all egress (the
// runtime only dials out: to the control plane, its git repositories and registries, and its
// customer's clusters). The token is in the chart's Secret only; the Deployment mounts it as a
// file. The runtime's data dir (its local installation repository, the clusters it deploys to,
// the GitOps engine's cache) is on the chart's data claim (persistence), of the operator's size
// and storage class, so it outlives the pod; the claim is created once, grown to a larger size
// where Kubernetes allows it (bound, of a class allowing volume expansion; never shrunk, never
// replaced), and goes with the namespace. With the storage size manifests.NoStorage there is no claim: the data dir is the
// pod's emptyDir, as before the chart had persistence (a claim made earlier is left, unused,
// until the namespace goes).
//
// Reconcile makes the cluster match the stored hosted runtimes: it applies (server-side apply)
// the objects of each one missing or out of date (an older token, or placed with other options),
// and deletes the namespaces of runtimes no longer stored (deleted, or their account deleted).
package hostedkube

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
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
	// AnnotationOptions, on the Deployment, is a digest of the provisioner's options the objects
	// were rendered with (image, version, server URL, placement, storage size and class): a
	// runtime placed with other options is applied again (its data claim only ever grown).
	AnnotationOptions = "freshet.dev/hosted-options"
	// HostedFlag is the runtime's command-line flag for a hosted runtime (agent.Options.Hosted).
	HostedFlag = "--hosted"
	// DeploymentName and SecretName are the chart's names for the runtime's Deployment and
	// token Secret.
	DeploymentName = "freshet-runtime"
	SecretName     = manifests.TokenSecretName
	// NetworkPolicyName is the hosted runtime's NetworkPolicy: no ingress, any egress.
	NetworkPolicyName = "freshet-hosted-runtime"
	// ClaimName is the chart's PersistentVolumeClaim holding the runtime's data dir.
	ClaimName = manifests.DataClaimName
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
	// NodeSelector and Tolerations place the runtimes' pods (--hosted-runtimes-node-selector,
	// --hosted-runtimes-toleration).
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// StorageSize and StorageClass are the runtimes' data claims' (--hosted-runtimes-storage-size,
	// default manifests.DefaultStorageSize, manifests.NoStorage for none: the runtimes' data
	// dirs are their pods' emptyDirs; --hosted-runtimes-storage-class, empty: the cluster's
	// default class).
	StorageSize  string
	StorageClass string
	// Net is the control plane's policy for tenants' URLs (--allow-file-repos,
	// --allow-private-networks, --git-provider-hosts): each runtime is started with it, so what
	// its tenant may make it reach in its pod is what the control plane allows (the file://
	// directories are paths in the pod, which has none of the control plane's).
	Net netpolicy.Options
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
	for _, k := range slices.Sorted(maps.Keys(o.NodeSelector)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return errdefs.Invalid("hosted-runtimes-node-selector", k+"="+o.NodeSelector[k], "is not a node label: the key "+strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(o.NodeSelector[k]); len(errs) > 0 {
			return errdefs.Invalid("hosted-runtimes-node-selector", k+"="+o.NodeSelector[k], "is not a node label: the value "+strings.Join(errs, "; "))
		}
	}
	for _, t := range o.Tolerations {
		if err := validToleration(t); err != nil {
			return err
		}
	}
	if err := o.Net.Validate(); err != nil {
		return err
	}
	p, err := manifests.ParsePersistence(o.StorageSize, o.StorageClass, "hosted-runtimes-storage-size", "hosted-runtimes-storage-class")
	if err != nil {
		return err
	}
	o.StorageSize = manifests.NoStorage
	if p != nil {
		o.StorageSize = p.Size
	}
	return nil
}

// persistence is the runtimes' data claim (o validated), nil with StorageSize
// manifests.NoStorage: the data dir is then the pod's emptyDir.
func (o Options) persistence() *manifests.Persistence {
	if o.StorageSize == manifests.NoStorage {
		return nil
	}
	return &manifests.Persistence{Size: o.StorageSize, StorageClass: o.StorageClass}
}

// policyArgs are the runtime's flags of the URL policy o.Net, each given, even when empty (a
// runtime with --hosted takes a flag not given as the control plane's default, not as o's).
func (o Options) policyArgs() []string {
	return []string{
		"--" + netpolicy.FlagFileRepos + "=" + csvValue(o.Net.FileRepoDirs),
		"--" + netpolicy.FlagPrivateNetworks + "=" + csvValue(o.Net.PrivateNetworks),
		"--" + netpolicy.FlagProviderHosts + "=" + csvValue(o.Net.ProviderHosts),
	}
}

// csvValue is vs as a list flag's value: comma separated, quoted where a value holds a comma or
// a quote, as the flag reads it back.
func csvValue(vs []string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(vs) // a strings.Builder does not fail
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// tolerationSyntax is what --hosted-runtimes-toleration takes.
const tolerationSyntax = "want KEY[=VALUE]:EFFECT (no VALUE: any value), EFFECT one of NoSchedule, PreferNoSchedule, NoExecute"

// ParseToleration parses a --hosted-runtimes-toleration value, KEY[=VALUE]:EFFECT, the syntax of
// the kubernetes executor's --kube-toleration.
func ParseToleration(v string) (corev1.Toleration, error) {
	kv, effect, ok := strings.Cut(v, ":")
	if !ok {
		return corev1.Toleration{}, errdefs.Invalid("hosted-runtimes-toleration", v, tolerationSyntax)
	}
	key, value, hasValue := strings.Cut(kv, "=")
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffect(effect)}
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if err := validToleration(t); err != nil {
		return corev1.Toleration{}, errdefs.Invalid("hosted-runtimes-toleration", v, tolerationSyntax)
	}
	return t, nil
}

func validToleration(t corev1.Toleration) error {
	s := t.Key
	if t.Operator != corev1.TolerationOpExists {
		s += "=" + t.Value
	}
	s += ":" + string(t.Effect)
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return errdefs.Invalid("hosted-runtimes-toleration", s, "has no effect: "+tolerationSyntax)
	}
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return errdefs.Invalid("hosted-runtimes-toleration", s, "is not a taint: the key "+strings.Join(errs, "; "))
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return errdefs.Invalid("hosted-runtimes-toleration", s, "has a value and tolerates any: "+tolerationSyntax)
		}
	case corev1.TolerationOpEqual:
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return errdefs.Invalid("hosted-runtimes-toleration", s, "is not a taint: the value "+strings.Join(errs, "; "))
		}
	default:
		return errdefs.Invalid("hosted-runtimes-toleration", s, tolerationSyntax)
	}
	return nil
}

// digest is AnnotationOptions: what of the options the rendered objects depend on.
func (o Options) digest() string {
	b, _ := json.Marshal(struct {
		Image, Version, Server     string
		NodeSelector               map[string]string
		Tolerations                []corev1.Toleration
		StorageSize, StorageClass  string
		FileRepos, PrivateNetworks []string
		ProviderHosts              []string
	}{o.Image, o.Version, o.Server, o.NodeSelector, o.Tolerations, o.StorageSize, o.StorageClass,
		o.Net.FileRepoDirs, o.Net.PrivateNetworks, o.Net.ProviderHosts})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
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

// StorageSize is the size the runtimes' data claims are given and grown to (manifests.NoStorage:
// none).
func (c *Cluster) StorageSize() string { return c.opts.StorageSize }

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
	"Namespace":             {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":        {Version: "v1", Resource: "serviceaccounts"},
	"Secret":                {Version: "v1", Resource: "secrets"},
	"Service":               {Version: "v1", Resource: "services"},
	"Deployment":            {Group: "apps", Version: "v1", Resource: "deployments"},
	"NetworkPolicy":         {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	"PersistentVolumeClaim": {Version: "v1", Resource: "persistentvolumeclaims"},
}

// left out of a hosted runtime: rights on the platform's cluster, and an ingress (hosted
// runtimes are reached through the tunnel).
var leftOut = []string{"ClusterRole", "ClusterRoleBinding", "Ingress"}

// Objects renders the objects of hosted runtime cr: the runtime chart for it, with the hosted
// overlay (see the package comment). The NetworkPolicy comes right after the Namespace, so the
// runtime's pod never runs without it.
func (c *Cluster) Objects(cr runtimes.HostedCredential) ([]*unstructured.Unstructured, error) {
	ns := c.Namespace(cr.RuntimeID)
	objs, err := manifests.Objects(manifests.Options{Name: cr.Name, Namespace: ns, Image: c.opts.Image, Version: c.opts.Version,
		Server: c.opts.Server, Token: cr.Token, AccessMode: runtimes.AccessTunnel, RuntimeID: cr.RuntimeID,
		Persistence: c.opts.persistence()})
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
			if err := c.hostedPod(u, updated); err != nil {
				return nil, err
			}
		}
		out = append(out, u)
		if kind == "Namespace" {
			out = append(out, networkPolicy(ns, labels))
		}
	}
	return out, nil
}

// networkPolicy selects every pod of the namespace: no ingress (the runtime is reached through
// the tunnel it dials; the kubelet's probes are not subject to NetworkPolicy), any egress (it
// dials the control plane, its customers' git repositories, registries and clusters, wherever
// they are). Whether it is enforced is up to the cluster's network plugin.
func networkPolicy(ns string, labels map[string]string) *unstructured.Unstructured {
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "NetworkPolicy",
		"metadata":   map[string]any{"name": NetworkPolicyName, "namespace": ns, "labels": l},
		"spec": map[string]any{
			"podSelector": map[string]any{},
			"policyTypes": []any{"Ingress", "Egress"},
			"egress":      []any{map[string]any{}},
		},
	}}
}

// hostedPod adds the hosted overlay to the runtime's Deployment: the options' digest on it, the
// token's rotation time on its pod template, no service account token, the operator's
// placement, and --hosted on the runtime's command line.
func (c *Cluster) hostedPod(d *unstructured.Unstructured, updated string) error {
	dann := d.GetAnnotations()
	if dann == nil {
		dann = map[string]string{}
	}
	dann[AnnotationOptions] = c.opts.digest()
	d.SetAnnotations(dann)
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
	if len(c.opts.NodeSelector) > 0 {
		if err := unstructured.SetNestedStringMap(d.Object, c.opts.NodeSelector, "spec", "template", "spec", "nodeSelector"); err != nil {
			return err
		}
	}
	if len(c.opts.Tolerations) > 0 {
		ts := make([]any, len(c.opts.Tolerations))
		for i := range c.opts.Tolerations {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c.opts.Tolerations[i])
			if err != nil {
				return err
			}
			ts[i] = m
		}
		if err := unstructured.SetNestedSlice(d.Object, ts, "spec", "template", "spec", "tolerations"); err != nil {
			return err
		}
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return errors.New("the runtime chart's Deployment has no container")
	}
	c0, _ := cs[0].(map[string]any)
	args, _ := c0["args"].([]any)
	args = append(args, HostedFlag)
	for _, a := range c.opts.policyArgs() {
		args = append(args, a)
	}
	c0["args"] = args
	return unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
}

// Apply server-side applies hosted runtime cr's objects, in the chart's order, but for its
// data claim: that one is created when missing and left as it is otherwise (a claim's storage
// class cannot change: a control plane started with another --hosted-runtimes-storage-class
// gives it to new runtimes; a larger size is Reconcile's to grow to).
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
		if u.GetKind() == "PersistentVolumeClaim" {
			_, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err == nil {
				continue
			}
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("get %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			if _, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			continue
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
	// Resized are the runtime IDs whose data claims were asked to grow to the storage size.
	Resized []string
	// NotGrown says, by runtime ID, why a data claim smaller than the storage size keeps its
	// size for now: it is not bound to a volume yet, it has no storage class, or its class does
	// not allow volume expansion (or the API server refused the request). The runtime runs on
	// it all the same; it is tried again each pass, and grows once what stops it is fixed.
	NotGrown map[string]string
	// Kept says, by runtime ID, that a data claim larger than the storage size keeps its size:
	// a claim cannot shrink, and its data is never deleted to make a smaller one.
	Kept map[string]string
}

// Reconcile makes the cluster match creds, the stored hosted runtimes: each one's objects are
// applied when its namespace, NetworkPolicy, Secret, data claim (unless the storage size is
// manifests.NoStorage) or Deployment is missing, its token changed since they were applied, or
// they were applied with other options (image, version, server URL, placement, storage size and
// class, URL policy); a data claim smaller than the storage size is grown where Kubernetes
// allows it, and otherwise noted (resize); a namespace of the provisioner's whose runtime is not
// in creds is deleted. An error reading the cluster stops it before any change (a temporary
// failure: try again).
func (c *Cluster) Reconcile(ctx context.Context, creds []runtimes.HostedCredential) (Result, error) {
	res := Result{Failed: map[string]error{}, NotGrown: map[string]string{}, Kept: map[string]string{}}
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
	nps, err := c.kube.NetworkingV1().NetworkPolicies("").List(ctx, sel)
	if err != nil {
		return res, fmt.Errorf("list the hosted runtimes' network policies: %w", err)
	}
	pvcs, err := c.kube.CoreV1().PersistentVolumeClaims("").List(ctx, sel)
	if err != nil {
		return res, fmt.Errorf("list the hosted runtimes' volume claims: %w", err)
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
	depUpdated, depOptions := map[string]string{}, map[string]string{}
	for _, d := range deps.Items {
		if d.Name == DeploymentName {
			depUpdated[d.Namespace] = d.Spec.Template.Annotations[AnnotationTokenUpdated]
			depOptions[d.Namespace] = d.Annotations[AnnotationOptions]
		}
	}
	hasPolicy := map[string]bool{}
	for _, np := range nps.Items {
		if np.Name == NetworkPolicyName {
			hasPolicy[np.Namespace] = true
		}
	}
	hasClaim := map[string]bool{}
	claimOf := map[string]*corev1.PersistentVolumeClaim{}
	for i, pvc := range pvcs.Items {
		if pvc.Name == ClaimName {
			hasClaim[pvc.Namespace] = true
			claimOf[pvc.Namespace] = &pvcs.Items[i]
		}
	}
	classes := map[string]classAnswer{}
	digest, claims := c.opts.digest(), c.opts.persistence() != nil
	want := map[string]bool{}
	for _, cr := range creds {
		ns := c.Namespace(cr.RuntimeID)
		want[ns] = true
		u := TokenUpdated(cr)
		if claims && claimOf[ns] != nil && !terminating[ns] {
			if err := c.resize(ctx, cr.RuntimeID, claimOf[ns], classes, &res); err != nil {
				res.Failed[cr.RuntimeID] = err
				continue
			}
		}
		if nsUpdated[ns] == u && secretUpdated[ns] == u && depUpdated[ns] == u && depOptions[ns] == digest && hasPolicy[ns] && (hasClaim[ns] || !claims) {
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

// classAnswer is what the cluster said of a storage class: it, or why it could not be read.
type classAnswer struct {
	sc  *storagev1.StorageClass
	err error
}

// resize grows hosted runtime runtimeID's data claim pvc to the storage size where Kubernetes
// allows it: a bound claim of a storage class with allowVolumeExpansion (the API server refuses
// any other, and the claim's volume is grown by the class's driver). A claim that cannot grow
// yet is noted in res.NotGrown, one larger than the size in res.Kept; neither is a failure (the
// runtime runs on the claim it has) and nothing is deleted. The error is the cluster's, when
// it could not be asked (a temporary failure: the next pass tries again).
func (c *Cluster) resize(ctx context.Context, runtimeID string, pvc *corev1.PersistentVolumeClaim, classes map[string]classAnswer, res *Result) error {
	want, err := resource.ParseQuantity(c.opts.StorageSize)
	if err != nil {
		return err // validated: not reached
	}
	have := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	claim := pvc.Namespace + "/" + pvc.Name
	switch want.Cmp(have) {
	case 0:
		return nil
	case -1:
		res.Kept[runtimeID] = fmt.Sprintf("data claim %s requests %s, more than --hosted-runtimes-storage-size %s: a claim cannot shrink, so it keeps its size (and its data)",
			claim, have.String(), c.opts.StorageSize)
		return nil
	}
	notGrown := func(why string) error {
		res.NotGrown[runtimeID] = fmt.Sprintf("data claim %s stays %s, not --hosted-runtimes-storage-size %s: %s", claim, have.String(), c.opts.StorageSize, why)
		return nil
	}
	if phase := pvc.Status.Phase; phase != corev1.ClaimBound {
		if phase == "" {
			phase = corev1.ClaimPending
		}
		return notGrown(fmt.Sprintf("it is %s, not bound to a volume (only a bound claim can grow); it grows once it is bound", phase))
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class == "" {
		return notGrown("it has no storage class, and only a claim whose class allows volume expansion can grow")
	}
	a, ok := classes[class]
	if !ok {
		a.sc, a.err = c.kube.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{})
		classes[class] = a
	}
	switch {
	case apierrors.IsNotFound(a.err):
		return notGrown(fmt.Sprintf("its storage class %s does not exist, and only a class that allows volume expansion can grow it", class))
	case apierrors.IsForbidden(a.err):
		return notGrown(fmt.Sprintf("its storage class %s cannot be read (the provisioner needs get on storageclasses): %v", class, a.err))
	case a.err != nil:
		return fmt.Errorf("get storage class %s of data claim %s: %w", class, claim, a.err)
	case a.sc.AllowVolumeExpansion == nil || !*a.sc.AllowVolumeExpansion:
		return notGrown(fmt.Sprintf("its storage class %s does not allow volume expansion (allowVolumeExpansion)", class))
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": want.String()}}}})
	_, err = c.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		return notGrown("the cluster refuses: " + err.Error())
	case err != nil:
		return fmt.Errorf("grow data claim %s to %s: %w", claim, want.String(), err)
	}
	res.Resized = append(res.Resized, runtimeID)
	return nil
}

// toJSONMap round-trips an object through JSON so numbers are what unstructured expects.
func toJSONMap(o manifests.Object) map[string]any {
	b, _ := yaml.Marshal(o)
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	return m
}
