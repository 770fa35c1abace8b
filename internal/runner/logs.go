package runner

import (
	"bytes"
	"context"
	"errors"
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

// uploader buffers a build's log and ships it in order.
type uploader struct {
	c     *protoClient
	lease runnerv1.Lease

	mu        sync.Mutex
	buf       bytes.Buffer
	offset    int64 // where buf starts in the build's log
	written   int64 // bytes accepted by Write in total, from the start of the log
	truncated bool
	kick      chan struct{}
	done      chan struct{}
	stopped   chan struct{}
	lastErr   error
}

func newUploader(c *protoClient, lease runnerv1.Lease, offset int64) *uploader {
	u := &uploader{c: c, lease: lease, offset: offset, written: offset, kick: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{})}
	return u
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
		select {
		case u.kick <- struct{}{}:
		default:
		}
	}
	return n, nil
}

// run ships chunks until close is called and everything was sent (or ctx ends).
func (u *uploader) run(ctx context.Context) {
	defer close(u.stopped)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		closing := false
		select {
		case <-ctx.Done():
			return
		case <-u.kick:
		case <-t.C:
		case <-u.done:
			closing = true
		}
		for u.flush(ctx) {
		}
		if closing {
			return
		}
	}
}

// flush sends one chunk; it reports whether more is buffered.
func (u *uploader) flush(ctx context.Context) bool {
	u.mu.Lock()
	if u.buf.Len() == 0 {
		u.mu.Unlock()
		return false
	}
	n := min(u.buf.Len(), 1<<20)
	data := append([]byte(nil), u.buf.Bytes()[:n]...)
	offset := u.offset
	u.mu.Unlock()

	backoff := 100 * time.Millisecond
	for {
		ack, err := unary(ctx, u.c.token, u.c.appendLog, &runnerv1.LogChunk{Lease: u.lease, Offset: offset, Data: data})
		if err == nil && ack.Size >= offset+int64(len(data)) {
			break
		}
		var ce *connect.Error
		if errors.As(err, &ce) {
			switch ce.Code() {
			case connect.CodeFailedPrecondition:
				if s := ce.Meta().Get("X-Log-Size"); s != "" {
					if size, perr := strconv.ParseInt(s, 10, 64); perr == nil && size >= offset+int64(len(data)) {
						goto stored // an earlier attempt was stored after all
					}
				}
				u.setErr(err) // the lease is gone: stop shipping
				return false
			case connect.CodeResourceExhausted, connect.CodePermissionDenied, connect.CodeUnauthenticated, connect.CodeNotFound:
				u.setErr(err)
				return false
			}
		}
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
stored:
	u.mu.Lock()
	u.buf.Next(len(data))
	u.offset += int64(len(data))
	more := u.buf.Len() > 0
	u.mu.Unlock()
	return more
}

func (u *uploader) setErr(err error) {
	u.mu.Lock()
	u.lastErr = err
	u.buf.Reset()
	u.mu.Unlock()
}

// close flushes what is buffered and stops; it waits at most until ctx ends.
func (u *uploader) close(ctx context.Context) error {
	close(u.done)
	select {
	case <-u.stopped:
	case <-ctx.Done():
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastErr
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
