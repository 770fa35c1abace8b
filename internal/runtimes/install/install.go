// Package install installs a hybrid runtime (Installer) or a runner (RunnerInstaller) into a
// Kubernetes cluster from the CLI. For a runtime: pre-checks,
// registration with the control plane, the installation repository's layout, the runtime's
// manifests by server-side apply, then a wait until the runtime reports healthy. Every step
// is idempotent, so running it again continues where an interrupted run stopped.
package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/crd"
	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
)

// FieldManager is the server-side apply field manager of the installer.
const FieldManager = "freshet-install"

// MinKubeVersion is the oldest Kubernetes the runtime is installed on.
var MinKubeVersion = version.MustParseGeneric("1.27.0")

// uninstallWait bounds how long Uninstall waits for deleted objects to disappear.
const uninstallWait = 2 * time.Minute

// RuntimeFile is the runtime's configuration in its installation repository.
const RuntimeFile = "runtime.yaml"

// ControlPlane is what the installer needs of the control plane's API (client.Client).
type ControlPlane interface {
	BaseURL() string
	GetRuntime(ctx context.Context, name string) (client.Runtime, error)
	RegisterRuntime(ctx context.Context, r client.RegisterRuntimeRequest) (client.RegisteredRuntime, error)
	DeleteRuntime(ctx context.Context, name string) error
}

// Options describe one installation.
type Options struct {
	Name         string
	Namespace    string
	AccessMode   string
	IngressHost  string
	IngressClass string
	Image        string
	Version      string
	// Server is the control plane URL the runtime dials (default: the CLI's).
	Server string
	// Repo is the installation repository (optional); GitToken its token.
	Repo     string
	GitToken string
	// Token of a runtime registered beforehand (the web UI's install wizard registers it and
	// shows the command): install uses it instead of registering.
	Token string
	// WatchClusterApps: the runtime also runs the Application and AppProject resources of its
	// namespace; the Argo CD CRDs are installed.
	WatchClusterApps bool
	// ClusterAppsSourceNamespaces: other namespaces whose Application resources the runtime
	// runs (--cluster-apps-source-namespaces; AppProject spec.sourceNamespaces decides).
	ClusterAppsSourceNamespaces []string
	// StorageSize is the size of the runtime's data claim (--storage-size), which keeps its data
	// dir (its local installation repository when it has no Repo, the clusters it deploys to,
	// the GitOps engine's cache) across pods: a Kubernetes quantity, or manifests.NoStorage for
	// no claim (the data dir is the pod's emptyDir, lost with it). Empty: as installed — the
	// claim the namespace holds for the runtime (a resumed install or an upgrade keeps it),
	// else none. StorageClass is the claim's class (--storage-class; empty: the live claim's,
	// else the cluster's default).
	StorageSize  string
	StorageClass string
	// EventsPort serves the EventSources' webhooks on this port of the runtime's Service
	// (--events-port; 0: none).
	EventsPort int
	// FromRepo reads the installation's settings from Repo's runtime.yaml.
	FromRepo bool
	// Wait is how long to wait for the runtime to report healthy; 0 does not wait.
	Wait time.Duration
	// CacheDir is a scratch directory for the repository cache.
	CacheDir string
}

// RuntimeConfig is runtime.yaml in the installation repository.
type RuntimeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Namespace   string `json:"namespace"`
		AccessMode  string `json:"accessMode"`
		IngressHost string `json:"ingressHost,omitempty"`
		Server      string `json:"server"`
		Version     string `json:"version,omitempty"`
	} `json:"spec"`
}

// Installer installs, upgrades and uninstalls runtimes in one cluster.
type Installer struct {
	cp     ControlPlane
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	out    io.Writer
}

// New returns an installer for the cluster cfg reaches; progress goes to out.
func New(cp ControlPlane, cfg *rest.Config, out io.Writer) (*Installer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 30 * time.Second
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClient(kc.RESTClient())))
	return &Installer{cp: cp, kube: kc, dyn: dyn, mapper: mapper, out: out}, nil
}

