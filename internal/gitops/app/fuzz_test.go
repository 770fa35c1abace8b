package app_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// FuzzDecodeApplication: the decoder never panics, every error names a field path or a line,
// and whatever decodes survives an encode/decode round trip.
func FuzzDecodeApplication(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base))
	f.Add([]byte(base + "  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("- - - -\n"))
	f.Add([]byte("{\"apiVersion\": \"argoproj.io/v1alpha1\", \"kind\": \"Application\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := app.DecodeApplication(data)
		if err != nil {
			var es app.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not app.Errors", err, err)
			}
			for _, e := range es {
				if e.Path == "" && e.Line == 0 && !strings.HasPrefix(e.Reason, "is empty") && !strings.Contains(e.Reason, "bytes; the limit") && !strings.Contains(e.Reason, "not valid YAML") {
					t.Fatalf("error names neither a field nor a line: %v", e)
				}
			}
			return
		}
		enc, err := app.EncodeApplication(a)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := app.DecodeApplication(enc)
		if err != nil {
			t.Fatalf("re-decode of %q: %v\nencoded:\n%s", data, err, enc)
		}
		e1, _ := app.EncodeApplication(again)
		if !bytes.Equal(enc, e1) {
			t.Fatalf("round trip changed the app:\n%s\n%s", enc, e1)
		}
	})
}
