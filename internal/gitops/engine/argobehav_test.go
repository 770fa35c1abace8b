package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

func settings(t *testing.T, data map[string]string) engine.Settings {
	t.Helper()
	s, problems := engine.ParseSettings(data)
	if len(problems) > 0 {
		t.Fatalf("argocd-cm problems: %v", problems)
	}
	return s
}

// A ConfigMap's health from an argocd-cm Lua customization (resource.customizations.health.ConfigMap),
// following the live object; a script replaced at run time by one that never ends makes the
// resource Unknown with the bound named, and the application with it.
func TestLuaHealthCustomization(t *testing.T) {
	const script = `
hs = {status = "Healthy", message = "value " .. obj.data.value}
if obj.data.value == "bad" then hs.status = "Degraded" end
return hs`
	v := newEnv(t, func(o *engine.Options) {
		o.Settings = settings(t, map[string]string{"resource.customizations.health.ConfigMap": script})
	})
	v.repo.Commit("main", map[string]string{"lua/cm.yaml": configMap("cm", "bad")}, "bad")
	v.upsert(v.application("lua", "lua", ""))
	v.mustSucceed(v.sync("lua", engine.SyncOptions{}))
	s := v.waitStatus("lua", 20*time.Second, "degraded by the script", func(s engine.AppStatus) bool {
		return s.Health.Status == health.Degraded
	})
	if !strings.Contains(s.Health.Message, "value bad") {
		t.Fatalf("health message %q", s.Health.Message)
	}
	v.repo.Commit("main", map[string]string{"lua/cm.yaml": configMap("cm", "good")}, "good")
	v.mustSucceed(v.sync("lua", engine.SyncOptions{}))
	v.waitStatus("lua", 20*time.Second, "healthy by the script", func(s engine.AppStatus) bool {
		return s.Health.Status == health.Healthy && s.Sync == engine.Synced
	})

	v.e.SetSettings(settings(t, map[string]string{"resource.customizations.health.ConfigMap": "while true do end"}))
	s = v.waitStatus("lua", 20*time.Second, "unknown: the script is stopped", func(s engine.AppStatus) bool {
		return s.Health.Status == health.Unknown
	})
	if !strings.Contains(s.Health.Message, "resource.customizations.health.ConfigMap stopped") {
		t.Fatalf("health message %q", s.Health.Message)
	}
	// Without customizations the built-in assessment is back.
	v.e.SetSettings(engine.Settings{})
	v.waitStatus("lua", 20*time.Second, "built-in health", func(s engine.AppStatus) bool { return s.Health.Status == health.Healthy })
}

// compare-options: IgnoreExtraneous: a resource that requires pruning does not make the app
// OutOfSync; one without the option does.
func TestCompareOptionsIgnoreExtraneous(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"x/keep.yaml":  configMap("keep", "1"),
		"x/extra.yaml": configMap("extra", "1", "argocd.argoproj.io/compare-options: IgnoreExtraneous"),
		"x/gone.yaml":  configMap("gone", "1"),
	}, "three")
	v.upsert(v.application("x", "x", ""))
	v.mustSucceed(v.sync("x", engine.SyncOptions{}))
	v.repo.Delete("main", "extra leaves git", "x/extra.yaml")
	s := v.refresh("x")
	r, ok := resourceStatus(s, "ConfigMap", "extra")
	if !ok || !r.RequiresPruning {
		t.Fatalf("extra: %+v (ok %v)", r, ok)
	}
	if s.Sync != engine.Synced {
		t.Fatalf("app %s, want Synced: the only extraneous resource has IgnoreExtraneous", s.Sync)
	}
	v.repo.Delete("main", "gone leaves git", "x/gone.yaml")
	if s = v.refresh("x"); s.Sync != engine.OutOfSync {
		t.Fatalf("app %s, want OutOfSync: gone requires pruning", s.Sync)
	}
}

