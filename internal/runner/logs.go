package runner

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// Log shipping: chunks go out every flushInterval or when flushBytes are buffered, whichever
// comes first. A chunk carries its byte offset, so a retry after a lost answer is stored once.
const (
	flushInterval = 100 * time.Millisecond
	flushBytes    = 64 << 10
	// MaxLogBytes and MaxLineBytes match the control plane's limits.
	MaxLogBytes  = 64 << 20
	MaxLineBytes = 64 << 10
)

var (
	truncatedMarker = []byte("\n[freshet] log truncated: the build's log reached " + strconv.Itoa(MaxLogBytes>>20) + " MiB\n")
	longLineMarker  = []byte(" [freshet: line cut at " + strconv.Itoa(MaxLineBytes>>10) + " KiB]\n")
)

// uploader buffers a build's log and ships it in order under the job's lease. It never drops
// a line because the control plane refused or did not answer: lines stay buffered and are sent
// again for as long as the job holds its lease (across outages, and under a new lease when the
// job is taken up again). Only the control plane's log size limit ends shipping.
type uploader struct {
	c     *protoClient
	lease *leaseBox
	log   *slog.Logger

	mu        sync.Mutex
	buf       bytes.Buffer
	offset    int64  // where buf starts in the build's log
	gen       uint64 // bumped by rebase: a chunk in flight then belongs to the old lease
	written   int64  // bytes accepted by Write in total, from the start of the log
	truncated bool
	full      bool // the control plane refused more: the log is at its size limit
	kick      chan struct{}
}

func newUploader(c *protoClient, lease *leaseBox, offset int64, log *slog.Logger) *uploader {
	return &uploader{c: c, lease: lease, log: log, offset: offset, written: offset, kick: make(chan struct{}, 1)}
}

// Write buffers p. Past MaxLogBytes it writes the truncation marker once and drops the rest.
func (u *uploader) Write(p []byte) (int, error) {
	u.mu.Lock()
	n := len(p)
	if u.truncated {
		u.mu.Unlock()
		return n, nil
	}
	if room := MaxLogBytes - u.written; int64(len(p)) > room {
		p = p[:max(room, 0)]
		u.truncated = true
	}
	u.buf.Write(p)
	u.written += int64(len(p))
	if u.truncated {
		u.buf.Write(truncatedMarker)
		u.written += int64(len(truncatedMarker))
	}
	full := u.buf.Len() >= flushBytes
	u.mu.Unlock()
	if full {
		u.wake()
	}
	return n, nil
}

func (u *uploader) wake() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// pending is how many bytes wait to be shipped.
func (u *uploader) pending() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.full {
		return 0
	}
	return u.buf.Len()
}

// rebase continues the log at offset (under a new lease, whose log starts where the control
// plane's ends); what is buffered is sent there.
func (u *uploader) rebase(offset int64) {
	u.mu.Lock()
	u.offset = offset
	u.gen++
	u.mu.Unlock()
	u.wake()
}

// run ships chunks every flushInterval (or when flushBytes are buffered) until ctx ends.
func (u *uploader) run(ctx context.Context) {
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.kick:
		case <-t.C:
		}
		for u.flush(ctx) {
		}
	}
}

// drain waits until everything buffered was shipped, or ctx ends.
func (u *uploader) drain(ctx context.Context) error {
	for u.pending() > 0 {
		u.wake()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// flush sends one chunk; it reports whether more is buffered.
func (u *uploader) flush(ctx context.Context) bool {
	u.mu.Lock()
	if u.buf.Len() == 0 || u.full {
		u.mu.Unlock()
		return false
	}
	n := min(u.buf.Len(), 1<<20)
	data := append([]byte(nil), u.buf.Bytes()[:n]...)
	offset, gen := u.offset, u.gen
	u.mu.Unlock()

	backoff := deliverFirstBackoff
	for {
		lease, held, changed := u.lease.get()
		if !held { // the lease is in doubt: keep the lines until the job has it (or a new one)
			select {
			case <-ctx.Done():
				return false
			case <-changed:
				return true
			}
		}
		ack, err := unary(ctx, u.c.token, u.c.appendLog, &runnerv1.LogChunk{Lease: lease, Offset: offset, Data: data})
		size := int64(-1) // where the control plane's log ends, when it said
		switch {
		case err == nil:
			size = ack.Size
		case connect.CodeOf(err) == connect.CodeResourceExhausted:
			u.mu.Lock()
			u.full = true
			u.buf.Reset()
			u.mu.Unlock()
			u.log.Warn("build log refused: it is at the control plane's size limit", "build", lease.BuildID, "err", err)
			return false
		default:
			var ce *connect.Error
			if errors.As(err, &ce) && ce.Code() == connect.CodeFailedPrecondition {
				if s, perr := strconv.ParseInt(ce.Meta().Get("X-Log-Size"), 10, 64); perr == nil {
					size = s
				}
			}
		}
		if size >= 0 {
			end := offset + int64(len(data))
			switch {
			case size >= end: // stored (maybe by an earlier attempt whose answer was lost)
				return u.advance(gen, int64(len(data)))
			case size > offset: // the first part is stored: send the rest
				return u.advance(gen, size-offset)
			default: // the log ends before this chunk: send from where it ends
				u.mu.Lock()
				if u.gen == gen {
					u.offset = size
				}
				u.mu.Unlock()
				u.log.Warn("the control plane's build log ends before the chunk; sending from its end", "build", lease.BuildID, "offset", offset, "log_size", size)
				return true
			}
		}
		// Refused with no size (the lease, or the control plane, is in trouble) or no answer:
		// keep the lines and try again; the heartbeats decide whether the lease is still held.
		if ctx.Err() != nil {
			return false
		}
		u.log.Debug("ship build log; retrying", "build", lease.BuildID, "offset", offset, "bytes", len(data), "err", err, "in", backoff)
		backoff = deliverWait(ctx, backoff, changed)
		u.mu.Lock()
		rebased := u.gen != gen
		u.mu.Unlock()
		if rebased {
			return true
		}
	}
}

// advance drops n shipped bytes from the buffer, unless it was rebased meanwhile; it reports
// whether more is buffered.
func (u *uploader) advance(gen uint64, n int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gen == gen {
		u.buf.Next(int(n))
		u.offset += n
	}
	return u.buf.Len() > 0
}

// lineLimiter cuts lines longer than MaxLineBytes.
type lineLimiter struct {
	w       interface{ Write([]byte) (int, error) }
	lineLen int
	cut     bool
}

func (l *lineLimiter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i+1]
		}
		if l.cut {
			if i >= 0 {
				l.cut, l.lineLen = false, 0
			}
			p = p[len(seg):]
			continue
		}
		if room := MaxLineBytes - l.lineLen; len(seg) > room && (i < 0 || len(seg)-1 > room) {
			if _, err := l.w.Write(seg[:room]); err != nil {
				return 0, err
			}
			if _, err := l.w.Write(longLineMarker); err != nil {
				return 0, err
			}
			l.cut = i < 0
			l.lineLen = 0
			p = p[len(seg):]
			continue
		}
		if _, err := l.w.Write(seg); err != nil {
			return 0, err
		}
		if i >= 0 {
			l.lineLen = 0
		} else {
			l.lineLen += len(seg)
		}
		p = p[len(seg):]
	}
	return n, nil
}
