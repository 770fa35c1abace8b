// Package kubernetes is the executor that runs each step of a build as its own pod in a
// Kubernetes namespace, all pods of a build sharing one PersistentVolumeClaim as the workspace.
//
// Prepare creates the claim (named after the build, so Prepare is idempotent). Run creates a pod
// per step: the step's image and command, its environment (nothing of the runner's), the claim
// mounted at the workspace path, restartPolicy Never, an activeDeadlineSeconds backstop. With a
// ReadWriteOnce claim, a pod affinity keeps the running pods of a build on one node. The step's
// script and cf_export reach the pod through its own annotations, projected as files by a
// downwardAPI volume; cf_export is mounted on /usr/local/bin. Two containers of a small helper
// image go with the step: an init container that creates the export file and the working
// directory, and a native sidecar that prints the export file to its own log when the kubelet
// stops it after the step container exited, which is how the runner, which cannot read the
// volume, learns the step's exports. Output comes from the step container's log stream
// (follow), the exit code from its terminated state; a watch on the pod drives the rest. A
// timeout or a canceled context deletes the pod with the kill grace period. Cleanup deletes the
// build's pods and its claim by label. RoleYAML is the Role the runner's service account needs.
// See docs/executors.md.
package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Name is the kubernetes executor's name.
const Name = "kubernetes"

// Labels and annotations the executor puts on what it creates.
const (
	// LabelBuild holds the build ID (made a valid label value: see AnnotationBuildID) on every
	// pod and claim of a build. Cleanup selects by it.
	LabelBuild = "freshet.dev/build"
	// LabelStep holds the step's name (made a valid label value) on its pod.
	LabelStep = "freshet.dev/step"
	// LabelManagedBy is app.kubernetes.io/managed-by=freshet on everything the executor creates.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "freshet"
	// AnnotationBuildID and AnnotationStepName hold the build ID and step name as they are.
	AnnotationBuildID  = "freshet.dev/build-id"
	AnnotationStepName = "freshet.dev/step-name"
	// annotationScript and annotationCFExport carry the step's script and cf_export into the
	// pod (projected as files by a downwardAPI volume).
	annotationScript   = "freshet.dev/script"
	annotationCFExport = "freshet.dev/cf-export"
)

// reservedLabels and reservedAnnotations are the keys the executor sets itself: neither options
// nor builds may set them.
var (
	reservedLabels      = []string{LabelBuild, LabelStep, LabelManagedBy}
	reservedAnnotations = []string{AnnotationBuildID, AnnotationStepName, annotationScript, annotationCFExport}
)

// Bounds of API interactions.
const (
	// apiTimeout bounds one API call that must complete even when the step's context is done
	// (creating and deleting a pod).
	apiTimeout = 30 * time.Second
	// goneSlack is how long, beyond the kill grace period, a deleted pod may take to disappear.
	goneSlack = 30 * time.Second
	// claimNamePrefix starts every workspace claim's name.
	claimNamePrefix = "freshet-ws-"
)

// Kubernetes runs steps as pods. Create it with New.
type Kubernetes struct {
	opts      Options
	client    kubernetes.Interface
	namespace string

	mu          sync.Mutex
	exportsSeen map[string]string // claim name → the bad export lines last reported
	images      images            // what build steps made, for push steps
}

// Interface guard.
var _ executor.Executor = (*Kubernetes)(nil)

// New returns a kubernetes executor for the cluster opts name. It checks the options and builds
// the client; it does not contact the cluster.
func New(opts Options) (*Kubernetes, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	cfg, err := restConfig(opts)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return NewWithClient(client, opts)
}

// NewWithClient returns a kubernetes executor that uses client; opts' cluster fields are
// ignored.
func NewWithClient(client kubernetes.Interface, opts Options) (*Kubernetes, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &Kubernetes{opts: opts, client: client, namespace: opts.Namespace, exportsSeen: map[string]string{}}, nil
}

func restConfig(opts Options) (*rest.Config, error) {
	switch {
	case opts.RestConfig != nil:
		return rest.CopyConfig(opts.RestConfig), nil
	case opts.InCluster:
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: InCluster: %w", ErrInvalidOptions, err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.Kubeconfig != "" {
		if _, err := os.Stat(opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("%w: Kubeconfig = %q: %w", ErrInvalidOptions, opts.Kubeconfig, err)
		}
		rules.ExplicitPath = opts.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: opts.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: Kubeconfig = %q, Context = %q: %w", ErrInvalidOptions, opts.Kubeconfig, opts.Context, err)
	}
	return cfg, nil
}

