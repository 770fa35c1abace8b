package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden compiles every testdata/*.yml and compares the result with the .golden file next
// to it: the plan as JSON, or, for bad_*.yml, the error text. Regenerate with
// go test ./internal/pipeline/spec -update, and review the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yml")
		if strings.HasPrefix(name, "bad_") {
			bad++
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, strings.TrimSuffix(f, ".yml")+".golden", compileGolden(t, name, data))
		})
	}
	if bad < 15 {
		t.Errorf("%d bad_*.yml inputs, want at least 15", bad)
	}
}

func compileGolden(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	p, err := Parse(data)
	if strings.HasPrefix(name, "bad_") {
		if err == nil {
			t.Fatalf("Parse succeeded, want an error")
		}
		checkErrors(t, err)
		return []byte(err.Error() + "\n")
	}
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	out := marshal(t, p)
	// The plan travels to runners as JSON: decoding it must give the same plan back, with
	// its patterns and expressions compiled again.
	var back Pipeline
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("decode the plan again: %v", err)
	}
	again := marshal(t, &back)
	if !bytes.Equal(out, again) {
		t.Errorf("JSON round trip changed the plan:\n%s\n---\n%s", out, again)
	}
	return out
}

// marshal encodes v as indented JSON without HTML escaping, so golden files stay readable.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkErrors checks what every Parse error promises: it is an *Error, wraps
// errdefs.ErrInvalid, and names a line or a field.
func checkErrors(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("error does not wrap errdefs.ErrInvalid: %v", err)
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var pe *Error
		if !errors.As(e, &pe) {
			t.Errorf("%T is not a *spec.Error: %v", e, e)
			continue
		}
		if pe.Line <= 0 && pe.Field == "" {
			t.Errorf("error names neither a line nor a field: %v", e)
		}
		if pe.Reason == "" {
			t.Errorf("error has no reason: %v", e)
		}
	}
}