func (in *Installer) step(name string, fn func() (string, error)) error {
	fmt.Fprintf(in.out, "→ %s\n", name)
	detail, err := fn()
	if err != nil {
		fmt.Fprintf(in.out, "✗ %s: %v\n", name, err)
		return fmt.Errorf("%s: %w", name, err)
	}
	if detail != "" {
		fmt.Fprintf(in.out, "✓ %s: %s\n", name, detail)
	} else {
		fmt.Fprintf(in.out, "✓ %s\n", name)
	}
	return nil
}

func (o *Options) defaults(cp ControlPlane) error {
	if o.Namespace == "" {
		o.Namespace = manifests.DefaultNamespace
	}
	if o.AccessMode == "" {
		o.AccessMode = "tunnel"
	}
	if o.Server == "" {
		o.Server = cp.BaseURL()
	}
	if o.StorageSize != "" {
		p, err := manifests.ParsePersistence(o.StorageSize, o.StorageClass, "storage-size", "storage-class")
		if err != nil {
			return err
		}
		if p != nil {
			o.StorageSize = p.Size
		}
	}
	mo := o.manifestOptions("", "x")
	return mo.Validate()
}

// claimed reports whether o asks for a data claim (its storage size settled).
func (o *Options) claimed() bool {
	return o.StorageSize != "" && !manifests.IsNoStorage(o.StorageSize)
}

func (o *Options) manifestOptions(id, token string) manifests.Options {
	mo := manifests.Options{Name: o.Name, Namespace: o.Namespace, Image: o.Image, Version: o.Version, Server: o.Server, Token: token,
		AccessMode: o.AccessMode, IngressHost: o.IngressHost, IngressClass: o.IngressClass, RuntimeID: id, Repo: o.Repo, GitToken: o.GitToken,
		WatchClusterApps: o.WatchClusterApps, ClusterAppsSourceNamespaces: o.ClusterAppsSourceNamespaces, EventsPort: o.EventsPort}
	if o.claimed() {
		mo.Persistence = &manifests.Persistence{Size: o.StorageSize, StorageClass: o.StorageClass}
	}
	return mo
}

// noClaim refuses a storage class without a data claim.
func (o *Options) noClaim() error {
	if o.StorageClass != "" {
		return errdefs.Invalid("storage-class", o.StorageClass, "needs a data claim: give --storage-size (a Kubernetes quantity such as 1Gi)")
	}
	return nil
}

// dataClaim settles the runtime's data claim with what the cluster holds: without a storage
// size, the claim the namespace holds for the runtime is kept as it is (a resumed install, an
// upgrade), and with none the runtime has none. A size or class the live claim cannot take is
// refused before anything is applied: a claim does not shrink, and its class does not change.
// A claim left unused (storage size 0) stays, with the runtime's data, until uninstall.
func (in *Installer) dataClaim(ctx context.Context, o *Options) (string, error) {
	live, err := in.kube.CoreV1().PersistentVolumeClaims(o.Namespace).Get(ctx, manifests.DataClaimName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		live = nil
	} else if err != nil {
		return "", fmt.Errorf("the runtime's data claim %s/%s: %w", o.Namespace, manifests.DataClaimName, err)
	}
	if live != nil && live.Labels[manifests.InstanceLabel] != o.Name {
		if o.claimed() {
			return "", fmt.Errorf("namespace %s holds a PersistentVolumeClaim %s that is not runtime %s's: %w", o.Namespace, manifests.DataClaimName, o.Name, errdefs.ErrConflict)
		}
		live = nil
	}
	if o.StorageSize == "" {
		if live == nil {
			return "none (the data dir is the pod's emptyDir; --storage-size gives it a claim)", o.noClaim()
		}
		o.StorageSize = live.Spec.Resources.Requests.Storage().String()
	}
	if !o.claimed() {
		if live != nil {
			return fmt.Sprintf("none (the data dir is the pod's emptyDir); the claim %s is left as it is, with its data", manifests.DataClaimName), nil
		}
		return "none (the data dir is the pod's emptyDir)", nil
	}
	if live == nil {
		class := o.StorageClass
		if class == "" {
			class = "the cluster's default class"
		}
		return fmt.Sprintf("%s, %s of %s", manifests.DataClaimName, o.StorageSize, class), nil
	}
	liveClass := ""
	if live.Spec.StorageClassName != nil {
		liveClass = *live.Spec.StorageClassName
	}
	if o.StorageClass == "" {
		// Rendered as it is: applying the claim without it would remove a class set before.
		o.StorageClass = liveClass
	} else if o.StorageClass != liveClass {
		return "", errdefs.Invalid("storage-class", o.StorageClass, fmt.Sprintf("is not the class of the runtime's data claim %s (%q): a claim's class does not change", manifests.DataClaimName, liveClass))
	}
	want, liveSize := resource.MustParse(o.StorageSize), live.Spec.Resources.Requests.Storage()
	if want.Cmp(*liveSize) < 0 {
		return "", errdefs.Invalid("storage-size", o.StorageSize, fmt.Sprintf("is smaller than the runtime's data claim %s (%s): a claim does not shrink", manifests.DataClaimName, liveSize))
	}
	if liveClass == "" {
		return fmt.Sprintf("%s, %s, no storage class (kept)", manifests.DataClaimName, o.StorageSize), nil
	}
	return fmt.Sprintf("%s, %s of %s (kept)", manifests.DataClaimName, o.StorageSize, liveClass), nil
}