// Name returns "kubernetes".
func (k *Kubernetes) Name() string { return Name }

// Namespace is the namespace the executor creates pods and claims in.
func (k *Kubernetes) Namespace() string { return k.namespace }

// ClaimName returns the name of the workspace claim of build id.
func ClaimName(buildID string) string {
	return claimNamePrefix + dnsLabel(buildID, 63-len(claimNamePrefix))
}

// BuildSelector returns the label selector of everything the executor creates for build id.
func BuildSelector(buildID string) string {
	return labels.SelectorFromSet(labels.Set{LabelBuild: labelValue(buildID), LabelManagedBy: managedBy}).String()
}

// Prepare creates the build's workspace claim, labelled with the build's labels and ID. It is
// idempotent: for a build whose claim exists it returns that workspace. The claim is empty; the
// export file is created by the first step's pod (nothing can write to a claim before a pod
// mounts it).
func (k *Kubernetes) Prepare(ctx context.Context, b executor.Build) (executor.Workspace, error) {
	if b.ID == "" {
		return executor.Workspace{}, fmt.Errorf("prepare workspace: %w", errdefs.Invalid("build.id", "", "is required"))
	}
	for key, v := range b.Labels {
		msgs := append(validation.IsQualifiedName(key), validation.IsValidLabelValue(v)...)
		if slices.Contains(reservedLabels, key) {
			msgs = append(msgs, "the key is reserved for the executor's own labels ("+strings.Join(reservedLabels, ", ")+")")
		}
		if len(msgs) > 0 {
			return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: %w", b.ID,
				errdefs.Invalid("build.labels["+key+"]", v, strings.Join(msgs, "; ")))
		}
	}
	ws := executor.Workspace{BuildID: b.ID, Path: k.opts.WorkspacePath, Handle: ClaimName(b.ID)}
	claims := k.client.CoreV1().PersistentVolumeClaims(k.namespace)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ws.Handle,
			Labels:      k.labels(b.Labels, b.ID),
			Annotations: map[string]string{AnnotationBuildID: b.ID},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{k.opts.AccessMode},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(k.opts.VolumeSize),
			}},
		},
	}
	if k.opts.StorageClass != "" {
		pvc.Spec.StorageClassName = &k.opts.StorageClass
	}
	_, err := claims.Create(ctx, pvc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := claims.Get(ctx, ws.Handle, metav1.GetOptions{})
		switch {
		case gerr != nil:
			err = gerr
		case existing.Annotations[AnnotationBuildID] != b.ID:
			return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: claim %s/%s belongs to build %q", b.ID, k.namespace, ws.Handle, existing.Annotations[AnnotationBuildID])
		case existing.DeletionTimestamp != nil:
			return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: claim %s/%s is being deleted (the build was cleaned up)", b.ID, k.namespace, ws.Handle)
		default:
			return ws, nil
		}
	}
	if err != nil {
		return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: create claim %s/%s: %w", b.ID, k.namespace, ws.Handle, err)
	}
	return ws, nil
}

// labels returns the labels of what the executor creates for build id: the configured labels,
// the build's, then the executor's own.
func (k *Kubernetes) labels(buildLabels map[string]string, id string) map[string]string {
	l := maps.Clone(k.opts.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, buildLabels)
	l[LabelBuild] = labelValue(id)
	l[LabelManagedBy] = managedBy
	return l
}

