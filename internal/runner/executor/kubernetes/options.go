package kubernetes

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("invalid kubernetes executor options")

// Defaults of Options.
const (
	// DefaultNamespace is where builds run when Options.Namespace is empty and the runner is not
	// in a cluster (in a cluster: the runner's own namespace).
	DefaultNamespace = "freshet-builds"
	// DefaultWorkspacePath is where every step sees the build's volume (CF_VOLUME_PATH), as on
	// Codefresh, so that pipelines that name the path keep working.
	DefaultWorkspacePath = "/codefresh/volume"
	// DefaultImage runs a step that names no image.
	DefaultImage = "alpine:3"
	// DefaultHelperImage runs the executor's two small helper containers in every step pod (see
	// the package comment). It needs a POSIX sh, touch, mkdir, cat and sleep.
	DefaultHelperImage = "busybox:1.37"
	// DefaultBuilderImage runs build and push steps (buildah; see Options.BuilderImage).
	DefaultBuilderImage = "quay.io/buildah/stable:latest"
	// DefaultVolumeSize is the size the workspace volume claim requests.
	DefaultVolumeSize = "10Gi"
	// DefaultStartTimeout bounds how long a step's pod may take to start its step container
	// (scheduling, volume attachment, image pulls).
	DefaultStartTimeout = 5 * time.Minute
)

// inClusterNamespaceFile holds the namespace of a pod's service account.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options configures the kubernetes executor. The zero value is valid: the kubeconfig of the
// default loading rules (KUBECONFIG, ~/.kube/config), namespace DefaultNamespace, the cluster's
// default storage class.
type Options struct {
	// RestConfig is the cluster to use; it takes precedence over InCluster and Kubeconfig.
	RestConfig *rest.Config
	// InCluster uses the service account of the pod the runner runs in.
	InCluster bool
	// Kubeconfig is the path of a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
	// and Context the context in it (default: its current context).
	Kubeconfig, Context string
	// Namespace is where the executor creates pods and volume claims (default: the runner's own
	// namespace when InCluster, else DefaultNamespace). It must exist.
	Namespace string

	// WorkspacePath is where every step sees the build's volume, CF_VOLUME_PATH (default
	// DefaultWorkspacePath).
	WorkspacePath string
	// StorageClass is the storage class of the workspace volume claims (default: the cluster's
	// default class).
	StorageClass string
	// VolumeSize is the size each workspace claim requests (default DefaultVolumeSize).
	VolumeSize string
	// AccessMode is the workspace claim's access mode: "ReadWriteOnce" (the default, every
	// storage class has it; the executor then schedules all pods of a running build on one
	// node) or "ReadWriteMany" (a class that supports it; parallel steps may spread over nodes).
	AccessMode corev1.PersistentVolumeAccessMode

	// ServiceAccount is the service account step pods run as. When empty they run as the
	// namespace's default account without its API token mounted; when set, its token is
	// mounted (steps that need the Kubernetes API, or cloud workload identity).
	ServiceAccount string
	// NodeSelector and Tolerations place step pods.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// Resources are the requests and limits of every step container.
	Resources corev1.ResourceRequirements
	// ImagePullSecrets name secrets in Namespace used to pull step images.
	ImagePullSecrets []string
	// Labels are added to every pod and claim the executor creates, with Build.Labels (which
	// win) and the executor's own (LabelBuild, LabelStep, LabelManagedBy), which may not be set.
	Labels map[string]string
	// Annotations are added to every step pod (for example to opt out of a service mesh's
	// sidecar injection).
	Annotations map[string]string

	// DefaultImage runs steps that name no image (default DefaultImage).
	DefaultImage string
	// HelperImage runs the helper containers (default DefaultHelperImage).
	HelperImage string
	// BuilderImage runs build and push steps (default DefaultBuilderImage): an image with
	// buildah and a POSIX sh (head, dirname, cat), whose storage is /var/lib/containers.
	// Builder pods run privileged (buildah's chroot isolation mounts): the namespace must allow
	// privileged pods for build steps.
	BuilderImage string
	// BuilderHostNetwork runs builder pods on their node's network, for registries that only
	// the nodes reach (a registry on a node's loopback address).
	BuilderHostNetwork bool
	// KillGrace is the grace period of a stopped step's pod: SIGTERM, then SIGKILL after it
	// (default executor.DefaultKillGrace). Kubernetes counts it in whole seconds: it is rounded
	// up, to at least one second.
	KillGrace time.Duration
	// StartTimeout bounds how long a pod may take to start its step container (default
	// DefaultStartTimeout). A pod still unscheduled or still pulling then is deleted and the
	// step fails with the pod's reason. Image pull failures end the step sooner: as soon as
	// the kubelet reports ImagePullBackOff.
	StartTimeout time.Duration

	// Logger receives what the executor cannot return (a pod it could not delete after a
	// step that is already reported). Default: discard.
	Logger *slog.Logger
}

