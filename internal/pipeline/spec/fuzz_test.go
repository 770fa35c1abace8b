package spec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzParse checks that no input makes Parse or Lint panic or run long, that every error names
// a line or a field, that Parse and Lint agree, and that a compiled plan survives the JSON
// round trip a runner puts it through. Seeds: every testdata/*.yml plus testdata/fuzz.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	steps, _ := filepath.Glob("testdata/steps/*/*.yml") // every step type's fixtures, deploy and helm among them
	for _, name := range append(files, steps...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"version: '1.0'\nsteps: {a: {image: x, commands: [x]}}\n",
		"version: '1.0'\nsteps:\n  a:\n    when: {condition: {all: {x: \"'${{A}}' == steps.a.result\"}}}\n",
		"version: '1.0'\nsteps: &a {b: *a}\n",
		"{<<: [*a]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkInvariants)
}

// checkInvariants is what every input must satisfy.
func checkInvariants(t *testing.T, data []byte) {
	{
		// Bounded time, in CPU time so that a busy machine does not fail the test.
		limit := time.Second * raceSlowdown
		start := cpuTime()
		p, err := Parse(data)
		issues := Lint(data)
		if d := cpuTime() - start; d > limit {
			t.Fatalf("Parse and Lint took %v of CPU on %d bytes, want under %v", d, len(data), limit)
		}
		lintErrors := 0
		for _, is := range issues {
			if is.Line <= 0 && is.Field == "" && !(len(data) > MaxDocumentSize) {
				t.Errorf("issue names neither a line nor a field: %+v", is)
			}
			if is.Message == "" || (is.Severity != SeverityError && is.Severity != SeverityWarning) {
				t.Errorf("malformed issue: %+v", is)
			}
			if is.Severity == SeverityError {
				lintErrors++
			}
		}
		if err != nil {
			if lintErrors == 0 {
				t.Fatalf("Parse failed but Lint reports no error: %v", err)
			}
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
				if !errors.As(e, &pe) {
					t.Fatalf("%T is not a *spec.Error: %v", e, e)
				}
				if pe.Line <= 0 && pe.Field == "" {
					t.Fatalf("error names neither a line nor a field: %v", e)
				}
			}
			return
		}
		if lintErrors != 0 {
			t.Fatalf("Parse succeeded but Lint reports errors: %v", issues)
		}
		if p == nil || len(p.Steps) == 0 {
			t.Fatalf("Parse succeeded with no steps: %+v", p)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal the plan: %v", err)
		}
		var back Pipeline
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("decode the plan: %v\n%s", err, b)
		}
		again, _ := json.Marshal(&back)
		if string(again) != string(b) {
			t.Fatalf("JSON round trip changed the plan:\n%s\n%s", b, again)
		}
		// Evaluating any step's when must not panic, whatever it holds.
		p.Walk(func(s *Step) bool {
			_, _, _ = s.When.Evaluate(EvalContext{Branch: "main", Variables: map[string]string{"A": "1"}})
			_ = s.Retry.Delays()
			return true
		})
	}
}
