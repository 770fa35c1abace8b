package client

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// serveUpgrade runs h for a client's HTTP/1.1 upgrade request (a WebSocket, say) that the
// control plane carried as an HTTP/2 stream: the request body is the client's raw byte
// stream. The handler sees the Connection and Upgrade headers as the client sent them and
// may hijack the connection as usual; everything it then writes, starting with its own
// "101 Switching Protocols" head, goes to the client unchanged. A handler that answers
// without hijacking (refusing the upgrade, say) answers as any other request.
func serveUpgrade(h http.Handler, w http.ResponseWriter, r *http.Request, proto string) {
	r.Header.Del(wire.HeaderUpgrade)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", proto)
	// It is the caller's HTTP/1.1 request; WebSocket libraries refuse HTTP/2 ones.
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	uw := &upgradeWriter{ResponseWriter: w, r: r}
	h.ServeHTTP(uw, r)
	uw.mu.Lock()
	sc := uw.conn
	uw.mu.Unlock()
	if sc == nil {
		return
	}
	// The handler may keep using a hijacked connection after it returns, as it may with
	// net/http; the stream lives until the connection is closed or the stream is reset.
	select {
	case <-sc.closed:
	case <-r.Context().Done():
	}
	sc.Close()
}

// upgradeWriter lets the handler of a tunnelled upgrade request hijack the stream.
type upgradeWriter struct {
	http.ResponseWriter
	r *http.Request

	mu          sync.Mutex
	wroteHeader bool
	conn        *streamConn
}

func (u *upgradeWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }

func (u *upgradeWriter) WriteHeader(code int) {
	u.mu.Lock()
	if !u.wroteHeader && code >= 200 {
		u.wroteHeader = true
		u.ResponseWriter.Header().Del(wire.HeaderRaw) // only a hijack makes a raw stream
	}
	u.mu.Unlock()
	u.ResponseWriter.WriteHeader(code)
}

func (u *upgradeWriter) Write(p []byte) (int, error) {
	u.mu.Lock()
	wrote := u.wroteHeader
	u.mu.Unlock()
	if !wrote {
		u.WriteHeader(http.StatusOK)
	}
	return u.ResponseWriter.Write(p)
}

func (u *upgradeWriter) Flush() {
	http.NewResponseController(u.ResponseWriter).Flush()
}

// Hijack answers the stream with the raw-stream marker and returns a connection whose reads
// are the client's bytes and whose writes go to the client as they are.
func (u *upgradeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conn != nil {
		return nil, nil, http.ErrHijacked
	}
	if u.wroteHeader {
		return nil, nil, errors.New("tunnel: cannot hijack after the response started")
	}
	u.wroteHeader = true
	h := u.ResponseWriter.Header()
	clear(h)
	h.Set(wire.HeaderRaw, "1")
	u.ResponseWriter.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(u.ResponseWriter)
	if err := rc.Flush(); err != nil {
		return nil, nil, err
	}
	sc := &streamConn{
		body:   u.r.Body,
		w:      u.ResponseWriter,
		rc:     rc,
		closed: make(chan struct{}),
		remote: tunnelAddr(u.r.RemoteAddr),
	}
	if a, ok := u.r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		sc.local = a
	} else {
		sc.local = tunnelAddr("runtime")
	}
	u.conn = sc
	return sc, bufio.NewReadWriter(bufio.NewReader(sc), bufio.NewWriter(sc)), nil
}

// streamConn is a hijacked tunnelled upgrade: one HTTP/2 stream seen as a net.Conn.
type streamConn struct {
	body   io.ReadCloser
	w      http.ResponseWriter
	rc     *http.ResponseController
	local  net.Addr
	remote net.Addr

	wmu       sync.Mutex // serialises writes with Close
	dead      bool
	closing   atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && c.closing.Load() {
		return n, net.ErrClosed
	}
	return n, err
}

func (c *streamConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dead {
		return 0, net.ErrClosed
	}
	n, err := c.w.Write(p)
	if err == nil {
		err = c.rc.Flush()
	}
	return n, err
}

func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.body.Close()
		if !c.wmu.TryLock() {
			// A write is blocked (the client is not reading): unblock it.
			c.rc.SetWriteDeadline(time.Now())
			c.wmu.Lock()
		}
		c.dead = true
		c.wmu.Unlock()
		close(c.closed)
	})
	return nil
}

func (c *streamConn) LocalAddr() net.Addr  { return c.local }
func (c *streamConn) RemoteAddr() net.Addr { return c.remote }

func (c *streamConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}
func (c *streamConn) SetReadDeadline(t time.Time) error  { return c.rc.SetReadDeadline(t) }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return c.rc.SetWriteDeadline(t) }
