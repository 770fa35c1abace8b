package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// StreamError is an exchange the other end reset.
type StreamError struct {
	Code uint32
	Msg  string
}

func (e *StreamError) Error() string {
	what := map[uint32]string{resetDone: "ended", resetCancel: "cancelled", resetRefused: "refused", resetInternal: "failed"}[e.Code]
	if what == "" {
		what = fmt.Sprintf("reset (code %d)", e.Code)
	}
	if e.Msg == "" {
		return "tunnel exchange " + what + " by the other end"
	}
	return "tunnel exchange " + what + " by the other end: " + e.Msg
}

// Refused reports whether the runtime did not process the request.
func (e *StreamError) Refused() bool { return e.Code == resetRefused }

var errBodyClosed = errors.New("tunnel: read on a closed body")

// creditThreshold: consumed body bytes are credited back once this many have accumulated.
const creditThreshold = StreamWindow / 4

// Received body bytes wait in pooled buffers until the reader takes them: a body costs no
// garbage however large it is.
const smallChunk = 16 << 10

var (
	smallChunks = sync.Pool{New: func() any { b := make([]byte, smallChunk); return &b }}
	largeChunks = sync.Pool{New: func() any { b := make([]byte, maxDataFrame); return &b }}
)

// chunk is received body bytes: b, the unread part of *buf.
type chunk struct {
	buf *[]byte
	b   []byte
}

func getChunk(n int) chunk {
	var bp *[]byte
	switch {
	case n <= smallChunk:
		bp = smallChunks.Get().(*[]byte)
	case n <= maxDataFrame:
		bp = largeChunks.Get().(*[]byte)
	default: // a peer's frame larger than ours: not pooled
		b := make([]byte, n)
		return chunk{b: b}
	}
	return chunk{buf: bp, b: (*bp)[:n]}
}

func (c chunk) free() {
	if c.buf == nil {
		return
	}
	switch cap(*c.buf) {
	case smallChunk:
		smallChunks.Put(c.buf)
	case maxDataFrame:
		largeChunks.Put(c.buf)
	}
}

func freeChunks(cs []chunk) {
	for _, c := range cs {
		c.free()
	}
}

// stream is one exchange: a request and its response, each a head, a body and an end.
type stream struct {
	s      *Session
	id     uint32
	client bool // the control plane's end: it waits for a response head

	mu sync.Mutex
	// receiving
	chunks  []chunk
	chunk0  [1]chunk // backs chunks while one is enough
	recvWin int      // bytes the peer may still send
	unacked int      // bytes consumed and not yet credited back
	recvEnd bool
	recvErr error
	trailer http.Header
	rsig    chan struct{} // made when a reader first waits
	rdl     time.Time
	// sending
	sendWin int
	sendEnd bool // our end (or a reset) was queued: nothing more goes out
	sendErr error
	wsig    chan struct{} // made when a writer first waits
	wdl     time.Time
	// the control plane's end: the response head
	resp     *respHead
	headDone bool // resp or recvErr is set
	// the runtime's end: the request, and what cancels the handler's context
	req    *reqHead
	cancel context.CancelFunc
}

func newStream(s *Session, id uint32) *stream {
	return &stream{s: s, id: id, recvWin: StreamWindow, sendWin: StreamWindow}
}

// signal wakes a waiter on c, if one was ever made; callers read c under st.mu.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (st *stream) rsigLocked() chan struct{} {
	if st.rsig == nil {
		st.rsig = make(chan struct{}, 1)
	}
	return st.rsig
}

func (st *stream) wsigLocked() chan struct{} {
	if st.wsig == nil {
		st.wsig = make(chan struct{}, 1)
	}
	return st.wsig
}

// doneLocked reports whether both directions are over.
func (st *stream) doneLocked() bool {
	return st.sendEnd && (st.recvEnd || st.recvErr != nil) && (!st.client || st.headDone)
}

// bodyBeforeHeadLocked reports a body frame that came before the response head.
func (st *stream) bodyBeforeHeadLocked() bool {
	return st.client && st.resp == nil && st.recvErr == nil
}

