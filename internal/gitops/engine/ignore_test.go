package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

const jqIgnores = `  ignoreDifferences:
  - group: apps
    kind: Deployment
    jqPathExpressions:
    - '.spec.template.spec.containers[] | select(.name == "sidecar")'
    - '.metadata.annotations["x"]'
%s  - kind: ConfigMap
    jqPathExpressions: ['.data[']
`

// applyAs server-side applies a partial Deployment as another field manager (a sidecar
// injector, an autoscaler).
func (v *env) applyAs(manager, name string, spec map[string]any) {
	v.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": v.ns},
		"spec":     spec,
	}}
	if _, err := v.c.Dynamic.Resource(gvrDeploy).Namespace(v.ns).Apply(context.Background(), name, obj,
		metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
		v.t.Fatal(err)
	}
}

// ignoreDifferences with jqPathExpressions and managedFieldsManagers: a sidecar container and an
// annotation added live, selected by jq, and replicas set by another field manager leave the
// app Synced; other drift does not; without the managers rule the replicas are drift again.
func TestIgnoreDifferencesJQAndManagers(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) { o.PollInterval = time.Hour })
	v.repo.Commit("main", map[string]string{
		"j/deploy.yaml": withSidecar(deployment("web", 1, "\n    x: git")),
		"j/cm.yaml":     configMap("conf", "v1"),
	}, "jq")
	managers := "    managedFieldsManagers: [hpa-like]\n"
	v.upsert(v.application("jq", "j", strings.Replace(jqIgnores, "%s", managers, 1)))
	v.run()
	v.mustSucceed(v.sync("jq", engine.SyncOptions{}))
	s := v.refresh("jq")
	if s.Sync != engine.Synced {
		t.Fatalf("after sync: %s %+v", s.Sync, s.Resources)
	}
	c, ok := s.Condition(engine.ConditionInvalidSpec)
	if !ok || !strings.Contains(c.Message, "spec.ignoreDifferences[1].jqPathExpressions[0]") || !strings.Contains(c.Message, ".data[") {
		t.Errorf("bad jq expression: conditions %+v", s.Conditions)
	}
	if _, ok := s.Condition(engine.ConditionUnsupported); ok {
		t.Errorf("conditions %+v", s.Conditions)
	}

	// The sidecar's image changed by another manager and annotation x edited: selected by jq.
	v.applyAs("injector", "web", map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "sidecar", "image": "busybox:1.37"}}}}})
	patch := `{"metadata":{"annotations":{"x":"live"}}}`
	if _, err := v.c.Dynamic.Resource(gvrDeploy).Namespace(v.ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	live := v.mustGet(gvrDeploy, "web")
	if cs, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers"); len(cs) != 2 {
		t.Fatalf("live containers %v", cs)
	}
	// Other drift is seen; once it is (the watch cache has every earlier change) and undone,
	// the app is Synced again with the sidecar image and annotation x still edited.
	v.annotationDrift("jq")

	// replicas taken over by an autoscaler-like manager.
	v.applyAs("hpa-like", "web", map[string]any{"replicas": int64(4)})
	if n := replicas(v, "web"); n != 4 {
		t.Fatalf("replicas %d", n)
	}
	v.annotationDrift("jq")
	diffs, err := v.e.Diff(v.ctx(30*time.Second), "jq")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		if d.Diff != "" {
			t.Errorf("diff of %s:\n%s", d.ResourceKey, d.Diff)
		}
	}

	// Without the managers rule, the same live object is OutOfSync on replicas only.
	v.upsert(v.application("jq", "j", strings.Replace(jqIgnores, "%s", "", 1)))
	if s := v.refresh("jq"); s.Sync != engine.OutOfSync {
		t.Fatalf("without managedFieldsManagers: %s", s.Sync)
	}
	diffs, err = v.e.Diff(v.ctx(30*time.Second), "jq")
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, d := range diffs {
		text += d.Diff
	}
	if !strings.Contains(text, "replicas") || strings.Contains(text, "1.37") || strings.Contains(text, "x: live") {
		t.Errorf("diff:\n%s", text)
	}
	// Without any rule, the sidecar image and annotation x are drift too.
	v.upsert(v.application("jq", "j", ""))
	if s := v.refresh("jq"); s.Sync != engine.OutOfSync {
		t.Fatalf("without ignoreDifferences: %s", s.Sync)
	}
	diffs, err = v.e.Diff(v.ctx(30*time.Second), "jq")
	if err != nil {
		t.Fatal(err)
	}
	text = ""
	for _, d := range diffs {
		text += d.Diff
	}
	if !strings.Contains(text, "1.37") || !strings.Contains(text, "x: live") {
		t.Errorf("diff:\n%s", text)
	}
}

// withSidecar adds a container named sidecar to a deployment() manifest.
func withSidecar(doc string) string {
	return doc + `      - name: sidecar
        image: busybox:1.36
`
}

// annotationDrift edits annotation note (from git) of the live Deployment web, waits for the
// app to be OutOfSync, restores it and waits for the app to be Synced again.
func (v *env) annotationDrift(name string) {
	v.t.Helper()
	patch := func(val string) {
		body := `{"metadata":{"annotations":{"note":` + val + `}}}`
		if _, err := v.c.Dynamic.Resource(gvrDeploy).Namespace(v.ns).Patch(context.Background(), "web", types.MergePatchType, []byte(body), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			v.t.Fatal(err)
		}
	}
	patch(`"edited"`)
	v.eventually(10*time.Second, "annotation note is drift", func() (bool, string) {
		s := v.refresh(name)
		return s.Sync == engine.OutOfSync, string(s.Sync)
	})
	patch(`"test"`)
	v.eventually(10*time.Second, "Synced with annotation note restored", func() (bool, string) {
		s := v.refresh(name)
		if s.Sync == engine.Synced {
			return true, ""
		}
		diffs, _ := v.e.Diff(context.Background(), name)
		msg := string(s.Sync)
		for _, d := range diffs {
			msg += fmt.Sprintf("\n%s %s %s\n%s", d.ResourceKey, d.Status, d.Message, d.Diff)
		}
		return false, msg
	})
}
