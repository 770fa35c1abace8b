package install_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestMain stops the clusters, then the registry the real-node test starts.
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

type world struct {
	cluster *kube.Cluster
	kc      kubernetes.Interface
	srv     *servertest.Server
	ns      string
	repo    string
	out     *bytes.Buffer
	in      *install.Installer
}

func newWorld(t *testing.T) *world {
	c := kube.Shared(t)
	srv := servertest.Start(t, store.SQLite)
	repo, err := host.InitLocalRepo(filepath.Join(t.TempDir(), "install.git"))
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	in, err := install.New(srv.Admin, c.RESTConfig(), &out)
	if err != nil {
		t.Fatal(err)
	}
	return &world{cluster: c, kc: kc, srv: srv, ns: c.Namespace(t), repo: repo, out: &out, in: in}
}

func (w *world) opts(t *testing.T, name string) install.Options {
	return install.Options{Name: name, Namespace: w.ns, Repo: w.repo, CacheDir: t.TempDir(), Version: "v0.0.0-test"}
}

func TestInstallResumeWaitAndUninstall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const name = "edge-a"
	o := w.opts(t, name)

	// --dry-run registers and applies nothing.
	var dry bytes.Buffer
	if err := install.DryRun(w.srv.Admin, o, &dry); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dry.String(), "kind: Deployment") || !strings.Contains(dry.String(), "name: rollouts.argoproj.io") || strings.Contains(dry.String(), "frt_") {
		t.Errorf("dry run output lacks the Deployment or the Rollout CRD, or shows a token:\n%s", dry.String())
	}
	if _, err := w.srv.Admin.GetRuntime(ctx, name); !client.IsStatus(err, 404) {
		t.Fatalf("after a dry run the runtime exists: %v", err)
	}

	// Install without waiting: registered, objects applied, repository initialised.
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatalf("install: %v\n%s", err, w.out)
	}
	rt, err := w.srv.Admin.GetRuntime(ctx, name)
	if err != nil || rt.Status != "installing" {
		t.Fatalf("runtime after install: %+v %v", rt, err)
	}
	sec, err := w.kc.CoreV1().Secrets(w.ns).Get(ctx, manifests.TokenSecretName, metav1.GetOptions{})
	if err != nil || sec.Annotations[manifests.RuntimeIDAnnotation] != rt.ID || !strings.HasPrefix(string(sec.Data["token"]), "frt_") {
		t.Fatalf("token Secret: %v %v", sec, err)
	}
	token := string(sec.Data["token"])
	// The Argo Rollouts CRDs are served: Rollouts apply as they are.
	if rl, err := w.kc.Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1"); err != nil || !servesRollouts(rl) {
		t.Errorf("argoproj.io/v1alpha1 after install: %v %v\n%s", rl, err, w.out)
	}
	// And Argo Events' kinds.
	if rl, err := w.kc.Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1"); err != nil || !servesKinds(rl, "EventSource", "Sensor", "EventBus") {
		t.Errorf("argoproj.io/v1alpha1 after install has no Argo Events kinds: %v\n%s", err, w.out)
	}
	dep, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, "freshet-runtime", metav1.GetOptions{})
	if err != nil || !strings.Contains(strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "), "--repo "+w.repo) {
		t.Fatalf("Deployment: %v %v", dep, err)
	}
	cache, err := git.NewCache(t.TempDir(), git.Options{})
	if err != nil {
		t.Fatal(err)
	}
	head, err := cache.Fetch(ctx, git.Repo{URL: w.repo}, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if rf, err := cache.ReadFile(ctx, git.Repo{URL: w.repo}, head.SHA, install.RuntimeFile); err != nil || !strings.Contains(string(rf), "name: "+name) {
		t.Errorf("runtime.yaml: %q %v", rf, err)
	}

	// Running it again resumes: same registration, same token, the repository untouched.
	w.out.Reset()
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatalf("second install: %v\n%s", err, w.out)
	}
	if !strings.Contains(w.out.String(), "resuming") || !strings.Contains(w.out.String(), "already initialised") {
		t.Errorf("second run output:\n%s", w.out)
	}
	sec2, _ := w.kc.CoreV1().Secrets(w.ns).Get(ctx, manifests.TokenSecretName, metav1.GetOptions{})
	if string(sec2.Data["token"]) != token {
		t.Error("the second run changed the token")
	}

	// With the runtime running (here in-process, with the token from the Secret), install
	// waits until it reports healthy.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, err := agent.New(agent.Options{Server: w.srv.URL, Token: token, AccessMode: "tunnel", DataDir: t.TempDir(), NoInCluster: true, Version: "v0.0.0-test"},
		nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(actx)
	o.Wait = 30 * time.Second
	w.out.Reset()
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatalf("install --wait: %v\n%s", err, w.out)
	}
	if !strings.Contains(w.out.String(), "✓ waiting for the runtime to report healthy") {
		t.Errorf("wait output:\n%s", w.out)
	}
	cancel()

	// Uninstall removes the objects and the registration.
	if err := w.in.Uninstall(ctx, name, w.ns); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, w.out)
	}
	if _, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, "freshet-runtime", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment after uninstall: %v", err)
	}
	if _, err := w.kc.RbacV1().ClusterRoles().Get(ctx, "freshet-runtime-"+name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole after uninstall: %v", err)
	}
	if _, err := w.srv.Admin.GetRuntime(ctx, name); !client.IsStatus(err, 404) {
		t.Errorf("runtime after uninstall: %v", err)
	}
	// And it can be run again.
	if err := w.in.Uninstall(ctx, name, w.ns); err != nil {
		t.Errorf("second uninstall: %v", err)
	}

	// --from-repo recovers the runtime from its installation repository alone.
	w.out.Reset()
	if err := w.in.Install(ctx, install.Options{Repo: w.repo, FromRepo: true, CacheDir: t.TempDir()}); err != nil {
		t.Fatalf("install --from-repo: %v\n%s", err, w.out)
	}
	if rt, err := w.srv.Admin.GetRuntime(ctx, name); err != nil || rt.Repo != w.repo {
		t.Errorf("runtime recovered from the repository: %+v %v", rt, err)
	}
	if _, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, "freshet-runtime", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment after install --from-repo: %v", err)
	}
	if err := w.in.Uninstall(ctx, name, w.ns); err != nil {
		t.Errorf("uninstall: %v", err)
	}
}