// DryRun prints the manifests install would apply (the token left out) and changes nothing.
func DryRun(cp ControlPlane, o Options, out io.Writer) error {
	if err := o.defaults(cp); err != nil {
		return err
	}
	if o.StorageSize == "" { // as installed: the dry run does not look at the cluster
		if err := o.noClaim(); err != nil {
			return err
		}
	}
	mo := o.manifestOptions("", "")
	objs, err := manifests.Objects(mo)
	if err != nil {
		return err
	}
	y, err := manifests.YAML(append(append(append(rollouts.CRDs(), workflows.CRDs()...), events.CRDs()...), objs...)) // install applies the CRDs first
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# freshet runtime install %s --dry-run: nothing was registered or applied.\n# The Secret %s/%s with the runtime's token is created at install time.\n", o.Name, o.Namespace, manifests.TokenSecretName)
	_, err = out.Write(y)
	return err
}

// Install runs every step; see the package comment.
func (in *Installer) Install(ctx context.Context, o Options) error {
	if o.FromRepo {
		if err := in.step("reading the installation repository", func() (string, error) { return in.fromRepo(ctx, &o) }); err != nil {
			return err
		}
	}
	if err := o.defaults(in.cp); err != nil {
		return err
	}
	var rt client.Runtime
	var token string
	steps := []struct {
		name string
		fn   func() (string, error)
	}{
		{"cluster reachable", func() (string, error) { return in.checkCluster() }},
		{"permissions", func() (string, error) { return in.checkPermissions(ctx, o) }},
		{"data claim", func() (string, error) { return in.dataClaim(ctx, &o) }},
		{"runtime name", func() (string, error) {
			found, tok, s, err := in.checkName(ctx, o)
			if found != nil {
				rt, token = *found, tok
			}
			return s, err
		}},
		// The repository before the registration: one that holds another runtime stops the
		// install before anything is registered.
		{"installation repository", func() (string, error) { return in.initRepo(ctx, o) }},
		{"registration", func() (s string, err error) {
			if token != "" {
				return "", nil
			}
			rt, token, s, err = in.register(ctx, o)
			return s, err
		}},
		{"Argo Rollouts CRDs", func() (string, error) { return in.rolloutCRDs(ctx) }},
		{"Argo Workflows CRDs", func() (string, error) { return in.workflowCRDs(ctx) }},
		{"Argo Events CRDs", func() (string, error) { return in.eventCRDs(ctx) }},
		{"Argo CD CRDs", func() (string, error) { return in.argoCDCRDs(ctx, o.WatchClusterApps) }},
		{"manifests", func() (string, error) { return in.apply(ctx, o.manifestOptions(rt.ID, token)) }},
	}
	for _, s := range steps {
		if err := in.step(s.name, s.fn); err != nil {
			return err
		}
	}
	if o.Wait <= 0 {
		fmt.Fprintf(in.out, "Runtime %s is installed; 'freshet runtime get %s' shows when it reports healthy.\n", o.Name, o.Name)
		return nil
	}
	return in.step("waiting for the runtime to report healthy", func() (string, error) { return in.waitHealthy(ctx, o) })
}

