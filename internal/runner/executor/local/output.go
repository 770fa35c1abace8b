package local

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// output writes a step's output and the executor's notices to the caller's writer. Notices are
// written only before the copying goroutine starts and after it has ended, so writes never
// overlap and need no lock.
type output struct {
	w    io.Writer
	err  error // the first write error; later output is discarded
	last byte  // the last byte written, 0 before any
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

// notice writes one executor notice line, starting a new line first if the step's output did not
// end with one.
func (o *output) notice(format string, args ...any) {
	var b []byte
	if o.last != 0 && o.last != '\n' {
		b = append(b, '\n')
	}
	b = append(b, executor.NoticePrefix...)
	b = fmt.Appendf(b, format, args...)
	o.write(append(b, '\n'))
}

// copyFrom writes what r delivers to the output, read by read, until EOF or until the drain
// deadline passes.
func (o *output) copyFrom(r *os.File, d *drain) {
	buf := make([]byte, copyBufferSize)
	for {
		d.extend(r)
		n, err := r.Read(buf)
		o.write(buf[:n])
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				d.cutShort.Store(true)
			}
			return
		}
	}
}

// drain bounds the reading of the output pipe once the step's processes are gone: reads then
// time out after outputDrainIdle without output, and no later than outputDrainMax.
type drain struct {
	started  atomic.Int64 // UnixNano when draining started, 0 before
	cutShort atomic.Bool  // the pipe was still open when the drain ended
}

func (d *drain) start(r *os.File) {
	d.started.Store(time.Now().UnixNano())
	_ = r.SetReadDeadline(time.Now().Add(outputDrainIdle))
}

func (d *drain) extend(r *os.File) {
	s := d.started.Load()
	if s != 0 && time.Since(time.Unix(0, s)) < outputDrainMax {
		_ = r.SetReadDeadline(time.Now().Add(outputDrainIdle))
	}
}
