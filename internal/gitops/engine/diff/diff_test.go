package diff_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
)

func deploy(replicas int64, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "resourceVersion": "12", "uid": "u",
			"generation": int64(3), "creationTimestamp": "2024-01-01T00:00:00Z",
			"managedFields": []any{map[string]any{"manager": "freshet"}},
			"annotations":   map[string]any{"a/b": "c"}},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}},
		"status": map[string]any{"replicas": replicas},
	}}
}

func TestNormalize(t *testing.T) {
	in := deploy(1, "nginx")
	n := diff.Normalize(in)
	md := n.Object["metadata"].(map[string]any)
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		if _, ok := md[f]; ok {
			t.Errorf("%s kept", f)
		}
	}
	if _, ok := n.Object["status"]; ok {
		t.Error("status kept")
	}
	if in.GetResourceVersion() != "12" || in.Object["status"] == nil {
		t.Error("Normalize changed its input")
	}
	a, b := diff.Normalize(deploy(1, "nginx")), diff.Normalize(deploy(1, "nginx"))
	b.Object["status"] = map[string]any{"replicas": int64(7)}
	if !diff.Equal(a, diff.Normalize(b)) {
		t.Error("status-only change is a difference")
	}
}

func TestPointers(t *testing.T) {
	o := deploy(3, "nginx").Object
	diff.RemovePointers(o, []string{"/spec/replicas", "/metadata/annotations/a~1b", "/spec/template/spec/containers/0/image", "/nope/x", "bad"})
	spec := o["spec"].(map[string]any)
	if _, ok := spec["replicas"]; ok {
		t.Error("replicas kept")
	}
	if _, ok := o["metadata"].(map[string]any)["annotations"].(map[string]any)["a/b"]; ok {
		t.Error("escaped key kept")
	}
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if _, ok := c["image"]; ok {
		t.Error("list element field kept")
	}
	o2 := deploy(5, "x").Object
	if v, ok := diff.Get(o2, "/spec/replicas"); !ok || v != int64(5) {
		t.Errorf("get %v %v", v, ok)
	}
	if !diff.Set(o2, "/spec/replicas", int64(2)) || o2["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Error("set")
	}
	if diff.Set(o2, "/spec/template/spec/containers/9/image", "x") {
		t.Error("set beyond a list")
	}
	if err := diff.ValidPointer("spec/replicas"); err == nil {
		t.Error("a pointer without / is valid")
	}
}

func TestMatches(t *testing.T) {
	rules := []app.ResourceIgnoreDifferences{
		{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
		{Kind: "ConfigMap", Name: "x", JSONPointers: []string{"/data"}},
		{Group: "*", Kind: "*", Namespace: "prod", JSONPointers: []string{"/metadata/labels"}},
	}
	if got := diff.Pointers(rules, "apps", "Deployment", "dev", "web"); len(got) != 1 || got[0] != "/spec/replicas" {
		t.Errorf("deployment: %v", got)
	}
	if got := diff.Pointers(rules, "", "ConfigMap", "dev", "y"); len(got) != 0 {
		t.Errorf("configmap y: %v", got)
	}
	if got := diff.Pointers(rules, "", "ConfigMap", "prod", "x"); len(got) != 2 {
		t.Errorf("configmap x in prod: %v", got)
	}
	if got := diff.Pointers(rules, "", "Deployment", "dev", "web"); len(got) != 0 {
		t.Errorf("core-group Deployment matched group apps: %v", got)
	}
}

func TestUnified(t *testing.T) {
	live, desired := diff.Normalize(deploy(1, "nginx:1.26")), diff.Normalize(deploy(2, "nginx:1.27"))
	d := diff.Unified("Deployment/ns/web", live, desired)
	for _, want := range []string{"--- live/Deployment/ns/web", "+++ desired/Deployment/ns/web", "-      - image: nginx:1.26", "+      - image: nginx:1.27", "-  replicas: 1", "+  replicas: 2", "@@ -"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if diff.Unified("x", live, live) != "" {
		t.Error("equal objects have a diff")
	}
	created := diff.Unified("x", nil, desired)
	if !strings.Contains(created, "@@ -0,0 +1,") || strings.Contains(created, "\n-") {
		t.Errorf("creation diff:\n%s", created)
	}
	// Hunks: a change far from another gets its own hunk.
	a := strings.Repeat("line\n", 30)
	b := "first\n" + strings.Repeat("line\n", 28) + "last\n"
	if got := strings.Count(diff.UnifiedText("a", "b", a, b), "@@ -"); got != 2 {
		t.Errorf("%d hunks, want 2:\n%s", got, diff.UnifiedText("a", "b", a, b))
	}
}
