package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ErrSessionClosed is returned for exchanges on a tunnel connection that was closed.
var ErrSessionClosed = errors.New("tunnel connection closed")

// Write queue bounds. Body writers wait while maxPending bytes are queued; control frames
// (credit, pings, resets, which the read loop writes and which must never wait for the peer)
// do not, but a peer that lets more than maxControlPending pile up is not reading at all and
// the connection is dropped.
const (
	maxPending        = 1 << 20
	maxControlPending = 16 << 20
	maxKeptBuffer     = 4 << 20 // a write buffer that grew larger is not reused
	readBufferSize    = 64 << 10
	// maxYields bounds how often the writer yields to let more frames join a write, as long
	// as each yield brought more.
	maxYields = 4
)

// Config tunes a Session.
type Config struct {
	// PingInterval and PingTimeout: a connection silent for PingInterval is pinged and
	// dropped when nothing arrives within PingTimeout (defaults wire.PingInterval and
	// wire.PingTimeout).
	PingInterval, PingTimeout time.Duration
	// MaxStreams bounds the requests the runtime's end serves at once; more are refused
	// (default MaxConcurrentStreams).
	MaxStreams int
	// Log receives handler panics on the runtime's side (nil discards them).
	Log *slog.Logger
}

// Session is one tunnel connection after the handshake: the control plane's end
// (NewClientSession) sends requests with RoundTrip; the runtime's end (ServeSession) hands
// each request to its handler. Frames of all exchanges are multiplexed on the connection and
// written in batches: whatever the exchanges queued while the previous write was in the
// kernel goes out in the next single write.
type Session struct {
	conn   net.Conn
	client bool
	cfg    Config
	br     *bufio.Reader

	mu      sync.Mutex
	streams map[uint32]*stream
	nextID  uint32
	err     error // why the session ended; set once

	wmu     sync.Mutex
	wcond   sync.Cond // body writers waiting for room in the queue
	wbuf    []byte    // frames queued for the next write
	wspare  []byte    // the other buffer, while wbuf is being written
	werr    error     // set when the session ended: queueing fails
	writing bool      // a goroutine is writing the queue out
	wsig    chan struct{}

	done      chan struct{}
	closeOnce sync.Once
	lastRead  atomic.Int64 // unix nanoseconds of the last frame read

	// the runtime's end
	handler    http.Handler
	baseCtx    context.Context
	remoteAddr string
	active     atomic.Int32
	jobs       chan *stream // hands requests to parked workers
	parked     atomic.Int32
}

// maxParked bounds the workers a runtime's end keeps parked between requests. A worker serves
// one request after another, so its stack, grown by the first, serves the next without
// growing again (a new goroutine per request pays for that growth every time).
const maxParked = 64

func newSession(conn net.Conn, client bool, cfg Config) *Session {
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = PingInterval
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = PingTimeout
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = MaxConcurrentStreams
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Session{
		conn:    conn,
		client:  client,
		cfg:     cfg,
		br:      bufio.NewReaderSize(conn, readBufferSize),
		streams: make(map[uint32]*stream),
		wsig:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		jobs:    make(chan *stream),
	}
	s.wcond.L = &s.wmu
	s.lastRead.Store(time.Now().UnixNano())
	return s
}

// NewClientSession starts the control plane's end on conn: it sends requests (RoundTrip) and
// reads the runtime's answers.
func NewClientSession(conn net.Conn, cfg Config) *Session {
	s := newSession(conn, true, cfg)
	s.start()
	return s
}

// ServeSession starts the runtime's end on conn: every request the control plane sends is
// served by h in its own goroutine, with a context derived from base (cancelled when the
// control plane cancels the request or the connection ends).
func ServeSession(conn net.Conn, h http.Handler, base context.Context, cfg Config) *Session {
	s := newSession(conn, false, cfg)
	s.handler = h
	s.baseCtx = context.WithValue(base, http.LocalAddrContextKey, conn.LocalAddr())
	s.remoteAddr = conn.RemoteAddr().String()
	s.start()
	return s
}

func (s *Session) start() {
	go s.writeLoop()
	go s.readLoop()
	go s.keepalive()
}

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is why the session ended (nil while it runs).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session and closes the connection; exchanges in flight fail.
func (s *Session) Close() error {
	s.fail(ErrSessionClosed)
	return nil
}

// InFlight is how many exchanges are open on the session.
func (s *Session) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

func (s *Session) fail(err error) {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		streams := s.streams
		s.streams = nil
		s.mu.Unlock()
		s.wmu.Lock()
		s.werr = fmt.Errorf("%w: %w", ErrSessionClosed, err)
		s.wcond.Broadcast()
		s.wmu.Unlock()
		serr := fmt.Errorf("tunnel connection lost: %w", err)
		for _, st := range streams {
			st.abort(serr)
		}
		close(s.done)
		s.conn.Close()
	})
}

// frame is one frame to queue: its payload is payload, or what enc appends.
type frame struct {
	typ, flags byte
	id         uint32
	payload    []byte
	enc        interface{ append([]byte) []byte }
}

