package appset_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/appset"
)

func seeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(badElement))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("kind: ApplicationSet\nspec: {generators: [{matrix: {generators: [{matrix: {generators: [{merge: {}}]}}]}}]}\n"))
}

// FuzzDecode: the ApplicationSet decoders (one document, and a document of a multi-document
// file as the installation repository holds them) never panic, agree, and every error names
// a field or a line.
func FuzzDecode(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := appset.Decode(data)
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
		docs, err := app.DecodeAll(data)
		if err != nil || len(docs) != 1 || docs[0].ApplicationSet == nil {
			t.Fatalf("Decode accepted what DecodeAll did not: %v", err)
		}
		s2, err := appset.DecodeNode(docs[0].ApplicationSet, docs[0].Line)
		if err != nil || s2.Metadata.Name != s.Metadata.Name {
			t.Fatalf("DecodeNode disagrees: %v", err)
		}
		// Rendering without repositories or clusters never panics; list generators render.
		_, _ = appset.Render(context.Background(), s, appset.Sources{})
	})
}

// FuzzParamFile: the git files generator's JSON/YAML parameter files never panic the parser.
func FuzzParamFile(f *testing.F) {
	f.Add([]byte(`{"cluster": {"name": "dev", "address": "https://1.2.3.4"}}`))
	f.Add([]byte("- a: 1\n- b: [1, 2]\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("42"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		docs, err := appset.ReadParamFile(p)
		if err == nil && len(docs) == 0 && len(strings.TrimSpace(string(data))) > 0 && strings.TrimSpace(string(data)) != "[]" {
			t.Logf("no parameter sets from %q", data)
		}
	})
}
