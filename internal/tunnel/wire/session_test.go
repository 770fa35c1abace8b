package wire

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-ch
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// pair starts a control-plane end and a runtime end serving h over loopback TCP.
func pair(t testing.TB, h http.Handler, cfg Config) (cp, rt *Session) {
	t.Helper()
	a, b := tcpPair(t)
	rt = ServeSession(b, h, context.Background(), cfg)
	cp = NewClientSession(a, cfg)
	t.Cleanup(func() { cp.Close(); rt.Close() })
	return cp, rt
}

func get(t testing.TB, cp *Session, method, uri string, body io.Reader, cl int64) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, "http://runtime.tunnel"+uri, body)
	if err != nil {
		t.Fatal(err)
	}
	if cl != 0 {
		req.ContentLength = cl
	}
	resp, err := cp.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	return resp
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestRoundTripCarriesTheRequestAndTheAnswer(t *testing.T) {
	var got *http.Request
	var gotBody string
	cp, rt := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, gotBody = r, string(b)
		w.Header().Set("X-Answer", "42")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "<html><body>made</body></html>")
	}), Config{})
	req, _ := http.NewRequest(http.MethodPost, "http://ignored/a%2Fb/c?q=1&r=%20", strings.NewReader("payload"))
	req.Host = "prod.tunnel.example.com"
	req.Header.Set("X-Freshet-User", "u-1")
	req.Header.Add("Accept", "text/html")
	req.Header.Add("Accept", "application/json")
	resp, err := cp.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusCreated || resp.Status != "201 Created" || body != "<html><body>made</body></html>" {
		t.Errorf("answer = %s %q", resp.Status, body)
	}
	if resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("content length = %d / %q, want %d", resp.ContentLength, resp.Header.Get("Content-Length"), len(body))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("sniffed content type = %q", ct)
	}
	if resp.Header.Get("X-Answer") != "42" || len(resp.Header["Set-Cookie"]) != 2 {
		t.Errorf("answer header = %v", resp.Header)
	}
	if got.Method != http.MethodPost || got.URL.EscapedPath() != "/a%2Fb/c" || got.URL.RawQuery != "q=1&r=%20" || got.RequestURI != "/a%2Fb/c?q=1&r=%20" {
		t.Errorf("request line = %s %s (%s)", got.Method, got.URL, got.RequestURI)
	}
	if got.Host != "prod.tunnel.example.com" || got.Header.Get("X-Freshet-User") != "u-1" || len(got.Header["Accept"]) != 2 {
		t.Errorf("request host %q header %v", got.Host, got.Header)
	}
	if got.ContentLength != 7 || gotBody != "payload" || got.ProtoMajor != 2 {
		t.Errorf("request body %q (length %d), proto %s", gotBody, got.ContentLength, got.Proto)
	}
	if got.RemoteAddr == "" || got.Context().Value(http.LocalAddrContextKey) == nil {
		t.Errorf("request remote %q, local address in context %v", got.RemoteAddr, got.Context().Value(http.LocalAddrContextKey))
	}
	waitFor(t, "both ends to forget the exchange", func() bool { return cp.InFlight() == 0 && rt.InFlight() == 0 })
}

func TestHeadAndNoContentCarryNoBody(t *testing.T) {
	cp, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/204" {
			w.WriteHeader(http.StatusNoContent)
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
				t.Errorf("write after 204 = %v", err)
			}
			return
		}
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	}), Config{})
	resp := get(t, cp, http.MethodHead, "/", nil, 0)
	if b := readAll(t, resp); b != "" || resp.ContentLength != 5 {
		t.Errorf("HEAD = %q, length %d", b, resp.ContentLength)
	}
	resp = get(t, cp, http.MethodGet, "/204", nil, 0)
	if b := readAll(t, resp); b != "" || resp.StatusCode != http.StatusNoContent {
		t.Errorf("204 = %d %q", resp.StatusCode, b)
	}
}

// Bodies much larger than the window stream both ways at once, intact.
func TestLargeBodiesStreamBothWays(t *testing.T) {
	cp, rt := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), r.Body)
		if err != nil {
			t.Errorf("handler copy after %d bytes: %v", n, err)
		}
	}), Config{})
	const size = 9*StreamWindow + 12345
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			var body io.Reader = bytes.NewReader(src)
			cl := int64(size)
			if i%2 == 1 {
				body, cl = io.MultiReader(bytes.NewReader(src[:size/2]), bytes.NewReader(src[size/2:])), -1
			}
			resp := get(t, cp, http.MethodPost, "/echo", body, cl)
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("echo %d: %d bytes (want %d), err %v", i, len(got), size, err)
			}
		})
	}
	wg.Wait()
	waitFor(t, "both ends to forget the exchanges", func() bool { return cp.InFlight() == 0 && rt.InFlight() == 0 })
}