var errHeadTooLarge = fmt.Errorf("the head is larger than %d bytes", MaxHeadSize)

// queue appends frames to the write queue, in order and together. Body writers (block) wait
// while the queue is full; control frames never wait.
func (s *Session) queue(block bool, frames ...frame) error {
	s.wmu.Lock()
	for block && len(s.wbuf) >= maxPending && s.werr == nil {
		s.wcond.Wait()
	}
	if s.werr != nil {
		err := s.werr
		s.wmu.Unlock()
		return err
	}
	if !block && len(s.wbuf) >= maxControlPending {
		s.wmu.Unlock()
		s.fail(errors.New("the peer stopped reading"))
		return ErrSessionClosed
	}
	start := len(s.wbuf)
	for _, f := range frames {
		off := len(s.wbuf)
		s.wbuf = appendFrameHeader(s.wbuf, len(f.payload), f.typ, f.flags, f.id)
		if f.enc == nil {
			s.wbuf = append(s.wbuf, f.payload...)
			continue
		}
		s.wbuf = f.enc.append(s.wbuf)
		n := len(s.wbuf) - off - frameHeaderLen
		if n > MaxHeadSize {
			s.wbuf = s.wbuf[:start]
			s.wmu.Unlock()
			return errHeadTooLarge
		}
		binary.BigEndian.PutUint32(s.wbuf[off:], uint32(n))
	}
	if s.writing {
		s.wmu.Unlock() // the writer at work takes these frames too
		return nil
	}
	if block {
		// Nobody is writing: this goroutine writes, saving the hand-off to the writer
		// goroutine. The read loop (block false) never writes itself: a write that waits for
		// the peer to read must not stop it from reading.
		s.writing = true
		s.wmu.Unlock()
		s.flush()
		return nil
	}
	s.wmu.Unlock()
	select {
	case s.wsig <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop writes the frames queued while nobody was writing (control frames from the
// read loop).
func (s *Session) writeLoop() {
	for {
		select {
		case <-s.wsig:
		case <-s.done:
			return
		}
		s.wmu.Lock()
		if s.writing {
			s.wmu.Unlock()
			continue
		}
		s.writing = true
		s.wmu.Unlock()
		s.flush()
	}
}

// flush writes queued frames until the queue is empty; the caller set s.writing, which flush
// clears. Everything queued while a write was in the kernel goes out in the next write, and
// before the first write the writer yields while that brings more frames, so that the
// exchanges running at that moment share it.
func (s *Session) flush() {
	for range maxYields {
		s.wmu.Lock()
		n := len(s.wbuf)
		s.wmu.Unlock()
		if n >= 32<<10 {
			break
		}
		runtime.Gosched()
		s.wmu.Lock()
		grew := len(s.wbuf) > n
		s.wmu.Unlock()
		if !grew {
			break
		}
	}
	for {
		s.wmu.Lock()
		buf := s.wbuf
		if len(buf) == 0 || s.werr != nil {
			s.writing = false
			s.wmu.Unlock()
			return
		}
		s.wbuf, s.wspare = s.wspare[:0], nil
		s.wcond.Broadcast()
		s.wmu.Unlock()
		if _, err := s.conn.Write(buf); err != nil {
			s.fail(fmt.Errorf("write: %w", err))
			return
		}
		if cap(buf) <= maxKeptBuffer {
			s.wmu.Lock()
			s.wspare = buf[:0]
			s.wmu.Unlock()
		}
	}
}

// keepalive pings a connection silent for PingInterval and drops it when the ping goes
// unanswered for PingTimeout. Every wait is counted from the last frame read, also after an
// answered ping, so a connection that dies silently is dropped at most PingInterval+PingTimeout
// after the last frame it carried.
func (s *Session) keepalive() {
	t := time.NewTimer(s.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		idle := time.Duration(time.Now().UnixNano() - s.lastRead.Load())
		if idle < s.cfg.PingInterval {
			t.Reset(s.cfg.PingInterval - idle)
			continue
		}
		sent := time.Now().UnixNano()
		var p [8]byte
		binary.BigEndian.PutUint64(p[:], uint64(sent))
		s.queue(false, frame{typ: framePing, payload: p[:]})
		t.Reset(s.cfg.PingTimeout)
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		last := s.lastRead.Load()
		if last < sent {
			s.fail(fmt.Errorf("no answer to a ping within %s", s.cfg.PingTimeout))
			return
		}
		// The next ping is due PingInterval after the last frame (the answer, or a later one),
		// not after this check: waiting a whole interval from here would let a death right after
		// the answer go unnoticed for PingInterval+2×PingTimeout.
		t.Reset(max(s.cfg.PingInterval-time.Duration(time.Now().UnixNano()-last), 0))
	}
}

func (s *Session) readLoop() {
	s.fail(s.readFrames())
}

func (s *Session) readFrames() error {
	var hdr [frameHeaderLen]byte
	var scratch []byte
	for {
		if _, err := io.ReadFull(s.br, hdr[:]); err != nil {
			return err
		}
		s.lastRead.Store(time.Now().UnixNano())
		n := binary.BigEndian.Uint32(hdr[0:])
		typ, flags := hdr[4], hdr[5]
		id := binary.BigEndian.Uint32(hdr[6:])
		if n > MaxFrameSize {
			return protocolErr("a frame of %d bytes, more than %d", n, MaxFrameSize)
		}
		if typ == frameData {
			st := s.stream(id)
			if st == nil { // an exchange that is over here: skip
				if _, err := s.br.Discard(int(n)); err != nil {
					return err
				}
				continue
			}
			var c chunk
			if n > 0 {
				c = getChunk(int(n))
				if _, err := io.ReadFull(s.br, c.b); err != nil {
					c.free()
					return err
				}
			}
			if err := st.recvData(c, flags&flagEnd != 0); err != nil {
				return err
			}
			continue
		}
		if typ < frameHead || typ > framePing { // unknown: a newer peer's, skipped
			if _, err := s.br.Discard(int(n)); err != nil {
				return err
			}
			continue
		}
		if cap(scratch) < int(n) {
			scratch = make([]byte, n)
		}
		p := scratch[:n]
		if _, err := io.ReadFull(s.br, p); err != nil {
			return err
		}
		if err := s.handleFrame(typ, flags, id, p); err != nil {
			return err
		}
	}
}

func (s *Session) handleFrame(typ, flags byte, id uint32, p []byte) error {
	switch typ {
	case frameHead:
		if !s.client {
			return s.accept(id, p, flags&flagEnd != 0)
		}
		h, err := decodeRespHead(p)
		if err != nil {
			return err
		}
		if st := s.stream(id); st != nil {
			st.recvHead(h, flags&flagEnd != 0)
		}
	case frameTrailer:
		t, err := decodeTrailer(p)
		if err != nil {
			return err
		}
		if st := s.stream(id); st != nil {
			return st.recvTrailer(t)
		}
	case frameReset:
		if len(p) < 4 {
			return protocolErr("a reset frame of %d bytes", len(p))
		}
		if st := s.stream(id); st != nil {
			msg := p[4:]
			if len(msg) > maxResetMsg {
				msg = msg[:maxResetMsg]
			}
			st.recvReset(binary.BigEndian.Uint32(p), string(msg))
		}
	case frameWindow:
		if len(p) != 4 {
			return protocolErr("a window frame of %d bytes", len(p))
		}
		if st := s.stream(id); st != nil {
			return st.addSendWindow(binary.BigEndian.Uint32(p))
		}
	case framePing:
		if len(p) != 8 {
			return protocolErr("a ping of %d bytes", len(p))
		}
		if flags&flagAck == 0 {
			s.queue(false, frame{typ: framePing, flags: flagAck, payload: p})
		}
	}
	return nil
}

func (s *Session) stream(id uint32) *stream {
	s.mu.Lock()
	st := s.streams[id]
	s.mu.Unlock()
	return st
}

func (s *Session) remove(st *stream) {
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
}

// open registers a new exchange (the control plane's end).
func (s *Session) open() (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		return nil, fmt.Errorf("%w: %w", ErrSessionClosed, s.err)
	}
	for {
		s.nextID++
		if s.nextID == 0 {
			continue
		}
		if _, busy := s.streams[s.nextID]; !busy {
			break
		}
	}
	st := newStream(s, s.nextID)
	st.client = true
	s.streams[st.id] = st
	return st, nil
}

// accept registers an exchange the control plane opened and serves it (the runtime's end).
func (s *Session) accept(id uint32, p []byte, end bool) error {
	h, err := decodeReqHead(p)
	if err != nil {
		return err
	}
	if id == 0 {
		return protocolErr("a request on stream 0")
	}
	if int(s.active.Load()) >= s.cfg.MaxStreams {
		s.queue(false, resetFrame(id, resetRefused, fmt.Sprintf("the runtime serves at most %d requests at once on one tunnel connection", s.cfg.MaxStreams)))
		return nil
	}
	st := newStream(s, id)
	if end {
		st.recvEnd = true
	}
	s.mu.Lock()
	if s.streams == nil {
		s.mu.Unlock()
		return nil
	}
	if _, dup := s.streams[id]; dup {
		s.mu.Unlock()
		return protocolErr("a request on stream %d, which is open", id)
	}
	s.streams[id] = st
	s.mu.Unlock()
	s.active.Add(1)
	st.req = h
	select {
	case s.jobs <- st:
	default:
		go s.work(st)
	}
	return nil
}

// work serves st, then further requests handed over while it is parked.
func (s *Session) work(st *stream) {
	for {
		s.serve(st, st.req)
		if s.parked.Add(1) > maxParked {
			s.parked.Add(-1)
			return
		}
		select {
		case st = <-s.jobs:
			s.parked.Add(-1)
		case <-s.done:
			s.parked.Add(-1)
			return
		}
	}
}

func resetFrame(id uint32, code uint32, msg string) frame {
	if len(msg) > maxResetMsg {
		msg = msg[:maxResetMsg]
	}
	p := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(msg)), code)
	return frame{typ: frameReset, id: id, payload: append(p, msg...)}
}
