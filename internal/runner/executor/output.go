package executor

import (
	"fmt"
	"io"
	"sync"
)

// Output writes a step's output and its executor's notices to the caller's writer, one write at
// a time (a log-copying goroutine and the executor's own may both write). It never fails: the
// first write error is kept (Err) and later output is discarded, so that the step's output keeps
// draining.
type Output struct {
	mu   sync.Mutex
	w    io.Writer
	err  error // the first write error
	last byte  // the last byte written, 0 before any
}

// NewOutput returns an Output writing to w (nil: nowhere).
func NewOutput(w io.Writer) *Output {
	if w == nil {
		w = io.Discard
	}
	return &Output{w: w}
}

// Write writes p (step output) and reports it all written.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.write(p)
	return len(p), nil
}

func (o *Output) write(p []byte) {
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

// Notice writes one executor notice line (NoticePrefix first), starting a new line first if the
// output so far does not end with one.
func (o *Output) Notice(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b []byte
	if o.last != 0 && o.last != '\n' {
		b = append(b, '\n')
	}
	b = append(b, NoticePrefix...)
	b = fmt.Appendf(b, format, args...)
	o.write(append(b, '\n'))
}

// Err returns the first error of the caller's writer.
func (o *Output) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
