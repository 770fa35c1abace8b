package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadManifests feeds arbitrary manifest files (from a tenant's repository, read by deploy
// steps): nothing panics, and every object returned has apiVersion, kind and a name.
func FuzzReadManifests(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\n")
	f.Add(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`)
	f.Add("---\n---\nkind: X\n")
	f.Add("a: &a [*a]\n")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ NAME }}'}\ndata: {a: x{{UNSET}}y, n: {{N}}}\n")
	f.Fuzz(func(t *testing.T, data string) {
		path := filepath.Join(t.TempDir(), "m.yaml")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		objs, _, err := readManifests(path, func(name string) (string, bool) { return "v: {" + name + "}\n", name != "UNSET" })
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
				t.Fatalf("object without apiVersion, kind or name: %v", o.Object)
			}
		}
	})
}
