package container

import (
	"fmt"
	"io"
	"sync"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// output writes a step's output and the executor's notices to the caller's writer. Notices are
// written only while no stream copies into it (before stream, after endStream), so writes never
// overlap.
type output struct {
	mu   sync.Mutex
	w    io.Writer
	err  error // the first write error; later output is discarded
	last byte  // the last byte written, 0 before any
}

// Write writes p, remembering the first error and discarding output after it; it never fails,
// so that the step's output keeps draining.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	o.last = p[len(p)-1]
	if o.err == nil {
		if _, err := o.w.Write(p); err != nil {
			o.err = err
		}
	}
	return len(p), nil
}

// stream returns the writer a step's output stream is copied into.
func (o *output) stream() io.Writer { return o }

// endStream marks the end of the step's output stream.
func (o *output) endStream() {}

// notice writes one executor notice line, starting a new line first if the step's output did
// not end with one.
func (o *output) notice(format string, args ...any) {
	var b []byte
	o.mu.Lock()
	if o.last != 0 && o.last != '\n' {
		b = append(b, '\n')
	}
	o.mu.Unlock()
	b = append(b, executor.NoticePrefix...)
	b = fmt.Appendf(b, format, args...)
	_, _ = o.Write(append(b, '\n'))
}
