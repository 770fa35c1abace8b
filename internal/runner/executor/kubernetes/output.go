package kubernetes

import (
	"fmt"
	"io"
	"sync"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// output writes a step's log and the executor's notices to the caller's writer, one write at a
// time (the log goroutine and Run's own goroutine both write).
type output struct {
	mu   sync.Mutex
	w    io.Writer
	err  error // the first write error; later output is discarded
	last byte  // the last byte written, 0 before any
}

// Write writes p (step output). It never fails: a write error is kept for Run to return.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.write(p)
	return len(p), nil
}

func (o *output) write(p []byte) {
	if len(p) == 0 {
		return
	}
	o.last = p[len(p)-1]
	if o.err != nil {
		return
	}
	if _, err := o.w.Write(p); err != nil {
		o.err = err
	}
}

// notice writes one executor notice line, starting a new line first if the output so far does
// not end with one.
func (o *output) notice(format string, args ...any) {
	var b []byte
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last != 0 && o.last != '\n' {
		b = append(b, '\n')
	}
	b = append(b, executor.NoticePrefix...)
	b = fmt.Appendf(b, format, args...)
	o.write(append(b, '\n'))
}

// error returns the first error of the caller's writer.
func (o *output) error() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
