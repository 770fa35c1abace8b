package spec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzParseStepType checks that no step.yaml makes ParseStepType panic or run long, that every
// error is a *spec.Error naming a line or a field and wraps ErrInvalid, and that a definition
// that parses compiles a plugin step of a pipeline (its arguments checked by its schema)
// without breaking the pipeline's invariants. Seeds: the step types of testdata/catalog.
func FuzzParseStepType(f *testing.F) {
	_ = filepath.WalkDir("testdata/catalog", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, rerr := os.ReadFile(p); rerr == nil {
				f.Add(data, []byte("WHO: x\nTIMES: 2\n"))
			}
		}
		return nil
	})
	f.Add([]byte("metadata: {name: a}\nspec: {arguments: '{\"$ref\": \"file:///etc/passwd\"}', steps: {a: {image: x, commands: [x]}}}\n"), []byte("{}"))
	f.Fuzz(func(t *testing.T, data, args []byte) {
		start := cpuTime()
		def, err := ParseStepType(data)
		if d := cpuTime() - start; d > time.Second*raceSlowdown {
			t.Fatalf("ParseStepType took %v of CPU on %d bytes", d, len(data))
		}
		if err != nil {
			if errors.Is(err, errdefs.ErrTooLarge) {
				return
			}
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				var pe *Error
				if !errors.As(e, &pe) || (pe.Line <= 0 && pe.Field == "") {
					t.Fatalf("error names neither a line nor a field: %v", e)
				}
			}
			return
		}
		if def == nil || def.Name == "" || len(def.steps) == 0 {
			t.Fatalf("a definition without a name or steps parsed: %+v", def)
		}
		// A pipeline using it, with fuzzed arguments (indented under arguments:).
		pipe := []byte("version: '1.0'\nsteps:\n  s:\n    type: " + def.Name + "\n    arguments:\n")
		for _, line := range splitLines(args) {
			pipe = append(append(append(pipe, "      "...), line...), '\n')
		}
		opts := Options{StepTypes: StepTypeSet{def.Name: def}}
		p, perr := ParseWith(pipe, opts)
		issues := LintWith(pipe, opts)
		errCount := 0
		for _, is := range issues {
			if is.Severity == SeverityError {
				errCount++
			}
		}
		if (perr == nil) != (errCount == 0) {
			t.Fatalf("Parse error %v disagrees with Lint %v", perr, issues)
		}
		if perr == nil && (p.Steps[0].Plugin == nil || len(p.Steps[0].Plugin.Steps) != len(def.steps)) {
			t.Fatalf("plugin step not compiled: %+v", p.Steps[0])
		}
	})
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}
