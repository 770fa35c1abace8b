package engine

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

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
