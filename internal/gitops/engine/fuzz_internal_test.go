package engine

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