func TestTrailersBothWays(t *testing.T) {
	cp, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if v := r.Trailer.Get("X-Checksum"); v != "abc" {
			t.Errorf("request trailer = %v", r.Trailer)
		}
		w.Header().Set("Trailer", "Grpc-Status")
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "frames")
		w.(http.Flusher).Flush()
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", "ok")
	}), Config{})
	req, _ := http.NewRequest(http.MethodPost, "http://runtime.tunnel/rpc", io.MultiReader(strings.NewReader("request")))
	req.ContentLength = -1
	req.Header.Set("Trailer", "X-Checksum")
	req.Trailer = http.Header{"X-Checksum": {"abc"}}
	resp, err := cp.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Header["Grpc-Status"]; ok {
		t.Errorf("a trailer went out in the head: %v", resp.Header)
	}
	if b := readAll(t, resp); b != "frames" {
		t.Errorf("body %q", b)
	}
	if resp.Trailer.Get("Grpc-Status") != "0" || resp.Trailer.Get("Grpc-Message") != "ok" {
		t.Errorf("response trailer = %v", resp.Trailer)
	}
}

// Cancelling the request's context cancels the handler's, before and after the head.
func TestCancelReachesTheHandler(t *testing.T) {
	var cancelled atomic.Int32
	started := make(chan struct{}, 2)
	cp, rt := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		started <- struct{}{}
		<-r.Context().Done()
		cancelled.Add(1)
	}), Config{})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://runtime.tunnel/wait", nil)
	errc := make(chan error, 1)
	go func() { _, err := cp.RoundTrip(req); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled round trip = %v, want context.Canceled", err)
	}
	waitFor(t, "the handler to see its context cancelled", func() bool { return cancelled.Load() == 1 })

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://runtime.tunnel/stream", nil)
	resp, err := cp.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("reading a cancelled response's body succeeded")
	}
	resp.Body.Close()
	waitFor(t, "the streaming handler to see its context cancelled", func() bool { return cancelled.Load() == 2 })
	waitFor(t, "both ends to forget the exchanges", func() bool { return cp.InFlight() == 0 && rt.InFlight() == 0 })
}

// Closing a response body early stops the runtime's handler: its writes fail.
func TestClosingTheBodyStopsTheHandler(t *testing.T) {
	werr := make(chan error, 1)
	cp, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
	}), Config{})
	resp := get(t, cp, http.MethodGet, "/forever", nil, 0)
	io.CopyN(io.Discard, resp.Body, 3*StreamWindow)
	resp.Body.Close()
	select {
	case err := <-werr:
		var se *StreamError
		if !errors.As(err, &se) || se.Code != resetCancel {
			t.Errorf("handler write after the body was closed = %v, want the exchange cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept writing after the body was closed")
	}
}

// A handler that answers without reading a large request body stops the upload; the
// exchange ends on both sides.
func TestAnswerWithoutReadingTheBodyStopsTheUpload(t *testing.T) {
	cp, rt := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}), Config{})
	pr, pw := io.Pipe()
	go func() {
		chunk := make([]byte, 32<<10)
		for {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
	}()
	resp := get(t, cp, http.MethodPut, "/upload", pr, -1)
	if b := readAll(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || b != "too large\n" {
		t.Errorf("answer = %d %q", resp.StatusCode, b)
	}
	waitFor(t, "the upload to stop", func() bool {
		_, err := pw.Write([]byte("x"))
		return errors.Is(err, io.ErrClosedPipe)
	})
	waitFor(t, "both ends to forget the exchange", func() bool { return cp.InFlight() == 0 && rt.InFlight() == 0 })
}

func TestHandlerPanicResetsTheExchange(t *testing.T) {
	cp, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("boom")
		}
	}), Config{})
	req, _ := http.NewRequest(http.MethodGet, "http://runtime.tunnel/boom", nil)
	_, err := cp.RoundTrip(req)
	var se *StreamError
	if !errors.As(err, &se) || se.Code != resetInternal {
		t.Fatalf("round trip to a panicking handler = %v, want a failed exchange", err)
	}
	resp := get(t, cp, http.MethodGet, "/", nil, 0) // the connection survives
	resp.Body.Close()
}

