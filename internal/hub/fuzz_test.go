package hub_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/hub"
)

// FuzzDecodeVersion: a hub source's files are untrusted (any repository an admin adds). The
// decoder never panics, answers a field error or a version, and a version it accepts names
// itself as asked and keeps its bounds; the same files laid out in a catalogue load the same.
// The seeds are small (the builtin templates are checked by TestBuiltinCatalogue): minimizing
// a large interesting input costs the fuzzer most of its time.
func FuzzDecodeVersion(f *testing.F) {
	f.Add("hello", "1.0.0", []byte(tmpl("hello", "1.0.0", "main")), []byte("x"))
	f.Add("a", "1.0.0", []byte("a: &a [*a, *a]\nb: *a"), []byte{})
	f.Add("a", "v1.0.0-rc.1", []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"WorkflowTemplate","metadata":{"name":"a"}}`), []byte{0xff})
	f.Fuzz(func(t *testing.T, name, version string, manifest, readme []byte) {
		v, err := hub.DecodeVersion(name, version, manifest, readme)
		if err != nil {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("not a field error: %T %v", err, err)
			}
			return
		}
		if v.Version != version || v.Description == "" || len(v.README) > hub.MaxReadmeBytes || len(v.Manifest) > hub.MaxManifestBytes {
			t.Fatalf("accepted %q %q: %+v", name, version, v)
		}
		fsys := fstest.MapFS{
			name + "/versions/" + version + "/workflowTemplate.yaml": {Data: manifest},
			name + "/versions/" + version + "/README.md":             {Data: readme},
		}
		ts, errs := hub.Load(fsys, ".")
		if len(errs) == 0 && (len(ts) != 1 || ts[0].Latest().Version != version) {
			t.Fatalf("loaded as a catalogue: %+v %v", ts, errs)
		}
	})
}