func (in *Installer) checkCluster() (string, error) {
	v, err := in.kube.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("the cluster does not answer: %w", err)
	}
	sv, err := version.ParseGeneric(v.GitVersion)
	if err != nil {
		return "", fmt.Errorf("the cluster reports version %q: %w", v.GitVersion, err)
	}
	if sv.LessThan(MinKubeVersion) {
		return "", fmt.Errorf("the cluster runs Kubernetes %s, too old: the runtime needs %s or newer", v.GitVersion, MinKubeVersion)
	}
	return "Kubernetes " + v.GitVersion, nil
}

// permission is one access the installation needs.
type permission struct {
	group, resource, verb string
	why                   string
}

func needed(o Options) []permission {
	ps := []permission{
		{"", "namespaces", "create", "the runtime's namespace"},
		{"", "serviceaccounts", "create", "the runtime's service account"},
		{"", "secrets", "create", "the Secret with the runtime's token"},
		{"", "services", "create", "the app-proxy Service"},
		{"apps", "deployments", "create", "the runtime's Deployment"},
		{"rbac.authorization.k8s.io", "clusterroles", "create", "the runtime's ClusterRole"},
		{"rbac.authorization.k8s.io", "clusterrolebindings", "create", "the runtime's ClusterRoleBinding"},
		{"apiextensions.k8s.io", "customresourcedefinitions", "create", "the Argo Rollouts CRDs (Rollout, AnalysisTemplate, …)"},
		// The ClusterRole grants everything (the GitOps engine applies whatever apps declare):
		// only someone who has everything may grant it.
		{"*", "*", "*", "granting the runtime cluster-wide rights (the GitOps engine applies any kind): cluster-admin"},
	}
	if o.AccessMode == "ingress" {
		ps = append(ps, permission{"networking.k8s.io", "ingresses", "create", "the app-proxy Ingress"})
	}
	ps = append(ps, permission{"", "persistentvolumeclaims", "get", "reading the runtime's data claim (kept when there is one)"})
	if o.claimed() {
		ps = append(ps, permission{"", "persistentvolumeclaims", "create", "the runtime's data claim"})
	}
	return ps
}

func (in *Installer) checkPermissions(ctx context.Context, o Options) (string, error) {
	var missing []string
	for _, p := range needed(o) {
		ns := o.Namespace
		if p.resource == "namespaces" || strings.HasPrefix(p.resource, "cluster") || p.resource == "*" {
			ns = ""
		}
		r, err := in.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: p.verb, Group: p.group, Resource: p.resource}},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("SelfSubjectAccessReview: %w", err)
		}
		if !r.Status.Allowed {
			g := p.group
			if g == "" {
				g = "core"
			}
			missing = append(missing, fmt.Sprintf("%s %s.%s (%s)", p.verb, p.resource, g, p.why))
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("the current user may not: %s: %w", strings.Join(missing, "; "), errdefs.ErrForbidden)
	}
	return fmt.Sprintf("%d checks passed", len(needed(o))), nil
}