// Validate=false applies an object with a field its schema does not know (the API server drops
// it); without it the comparison names the field.
func TestValidateFalse(t *testing.T) {
	v := newEnv(t)
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loose%s\ndata:\n  a: \"1\"\nbogus: true\n"
	v.repo.Commit("main", map[string]string{
		"strict/cm.yaml": strings.Replace(cm, "%s", "", 1),
		"loose/cm.yaml":  strings.Replace(cm, "%s", "\n  annotations:\n    argocd.argoproj.io/sync-options: Validate=false", 1),
	}, "unknown field")
	v.upsert(v.application("strict", "strict", ""))
	s := v.refresh("strict")
	var cerr string
	for _, c := range s.Conditions {
		if c.Type == engine.ConditionComparisonError {
			cerr = c.Message
		}
	}
	if !strings.Contains(cerr, "bogus") {
		t.Fatalf("strict: no comparison error naming the field: %v", s.Conditions)
	}
	v.upsert(v.application("loose", "loose", ""))
	v.mustSucceed(v.sync("loose", engine.SyncOptions{}))
	live := v.mustGet(gvrCM, "loose")
	if _, has := live.Object["bogus"]; has {
		t.Fatal("the unknown field was stored")
	}
	v.waitStatus("loose", 20*time.Second, "synced", func(s engine.AppStatus) bool { return s.Sync == engine.Synced })
	// The app-level option does the same for every resource.
	v.upsert(v.application("strict", "strict", "  syncPolicy:\n    syncOptions: [Validate=false]\n"))
	v.mustSucceed(v.sync("strict", engine.SyncOptions{}))
}

// A resource whose kind the cluster does not know, with no CRD of the app defining it, fails
// the sync before anything is applied; SkipDryRunOnMissingResource=true lets the rest apply.
func TestSkipDryRunOnMissingResource(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) { o.CRDWait = time.Second })
	const widget = "apiVersion: example.freshet.dev/v1\nkind: Widget\nmetadata:\n  name: w%s\nspec: {}\n"
	v.repo.Commit("main", map[string]string{
		"strict/cm.yaml": configMap("strict-cm", "1"),
		"strict/w.yaml":  strings.Replace(widget, "%s", "", 1),
		"skip/cm.yaml":   configMap("skip-cm", "1"),
		"skip/w.yaml":    strings.Replace(widget, "%s", "\n  annotations:\n    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true", 1),
	}, "widgets")
	v.upsert(v.application("strict", "strict", ""))
	res := v.sync("strict", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, "SkipDryRunOnMissingResource") || !strings.Contains(res.Message, "Widget") {
		t.Fatalf("strict: %s: %s", res.Phase, res.Message)
	}
	if _, ok := v.get(gvrCM, "strict-cm"); ok {
		t.Fatal("strict: the ConfigMap was applied though the sync failed before applying")
	}
	v.upsert(v.application("skip", "skip", ""))
	res = v.sync("skip", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || result(res, "Widget", "w") != engine.ResultFailed {
		t.Fatalf("skip: %s: %s %+v", res.Phase, res.Message, res.Resources)
	}
	v.mustGet(gvrCM, "skip-cm") // applied before the Widget, which waited for its kind
}