func TestInstallRefusals(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()

	// A name registered elsewhere (its token is not in this cluster) is refused.
	if _, err := w.srv.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "taken"}); err != nil {
		t.Fatal(err)
	}
	err := w.in.Install(ctx, w.opts(t, "taken"))
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), `"taken" is already registered`) {
		t.Errorf("install of a taken name: %v", err)
	}

	// The install wizard's way: a runtime registered beforehand is installed with its token.
	pre, err := w.srv.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "wizard"})
	if err != nil {
		t.Fatal(err)
	}
	ow := w.opts(t, "wizard")
	ow.Repo, ow.Token = "", pre.Token
	if err := w.in.Install(ctx, ow); err != nil || !strings.Contains(w.out.String(), "registered beforehand") {
		t.Errorf("install with --token: %v\n%s", err, w.out)
	}
	if sec, err := w.kc.CoreV1().Secrets(w.ns).Get(ctx, manifests.TokenSecretName, metav1.GetOptions{}); err != nil || string(sec.Data["token"]) != pre.Token {
		t.Errorf("token Secret after install --token: %v", err)
	}
	if err := w.in.Uninstall(ctx, "wizard", w.ns); err != nil {
		t.Fatal(err)
	}
	ow.Name = "never-registered"
	if err := w.in.Install(ctx, ow); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("install --token of an unregistered name: %v", err)
	}

	// A repository that holds another runtime is refused before anything is applied.
	o := w.opts(t, "first-of-repo")
	o.Namespace = w.ns
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.in.Uninstall(context.Background(), "first-of-repo", w.ns) })
	o2 := w.opts(t, "second-of-repo")
	err = w.in.Install(ctx, o2)
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), `holds runtime "first-of-repo"`) {
		t.Errorf("install into another runtime's repository: %v", err)
	}
	if _, err := w.srv.Admin.GetRuntime(ctx, "second-of-repo"); !client.IsStatus(err, 404) {
		t.Errorf("a refused install registered the runtime: %v", err)
	}

	// A user without rights is stopped by the pre-checks, with what is missing.
	sa, err := w.kc.CoreV1().ServiceAccounts(w.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := w.kc.CoreV1().ServiceAccounts(w.ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := w.cluster.RESTConfig()
	restricted := &rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile}}
	var out bytes.Buffer
	in, err := install.New(w.srv.Admin, restricted, &out)
	if err != nil {
		t.Fatal(err)
	}
	noRights := w.opts(t, "no-rights")
	noRights.StorageSize = "1Gi"
	err = in.Install(ctx, noRights)
	if !errors.Is(err, errdefs.ErrForbidden) || !strings.Contains(err.Error(), "create namespaces.core") || !strings.Contains(err.Error(), "cluster-admin") ||
		!strings.Contains(err.Error(), "create persistentvolumeclaims.core (the runtime's data claim)") {
		t.Errorf("install without rights: %v", err)
	}
	if _, err := w.srv.Admin.GetRuntime(ctx, "no-rights"); !client.IsStatus(err, 404) {
		t.Errorf("a refused install registered the runtime: %v", err)
	}
}