// checkName finds whether the runtime is registered already. A runtime of that name whose
// token Secret is in the cluster (annotated with its ID) is this installation, interrupted:
// it is resumed with that token. One registered beforehand is used with the given token.
// Any other is a name collision.
func (in *Installer) checkName(ctx context.Context, o Options) (*client.Runtime, string, string, error) {
	existing, err := in.cp.GetRuntime(ctx, o.Name)
	switch {
	case client.IsStatus(err, http.StatusNotFound):
		if o.Token != "" {
			return nil, "", "", fmt.Errorf("--token was given but no runtime %q is registered: leave --token out to register one: %w", o.Name, errdefs.ErrNotFound)
		}
		return nil, "", "free", nil
	case err != nil:
		return nil, "", "", err
	case existing.Type == "hosted":
		return nil, "", "", fmt.Errorf("a hosted runtime is named %q: choose another name: %w", o.Name, errdefs.ErrConflict)
	case o.Token != "":
		if !strings.HasPrefix(o.Token, "frt_") {
			return nil, "", "", errdefs.Invalid("token", "…", "is not a runtime token (they start with frt_)")
		}
		return &existing, o.Token, "registered beforehand (" + existing.ID + "); using the given token", nil
	}
	sec, serr := in.kube.CoreV1().Secrets(o.Namespace).Get(ctx, manifests.TokenSecretName, metav1.GetOptions{})
	if serr == nil && sec.Annotations[manifests.RuntimeIDAnnotation] == existing.ID && len(sec.Data["token"]) > 0 {
		return &existing, string(sec.Data["token"]), "already registered (" + existing.ID + "); resuming", nil
	}
	return nil, "", "", fmt.Errorf("a runtime named %q is already registered (status %s) and this cluster does not hold its token in %s/%s: choose another name, or uninstall it first: %w",
		o.Name, existing.Status, o.Namespace, manifests.TokenSecretName, errdefs.ErrConflict)
}

// register registers the runtime (when checkName found none).
func (in *Installer) register(ctx context.Context, o Options) (client.Runtime, string, string, error) {
	reg, err := in.cp.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: o.Name, AccessMode: o.AccessMode, IngressHost: o.IngressHost, Repo: o.Repo})
	if err != nil {
		return client.Runtime{}, "", "", err
	}
	return reg.Runtime, reg.Token, "registered " + reg.ID, nil
}

func (o Options) repo() git.Repo {
	return git.Repo{URL: o.Repo, Credentials: git.Credentials{Token: o.GitToken}}
}

func (o Options) cache() (*git.Cache, error) {
	dir := o.CacheDir
	if dir == "" {
		return nil, errdefs.Invalid("cacheDir", "", "is required")
	}
	return git.NewCache(filepath.Join(dir, "git"), git.Options{RefsTTL: -1})
}

// initRepo writes the documented layout to the installation repository unless it is there.
func (in *Installer) initRepo(ctx context.Context, o Options) (string, error) {
	if o.Repo == "" {
		return "none given (--repo): applications can be created once one is set", nil
	}
	cache, err := o.cache()
	if err != nil {
		return "", err
	}
	cur, err := readRuntimeFile(ctx, cache, o.repo())
	if err != nil {
		return "", err
	}
	if cur != nil {
		if cur.Metadata.Name != o.Name {
			return "", fmt.Errorf("%s holds runtime %q, not %q: give each runtime its own repository: %w", o.Repo, cur.Metadata.Name, o.Name, errdefs.ErrConflict)
		}
		return "already initialised", nil
	}
	var rc RuntimeConfig
	rc.APIVersion, rc.Kind = "freshet.dev/v1", "Runtime"
	rc.Metadata.Name = o.Name
	rc.Spec.Namespace, rc.Spec.AccessMode, rc.Spec.IngressHost, rc.Spec.Server, rc.Spec.Version = o.Namespace, o.AccessMode, o.IngressHost, o.Server, o.Version
	y, err := yaml.Marshal(rc)
	if err != nil {
		return "", err
	}
	readme := "# Applications of runtime " + o.Name + "\n\nEach file holds Argo CD Applications (argoproj.io/v1alpha1). `freshet app create` commits here.\n"
	projects := "# AppProjects of runtime " + o.Name + "; \"default\" (everything allowed) is built in.\n"
	res, err := cache.Commit(ctx, o.repo(), git.CommitRequest{Message: "Install runtime " + o.Name,
		Author: git.Signature{Name: "freshet runtime install", Email: "freshet@localhost"},
		Changes: []git.FileChange{
			{Path: RuntimeFile, Content: y, Create: true},
			{Path: "apps/README.md", Content: []byte(readme), Create: true},
			{Path: "projects/README.md", Content: []byte(projects), Create: true},
		}})
	if err != nil {
		return "", err
	}
	return "initialised at " + res.Commit.SHA[:7], nil
}

