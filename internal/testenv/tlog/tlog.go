// Package tlog gives a test a writer for what the component under test logs. It holds the
// lines and prints them only if the test fails, after the failure's own message: CI shows the
// start of a failing test's output, and that start is then why it failed, not the first of
// hundreds of log lines.
package tlog

import (
	"strings"
	"sync"
	"testing"
)

// Writer holds log lines until its test ends.
type Writer struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
	done  bool
}

// New returns a Writer for t. Create it before starting what logs to it: its clean-up then
// runs after that component's own (clean-ups run last-registered first), with every line.
func New(t testing.TB) *Writer {
	w := &Writer{t: t}
	t.Cleanup(w.flush)
	return w
}

// Write keeps p as a line (or drops it once the test has ended).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.lines = append(w.lines, strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *Writer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.t.Failed() && len(w.lines) > 0 {
		w.t.Logf("what the component logged (%d lines):\n%s", len(w.lines), strings.Join(w.lines, "\n"))
	}
	w.lines = nil
}