func servesRollouts(rl *metav1.APIResourceList) bool {
	for _, r := range rl.APIResources {
		if r.Name == "rollouts" && slices.Contains(r.ShortNames, "ro") {
			return true
		}
	}
	return false
}

// servesKinds: every kind is served in the list.
func servesKinds(rl *metav1.APIResourceList, kinds ...string) bool {
	for _, k := range kinds {
		if !slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Kind == k }) {
			return false
		}
	}
	return true
}

// --storage-size puts the runtime's data dir on a claim of that size and class; an install run
// again or an upgrade without it keeps the claim (a runtime never loses its data to a flag left
// out); a size the claim cannot shrink to and another class are refused before anything is
// applied; --storage-size 0 goes back to the pod's emptyDir and leaves the claim; uninstall
// deletes it. (Nothing binds the claim on the test cluster; what is checked is what it holds.)
func TestInstallDataClaim(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const name = "edge-data"
	const class = "freshet-test-runtime"
	o := w.opts(t, name)
	o.Repo = ""
	o.StorageSize, o.StorageClass = "2Gi", class
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatalf("install --storage-size 2Gi: %v\n%s", err, w.out)
	}
	t.Cleanup(func() { _ = w.in.Uninstall(context.Background(), name, w.ns) })
	claim := func() *corev1.PersistentVolumeClaim {
		t.Helper()
		pvc, err := w.kc.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, manifests.DataClaimName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the data claim: %v\n%s", err, w.out)
		}
		return pvc
	}
	mounted := func() bool {
		t.Helper()
		dep, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, "freshet-runtime", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == manifests.DataClaimName {
				return true
			}
		}
		return false
	}
	first := claim()
	if got := first.Spec.Resources.Requests.Storage().String(); got != "2Gi" || first.Spec.StorageClassName == nil || *first.Spec.StorageClassName != class {
		t.Errorf("the data claim requests %s of class %v, want 2Gi of %s", got, first.Spec.StorageClassName, class)
	}
	if !mounted() {
		t.Error("the Deployment does not mount the data claim")
	}

	// Install again and upgrade, without the flags: the same claim, still mounted.
	o.StorageSize, o.StorageClass = "", ""
	w.out.Reset()
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatalf("install again: %v\n%s", err, w.out)
	}
	if !strings.Contains(w.out.String(), "✓ data claim: "+manifests.DataClaimName+", 2Gi of "+class+" (kept)") {
		t.Errorf("install again does not say it keeps the claim:\n%s", w.out)
	}
	up := install.Options{Name: name, Namespace: w.ns, Version: "v0.0.0-test-2"}
	if err := w.in.Upgrade(ctx, up); err != nil {
		t.Fatalf("upgrade: %v\n%s", err, w.out)
	}
	if again := claim(); again.UID != first.UID || !mounted() {
		t.Errorf("after install again and upgrade: claim %s (was %s), mounted %v", again.UID, first.UID, mounted())
	}

	// What the claim cannot become is refused, naming the flag and the value.
	for _, c := range []struct{ size, class, field string }{
		{"1Gi", "", "storage-size"},
		{"2Gi", "another-class", "storage-class"},
	} {
		bad := up
		bad.StorageSize, bad.StorageClass = c.size, c.class
		err := w.in.Upgrade(ctx, bad)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field {
			t.Errorf("upgrade --storage-size %s --storage-class %q: %v, want an invalid %s", c.size, c.class, err, c.field)
		}
	}

	// --storage-size 0: the pod's emptyDir; the claim stays, with the data.
	off := up
	off.StorageSize = "0"
	w.out.Reset()
	if err := w.in.Upgrade(ctx, off); err != nil {
		t.Fatalf("upgrade --storage-size 0: %v\n%s", err, w.out)
	}
	if mounted() || claim().UID != first.UID || !strings.Contains(w.out.String(), "is left as it is") {
		t.Errorf("after --storage-size 0: mounted %v, or the claim is gone, or the output does not say it stays:\n%s", mounted(), w.out)
	}

	// Uninstall deletes the claim with the rest.
	if err := w.in.Uninstall(ctx, name, w.ns); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, w.out)
	}
	if pvc, err := w.kc.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, manifests.DataClaimName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the data claim after uninstall: %v %v", pvc.GetDeletionTimestamp(), err)
	}
}