// claim returns ws's claim, or ErrNoWorkspace when it does not exist, is being deleted or was
// not made by this executor for ws's build.
func (k *Kubernetes) claim(ctx context.Context, ws executor.Workspace) (*corev1.PersistentVolumeClaim, error) {
	if ws.BuildID == "" || ws.Handle != ClaimName(ws.BuildID) || !path.IsAbs(ws.Path) || strings.ContainsRune(ws.Path, ':') ||
		path.Clean(ws.Path) == ScriptDir || strings.HasPrefix(path.Clean(ws.Path), ScriptDir+"/") {
		return nil, fmt.Errorf("workspace %q (path %q) of build %q: %w: not made by the kubernetes executor", ws.Handle, ws.Path, ws.BuildID, executor.ErrNoWorkspace)
	}
	pvc, err := k.client.CoreV1().PersistentVolumeClaims(k.namespace).Get(ctx, ws.Handle, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("claim %s/%s: %w", k.namespace, ws.Handle, executor.ErrNoWorkspace)
	case err != nil:
		return nil, fmt.Errorf("claim %s/%s: %w", k.namespace, ws.Handle, err)
	case pvc.DeletionTimestamp != nil:
		return nil, fmt.Errorf("claim %s/%s is being deleted: %w", k.namespace, ws.Handle, executor.ErrNoWorkspace)
	case pvc.Annotations[AnnotationBuildID] != ws.BuildID || pvc.Labels[LabelManagedBy] != managedBy:
		return nil, fmt.Errorf("claim %s/%s was not made for build %q: %w", k.namespace, ws.Handle, ws.BuildID, executor.ErrNoWorkspace)
	}
	return pvc, nil
}

// Cleanup deletes the build's pods (with the kill grace period: steps of a runner that crashed
// are stopped as a canceled step would be) and its claim, and waits until they are gone. A
// workspace already gone is not an error.
func (k *Kubernetes) Cleanup(ctx context.Context, ws executor.Workspace) error {
	if ws.BuildID == "" || ws.Handle != ClaimName(ws.BuildID) {
		return fmt.Errorf("clean up workspace %q of build %q: %w: not made by the kubernetes executor", ws.Handle, ws.BuildID, executor.ErrNoWorkspace)
	}
	sel := metav1.ListOptions{LabelSelector: BuildSelector(ws.BuildID)}
	pods := k.client.CoreV1().Pods(k.namespace)
	list, err := pods.List(ctx, sel)
	if err != nil {
		return fmt.Errorf("clean up build %s: list pods: %w", ws.BuildID, err)
	}
	grace := k.opts.graceSeconds()
	for _, p := range list.Items {
		if p.Annotations[AnnotationBuildID] != ws.BuildID {
			continue // another build whose ID maps to the same label value
		}
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("clean up build %s: delete pod %s: %w", ws.BuildID, p.Name, err)
		}
	}
	claims := k.client.CoreV1().PersistentVolumeClaims(k.namespace)
	pvc, err := claims.Get(ctx, ws.Handle, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("clean up build %s: claim %s: %w", ws.BuildID, ws.Handle, err)
	case pvc.Annotations[AnnotationBuildID] != ws.BuildID:
		return fmt.Errorf("clean up build %s: claim %s belongs to build %q: not deleted", ws.BuildID, ws.Handle, pvc.Annotations[AnnotationBuildID])
	default:
		err := claims.Delete(ctx, ws.Handle, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pvc.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("clean up build %s: delete claim %s: %w", ws.BuildID, ws.Handle, err)
		}
	}
	if err := k.waitGone(ctx, ws); err != nil {
		return fmt.Errorf("clean up build %s: %w", ws.BuildID, err)
	}
	k.mu.Lock()
	delete(k.exportsSeen, ws.Handle)
	k.mu.Unlock()
	k.images.forget(ws.Handle)
	return nil
}

// waitGone polls until neither a pod of ws's build nor its claim exists, or ctx is done. The
// claim goes once no pod uses it (its protection finalizer).
func (k *Kubernetes) waitGone(ctx context.Context, ws executor.Workspace) error {
	const interval = 100 * time.Millisecond
	for {
		var left []string
		list, err := k.client.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: BuildSelector(ws.BuildID)})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		for _, p := range list.Items {
			if p.Annotations[AnnotationBuildID] == ws.BuildID {
				left = append(left, "pod "+p.Name)
			}
		}
		pvc, err := k.client.CoreV1().PersistentVolumeClaims(k.namespace).Get(ctx, ws.Handle, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("get claim: %w", err)
		case pvc.Annotations[AnnotationBuildID] == ws.BuildID:
			left = append(left, "claim "+pvc.Name)
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there: %v: %w", left, context.Cause(ctx))
		case <-time.After(interval):
		}
	}
}