// application.resourceTrackingMethod: annotation+label writes Argo CD's tracking id and instance
// label besides Freshet's own markers.
func TestTrackingMethodMarkers(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) {
		o.Settings = settings(t, map[string]string{"application.resourceTrackingMethod": "annotation+label"})
	})
	v.repo.Commit("main", map[string]string{"t/cm.yaml": configMap("tracked", "1")}, "cm")
	v.upsert(v.application("tracked-app", "t", ""))
	v.mustSucceed(v.sync("tracked-app", engine.SyncOptions{}))
	live := v.mustGet(gvrCM, "tracked")
	if got, want := live.GetAnnotations()[engine.AnnotationArgoTrackingID], "tracked-app:/ConfigMap:"+v.ns+"/tracked"; got != want {
		t.Fatalf("tracking id %q, want %q", got, want)
	}
	if got := live.GetLabels()[engine.DefaultInstanceLabelKey]; got != "tracked-app" {
		t.Fatalf("instance label %q", got)
	}
	if live.GetLabels()[engine.LabelApp] == "" || live.GetAnnotations()[engine.AnnotationTrackingID] == "" {
		t.Fatalf("Freshet's own markers missing: %v %v", live.GetLabels(), live.GetAnnotations())
	}
	if s := v.refresh("tracked-app"); s.Sync != engine.Synced {
		t.Fatalf("sync %s", s.Sync)
	}
	// Switching to label tracking drops the annotation at the next sync.
	v.e.SetSettings(settings(t, map[string]string{"application.resourceTrackingMethod": "label"}))
	if s := v.refresh("tracked-app"); s.Sync != engine.OutOfSync {
		t.Fatalf("after the switch: %s, want OutOfSync", s.Sync)
	}
	v.mustSucceed(v.sync("tracked-app", engine.SyncOptions{}))
	if _, has := v.mustGet(gvrCM, "tracked").GetAnnotations()[engine.AnnotationArgoTrackingID]; has {
		t.Fatal("the tracking id stayed")
	}
}

// Objects Argo CD applied for an app (its tracking id or instance label) that the app no longer
// renders require pruning when the app first comes to Freshet; objects of other apps and the
// ones still rendered are left to the sync.
func TestAdoptArgoTrackedObjects(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) {
		o.Settings = settings(t, map[string]string{"application.resourceTrackingMethod": "annotation+label"})
	})
	create := func(name string, labels, ann map[string]string) {
		t.Helper()
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": v.ns}, "data": map[string]any{"value": "argo"}}}
		o.SetLabels(labels)
		o.SetAnnotations(ann)
		if _, err := v.c.Dynamic.Resource(gvrCM).Namespace(v.ns).Create(context.Background(), o, metav1.CreateOptions{FieldManager: "argocd-controller"}); err != nil {
			t.Fatal(err)
		}
	}
	id := func(app, name string) map[string]string {
		return map[string]string{engine.AnnotationArgoTrackingID: app + ":/ConfigMap:" + v.ns + "/" + name}
	}
	create("keep", nil, id("guestbook", "keep"))
	create("old", nil, id("guestbook", "old"))
	create("old-label", map[string]string{engine.DefaultInstanceLabelKey: "guestbook"}, nil)
	create("other", nil, id("other-app", "other"))
	create("copied", nil, id("guestbook", "original")) // a copy: its id names another object
	create("h-label-only", map[string]string{engine.DefaultInstanceLabelKey: "helmish"}, nil)
	create("h-old", nil, id("helmish", "h-old"))
	v.repo.Commit("main", map[string]string{"h/keep.yaml": configMap("h-keep", "git")}, "h")
	v.repo.Commit("main", map[string]string{"g/keep.yaml": configMap("keep", "git")}, "keep")
	v.upsert(v.application("guestbook", "g", ""))
	s := v.refresh("guestbook")
	for _, n := range []string{"old", "old-label"} {
		if r, ok := resourceStatus(s, "ConfigMap", n); !ok || !r.RequiresPruning {
			t.Fatalf("%s: %+v (listed %v)", n, r, ok)
		}
	}
	for _, n := range []string{"other", "copied"} {
		if _, ok := resourceStatus(s, "ConfigMap", n); ok {
			t.Fatalf("%s is listed", n)
		}
	}
	if s.Sync != engine.OutOfSync {
		t.Fatalf("sync %s", s.Sync)
	}
	res := v.sync("guestbook", engine.SyncOptions{Prune: true})
	v.mustSucceed(res)
	if result(res, "ConfigMap", "old") != engine.ResultPruned || result(res, "ConfigMap", "old-label") != engine.ResultPruned {
		t.Fatalf("prunes: %+v", res.Resources)
	}
	v.eventually(20*time.Second, "pruned objects gone", func() (bool, string) {
		_, a := v.get(gvrCM, "old")
		_, b := v.get(gvrCM, "old-label")
		return !a && !b, ""
	})
	v.mustGet(gvrCM, "other")
	v.mustGet(gvrCM, "copied")
	keep := v.mustGet(gvrCM, "keep")
	if keep.GetLabels()[engine.LabelApp] == "" {
		t.Fatal("keep was not adopted")
	}
	if d, _, _ := unstructured.NestedString(keep.Object, "data", "value"); d != "git" {
		t.Fatalf("keep: %q", d)
	}
	v.waitStatus("guestbook", 20*time.Second, "synced", func(s engine.AppStatus) bool { return s.Sync == engine.Synced })

	// Under annotation tracking, an object with only the instance label (a chart's own label)
	// is not taken for Argo CD's.
	v.e.SetSettings(settings(t, map[string]string{"application.resourceTrackingMethod": "annotation"}))
	v.upsert(v.application("helmish", "h", ""))
	s = v.refresh("helmish")
	if r, ok := resourceStatus(s, "ConfigMap", "h-old"); !ok || !r.RequiresPruning {
		t.Fatalf("h-old: %+v (listed %v)", r, ok)
	}
	if _, ok := resourceStatus(s, "ConfigMap", "h-label-only"); ok {
		t.Fatal("an object with only the instance label is listed under annotation tracking")
	}
}