func readRuntimeFile(ctx context.Context, cache *git.Cache, repo git.Repo) (*RuntimeConfig, error) {
	r, err := cache.Fetch(ctx, repo, "HEAD")
	if errors.Is(err, git.ErrRevisionNotFound) {
		return nil, nil // an empty repository
	}
	if err != nil {
		return nil, err
	}
	data, err := cache.ReadFile(ctx, repo, r.SHA, RuntimeFile)
	if errors.Is(err, git.ErrFileNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rc RuntimeConfig
	if err := yaml.UnmarshalStrict(data, &rc); err != nil {
		return nil, errdefs.Invalid(RuntimeFile, "", err.Error())
	}
	return &rc, nil
}

// fromRepo fills the options a runtime.yaml holds (flags given win).
func (in *Installer) fromRepo(ctx context.Context, o *Options) (string, error) {
	if o.Repo == "" {
		return "", errdefs.Invalid("repo", "", "is required with --from-repo")
	}
	cache, err := o.cache()
	if err != nil {
		return "", err
	}
	rc, err := readRuntimeFile(ctx, cache, o.repo())
	if err != nil {
		return "", err
	}
	if rc == nil {
		return "", fmt.Errorf("%s has no %s: it is not an installation repository: %w", o.Repo, RuntimeFile, errdefs.ErrNotFound)
	}
	if o.Name != "" && o.Name != rc.Metadata.Name {
		return "", errdefs.Invalid("name", o.Name, fmt.Sprintf("the repository holds runtime %q", rc.Metadata.Name))
	}
	o.Name = rc.Metadata.Name
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	set(&o.Namespace, rc.Spec.Namespace)
	set(&o.AccessMode, rc.Spec.AccessMode)
	set(&o.IngressHost, rc.Spec.IngressHost)
	set(&o.Server, rc.Spec.Server)
	return "runtime " + o.Name, nil
}

// rolloutCRDs installs the CRDs of Argo Rollouts' kinds, which the runtime's Rollouts controller
// serves (it applies them at start as well). Uninstall leaves them: deleting a CRD deletes every
// Rollout in the cluster.
func (in *Installer) rolloutCRDs(ctx context.Context) (string, error) {
	if err := rollouts.EnsureCRDs(ctx, in.dyn); err != nil {
		return "", err
	}
	return crd.Names(rollouts.CRDs()), nil
}

// workflowCRDs installs the CRDs of Argo Workflows' kinds, which the runtime's workflow
// controller serves (it applies them at start as well). Uninstall leaves them, as it leaves
// the Rollouts CRDs.
func (in *Installer) workflowCRDs(ctx context.Context) (string, error) {
	if err := workflows.EnsureCRDs(ctx, in.dyn); err != nil {
		return "", err
	}
	return crd.Names(workflows.CRDs()), nil
}

// eventCRDs installs the CRDs of Argo Events' kinds (EventSource, Sensor, EventBus), which the
// runtime's events controller serves (it applies them at start as well). Uninstall leaves
// them, as it leaves the Workflows CRDs.
func (in *Installer) eventCRDs(ctx context.Context) (string, error) {
	if err := events.EnsureCRDs(ctx, in.dyn); err != nil {
		return "", err
	}
	return crd.Names(events.CRDs()), nil
}

// argoCDCRDs installs the CRDs of Argo CD's Application, AppProject and ApplicationSet when the
// runtime watches Application resources (it applies them at start as well). Uninstall leaves
// them: deleting a CRD deletes every Application in the cluster.
func (in *Installer) argoCDCRDs(ctx context.Context, watch bool) (string, error) {
	if !watch {
		return "not watching Application resources", nil
	}
	if err := host.EnsureArgoCDCRDs(ctx, in.dyn); err != nil {
		return "", err
	}
	return crd.Names(host.ArgoCDCRDs()), nil
}

// apply server-side applies the runtime's objects in order.
func (in *Installer) apply(ctx context.Context, mo manifests.Options) (string, error) {
	objs, err := manifests.Objects(mo)
	if err != nil {
		return "", err
	}
	return in.applyObjects(ctx, objs, mo.Name)
}

// applyObjects server-side applies objs in order. A Namespace among them that exists and is not
// the instance's (its InstanceLabel) is left alone.
func (in *Installer) applyObjects(ctx context.Context, objs []manifests.Object, instance string) (string, error) {
	var names []string
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: toJSONMap(o)}
		gvk := u.GroupVersionKind()
		m, err := in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return "", fmt.Errorf("%s: %w", gvk.Kind, err)
		}
		var ri dynamic.ResourceInterface = in.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = in.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		if gvk.Kind == "Namespace" {
			// A namespace that exists and is not ours stays the user's: uninstall must not
			// delete it.
			live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err == nil && live.GetLabels()[manifests.InstanceLabel] != instance {
				continue
			}
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return "", fmt.Errorf("%s/%s: %w", gvk.Kind, u.GetName(), err)
		}
		names = append(names, gvk.Kind+"/"+u.GetName())
	}
	return strings.Join(names, ", "), nil
}