func TestTooManyExchangesRefused(t *testing.T) {
	release := make(chan struct{})
	cp, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}), Config{MaxStreams: 2})
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, "http://runtime.tunnel/", nil)
			resp, err := cp.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	err := <-errs
	var se *StreamError
	if !errors.As(err, &se) || !se.Refused() {
		t.Errorf("third exchange = %v, want refused", err)
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("served exchange: %v", err)
		}
	}
}

func TestDeadlinesThroughResponseController(t *testing.T) {
	cp, _ := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := r.Body.Read(make([]byte, 10))
		fmt.Fprintf(w, "%v", errors.Is(err, os.ErrDeadlineExceeded))
	}), Config{})
	pr, pw := io.Pipe()
	defer pw.Close()
	resp := get(t, cp, http.MethodPost, "/", pr, -1)
	if b := readAll(t, resp); b != "true" {
		t.Errorf("read past the deadline: deadline error = %s", b)
	}
}

// A peer that goes silent is dropped after the ping interval plus the ping timeout.
func TestSilentPeerDropped(t *testing.T) {
	a, b := tcpPair(t)
	go io.Copy(io.Discard, b) // reads, never answers
	start := time.Now()
	cp := NewClientSession(a, Config{PingInterval: 50 * time.Millisecond, PingTimeout: 50 * time.Millisecond})
	defer cp.Close()
	select {
	case <-cp.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session outlived a silent peer")
	}
	if el := time.Since(start); el < 100*time.Millisecond || !strings.Contains(cp.Err().Error(), "ping") {
		t.Errorf("dropped after %s with %v, want ≥100ms and a ping error", el, cp.Err())
	}

	// An answering peer is kept.
	cp2, _ := pair(t, http.NotFoundHandler(), Config{PingInterval: 20 * time.Millisecond, PingTimeout: 50 * time.Millisecond})
	time.Sleep(200 * time.Millisecond)
	select {
	case <-cp2.Done():
		t.Fatalf("an answering peer was dropped: %v", cp2.Err())
	default:
	}
}

func TestLostConnectionFailsExchangesInFlight(t *testing.T) {
	started := make(chan struct{})
	var handlerDone atomic.Bool
	cp, rt := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		handlerDone.Store(true)
	}), Config{})
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://runtime.tunnel/", nil)
		_, err := cp.RoundTrip(req)
		errc <- err
	}()
	<-started
	rt.Close()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "tunnel connection lost") {
		t.Errorf("round trip over a lost connection = %v", err)
	}
	waitFor(t, "the handler's context to end", handlerDone.Load)
	req, _ := http.NewRequest(http.MethodGet, "http://runtime.tunnel/", nil)
	if _, err := cp.RoundTrip(req); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("round trip on a closed session = %v, want ErrSessionClosed", err)
	}
}

// Many exchanges of every shape at once, under the race detector.
func TestConcurrentExchanges(t *testing.T) {
	cp, rt := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", strconv.Itoa(len(body)))
		w.Write(bytes.Repeat([]byte("r"), n))
	}), Config{})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for range 20 {
				n, up := rng.IntN(300<<10), rng.IntN(100<<10)
				resp := get(t, cp, http.MethodPost, "/?n="+strconv.Itoa(n), bytes.NewReader(make([]byte, up)), int64(up))
				b := readAll(t, resp)
				if len(b) != n || resp.Header.Get("X-Got") != strconv.Itoa(up) {
					t.Errorf("exchange: %d bytes back (want %d), runtime got %s (want %d)", len(b), n, resp.Header.Get("X-Got"), up)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, "both ends to forget the exchanges", func() bool { return cp.InFlight() == 0 && rt.InFlight() == 0 })
}

// rawFrame is a frame as a hand-played peer sends it.
func rawFrame(typ, flags byte, id uint32, payload []byte) []byte {
	return append(appendFrameHeader(nil, len(payload), typ, flags, id), payload...)
}