// --events-port serves the EventSources' webhooks on a port of the runtime's Service; an
// upgrade without it keeps the port, with another moves it, with -1 removes it.
func TestInstallEventsPort(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const name = "edge-events"
	o := w.opts(t, name)
	o.Repo = ""
	o.EventsPort = 12000
	if err := w.in.Install(ctx, o); err != nil {
		t.Fatalf("install --events-port 12000: %v\n%s", err, w.out)
	}
	t.Cleanup(func() { _ = w.in.Uninstall(context.Background(), name, w.ns) })
	served := func() (svcPort int32, args string) {
		t.Helper()
		svc, err := w.kc.CoreV1().Services(w.ns).Get(ctx, manifests.ServiceName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range svc.Spec.Ports {
			if p.Name == manifests.EventsPortName {
				svcPort = p.Port
			}
		}
		dep, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, "freshet-runtime", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svcPort, strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	}
	for _, c := range []struct {
		flag int
		want int32
	}{{0, 12000}, {13000, 13000}, {-1, 0}} {
		up := install.Options{Name: name, Namespace: w.ns, Version: "v0.0.0-test-2", EventsPort: c.flag}
		if err := w.in.Upgrade(ctx, up); err != nil {
			t.Fatalf("upgrade --events-port %d: %v\n%s", c.flag, err, w.out)
		}
		port, args := served()
		wantArg := fmt.Sprintf("--events-listen :%d", c.want)
		if port != c.want || (c.want != 0) != strings.Contains(args, wantArg) || (c.want == 0 && strings.Contains(args, "--events-listen")) {
			t.Errorf("after upgrade --events-port %d: Service port %d, args %q; want %d", c.flag, port, args, c.want)
		}
	}
}