// toJSONMap round-trips an object through JSON so numbers are what unstructured expects.
func toJSONMap(o manifests.Object) map[string]any {
	b, _ := yaml.Marshal(o)
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	return m
}

func (in *Installer) waitHealthy(ctx context.Context, o Options) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	last := ""
	for {
		rt, err := in.cp.GetRuntime(ctx, o.Name)
		if err == nil {
			state := rt.Status
			for _, c := range rt.Components {
				if c.Health != "healthy" && c.Health != "disabled" {
					state += fmt.Sprintf(" (%s %s: %s)", c.Name, c.Health, c.Message)
				}
			}
			if state != last {
				fmt.Fprintf(in.out, "  runtime %s: %s\n", o.Name, state)
				last = state
			}
			if rt.Status == "healthy" {
				return "version " + rt.Version, nil
			}
		}
		select {
		case <-ctx.Done():
			pods := in.podState(context.Background(), o.Namespace, o.Name, "runtime")
			return "", fmt.Errorf("not healthy after %s (last status %q; %s): see 'freshet runtime logs %s'", o.Wait, last, pods, o.Name)
		case <-time.After(time.Second):
		}
	}
}

// podState says in one line how the pods of instance name (a runtime or a runner, what) in
// namespace are doing, with why a container waits, for an error that says what to look at.
func (in *Installer) podState(ctx context.Context, namespace, name, what string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, err := in.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: manifests.InstanceLabel + "=" + name})
	if err != nil {
		return "pods: " + err.Error()
	}
	if len(pods.Items) == 0 {
		return "no " + what + " pod yet"
	}
	var s []string
	for _, p := range pods.Items {
		st := string(p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				st += " (" + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message + ")"
			}
		}
		s = append(s, p.Name+" "+st)
	}
	return "pods: " + strings.Join(s, ", ")
}

// Uninstall deletes what Install created in the cluster (found by the runtime's labels) and
// deregisters the runtime. Objects already gone are fine, so it can be run again.
func (in *Installer) Uninstall(ctx context.Context, name, namespace string) error {
	if namespace == "" {
		namespace = manifests.DefaultNamespace
	}
	err := in.step("removing the runtime's objects", func() (string, error) {
		// Every object the runtime may have, its data claim included (as helm uninstall does).
		mo := manifests.Options{Name: name, Namespace: namespace, Server: "https://x", Token: "frt_x", AccessMode: "ingress", IngressHost: "x",
			Persistence: &manifests.Persistence{}}
		objs, err := manifests.Objects(mo)
		if err != nil {
			return "", err
		}
		return in.deleteInstance(ctx, objs, name)
	})
	if err != nil {
		return err
	}
	return in.step("deregistering", func() (string, error) {
		err := in.cp.DeleteRuntime(ctx, name)
		if client.IsStatus(err, http.StatusNotFound) {
			return "was not registered", nil
		}
		return "", err
	})
}

