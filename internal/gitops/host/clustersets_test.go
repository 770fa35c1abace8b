package host_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// waitSet waits until the ApplicationSet resource satisfies ok and returns it.
func waitSet(t *testing.T, dyn dynamic.Interface, ns, name, what string, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		u, err := dyn.Resource(host.ApplicationSetsResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			var st any
			if u != nil {
				st = u.Object["status"]
			}
			t.Fatalf("ApplicationSet %s: waited too long for %s; last %v %v", name, what, err, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitSetCRD waits until the API server serves ApplicationSets.
func waitSetCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	waitCRD(t, dyn)
	waitGone(t, "the ApplicationSet CRD", func() bool {
		_, err := dyn.Resource(host.ApplicationSetsResource).List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil
	})
}

func setCondition(u *unstructured.Unstructured, typ, status, contains string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == status && strings.Contains(fmt.Sprint(m["message"]), contains) && m["reason"] != nil && m["lastTransitionTime"] != nil {
			return true
		}
	}
	return false
}

func TestApplicationSetsFromTheCluster(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) { o.ClusterApps, o.ClusterAppsNamespace = true, ns })
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cmNamed := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%s}\ndata: {env: %s}\n", name, name)
	}
	w.source.Commit("main", map[string]string{"envs/dev/cm.yaml": cmNamed("dev"), "envs/qa/cm.yaml": cmNamed("qa")}, "envs")
	set := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: envs, namespace: %s}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - git:
      repoURL: %s
      revision: main
      directories:
      - path: envs/*
  template:
    metadata:
      name: 'env-{{.path.basename}}'
    spec:
      project: default
      source: {repoURL: %s, targetRevision: main, path: '{{.path.path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: %s}
      syncPolicy: {automated: {prune: true}}
`, w.ns, w.source.URL(), w.source.URL(), w.ns)
	waitSetCRD(t, dyn)
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, set)

	// The generated applications run and show their owner; the resource's status lists them
	// with their sync and health, in Argo CD's shape.
	for _, name := range []string{"env-dev", "env-qa"} {
		a := w.waitApp(name, synced)
		if a.Owner != "envs" || a.OwnerKind != engine.KindApplicationSet || !strings.Contains(a.File, "ApplicationSet resource "+w.ns+"/envs") {
			t.Errorf("%s: owner %q kind %q file %q", name, a.Owner, a.OwnerKind, a.File)
		}
	}
	u := waitSet(t, dyn, w.ns, "envs", "resources Synced/Healthy", func(u *unstructured.Unstructured) bool {
		res, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
		if len(res) != 2 {
			return false
		}
		for _, r := range res {
			m := r.(map[string]any)
			h, _ := m["health"].(map[string]any)
			if m["kind"] != "Application" || m["group"] != "argoproj.io" || m["status"] != "Synced" || h["status"] != "Healthy" || m["namespace"] != w.ns {
				return false
			}
		}
		return true
	})
	for _, c := range [][2]string{{"ErrorOccurred", "False"}, {"ParametersGenerated", "True"}, {"ResourcesUpToDate", "True"}} {
		if !setCondition(u, c[0], c[1], "") {
			t.Errorf("condition %s=%s missing: %v", c[0], c[1], u.Object["status"])
		}
	}

	// A new directory: generated at once when the set's spec changes (else within the
	// requeue interval, or at a push notification).
	w.source.Commit("main", map[string]string{"envs/prod/cm.yaml": cmNamed("prod")}, "prod")
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, strings.Replace(set, "  goTemplate: true\n", "  goTemplate: true\n  syncPolicy: {applicationsSync: sync}\n", 1))
	w.waitApp("env-prod", synced)

	// Bad input: the error names the field; the applications stay as they were.
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, strings.Replace(set, "generators:", "generatorz:", 1))
	waitSet(t, dyn, w.ns, "envs", "an ErrorOccurred condition", func(u *unstructured.Unstructured) bool {
		return setCondition(u, "ErrorOccurred", "True", "generatorz") && !strings.Contains(fmt.Sprint(u.Object["status"]), "line 1:")
	})
	if code := w.call("viewer", "GET", "applications/env-prod", "", nil); code != http.StatusOK {
		t.Errorf("env-prod after a bad edit: %d, want kept", code)
	}
	// A template rendering an invalid Application: the condition names the generator element.
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, strings.Replace(set, "name: 'env-{{.path.basename}}'", "name: 'Env_{{.path.basename}}'", 1))
	waitSet(t, dyn, w.ns, "envs", "an ErrorOccurred naming the element", func(u *unstructured.Unstructured) bool {
		return setCondition(u, "ErrorOccurred", "True", "generators[0].git.directories")
	})
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, set)
	waitSet(t, dyn, w.ns, "envs", "recovered", func(u *unstructured.Unstructured) bool {
		return setCondition(u, "ErrorOccurred", "False", "")
	})

	// A name held by an ApplicationSet in git: refused, saying so.
	list := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: twins, namespace: %s}
spec:
  generators: [{list: {elements: [{env: one}]}}]
  template:
    metadata: {name: 'twin-{{env}}'}
    spec:
      project: default
      source: {repoURL: %s, targetRevision: main, path: envs/dev}
      destination: {server: https://kubernetes.default.svc, namespace: %s}
`, w.ns, w.source.URL(), w.ns)
	commitInstall(t, w, map[string]string{"apps/twins.yaml": list})
	w.waitApp("twin-one", func(engine.AppStatus) bool { return true })
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, list)
	waitSet(t, dyn, w.ns, "twins", "a condition naming the other origin", func(u *unstructured.Unstructured) bool {
		return setCondition(u, "ErrorOccurred", "True", "installation repository")
	})
	if a := w.waitApp("twin-one", func(engine.AppStatus) bool { return true }); strings.Contains(a.File, "resource") {
		t.Errorf("the git set's app was taken over: %q", a.File)
	}

	// Deleting the resource deletes its applications and, through their finalizer, their
	// resources.
	if err := dyn.Resource(host.ApplicationSetsResource).Namespace(w.ns).Delete(ctx, "envs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"env-dev", "env-qa", "env-prod"} {
		waitGone(t, "application "+name, func() bool { return w.call("viewer", "GET", "applications/"+name, "", nil) == http.StatusNotFound })
	}
	waitGone(t, "ConfigMap cm-dev", func() bool {
		_, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "cm-dev", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// A RollingSync ApplicationSet resource: applicationStatus says each app's step and state,
// read back from the API server, until every step is Healthy.
func TestApplicationSetResourceRollingSync(t *testing.T) {
	w := newWorldWith(t, func(ns string, o *host.Options) { o.ClusterApps, o.ClusterAppsNamespace = true, ns })
	dyn, err := dynamic.NewForConfig(kube.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cmNamed := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n", name)
	}
	w.source.Commit("main", map[string]string{"env/dev/cm.yaml": cmNamed("r-dev"), "env/prod/cm.yaml": cmNamed("r-prod")}, "envs")
	waitSetCRD(t, dyn)
	kubectlApplyAs(t, dyn, host.ApplicationSetsResource, w.ns, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: rolling, namespace: %s}
spec:
  goTemplate: true
  generators:
  - list:
      elements: [{env: dev}, {env: prod}]
  strategy:
    type: RollingSync
    rollingSync:
      steps:
      - matchExpressions: [{key: envLabel, operator: In, values: [dev]}]
      - matchExpressions: [{key: envLabel, operator: In, values: [prod]}]
  template:
    metadata:
      name: 'r-{{.env}}'
      labels: {envLabel: '{{.env}}'}
    spec:
      project: default
      source: {repoURL: %s, targetRevision: main, path: 'env/{{.env}}'}
      destination: {server: https://kubernetes.default.svc, namespace: %s}
      syncPolicy: {automated: {prune: true}}
`, w.ns, w.source.URL(), w.ns))
	u := waitSet(t, dyn, w.ns, "rolling", "every step Healthy", func(u *unstructured.Unstructured) bool {
		st, _, _ := unstructured.NestedSlice(u.Object, "status", "applicationStatus")
		if len(st) != 2 {
			return false
		}
		for _, s := range st {
			if s.(map[string]any)["status"] != "Healthy" {
				return false
			}
		}
		return true
	})
	st, _, _ := unstructured.NestedSlice(u.Object, "status", "applicationStatus")
	steps := map[any]any{}
	for _, s := range st {
		m := s.(map[string]any)
		steps[m["application"]] = m["step"]
	}
	if steps["r-dev"] != "1" || steps["r-prod"] != "2" {
		t.Errorf("applicationStatus steps %v, want r-dev 1, r-prod 2", steps)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	found := false
	for _, c := range conds {
		if c.(map[string]any)["type"] == "RolloutProgressing" {
			found = true
		}
	}
	if !found {
		t.Errorf("no RolloutProgressing condition: %v", conds)
	}
}
