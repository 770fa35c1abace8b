package local

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// copyFrom writes what r delivers to the output, read by read, until EOF or until the drain
// deadline passes.
func copyFrom(o io.Writer, r *os.File, d *drain) {
	buf := make([]byte, copyBufferSize)
	for {
		d.extend(r)
		n, err := r.Read(buf)
		_, _ = o.Write(buf[:n])
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