// BindFlags registers the options that are simple values as flags named --kube-*, for the
// runner's command line.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.InCluster, "kube-in-cluster", o.InCluster, "use the service account of the runner's pod")
	fs.StringVar(&o.Kubeconfig, "kube-kubeconfig", o.Kubeconfig, "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&o.Context, "kube-context", o.Context, "kubeconfig context (default: the current context)")
	fs.StringVar(&o.Namespace, "kube-namespace", o.Namespace, "namespace of the build pods (default: the runner's own in a cluster, else "+DefaultNamespace+")")
	fs.StringVar(&o.StorageClass, "kube-storage-class", o.StorageClass, "storage class of the workspace volumes (default: the cluster's default)")
	fs.StringVar(&o.VolumeSize, "kube-volume-size", o.VolumeSize, "size of each build's workspace volume (default "+DefaultVolumeSize+")")
	fs.StringVar((*string)(&o.AccessMode), "kube-access-mode", string(o.AccessMode), "access mode of the workspace volumes: ReadWriteOnce (default) or ReadWriteMany")
	fs.StringVar(&o.ServiceAccount, "kube-service-account", o.ServiceAccount, "service account of the step pods (default: none, no API token)")
	fs.StringToStringVar(&o.NodeSelector, "kube-node-selector", o.NodeSelector, "node selector of the step pods (key=value,...)")
	fs.Var(&tolerationsFlag{&o.Tolerations}, "kube-toleration", "a toleration of the step pods, KEY[=VALUE]:EFFECT (repeatable; no VALUE: any value)")
	fs.StringSliceVar(&o.ImagePullSecrets, "kube-image-pull-secret", o.ImagePullSecrets, "image pull secret for step images (repeatable)")
	fs.StringToStringVar(&o.Labels, "kube-labels", o.Labels, "labels added to the build's pods and volumes (key=value,...)")
	fs.StringVar(&o.DefaultImage, "kube-default-image", o.DefaultImage, "image of steps that name none (default "+DefaultImage+")")
	fs.StringVar(&o.HelperImage, "kube-helper-image", o.HelperImage, "image of the helper containers (default "+DefaultHelperImage+")")
	fs.StringVar(&o.BuilderImage, "kube-builder-image", o.BuilderImage, "image of the builder pods that run build and push steps, with buildah (default "+DefaultBuilderImage+")")
	fs.BoolVar(&o.BuilderHostNetwork, "kube-builder-host-network", o.BuilderHostNetwork, "run builder pods on the node's network (registries only the nodes reach)")
	fs.DurationVar(&o.KillGrace, "kube-kill-grace", o.KillGrace, "grace period of a stopped step's pod (default 10s)")
	fs.DurationVar(&o.StartTimeout, "kube-start-timeout", o.StartTimeout, "how long a step's pod may take to start (default 5m)")
}