func TestProtocolViolationsDropTheConnection(t *testing.T) {
	okHead := (&respHead{status: 200, contentLength: -1, header: http.Header{}}).append(nil)
	for name, frames := range map[string][]byte{
		"oversized frame":          appendFrameHeader(nil, MaxFrameSize+1, frameData, 0, 1),
		"malformed head":           rawFrame(frameHead, 0, 1, []byte{0xff}),
		"status 42":                rawFrame(frameHead, 0, 1, (&respHead{status: 42, contentLength: -1}).append(nil)),
		"header with CRLF":         rawFrame(frameHead, 0, 1, (&respHead{status: 200, contentLength: -1, header: http.Header{"X-A": {"1\r\nX-Injected: 1"}}}).append(nil)),
		"data beyond the window":   append(append(rawFrame(frameHead, 0, 1, okHead), rawFrame(frameData, 0, 1, make([]byte, StreamWindow))...), rawFrame(frameData, 0, 1, []byte("x"))...),
		"trailers before the head": rawFrame(frameTrailer, 0, 1, appendFields(nil, http.Header{"T": {"1"}})),
		"zero window increment":    rawFrame(frameWindow, 0, 1, []byte{0, 0, 0, 0}),
		"short reset":              rawFrame(frameReset, 0, 1, []byte{1}),
	} {
		t.Run(name, func(t *testing.T) {
			a, b := tcpPair(t)
			cp := NewClientSession(a, Config{})
			defer cp.Close()
			go func() {
				io.CopyN(io.Discard, b, 1) // the request started
				b.Write(frames)
				io.Copy(io.Discard, b)
			}()
			req, _ := http.NewRequest(http.MethodGet, "http://runtime.tunnel/", nil)
			if resp, err := cp.RoundTrip(req); err == nil {
				defer resp.Body.Close() // unread: reading would return credit and widen the window
			}
			select {
			case <-cp.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the connection survived a protocol violation")
			}
			if !errors.Is(cp.Err(), errProtocol) {
				t.Errorf("session ended with %v, want a protocol error", cp.Err())
			}
		})
	}
}

func TestHeadCodecRoundTrip(t *testing.T) {
	rq := &reqHead{method: "PATCH", uri: "/x?y=1", host: "h:1", contentLength: -1, header: http.Header{"A": {"1", "2"}, "B-C": {""}}}
	got, err := decodeReqHead(rq.append(nil))
	if err != nil || got.method != rq.method || got.uri != rq.uri || got.host != rq.host || got.contentLength != -1 || len(got.header["A"]) != 2 || got.header.Get("B-C") != "" {
		t.Errorf("request head round trip = %+v, %v", got, err)
	}
	rs := &respHead{status: 418, contentLength: 1 << 40, header: http.Header{"X": {"y"}}}
	gr, err := decodeRespHead(rs.append(nil))
	if err != nil || gr.status != 418 || gr.contentLength != 1<<40 || gr.header.Get("X") != "y" {
		t.Errorf("response head round trip = %+v, %v", gr, err)
	}
	for _, bad := range []*reqHead{
		{method: "GET X", uri: "/", header: http.Header{}},
		{method: "GET", uri: "/a b", header: http.Header{}},
		{method: "GET", uri: "", header: http.Header{}},
		{method: "GET", uri: "/", header: http.Header{"Bad Name": {"x"}}},
		{method: "GET", uri: "/", contentLength: -2, header: http.Header{}},
	} {
		if _, err := decodeReqHead(bad.append(nil)); !errors.Is(err, errProtocol) {
			t.Errorf("decode %+v = %v, want a protocol error", bad, err)
		}
	}
}

func FuzzDecodeHeads(f *testing.F) {
	f.Add((&reqHead{method: "GET", uri: "/", host: "h", contentLength: 3, header: http.Header{"A": {"b"}}}).append(nil))
	f.Add((&respHead{status: 200, contentLength: -1, header: http.Header{"A": {"b"}}}).append(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := decodeReqHead(b); err == nil {
			again, err := decodeReqHead(h.append(nil))
			if err != nil || again.method != h.method || again.uri != h.uri || again.contentLength != h.contentLength {
				t.Fatalf("request head does not round-trip: %+v → %+v, %v", h, again, err)
			}
		}
		if h, err := decodeRespHead(b); err == nil {
			if again, err := decodeRespHead(h.append(nil)); err != nil || again.status != h.status {
				t.Fatalf("response head does not round-trip: %+v → %+v, %v", h, again, err)
			}
		}
		decodeTrailer(b)
		if valid, canonical := checkFieldName(string(b)); valid && canonical != (textproto.CanonicalMIMEHeaderKey(string(b)) == string(b)) {
			t.Fatalf("%q: canonical = %v, CanonicalMIMEHeaderKey disagrees", b, canonical)
		}
	})
}