// unlockAndWake unlocks st after a state change: it wakes the waiters and forgets the stream
// once both directions are over.
func (st *stream) unlockAndWake() {
	rs, ws := st.rsig, st.wsig
	done := st.doneLocked()
	st.mu.Unlock()
	signal(rs)
	signal(ws)
	if done {
		st.s.remove(st)
	}
}

func (st *stream) recvData(p chunk, end bool) error {
	st.mu.Lock()
	var err error
	switch {
	case st.bodyBeforeHeadLocked():
		err = protocolErr("data before the head on stream %d", st.id)
	case st.recvEnd:
		err = protocolErr("data after the end of stream %d", st.id)
	case len(p.b) > st.recvWin:
		err = protocolErr("%d bytes on stream %d, which had room for %d", len(p.b), st.id, st.recvWin)
	}
	if err != nil {
		st.mu.Unlock()
		p.free()
		return err
	}
	st.recvWin -= len(p.b)
	switch {
	case st.recvErr != nil: // the reader is gone: drop the bytes
		p.free()
	case len(p.b) > 0:
		if st.chunks == nil {
			st.chunks = st.chunk0[:0]
		}
		st.chunks = append(st.chunks, p)
		st.recvEnd = end
	default:
		p.free()
		st.recvEnd = end
	}
	st.unlockAndWake()
	return nil
}

func (st *stream) recvHead(h *respHead, end bool) {
	st.mu.Lock()
	if st.resp == nil && st.recvErr == nil {
		st.resp = h
		st.recvEnd = end
		st.headDone = true
	}
	st.unlockAndWake()
}

func (st *stream) recvTrailer(t http.Header) error {
	st.mu.Lock()
	if st.bodyBeforeHeadLocked() {
		st.mu.Unlock()
		return protocolErr("trailers before the head on stream %d", st.id)
	}
	if st.recvEnd {
		st.mu.Unlock()
		return protocolErr("trailers after the end of stream %d", st.id)
	}
	if st.recvErr == nil {
		st.trailer = t
		st.recvEnd = true
	}
	st.unlockAndWake()
	return nil
}

func (st *stream) recvReset(code uint32, msg string) {
	st.abort(&StreamError{Code: code, Msg: msg})
}

// abort ends both directions with err (the peer reset the stream or the session ended):
// writes fail, reads fail once the bytes already received are read, the handler's context
// is cancelled.
func (st *stream) abort(err error) {
	st.mu.Lock()
	st.endLocked(err)
	cancel := st.cancel
	st.unlockAndWake()
	if cancel != nil {
		cancel()
	}
}

func (st *stream) endLocked(err error) {
	if st.sendErr == nil {
		st.sendErr = err
	}
	st.sendEnd = true
	if !st.recvEnd && st.recvErr == nil {
		st.recvErr = err
	}
	st.headDone = true
}

// reset ends the stream from this side: the peer is told (code), local reads and writes fail
// with err, and bytes not yet read are dropped.
func (st *stream) reset(code uint32, msg string, err error) {
	st.mu.Lock()
	if st.sendEnd && st.recvEnd && st.chunks == nil { // over on both sides: nothing to tell
		st.mu.Unlock()
		st.s.remove(st)
		return
	}
	st.endLocked(err)
	freeChunks(st.chunks)
	st.chunks = nil
	cancel := st.cancel
	st.unlockAndWake()
	st.s.queue(false, resetFrame(st.id, code, msg))
	if cancel != nil {
		cancel()
	}
}

func (st *stream) addSendWindow(n uint32) error {
	st.mu.Lock()
	if int64(st.sendWin)+int64(n) > 1<<31-1 || n == 0 {
		st.mu.Unlock()
		return protocolErr("window increment %d on stream %d", n, st.id)
	}
	st.sendWin += int(n)
	ws := st.wsig
	st.mu.Unlock()
	signal(ws)
	return nil
}

// wait blocks until c is signalled, the deadline passes (false) or the session ends.
func (st *stream) wait(c chan struct{}, deadline time.Time) bool {
	if deadline.IsZero() {
		select {
		case <-c:
		case <-st.s.done:
		}
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-st.s.done:
		return true
	case <-t.C:
		return false
	}
}