// RespectIgnoreDifferences=true keeps the live values a jq path selects and the fields an
// ignored manager owns when a sync applies; without it, a sync writes what git says.
func TestRespectIgnoreDifferencesJQAndManagers(t *testing.T) {
	v := newEnv(t)
	cm := func(a string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  a: \"" + a + "\"\n  b: git\n  c: git\n"
	}
	v.repo.Commit("main", map[string]string{"r/cm.yaml": cm("1")}, "one")
	const ignore = "  ignoreDifferences:\n  - kind: ConfigMap\n    jqPathExpressions: ['.data.b']\n    managedFieldsManagers: [editor]\n"
	v.upsert(v.application("r", "r", ignore+"  syncPolicy:\n    syncOptions: [RespectIgnoreDifferences=true]\n"))
	v.mustSucceed(v.sync("r", engine.SyncOptions{}))
	// Someone edits b (a jq-ignored path) and c with the manager "editor".
	live := v.mustGet(gvrCM, "r")
	unstructured.SetNestedField(live.Object, "edited", "data", "b")
	unstructured.SetNestedField(live.Object, "edited", "data", "c")
	if _, err := v.c.Dynamic.Resource(gvrCM).Namespace(v.ns).Update(context.Background(), live, metav1.UpdateOptions{FieldManager: "editor"}); err != nil {
		t.Fatal(err)
	}
	v.waitStatus("r", 20*time.Second, "synced despite the edits", func(s engine.AppStatus) bool { return s.Sync == engine.Synced })
	v.repo.Commit("main", map[string]string{"r/cm.yaml": cm("2")}, "two")
	v.mustSucceed(v.sync("r", engine.SyncOptions{}))
	data, _, _ := unstructured.NestedStringMap(v.mustGet(gvrCM, "r").Object, "data")
	if data["a"] != "2" || data["b"] != "edited" || data["c"] != "edited" {
		t.Fatalf("with RespectIgnoreDifferences: %v, want a=2, b and c edited", data)
	}
	if s := v.refresh("r"); s.Sync != engine.Synced {
		t.Fatalf("after the sync: %s", s.Sync)
	}
	// Without the option the sync writes git's values.
	v.upsert(v.application("r", "r", ignore))
	v.repo.Commit("main", map[string]string{"r/cm.yaml": cm("3")}, "three")
	v.mustSucceed(v.sync("r", engine.SyncOptions{}))
	data, _, _ = unstructured.NestedStringMap(v.mustGet(gvrCM, "r").Object, "data")
	if data["a"] != "3" || data["b"] != "git" || data["c"] != "git" {
		t.Fatalf("without RespectIgnoreDifferences: %v, want git's values", data)
	}
}
