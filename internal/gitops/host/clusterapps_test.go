package host_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// clusterApp is an Application resource as a user writes it for `kubectl apply`.
func clusterApp(name, ns, repo, path string, finalizer bool) string {
	fin := ""
	if finalizer {
		fin = "\n  finalizers: [resources-finalizer.argocd.argoproj.io]"
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s%s
spec:
  project: default
  source: {repoURL: %s, path: %s, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: {automated: {prune: true, selfHeal: true}}
`, name, ns, fin, repo, path, ns)
}

// kubectlApply server-side applies a YAML document as `kubectl apply --server-side` does.
func kubectlApply(t *testing.T, dyn dynamic.Interface, ns, doc string) {
	t.Helper()
	kubectlApplyAs(t, dyn, host.ApplicationsResource, ns, doc)
}

func kubectlApplyAs(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, doc string) {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	body, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), u.GetName(), types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
		t.Fatalf("apply %s: %v", u.GetName(), err)
	}
}

// waitCR waits until the Application resource satisfies ok and returns it.
func waitCR(t *testing.T, dyn dynamic.Interface, ns, name, what string, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		u, err := dyn.Resource(host.ApplicationsResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			var st any
			if u != nil {
				st = u.Object["status"]
			}
			t.Fatalf("Application %s: waited too long for %s; last %v %v", name, what, err, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

func hasCondition(u *unstructured.Unstructured, typ, contains string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && strings.Contains(fmt.Sprint(m["message"]), contains) {
			return true
		}
	}
	return false
}

func TestApplicationsFromTheCluster(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) { o.ClusterApps, o.ClusterAppsNamespace = true, ns })
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	sha1 := w.source.Commit("main", map[string]string{
		"web/cm.yaml":  fmt.Sprintf(cm, "blue"),
		"web2/cm.yaml": fmt.Sprintf(cm, "green"),
		"keep/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {a: b}\n",
		"twin/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twin}\ndata: {a: b}\n",
		"proj/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: proj}\ndata: {a: b}\n",
		"bad/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: never}\ndata: {a: b}\n",
	}, "first")

	// The CRDs are installed by the host; applying an Application resource syncs it and its
	// status is written in Argo CD's shape.
	waitCRD(t, dyn)
	kubectlApply(t, dyn, w.ns, clusterApp("web", w.ns, w.source.URL(), "web", true))
	u := waitCR(t, dyn, w.ns, "web", "Synced/Healthy", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced" && str(u, "status", "health", "status") == "Healthy" &&
			str(u, "status", "operationState", "phase") == "Succeeded"
	})
	if got := str(u, "status", "sync", "revision"); got != sha1 {
		t.Errorf("status.sync.revision = %q, want %q", got, sha1)
	}
	for _, f := range [][]string{{"status", "operationState", "startedAt"}, {"status", "operationState", "finishedAt"}, {"status", "reconciledAt"}} {
		if v := str(u, f...); v == "" {
			t.Errorf("%s is empty", strings.Join(f, "."))
		} else if _, err := time.Parse(time.RFC3339, v); err != nil {
			t.Errorf("%s = %q: %v", strings.Join(f, "."), v, err)
		}
	}
	res, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	if len(res) != 1 || res[0].(map[string]any)["kind"] != "ConfigMap" || res[0].(map[string]any)["status"] != "Synced" {
		t.Errorf("status.resources = %v, want the ConfigMap, Synced", res)
	}
	got, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || got.Data["color"] != "blue" {
		t.Fatalf("ConfigMap: %v %v", got.Data, err)
	}
	// The app is one of the runtime's: the applications API lists it.
	var a host.Application
	if code := w.call("viewer", "GET", "applications/web", "", &a); code != http.StatusOK || a.Status.Sync != "Synced" {
		t.Errorf("GET applications/web: %d %+v", code, a.Status)
	}

	// The applications API does not delete it: kubectl does.
	if code := w.call("admin", "DELETE", "applications/web", "", nil); code != http.StatusConflict {
		t.Errorf("DELETE applications/web = %d, want 409", code)
	}

	// Edit: the new spec is synced.
	kubectlApply(t, dyn, w.ns, clusterApp("web", w.ns, w.source.URL(), "web2", true))
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
		if err == nil && got.Data["color"] == "green" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConfigMap after the edit: %v %v", got.Data, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Bad input: a condition naming the field; nothing applied.
	bad := strings.Replace(clusterApp("bad", w.ns, w.source.URL(), "bad", true), "namespace: "+w.ns+"}", "namespace: Not_A_Namespace}", 1)
	kubectlApply(t, dyn, w.ns, bad)
	waitCR(t, dyn, w.ns, "bad", "an InvalidSpecError", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidSpecError", "spec.destination.namespace") && str(u, "status", "sync", "status") == "Unknown"
	})
	if msg := fmt.Sprint(mustGet(t, dyn, w.ns, "bad").Object["status"]); strings.Contains(msg, "line 1") {
		t.Errorf("the condition names a line of the JSON the runtime made: %s", msg)
	}
	// Once written, a refused resource's status stays as it is: no write a second (each write is
	// an update the runtime's own watch sees).
	rv := mustGet(t, dyn, w.ns, "bad").GetResourceVersion()
	time.Sleep(2500 * time.Millisecond)
	if now := mustGet(t, dyn, w.ns, "bad").GetResourceVersion(); now != rv {
		t.Errorf("the refused resource was written again with nothing changed (resourceVersion %s → %s)", rv, now)
	}
	if code := w.call("viewer", "GET", "applications/bad", "", nil); code != http.StatusNotFound {
		t.Errorf("GET applications/bad = %d, want 404 (not run)", code)
	}
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "never", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the invalid app's ConfigMap: %v, want not found", err)
	}

	// A name held by an application in git: refused, the condition names both origins; the
	// git app is left alone.
	if code := w.call("member", "POST", "applications", appYAML("twin", w.source.URL(), w.ns, false), nil); code != http.StatusCreated {
		t.Fatalf("create twin in git: %d", code)
	}
	kubectlApply(t, dyn, w.ns, clusterApp("twin", w.ns, w.source.URL(), "twin", false))
	waitCR(t, dyn, w.ns, "twin", "a condition naming both origins", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidSpecError", "apps/twin.yaml") && hasCondition(u, "InvalidSpecError", "Application resource "+w.ns+"/twin")
	})
	if code := w.call("viewer", "GET", "applications/twin", "", &a); code != http.StatusOK || a.File != "apps/twin.yaml" || a.Spec.Spec.Source.Path != "web" {
		t.Errorf("the git app twin: %d file %q", code, a.File)
	}

	// Once git releases the name, the resource's app runs.
	if code := w.call("member", "DELETE", "applications/twin", "", nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("delete the git twin: %d", code)
	}
	waitCR(t, dyn, w.ns, "twin", "Synced once git released the name", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced" && !hasCondition(u, "InvalidSpecError", "")
	})

	// The other way round: a resource holds "web", a file in git naming it is refused (a load
	// problem of the gitops component) and the resource's app runs on.
	commitInstall(t, w, map[string]string{"apps/web.yaml": appYAML("web", w.source.URL(), w.ns, false)})
	if h := w.h.Health(); !strings.Contains(h.Message, `apps/web.yaml: application "web" is defined twice`) || !strings.Contains(h.Message, "Application resource "+w.ns+"/web") {
		t.Errorf("gitops component health %q: want the git file refused, naming both origins", h.Message)
	}
	var web host.Application
	if code := w.call("viewer", "GET", "applications/web", "", &web); code != http.StatusOK || web.File != "Application resource "+w.ns+"/web" || web.Spec == nil || web.Spec.Spec.Source.Path != "web2" {
		t.Errorf("applications/web after the git file: %d file %q", code, web.File)
	}

	// An AppProject resource of the namespace is the project of the resources naming it.
	kubectlApplyAs(t, dyn, host.AppProjectsResource, w.ns, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team, namespace: %s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: %s}]
`, w.ns, w.ns))
	kubectlApply(t, dyn, w.ns, strings.Replace(strings.Replace(clusterApp("projapp", w.ns, w.source.URL(), "projapp", true), "project: default", "project: team", 1), "path: projapp", "path: proj", 1))
	waitCR(t, dyn, w.ns, "projapp", "Synced in project team", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced" && str(u, "status", "health", "status") == "Healthy"
	})
	if err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Delete(ctx, "projapp", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "Application resource projapp", func() bool {
		_, err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Get(ctx, "projapp", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// AppProject resources get a status as Argo CD writes it (jwtTokensByRole, empty: no
	// project tokens), plus a warning per policy line that does not parse and a spec error for
	// a project that does not decode; fixed, the conditions go.
	waitProject := func(name, what string, ok func(*unstructured.Unstructured) bool) {
		t.Helper()
		var u *unstructured.Unstructured
		waitGone(t, "AppProject "+name+": "+what, func() bool {
			var err error
			u, err = dyn.Resource(host.AppProjectsResource).Namespace(w.ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && ok(u)
		})
	}
	waitProject("team", "jwtTokensByRole, no conditions", func(u *unstructured.Unstructured) bool {
		m, found, _ := unstructured.NestedMap(u.Object, "status", "jwtTokensByRole")
		_, hasConds, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return found && len(m) == 0 && !hasConds
	})
	rolesProject := func(policy string) string {
		return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: roles, namespace: %s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: %s}]
  roles:
  - name: deployer
    groups: [qa]
    policies:
    - p, proj:roles:deployer, applications, sync, roles/web-*, allow
    - %s
`, w.ns, w.ns, policy)
	}
	kubectlApplyAs(t, dyn, host.AppProjectsResource, w.ns, rolesProject("p, proj:roles:deployer, applications, launch, roles/*, allow"))
	waitProject("roles", "the bad policy line named", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidPolicyWarning", `spec.roles[0].policies[1] (role "deployer") "p, proj:roles:deployer, applications, launch, roles/*, allow" is ignored: action "launch" is not valid`)
	})
	kubectlApplyAs(t, dyn, host.AppProjectsResource, w.ns, strings.Replace(rolesProject("p, proj:roles:deployer, applications, get, roles/*, allow"), "name: deployer", "name: -bad-", 1))
	waitProject("roles", "the spec error named", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "InvalidSpecError", "spec.roles[0].name") && !hasCondition(u, "InvalidPolicyWarning", "")
	})
	kubectlApplyAs(t, dyn, host.AppProjectsResource, w.ns, rolesProject("p, proj:roles:deployer, applications, get, roles/*, allow"))
	waitProject("roles", "the conditions gone", func(u *unstructured.Unstructured) bool {
		_, hasConds, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		_, found, _ := unstructured.NestedMap(u.Object, "status", "jwtTokensByRole")
		return found && !hasConds
	})
	// The runtime reports its AppProjects' roles to the control plane (which derives rules from
	// them): the role with its parsed lines; once the AppProject is deleted, a list without it.
	lastRoles := func() (runtimev1.AppEvent, bool) {
		evs := w.sink.events(runtimev1.ProjectRolesListed, "")
		if len(evs) == 0 {
			return runtimev1.AppEvent{}, false
		}
		return evs[len(evs)-1], true
	}
	waitGone(t, "the roles reported", func() bool {
		ev, ok := lastRoles()
		for _, r := range ev.ProjectRoles {
			if ok && r.Project == "roles" && r.Role == "deployer" && slices.Equal(r.Groups, []string{"qa"}) &&
				slices.Equal(r.Policies, []runtimev1.ProjectPolicyRecord{{Resource: "applications", Action: "sync", Object: "web-*", Allow: true}, {Resource: "applications", Action: "get", Object: "*", Allow: true}}) {
				return true
			}
		}
		return false
	})
	if err := dyn.Resource(host.AppProjectsResource).Namespace(w.ns).Delete(ctx, "roles", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the roles reported gone", func() bool {
		ev, ok := lastRoles()
		return ok && !slices.ContainsFunc(ev.ProjectRoles, func(r runtimev1.ProjectRoleRecord) bool { return r.Project == "roles" })
	})

	// Without the finalizer, deleting the resource stops managing the app; resources stay.
	kubectlApply(t, dyn, w.ns, clusterApp("keep", w.ns, w.source.URL(), "keep", false))
	waitCR(t, dyn, w.ns, "keep", "Synced", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced"
	})
	if err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Delete(ctx, "keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "application keep", func() bool {
		return w.call("viewer", "GET", "applications/keep", "", nil) == http.StatusNotFound
	})
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap of an app deleted without the finalizer: %v, want kept", err)
	}

	// With the finalizer: its resources are deleted, then the finalizer is removed.
	if err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "Application resource web", func() bool {
		_, err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap of an app deleted with the finalizer: %v, want deleted", err)
	}
	if code := w.call("viewer", "GET", "applications/web", "", nil); code != http.StatusNotFound {
		t.Errorf("GET applications/web after delete = %d, want 404", code)
	}
	// The refused ones carry the finalizer too: deleting them removes it (nothing to delete).
	if err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "Application resource bad", func() bool {
		_, err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Get(ctx, "bad", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func waitCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	waitGone(t, "the Application CRD", func() bool {
		_, err := dyn.Resource(host.ApplicationsResource).List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil
	})
}

// waitGone waits (60 s) until done.
func waitGone(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: waited too long", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustGet(t *testing.T, dyn dynamic.Interface, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(host.ApplicationsResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// An Application resource deleted with the finalizer while no runtime watched still takes its
// resources with it when a runtime starts.
func TestClusterApplicationDeletedWhileStopped(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) { o.ClusterApps, o.ClusterAppsNamespace = true, ns })
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	waitCRD(t, dyn)
	kubectlApply(t, dyn, w.ns, clusterApp("late", w.ns, w.source.URL(), "web", true))
	waitCR(t, dyn, w.ns, "late", "Synced", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced" && str(u, "status", "health", "status") == "Healthy"
	})
	w.stop()
	if err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Delete(ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Get(ctx, "late", metav1.GetOptions{}); err != nil {
		t.Fatalf("the resource is held by its finalizer while no runtime runs: %v", err)
	}
	o := w.opts
	o.Dir = t.TempDir()
	h, err := host.New(o)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitGone(t, "Application resource late", func() bool {
		_, err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Get(ctx, "late", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap of an app deleted with the finalizer while stopped: %v, want deleted", err)
	}
}

// postDeleteJob is a PostDelete hook Job whose pod exits with code (the devcluster's fake node
// runs it to that end).
func postDeleteJob(name, code string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations: {argocd.argoproj.io/hook: PostDelete}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {%s: %q}
    spec:
      restartPolicy: Never
      containers: [{name: cleanup, image: busybox}]
`, name, kube.AnnotationExitCode, code)
}

// An Application resource deleted with the resources finalizer whose PostDelete hook fails
// stays, deleting, as in Argo CD: its resources are gone, its status has a DeletionError
// condition naming the hook, the finalizer stays; the hook fixed in git, the deletion finishes
// and the resource goes.
func TestClusterApplicationPostDeleteHookFails(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) {
		o.ClusterApps, o.ClusterAppsNamespace = true, ns
		o.Engine.RetryBase, o.Engine.RetryMax = 500*time.Millisecond, 3*time.Second
	})
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	w.source.Commit("main", map[string]string{"pd/cm.yaml": fmt.Sprintf(cm, "blue"), "pd/hook.yaml": postDeleteJob("pd-cleanup", "1")}, "failing hook")
	waitCRD(t, dyn)
	kubectlApply(t, dyn, w.ns, clusterApp("pd", w.ns, w.source.URL(), "pd", true))
	waitCR(t, dyn, w.ns, "pd", "Synced", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced"
	})
	if err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Delete(ctx, "pd", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u := waitCR(t, dyn, w.ns, "pd", "the DeletionError condition", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "DeletionError", "PostDelete hook") && hasCondition(u, "DeletionError", "pd-cleanup")
	})
	if u.GetDeletionTimestamp() == nil || !slices.Contains(u.GetFinalizers(), host.CascadeFinalizer) {
		t.Errorf("the resource while its hook fails: deletionTimestamp %v finalizers %v", u.GetDeletionTimestamp(), u.GetFinalizers())
	}
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the app's ConfigMap while the hook fails: %v, want deleted", err)
	}
	if code := w.call("viewer", "GET", "applications/pd", "", nil); code != http.StatusOK {
		t.Errorf("GET applications/pd while deleting = %d, want 200", code)
	}

	// The hook fixed in git: a retry runs it, the deletion finishes, the resource goes.
	w.source.Commit("main", map[string]string{"pd/hook.yaml": postDeleteJob("pd-cleanup", "0")}, "fixed hook")
	w.h.Engine().Notify(w.source.URL(), "main")
	waitGone(t, "Application resource pd", func() bool {
		_, err := dyn.Resource(host.ApplicationsResource).Namespace(w.ns).Get(ctx, "pd", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	var left host.Application
	if code := w.call("viewer", "GET", "applications/pd", "", &left); code != http.StatusNotFound {
		t.Errorf("GET applications/pd after the deletion = %d %+v, want 404", code, left.Status.Conditions)
	}
	if _, err := w.kc.BatchV1().Jobs(w.ns).Get(ctx, "pd-cleanup", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hook Job after the deletion: %v, want deleted", err)
	}
}