// waitHead waits for the response head (the control plane's end); false when ctx ended first.
func (st *stream) waitHead(ctx context.Context) (*respHead, error, bool) {
	for {
		st.mu.Lock()
		if st.headDone {
			h, err := st.resp, st.recvErr
			st.mu.Unlock()
			return h, err, true
		}
		rs := st.rsigLocked()
		st.mu.Unlock()
		select {
		case <-rs:
		case <-ctx.Done():
			return nil, nil, false
		}
	}
}

// read reads the peer's body.
func (st *stream) read(p []byte) (int, error) {
	for {
		st.mu.Lock()
		if len(st.chunks) > 0 {
			n := 0
			for n < len(p) && len(st.chunks) > 0 {
				c := &st.chunks[0]
				k := copy(p[n:], c.b)
				n += k
				c.b = c.b[k:]
				if len(c.b) == 0 {
					c.free()
					st.chunks[0] = chunk{}
					st.chunks = st.chunks[1:]
				}
			}
			if len(st.chunks) == 0 {
				st.chunks = nil
			}
			credit := 0
			if !st.recvEnd {
				st.unacked += n
				if st.unacked >= creditThreshold {
					credit, st.unacked = st.unacked, 0
					st.recvWin += credit
				}
			}
			st.mu.Unlock()
			if credit > 0 {
				st.s.queue(false, frame{typ: frameWindow, id: st.id, payload: binary.BigEndian.AppendUint32(nil, uint32(credit))})
			}
			return n, nil
		}
		if st.recvEnd {
			st.mu.Unlock()
			return 0, io.EOF
		}
		if st.recvErr != nil {
			err := st.recvErr
			st.mu.Unlock()
			return 0, err
		}
		dl, rs := st.rdl, st.rsigLocked()
		st.mu.Unlock()
		if !st.wait(rs, dl) {
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// closeRead stops reading: bytes not yet read are dropped and more reads fail.
func (st *stream) closeRead() {
	st.mu.Lock()
	if !st.recvEnd && st.recvErr == nil {
		st.recvErr = errBodyClosed
	}
	freeChunks(st.chunks)
	st.chunks = nil
	st.unlockAndWake()
}

// write sends body bytes, as the peer's window allows; end ends the body after them.
func (st *stream) write(p []byte, end bool) error {
	if len(p) == 0 && !end {
		return nil
	}
	for {
		st.mu.Lock()
		if st.sendErr != nil {
			err := st.sendErr
			st.mu.Unlock()
			return err
		}
		if st.sendEnd {
			st.mu.Unlock()
			return errors.New("tunnel: write after the end of the body")
		}
		n := min(len(p), st.sendWin, maxDataFrame)
		if n == 0 && len(p) > 0 {
			dl, ws := st.wdl, st.wsigLocked()
			st.mu.Unlock()
			if !st.wait(ws, dl) {
				return os.ErrDeadlineExceeded
			}
			continue
		}
		st.sendWin -= n
		last := end && n == len(p)
		var flags byte
		if last {
			st.sendEnd = true
			flags = flagEnd
		}
		done := st.doneLocked()
		st.mu.Unlock()
		if err := st.s.queue(true, frame{typ: frameData, flags: flags, id: st.id, payload: p[:n]}); err != nil {
			return err
		}
		p = p[n:]
		if last {
			if done {
				st.s.remove(st)
			}
			return nil
		}
		if len(p) == 0 {
			return nil
		}
	}
}

// endWith ends the body with trailers.
func (st *stream) endWith(trailer http.Header) error {
	st.mu.Lock()
	if st.sendErr != nil {
		err := st.sendErr
		st.mu.Unlock()
		return err
	}
	st.sendEnd = true
	done := st.doneLocked()
	st.mu.Unlock()
	err := st.s.queue(true, frame{typ: frameTrailer, id: st.id, enc: fieldsEncoder(trailer)})
	if done {
		st.s.remove(st)
	}
	return err
}

type fieldsEncoder http.Header

func (f fieldsEncoder) append(b []byte) []byte { return appendFields(b, http.Header(f)) }

func (st *stream) setReadDeadline(t time.Time) {
	st.mu.Lock()
	st.rdl = t
	rs := st.rsig
	st.mu.Unlock()
	signal(rs)
}

func (st *stream) setWriteDeadline(t time.Time) {
	st.mu.Lock()
	st.wdl = t
	ws := st.wsig
	st.mu.Unlock()
	signal(ws)
}
