package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

func deploymentObj() map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "web", "annotations": map[string]any{"x": "1", "y": "2"}},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "a", "image": "a:1"},
				map[string]any{"name": "sidecar", "image": "s:1"},
				map[string]any{"name": "b", "image": "b:1"},
				map[string]any{"name": "sidecar", "image": "s:2"},
			}}}},
	}
}

// jq path expressions delete what they select as jq's del does: list elements by value of a
// select, several in one list (highest index first), annotations by key; ints stay int64.
func TestRemoveJQ(t *testing.T) {
	ig := compileIgnores([]app.ResourceIgnoreDifferences{{Group: "apps", Kind: "Deployment", JQPathExpressions: []string{
		`.spec.template.spec.containers[] | select(.name == "sidecar")`, `.metadata.annotations["x"]`, `.spec.missing[]`}}})
	if len(ig.conds) != 0 {
		t.Fatal(ig.conds)
	}
	oi := ig.forObject("apps", "Deployment", "ns", "web")
	got, err := removeJQ(context.Background(), deploymentObj(), oi.jq)
	if err != nil {
		t.Fatal(err)
	}
	want := deploymentObj()
	want["metadata"].(map[string]any)["annotations"] = map[string]any{"y": "2"}
	spec := want["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	spec["containers"] = []any{map[string]any{"name": "a", "image": "a:1"}, map[string]any{"name": "b", "image": "b:1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if oi := ig.forObject("", "ConfigMap", "ns", "web"); !oi.empty() {
		t.Fatalf("a ConfigMap matched: %+v", oi)
	}
}

// A bad expression is a condition naming its field and the jq error; $ENV is empty; an
// endless expression stops at the timeout with an error naming its field.
func TestJQBounds(t *testing.T) {
	ig := compileIgnores([]app.ResourceIgnoreDifferences{{Kind: "*", JQPathExpressions: []string{`.a[`, `.a) , (.b`}}})
	if len(ig.conds) != 2 || !strings.Contains(ig.conds[0].Message, "spec.ignoreDifferences[0].jqPathExpressions[0]") ||
		!strings.Contains(ig.conds[1].Message, "jqPathExpressions[1]") {
		t.Fatalf("conditions %+v", ig.conds)
	}
	ig = compileIgnores([]app.ResourceIgnoreDifferences{{Kind: "*", JQPathExpressions: []string{`.[$ENV | keys[]]`}}})
	obj := map[string]any{"HOME": "x", "PATH": "y"}
	got, err := removeJQ(context.Background(), obj, ig.forObject("", "K", "", "n").jq)
	if err != nil || len(got) != 2 {
		t.Fatalf("$ENV reached the expression: %v %v", got, err)
	}
	ig = compileIgnores([]app.ResourceIgnoreDifferences{{Kind: "*", JQPathExpressions: []string{`.a`, `last(repeat(.a))`}}})
	_, err = removeJQ(context.Background(), map[string]any{"a": int64(1)}, ig.forObject("", "K", "", "n").jq)
	if !errors.Is(err, errJQBound) || !strings.Contains(err.Error(), "spec.ignoreDifferences[0].jqPathExpressions[1]") {
		t.Fatalf("endless expression: %v", err)
	}
	ig = compileIgnores([]app.ResourceIgnoreDifferences{{Kind: "*", JQPathExpressions: []string{`.[range(20000)]`}}})
	_, err = removeJQ(context.Background(), map[string]any{"a": []any{}}, ig.forObject("", "K", "", "n").jq)
	if err != nil {
		t.Fatalf("paths on an object: %v", err) // .[number] on an object is a type error: nothing removed
	}
	_, err = jqPaths(context.Background(), ig.jq[0][0], []any{})
	if !errors.Is(err, errJQBound) {
		t.Fatalf("20000 paths: %v", err)
	}
}

// managedFieldsManagers: fields in a manager's FieldsV1 (a keyed list item, a set value, a
// plain field) are removed from both sides; other managers' entries are not.
func TestRemoveManagedFields(t *testing.T) {
	ig := compileIgnores([]app.ResourceIgnoreDifferences{{Group: "apps", Kind: "Deployment", ManagedFieldsManagers: []string{"injector"}}})
	oi := ig.forObject("apps", "Deployment", "ns", "web")
	managed := []metav1.ManagedFieldsEntry{
		{Manager: "injector", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}},` +
			`"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)}},
		{Manager: "other", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
	}
	live := &unstructured.Unstructured{Object: deploymentObj()}
	live.Object["metadata"].(map[string]any)["finalizers"] = []any{"x", "y"}
	predicted := &unstructured.Unstructured{Object: deploymentObj()}
	if err := oi.remove(context.Background(), predicted, live, managed); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	// The key names the first item named sidecar; its fields are the leaves removed.
	if len(containers) != 4 || !reflect.DeepEqual(containers[1], map[string]any{}) || containers[3].(map[string]any)["image"] != "s:2" {
		t.Fatalf("containers %v", containers)
	}
	if fin, _, _ := unstructured.NestedStringSlice(live.Object, "metadata", "finalizers"); !reflect.DeepEqual(fin, []string{"y"}) {
		t.Fatalf("finalizers %v", fin)
	}
	if n, _, _ := unstructured.NestedInt64(predicted.Object, "spec", "replicas"); n != 3 {
		t.Fatalf("replicas of another manager removed: %v", predicted.Object)
	}
	if !reflect.DeepEqual(predicted.Object["spec"], live.Object["spec"]) {
		t.Fatalf("sides differ:\n%v\n%v", predicted.Object["spec"], live.Object["spec"])
	}
}
