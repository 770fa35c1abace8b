package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// FuzzInventory feeds arbitrary inventory ConfigMap data (read back from the cluster, where
// anyone with write access to the inventory namespace may have edited it) to decodeInventory:
// nothing panics, and the resource list round-trips through encodeRefs, which is what the engine
// writes back after a sync (decoded in encodeRefs' sorted order).
func FuzzInventory(f *testing.F) {
	refs := encodeRefs([]ObjRef{{ResourceKey: ResourceKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, Version: "v1"},
		{ResourceKey: ResourceKey{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}, Version: "v1"}})
	for _, s := range [][2]string{{refs, `[{"id":1,"revision":"abc"}]`}, {"", ""}, {"a|b|c|d", "{"}, {"||||\n||||", "[]"},
		{"a|b|c|d|e|f", `[{"id":"x"}]`}, {"\n\n", "null"}, {"g|v|k|n|x\r", `[{"changed":[{"kind":"A"}]}]`}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, resources, history string) {
		obj := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{inventoryKeyResources: resources, inventoryKeyHistory: history}}}
		inv := decodeInventory(obj)
		enc := encodeRefs(inv.Resources)
		again := decodeRefs(enc)
		want := slices.Clone(inv.Resources)
		slices.SortFunc(want, func(a, b ObjRef) int {
			return strings.Compare(encodeRefs([]ObjRef{a}), encodeRefs([]ObjRef{b}))
		})
		if len(want) != len(again) || (len(want) > 0 && !reflect.DeepEqual(want, again)) {
			t.Fatalf("inventory %q decodes to %v, which round-trips to %v", resources, want, again)
		}
		if encodeRefs(again) != enc {
			t.Fatalf("encodeRefs is not stable for %q", resources)
		}
		decodeInventory(&unstructured.Unstructured{Object: map[string]any{"data": 3}})
	})
}

// FuzzJQPath feeds arbitrary jqPathExpressions (tenant input from an Application) and objects
// to compileIgnores and removeJQ: nothing panics, a bad expression is a condition naming its
// field, and what remains holds only the types unstructured objects hold (int64, not int).
func FuzzJQPath(f *testing.F) {
	for _, s := range [][2]string{
		{`.spec.template.spec.containers[] | select(.name == "sidecar")`, `{"spec":{"template":{"spec":{"containers":[{"name":"a"},{"name":"sidecar"}]}}}}`},
		{`.metadata.annotations["x"]`, `{"metadata":{"annotations":{"x":"1","y":2}}}`},
		{`.a[1:3]`, `{"a":[1,2,3,4]}`}, {`.[]`, `[1,[2],{"a":3}]`}, {`..`, `{"a":{"b":[1]}}`},
		{`.a[-1]`, `{"a":[1,2]}`}, {`$ENV`, `{}`}, {`.a[`, `{}`}, {`def f: .a; f`, `{"a":1}`}, {`empty`, `null`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, expr, doc string) {
		ig := compileIgnores([]app.ResourceIgnoreDifferences{{Kind: "*", JQPathExpressions: []string{expr}}})
		if len(ig.jq[0]) == 0 {
			if len(ig.conds) != 1 || !strings.Contains(ig.conds[0].Message, "spec.ignoreDifferences[0].jqPathExpressions[0]") {
				t.Fatalf("expression %q: conditions %+v", expr, ig.conds)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(doc), &obj); err != nil {
			return
		}
		obj = (&unstructured.Unstructured{Object: obj}).DeepCopy().Object // float64 as decoded
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		out, err := removeJQ(ctx, obj, ig.jq[0])
		if err != nil {
			return
		}
		// DeepCopy panics on any type an unstructured object may not hold.
		_ = (&unstructured.Unstructured{Object: out}).DeepCopy()
	})
}
