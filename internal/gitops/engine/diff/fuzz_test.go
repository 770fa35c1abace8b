package diff_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
)

// FuzzPointers feeds arbitrary ignoreDifferences JSON pointers (from Application specs in git)
// and objects to the pointer functions: nothing panics, ValidPointer refuses exactly what does
// not start with "/", a removed pointer names nothing (or a blanked list element) afterwards,
// and a value Set at a pointer is what Get returns there.
func FuzzPointers(f *testing.F) {
	obj := `{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","image":"nginx"}]}}},"metadata":{"annotations":{"a/b":"c","x~y":"z"}}}`
	for _, p := range []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/annotations/a~1b",
		"/metadata/annotations/x~0y", "", "/", "spec", "/spec/template/spec/containers/-1", "/spec/template/spec/containers/9",
		"/spec/replicas/deeper", "//", "/~2", "/spec/template/spec/containers/00/name", "/a/b/c/d"} {
		f.Add([]byte(obj), p)
	}
	f.Add([]byte(`[1,2]`), "/0")
	f.Add([]byte(`{"":{"":1}}`), "//")
	f.Fuzz(func(t *testing.T, data []byte, p string) {
		if err := diff.ValidPointer(p); (err != nil) != (p != "" && !strings.HasPrefix(p, "/")) {
			t.Fatalf("ValidPointer(%q) = %v", p, err)
		}
		fresh := func() map[string]any {
			var m map[string]any
			if json.Unmarshal(data, &m) != nil || m == nil {
				m = map[string]any{}
			}
			return m
		}
		m := fresh()
		diff.Get(m, p)
		diff.Pointers(nil, "", "", "", "")
		diff.RemovePointers(m, []string{p})
		if p != "" && strings.HasPrefix(p, "/") {
			if v, ok := diff.Get(m, p); ok && v != nil {
				t.Fatalf("after removing %q from %s, Get finds %v", p, data, v)
			}
		}
		m = fresh()
		if diff.Set(m, p, "sentinel") {
			if v, ok := diff.Get(m, p); !ok || v != "sentinel" {
				t.Fatalf("Set(%q) on %s, then Get = %v, %v", p, data, v, ok)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("after Set(%q) the object does not encode: %v", p, err)
			}
		}
	})
}
