package tlog

import (
	"strings"
	"testing"
)

// fakeTB records what a Writer prints; Failed is what the test says.
type fakeTB struct {
	testing.TB
	failed   bool
	logged   []string
	cleanups []func()
}

func (f *fakeTB) Failed() bool                 { return f.failed }
func (f *fakeTB) Cleanup(fn func())            { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Logf(format string, a ...any) { f.logged = append(f.logged, format) }
func (f *fakeTB) Helper()                      {}
func (f *fakeTB) end() {
	for _, c := range f.cleanups {
		c()
	}
}

func TestPrintsOnlyOnFailure(t *testing.T) {
	for _, failed := range []bool{false, true} {
		f := &fakeTB{failed: failed}
		w := New(f)
		_, _ = w.Write([]byte("level=INFO msg=one\n"))
		_, _ = w.Write([]byte("level=INFO msg=two\n"))
		f.end()
		_, _ = w.Write([]byte("after the end\n")) // dropped, not a panic
		if got := len(f.logged); failed != (got == 1) {
			t.Fatalf("failed=%v: printed %d times", failed, got)
		}
		if failed && !strings.Contains(f.logged[0], "what the component logged") {
			t.Fatalf("printed %q", f.logged[0])
		}
		if len(w.lines) != 0 {
			t.Fatalf("kept %d lines after the end", len(w.lines))
		}
	}
}