// deleteInstance deletes objs (in reverse order) that carry instance name's label, and waits
// for them to go, so that an install right after does not meet them half-deleted. Objects
// already gone are fine; one without the label was not made by the installer and stays.
func (in *Installer) deleteInstance(ctx context.Context, objs []manifests.Object, name string) (string, error) {
	slices.Reverse(objs)
	n := 0
	var gone []func() error
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: toJSONMap(o)}
		gvk := u.GroupVersionKind()
		m, err := in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return "", err
		}
		res := in.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			res = in.dyn.Resource(m.Resource).Namespace("")
		}
		live, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		// Only what this installer made: the namespace may hold other things only if the
		// user put them there, and then it stays.
		if live.GetLabels()[manifests.InstanceLabel] != name {
			continue
		}
		prop := metav1.DeletePropagationForeground
		if err := res.Delete(ctx, u.GetName(), metav1.DeleteOptions{PropagationPolicy: &prop}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%s/%s: %w", gvk.Kind, u.GetName(), err)
		}
		gone = append(gone, func() error {
			_, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s/%s is still there", gvk.Kind, u.GetName())
		})
		n++
	}
	// Wait for them to go, so that an install right after does not meet them half-deleted.
	deadline := time.Now().Add(uninstallWait)
	for _, check := range gone {
		for err := check(); err != nil; err = check() {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%w after %s", err, uninstallWait)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return fmt.Sprintf("%d objects deleted", n), nil
}

// Upgrade applies the runtime's manifests again with a new image or version, keeping its
// token (read from the cluster), its data claim (unless o's storage options change it) and its
// events port (unless o.EventsPort sets one, or -1 none).
func (in *Installer) Upgrade(ctx context.Context, o Options) error {
	dropEvents := o.EventsPort < 0 // --events-port -1: no longer served
	if dropEvents {
		o.EventsPort = 0
	}
	if err := o.defaults(in.cp); err != nil {
		return err
	}
	rt, err := in.cp.GetRuntime(ctx, o.Name)
	if err != nil {
		return err
	}
	sec, err := in.kube.CoreV1().Secrets(o.Namespace).Get(ctx, manifests.TokenSecretName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the runtime's token Secret %s/%s: %w (install it first)", o.Namespace, manifests.TokenSecretName, err)
	}
	if o.Repo == "" {
		o.Repo = rt.Repo
	}
	if o.GitToken == "" {
		o.GitToken = string(sec.Data["gitToken"])
	}
	if o.EventsPort == 0 && !dropEvents { // as installed
		svc, err := in.kube.CoreV1().Services(o.Namespace).Get(ctx, manifests.ServiceName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("the runtime's Service %s/%s: %w", o.Namespace, manifests.ServiceName, err)
		}
		if err == nil {
			for _, p := range svc.Spec.Ports {
				if p.Name == manifests.EventsPortName {
					o.EventsPort = int(p.Port)
				}
			}
		}
	}
	if err := in.step("data claim", func() (string, error) { return in.dataClaim(ctx, &o) }); err != nil {
		return err
	}
	if err := in.step("manifests", func() (string, error) {
		return in.apply(ctx, o.manifestOptions(rt.ID, string(sec.Data["token"])))
	}); err != nil {
		return err
	}
	if o.Wait > 0 {
		return in.step("waiting for the runtime to report healthy", func() (string, error) { return in.waitHealthy(ctx, o) })
	}
	return nil
}

// Logs writes the runtime pod's log to w (follow keeps streaming).
func (in *Installer) Logs(ctx context.Context, name, namespace string, follow bool, tail int64, w io.Writer) error {
	if namespace == "" {
		namespace = manifests.DefaultNamespace
	}
	pods, err := in.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: manifests.InstanceLabel + "=" + name})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no pod of runtime %s in namespace %s: %w", name, namespace, errdefs.ErrNotFound)
	}
	opts := &corev1.PodLogOptions{Follow: follow}
	if tail > 0 {
		opts.TailLines = &tail
	}
	rc, err := in.kube.CoreV1().Pods(namespace).GetLogs(pods.Items[0].Name, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("logs of %s: %w", pods.Items[0].Name, err)
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	return err
}

// KubeConfig loads the cluster to install into: kubeconfig path (default KUBECONFIG or
// ~/.kube/config) and context (default the current one).
func KubeConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q, context %q: %w", path, context, err)
	}
	return cfg, nil
}