// Validate reports every invalid field, naming the field, its value and what is valid.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, value any, valid string) {
		errs = append(errs, fmt.Errorf("%w: %s = %q: %s", ErrInvalidOptions, field, fmt.Sprint(value), valid))
	}
	if o.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(o.Namespace) {
			bad("Namespace", o.Namespace, m)
		}
	}
	if o.WorkspacePath != "" && (!path.IsAbs(o.WorkspacePath) || path.Clean(o.WorkspacePath) == "/" || strings.ContainsAny(o.WorkspacePath, "\x00:")) {
		bad("WorkspacePath", o.WorkspacePath, "must be an absolute path other than /, without ':'")
	}
	if o.WorkspacePath != "" && (path.Clean(o.WorkspacePath) == ScriptDir || strings.HasPrefix(path.Clean(o.WorkspacePath), ScriptDir+"/")) {
		bad("WorkspacePath", o.WorkspacePath, "must not be "+ScriptDir+" or inside it: the executor mounts the step's script there")
	}
	if o.VolumeSize != "" {
		if q, err := resource.ParseQuantity(o.VolumeSize); err != nil || q.Sign() <= 0 {
			bad("VolumeSize", o.VolumeSize, "must be a positive quantity such as 10Gi or 500Mi")
		}
	}
	switch o.AccessMode {
	case "", corev1.ReadWriteOnce, corev1.ReadWriteMany:
	default:
		bad("AccessMode", o.AccessMode, "must be ReadWriteOnce or ReadWriteMany")
	}
	if o.StorageClass != "" {
		for _, m := range validation.IsDNS1123Subdomain(o.StorageClass) {
			bad("StorageClass", o.StorageClass, m)
		}
	}
	if o.ServiceAccount != "" {
		for _, m := range validation.IsDNS1123Subdomain(o.ServiceAccount) {
			bad("ServiceAccount", o.ServiceAccount, m)
		}
	}
	for i, s := range o.ImagePullSecrets {
		for _, m := range validation.IsDNS1123Subdomain(s) {
			bad(fmt.Sprintf("ImagePullSecrets[%d]", i), s, m)
		}
	}
	for _, m := range []struct {
		field string
		kv    map[string]string
	}{{"NodeSelector", o.NodeSelector}, {"Labels", o.Labels}} {
		for _, k := range slices.Sorted(maps.Keys(m.kv)) {
			for _, e := range validation.IsQualifiedName(k) {
				bad(m.field+" key", k, e)
			}
			for _, e := range validation.IsValidLabelValue(m.kv[k]) {
				bad(m.field+"["+k+"]", m.kv[k], e)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Labels)) {
		if slices.Contains(reservedLabels, k) {
			bad("Labels key", k, "is set by the executor; its own labels ("+strings.Join(reservedLabels, ", ")+") cannot be configured")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Annotations)) {
		for _, e := range validation.IsQualifiedName(k) {
			bad("Annotations key", k, e)
		}
		if slices.Contains(reservedAnnotations, k) {
			bad("Annotations key", k, "is set by the executor; its own annotations ("+strings.Join(reservedAnnotations, ", ")+") cannot be configured")
		}
	}
	for _, f := range []struct{ field, image string }{{"DefaultImage", o.DefaultImage}, {"HelperImage", o.HelperImage}, {"BuilderImage", o.BuilderImage}} {
		if strings.ContainsAny(f.image, " \t\n\x00") {
			bad(f.field, f.image, "must be an image reference, without spaces")
		}
	}
	if o.KillGrace < 0 {
		bad("KillGrace", o.KillGrace, fmt.Sprintf("must not be negative (0 means %s)", executor.DefaultKillGrace))
	}
	if o.StartTimeout < 0 {
		bad("StartTimeout", o.StartTimeout, fmt.Sprintf("must not be negative (0 means %s)", DefaultStartTimeout))
	}
	if o.InCluster && (o.Kubeconfig != "" || o.Context != "") {
		bad("InCluster", o.InCluster, "cannot be combined with Kubeconfig or Context")
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of o with zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.Namespace == "" && o.InCluster {
		if b, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			o.Namespace = strings.TrimSpace(string(b))
		}
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.WorkspacePath == "" {
		o.WorkspacePath = DefaultWorkspacePath
	}
	o.WorkspacePath = path.Clean(o.WorkspacePath)
	if o.VolumeSize == "" {
		o.VolumeSize = DefaultVolumeSize
	}
	if o.AccessMode == "" {
		o.AccessMode = corev1.ReadWriteOnce
	}
	if o.DefaultImage == "" {
		o.DefaultImage = DefaultImage
	}
	if o.HelperImage == "" {
		o.HelperImage = DefaultHelperImage
	}
	if o.BuilderImage == "" {
		o.BuilderImage = DefaultBuilderImage
	}
	if o.KillGrace == 0 {
		o.KillGrace = executor.DefaultKillGrace
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// graceSeconds is KillGrace in whole seconds, rounded up, at least 1 (0 would force-delete the
// pod without waiting for the kubelet).
func (o Options) graceSeconds() int64 {
	return max(1, int64((o.KillGrace+time.Second-1)/time.Second))
}

// tolerationsFlag parses --kube-toleration KEY[=VALUE]:EFFECT into Options.Tolerations.
type tolerationsFlag struct{ ts *[]corev1.Toleration }

func (f *tolerationsFlag) String() string {
	if f.ts == nil {
		return ""
	}
	var out []string
	for _, t := range *f.ts {
		s := t.Key
		if t.Operator != corev1.TolerationOpExists {
			s += "=" + t.Value
		}
		out = append(out, s+":"+string(t.Effect))
	}
	return strings.Join(out, ",")
}

func (f *tolerationsFlag) Type() string { return "KEY[=VALUE]:EFFECT" }

func (f *tolerationsFlag) Set(v string) error {
	kv, effect, ok := strings.Cut(v, ":")
	switch corev1.TaintEffect(effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		ok = false
	}
	key, value, hasValue := strings.Cut(kv, "=")
	if !ok || key == "" {
		return fmt.Errorf("%w: kube-toleration = %q: want KEY[=VALUE]:EFFECT, EFFECT one of NoSchedule, PreferNoSchedule, NoExecute", ErrInvalidOptions, v)
	}
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffect(effect)}
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	*f.ts = append(*f.ts, t)
	return nil
}