// FuzzClientSession plays a hostile runtime: whatever bytes it sends, the control plane's end
// must not panic, hang or let a round trip outlive the connection.
func FuzzClientSession(f *testing.F) {
	okHead := (&respHead{status: 200, contentLength: 2, header: http.Header{"A": {"b"}}}).append(nil)
	f.Add(append(rawFrame(frameHead, 0, 1, okHead), rawFrame(frameData, flagEnd, 1, []byte("hi"))...))
	f.Add(rawFrame(frameReset, 0, 1, binary.BigEndian.AppendUint32(nil, resetRefused)))
	f.Add(append(rawFrame(framePing, 0, 0, make([]byte, 8)), rawFrame(frameTrailer, 0, 1, appendFields(nil, http.Header{"T": {"1"}}))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, p := net.Pipe()
		cp := NewClientSession(a, Config{})
		started := make(chan struct{})
		go func() {
			io.CopyN(io.Discard, p, 1) // the request started
			close(started)
			io.Copy(io.Discard, p)
		}()
		go func() {
			<-started
			p.Write(b)
			p.Close()
		}()
		req, _ := http.NewRequest(http.MethodGet, "http://runtime.tunnel/", nil)
		if resp, err := cp.RoundTrip(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cp.Close()
	})
}

// FuzzServeSession sends arbitrary frames to the runtime's end: it must not panic or hang.
func FuzzServeSession(f *testing.F) {
	req := (&reqHead{method: "POST", uri: "/echo?x=1", host: "h", contentLength: 3, header: http.Header{"A": {"b"}}}).append(nil)
	f.Add(append(rawFrame(frameHead, 0, 1, req), rawFrame(frameData, flagEnd, 1, []byte("abc"))...))
	f.Add(append(rawFrame(frameHead, 0, 1, req), rawFrame(frameReset, 0, 1, binary.BigEndian.AppendUint32(nil, resetCancel))...))
	f.Add(append(rawFrame(frameHead, flagEnd, 7, req), rawFrame(frameWindow, 0, 7, binary.BigEndian.AppendUint32(nil, 10))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, p := net.Pipe()
		rt := ServeSession(a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(w, r.Body)
		}), context.Background(), Config{})
		go io.Copy(io.Discard, p)
		p.Write(b)
		p.Close()
		<-rt.Done()
	})
}

func TestCheckFieldNameKnowsCanonicalForm(t *testing.T) {
	for _, k := range []string{"Content-Type", "X-Freshet-User", "content-type", "X-FRESHET", "Www-Authenticate", "X-1a", "A", "a", "Foo_bar", "X--Y", "-X"} {
		valid, canonical := checkFieldName(k)
		if !valid {
			t.Errorf("%q: not valid", k)
		}
		if want := textproto.CanonicalMIMEHeaderKey(k) == k; canonical != want {
			t.Errorf("%q: canonical = %v, CanonicalMIMEHeaderKey says %v", k, canonical, want)
		}
	}
	if valid, _ := checkFieldName("Bad Name"); valid {
		t.Error(`"Bad Name" is valid`)
	}
}

// A connection that dies silently is dropped within PingInterval+PingTimeout of the last frame
// it carried, however the death falls against the ping cycle: also right after a ping was
// answered, when the next ping used to wait a whole interval from the answer's deadline (20 s
// instead of 15 s with the defaults).
func TestSilentDeathWithinIntervalPlusTimeout(t *testing.T) {
	for _, freezeAt := range []time.Duration{
		time.Second,                              // before any ping
		PingInterval + time.Millisecond,          // just after the first pings were answered
		PingInterval + PingTimeout + time.Second, // after the answer's deadline passed
	} {
		t.Run(freezeAt.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := net.Pipe()
				peer := &freezable{Conn: b}
				rt := ServeSession(peer, http.NotFoundHandler(), context.Background(), Config{})
				cp := NewClientSession(a, Config{})
				defer cp.Close()
				defer rt.Close()
				time.Sleep(freezeAt)
				synctest.Wait() // every answer due has been read
				peer.frozen.Store(true)
				frozen := time.Now()
				select {
				case <-cp.Done():
				case <-time.After(time.Minute):
					t.Fatal("the session outlived a silent peer by a minute")
				}
				if took := time.Since(frozen); took > PingInterval+PingTimeout {
					t.Errorf("silent death noticed after %s, want at most %s", took, PingInterval+PingTimeout)
				}
			})
		})
	}
}

// freezable is a connection whose network can be made to drop everything without a FIN: once
// frozen, what it reads is discarded and what it writes goes nowhere.
type freezable struct {
	net.Conn
	frozen atomic.Bool
}

func (f *freezable) Read(p []byte) (int, error) {
	for {
		n, err := f.Conn.Read(p)
		if !f.frozen.Load() || err != nil {
			return n, err
		}
	}
}

func (f *freezable) Write(p []byte) (int, error) {
	if f.frozen.Load() {
		return len(p), nil
	}
	return f.Conn.Write(p)
}
