package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// childApp is an Application manifest as a parent app renders it (Argo CD's app-of-apps
// example shape: argocd namespace, resources finalizer, automated sync).
func (v *env) childApp(name, path, project string, automated bool) string {
	pol := ""
	if automated {
		pol = "\n  syncPolicy:\n    automated: {prune: true, selfHeal: true}"
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: argocd
  finalizers:
  - resources-finalizer.argocd.argoproj.io
spec:
  project: %s
  source:
    repoURL: %s
    path: %s
    targetRevision: main
  destination:
    server: https://kubernetes.default.svc
    namespace: %s%s
`, name, project, v.repo.URL(), path, v.ns, pol)
}

func (v *env) status(name string) (engine.AppStatus, bool) {
	s, err := v.e.Status(name)
	if errors.Is(err, engine.ErrAppNotFound) {
		return s, false
	}
	if err != nil {
		v.t.Fatal(err)
	}
	return s, true
}

// A parent app (a plain directory) whose manifests are Applications and an AppProject creates
// them as applications owned by it; the children sync themselves; their health rolls up into
// the parent's; a changed child is updated, a removed one pruned (its resources with it);
// after a restart the children come back; a cascading delete of the parent deletes the
// children and their resources.
func TestAppOfApps(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"guestbook/cm.yaml":   configMap("guestbook", "v1"),
		"blog/cm.yaml":        configMap("blog", "v1"),
		"root/guestbook.yaml": v.childApp("guestbook", "guestbook", "team", true),
		"root/blog.yaml":      v.childApp("blog", "blog", "default", true),
		"root/project.yaml": `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: team
  namespace: argocd
spec:
  sourceRepos: ['*']
  destinations:
  - {server: https://kubernetes.default.svc, namespace: '*'}
`,
	}, "app of apps")
	v.upsert(v.application("root", "root", ""))
	v.run()

	res := v.sync("root", engine.SyncOptions{Prune: true})
	v.mustSucceed(res)
	for _, n := range []string{"guestbook", "blog"} {
		if got := result(res, "Application", n); got != engine.ResultCreated {
			t.Errorf("sync result of Application %s: %q, want created", n, got)
		}
	}
	if got := result(res, "AppProject", "team"); got != engine.ResultCreated {
		t.Errorf("sync result of AppProject team: %q", got)
	}
	// The children are the engine's applications, owned by root, and sync themselves.
	for _, n := range []string{"guestbook", "blog"} {
		v.waitStatus(n, 30*time.Second, n+" synced and healthy", healthy)
		if s, _ := v.status(n); s.Owner != "root" {
			t.Errorf("%s owner %q, want root", n, s.Owner)
		}
		v.mustGet(gvrCM, n)
	}
	// Their health rolls up: the parent is Synced and Healthy, each child a Healthy resource.
	s := v.waitStatus("root", 20*time.Second, "root synced and healthy", healthy)
	r, ok := resourceStatus(s, "Application", "guestbook")
	if !ok || r.Group != engine.ArgoGroup || r.Status != engine.Synced || r.Health == nil || r.Health.Status != health.Healthy {
		t.Fatalf("root's resource Application/guestbook: %+v (found %v)", r, ok)
	}
	if s.Owner != "" {
		t.Errorf("root has owner %q", s.Owner)
	}

	// A changed child spec: the parent goes OutOfSync, a sync updates the child.
	v.repo.Commit("main", map[string]string{
		"blog2/cm.yaml":  configMap("blog2", "v2"),
		"root/blog.yaml": v.childApp("blog", "blog2", "default", true),
	}, "move blog")
	s = v.waitStatus("root", 20*time.Second, "root out of sync after the child's spec changed", func(s engine.AppStatus) bool { return s.Sync == engine.OutOfSync })
	if r, _ := resourceStatus(s, "Application", "blog"); r.Status != engine.OutOfSync {
		t.Errorf("Application/blog status %s, want OutOfSync", r.Status)
	}
	res = v.sync("root", engine.SyncOptions{Prune: true})
	v.mustSucceed(res)
	if got := result(res, "Application", "blog"); got != engine.ResultConfigured {
		t.Errorf("blog: %q, want configured", got)
	}
	if spec, _ := v.e.Spec("blog"); spec.Spec.Source.Path != "blog2" {
		t.Errorf("blog's path %q after the parent's sync", spec.Spec.Source.Path)
	}
	v.eventually(30*time.Second, "blog2 ConfigMap created and blog pruned by the child", func() (bool, string) {
		_, old := v.get(gvrCM, "blog")
		_, nw := v.get(gvrCM, "blog2")
		return nw && !old, fmt.Sprintf("blog %v blog2 %v", old, nw)
	})

	// Restart: the children come back from the parent's inventory.
	v.restart()
	v.upsert(v.application("root", "root", ""))
	v.refresh("root")
	for _, n := range []string{"guestbook", "blog"} {
		if s, ok := v.status(n); !ok || s.Owner != "root" {
			t.Fatalf("after a restart %s: present %v owner %q", n, ok, s.Owner)
		}
	}
	v.run()

	// A child the parent no longer renders is pruned, with its resources (finalizer).
	v.repo.Delete("main", "drop guestbook", "root/guestbook.yaml")
	v.refresh("root")
	res = v.sync("root", engine.SyncOptions{Prune: true})
	v.mustSucceed(res)
	if got := result(res, "Application", "guestbook"); got != engine.ResultPruned {
		t.Errorf("guestbook: %q, want pruned", got)
	}
	if _, ok := v.status("guestbook"); ok {
		t.Error("guestbook still an application after the parent pruned it")
	}
	// Deletion is foreground: the API server marks the ConfigMap and the garbage collector
	// removes it, later when the cluster is busy (seen in CI: still there at once).
	v.eventually(30*time.Second, "guestbook's ConfigMap deleted with its pruned application", func() (bool, string) {
		_, ok := v.get(gvrCM, "guestbook")
		return !ok, "still there"
	})

	// Cascading delete of the parent: children and their resources go.
	if err := v.e.Remove(v.ctx(30*time.Second), "root", true); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.status("blog"); ok {
		t.Error("blog still an application after the parent's cascading delete")
	}
	v.eventually(30*time.Second, "blog2 ConfigMap deleted", func() (bool, string) {
		_, ok := v.get(gvrCM, "blog2")
		return !ok, ""
	})
}

// A Helm chart of Applications and a Kustomize-rendered directory of them work as a plain
// directory does.
func TestAppOfAppsHelmAndKustomize(t *testing.T) {
	v := newEnv(t)
	tmpl := strings.ReplaceAll(v.childApp("{{ . }}", "{{ . }}", "default", false), "namespace: argocd", "namespace: {{ $.Release.Namespace }}")
	tmpl = "{{- range .Values.apps }}\n---\n" + tmpl + "{{- end }}\n" // $ is the chart's root context
	v.repo.Commit("main", map[string]string{
		"one/cm.yaml":               configMap("one", "1"),
		"two/cm.yaml":               configMap("two", "2"),
		"chart/Chart.yaml":          "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
		"chart/values.yaml":         "apps: [one, two]\n",
		"chart/templates/apps.yaml": tmpl,
		"kust/kustomization.yaml":   "resources: [app.yaml]\ncommonLabels: {team: blue}\n",
		"kust/app.yaml":             v.childApp("three", "two", "default", false),
	}, "charts")
	v.upsert(v.application("helm-root", "chart", ""))
	v.mustSucceed(v.sync("helm-root", engine.SyncOptions{}))
	for _, n := range []string{"one", "two"} {
		s, ok := v.status(n)
		if !ok || s.Owner != "helm-root" {
			t.Fatalf("%s: present %v owner %q", n, ok, s.Owner)
		}
	}
	v.upsert(v.application("kust-root", "kust", ""))
	v.mustSucceed(v.sync("kust-root", engine.SyncOptions{}))
	spec, err := v.e.Spec("three")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Metadata.Labels["team"] != "blue" {
		t.Errorf("kustomize's commonLabels not on the child: %v", spec.Metadata.Labels)
	}
	// A child not synced yet: Missing resources; the parent shows it (not Healthy).
	v.refresh("one")
	v.refresh("two")
	s := v.refresh("helm-root")
	if r, _ := resourceStatus(s, "Application", "one"); r.Health == nil || r.Health.Status != health.Missing {
		t.Errorf("unsynced child's health in the parent: %+v", r.Health)
	}
	if s.Health.Status != health.Missing {
		t.Errorf("parent health %s with a Missing child, want Missing", s.Health.Status)
	}
}

// Bad input: an invalid child, an ApplicationSet without a controller, or a child whose name another application
// holds is a clear condition on the parent, and nothing of the parent is applied.
func TestAppOfAppsBadInput(t *testing.T) {
	v := newEnv(t)
	bad := strings.Replace(v.childApp("broken", "x", "default", false), "  source:", "  sourcee:", 1)
	v.repo.Commit("main", map[string]string{
		"x/cm.yaml":         configMap("x", "1"),
		"invalid/app.yaml":  bad,
		"invalid/cm.yaml":   configMap("sibling", "1"),
		"appset/set.yaml":   "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: set}\nspec:\n  generators: []\n  template: {}\n",
		"appset/cm.yaml":    configMap("sibling2", "1"),
		"conflict/app.yaml": v.childApp("taken", "x", "default", false),
		"conflict/cm.yaml":  configMap("sibling3", "1"),
	}, "bad")
	cases := []struct{ parent, path, want, sibling string }{
		{"p-invalid", "invalid", `spec.sourcee: unknown field; did you mean "source"?`, "sibling"},
		{"p-appset", "appset", "runs no ApplicationSet controller", "sibling2"},
	}
	for _, c := range cases {
		v.upsert(v.application(c.parent, c.path, ""))
		s := v.refresh(c.parent)
		cond, ok := s.Condition(engine.ConditionInvalidSpec)
		if !ok || !strings.Contains(cond.Message, c.want) || cond.Source.File == "" {
			t.Errorf("%s: condition %+v (found %v), want one naming %q and its file", c.parent, cond, ok, c.want)
		}
		res := v.sync(c.parent, engine.SyncOptions{})
		if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, c.want) {
			t.Errorf("%s: sync %s: %s", c.parent, res.Phase, res.Message)
		}
		if _, ok := v.get(gvrCM, c.sibling); ok {
			t.Errorf("%s: the sibling ConfigMap was applied although the app's manifests are invalid", c.parent)
		}
	}
	// A child named like an application defined in git is refused by name.
	v.upsert(v.application("taken", "x", ""))
	v.upsert(v.application("p-conflict", "conflict", ""))
	s := v.refresh("p-conflict")
	if r, _ := resourceStatus(s, "Application", "taken"); !strings.Contains(r.Message, "already defined where applications are defined") {
		t.Errorf("conflicting child's resource message %q", r.Message)
	}
	res := v.sync("p-conflict", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, `Application "taken" is already defined`) {
		t.Errorf("conflicting sync %s: %s", res.Phase, res.Message)
	}
	if owner, _ := v.e.Owner("taken"); owner != "" {
		t.Errorf("the git-defined app was taken over by %q", owner)
	}
	// And the reverse: a git-defined app cannot replace a child.
	v.repo.Commit("main", map[string]string{"ok/app.yaml": v.childApp("kid", "x", "default", false)}, "ok")
	v.upsert(v.application("p-ok", "ok", ""))
	v.mustSucceed(v.sync("p-ok", engine.SyncOptions{}))
	if err := v.e.Upsert(v.application("kid", "x", ""), nil); !errors.Is(err, engine.ErrOwned) {
		t.Errorf("upsert over a child: %v, want ErrOwned", err)
	}
}
