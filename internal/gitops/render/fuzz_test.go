package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzManifests feeds arbitrary manifest files (plain YAML or JSON from an Application's git
// directory) through parseManifests and toObjects, as a directory render does: nothing panics,
// every refusal is a *Error of ErrInvalidManifest or ErrTooLarge naming the file, the object
// limits hold, and every object has apiVersion and kind and encodes as JSON.
func FuzzManifests(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- 3\n",
		"apiVersion: v1\nkind: List\nitems: [{kind: X}]\n", "kind: ConfigMap\n", "apiVersion: v1\n", "apiVersion: v1\nkind: X\nmetadata: []\n",
		"- a\n- b\n", "\xef\xbb\xbf{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}", "a: [\n", "---\n---\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: &d {a: b}\nx: *d\n", "apiVersion: 1\nkind: true\n",
		"apiVersion: v1\nkind: List\nitems:\n" + strings.Repeat("- {apiVersion: v1, kind: ConfigMap}\n", 20),
	} {
		f.Add([]byte(s))
	}
	r, err := New(Options{MaxObjects: 10, MaxOutputBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := &output{j: &job{r: r}}
		docs, err := parseManifests("app/m.yaml", data)
		if err == nil {
			err = toObjects("app/m.yaml", docs, out, true)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (!errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrTooLarge)) || e.At.File != "app/m.yaml" {
				t.Fatalf("error %T %v is not a manifest error naming the file", err, err)
			}
			return
		}
		if len(out.objs) > r.opts.MaxObjects || out.bytes > r.opts.MaxOutputBytes {
			t.Fatalf("%d objects, %d bytes got past the limits", len(out.objs), out.bytes)
		}
		for _, o := range out.objs {
			if o.Object.GetAPIVersion() == "" || o.Object.GetKind() == "" {
				t.Fatalf("object without apiVersion or kind: %v", o.Object.Object)
			}
			if _, err := json.Marshal(o.Object.Object); err != nil {
				t.Fatalf("object does not encode: %v", err)
			}
		}
	})
}

// FuzzJsonnetOutput feeds arbitrary evaluation results (the JSON a tenant's .jsonnet file
// evaluates to) through jsonnetObjects: nothing panics, every refusal is a *Error of
// ErrInvalidManifest or ErrTooLarge naming the file, the limits hold, and every object has
// apiVersion and kind.
func FuzzJsonnetOutput(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"n":1.5e3}}`,
		`[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":3}},{"apiVersion":"v1","kind":"Service"}]`,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap"},3]}`,
		`[]`, `[null]`, `"s"`, `3`, `null`, `{}`, `{"a":1} {"b":2}`, `[{"apiVersion":"v1","kind":"X","metadata":[]}]`,
		`{"apiVersion":"v1","kind":"X","spec":{"big":123456789012345678901234567890}}`,
	} {
		f.Add([]byte(s))
	}
	r, err := New(Options{MaxObjects: 10, MaxOutputBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := &output{j: &job{r: r}}
		if err := jsonnetObjects("app/main.jsonnet", data, out); err != nil {
			var e *Error
			if !errors.As(err, &e) || (!errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrTooLarge)) || e.At.File != "app/main.jsonnet" {
				t.Fatalf("error %T %v is not a manifest error naming the file", err, err)
			}
			return
		}
		if len(out.objs) > r.opts.MaxObjects || out.bytes > r.opts.MaxOutputBytes {
			t.Fatalf("%d objects, %d bytes got past the limits", len(out.objs), out.bytes)
		}
		for _, o := range out.objs {
			if o.Object.GetAPIVersion() == "" || o.Object.GetKind() == "" {
				t.Fatalf("object without apiVersion or kind: %v", o.Object.Object)
			}
			if _, err := json.Marshal(o.Object.Object); err != nil {
				t.Fatalf("object does not encode: %v", err)
			}
		}
	})
}
