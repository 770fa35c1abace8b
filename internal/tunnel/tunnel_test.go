package tunnel_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/tunnel"
	"github.com/freshet-dev/freshet/internal/tunnel/client"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// app is the runtime's handler in the tests (the app-proxy's place). It records what it saw.
type app struct {
	mu      sync.Mutex
	seen    []*http.Request
	calls   atomic.Int64
	locals  map[string]int // tunnel connection (local address) → requests
	started chan string    // receives the path of blocking requests once they run
	release chan struct{}  // closed to let blocking requests finish
	ended   chan error     // receives the context error blocking requests ended with
	sse     chan struct{}  // one token per further SSE event
}

func newApp() *app {
	return &app{
		locals:  map[string]int{},
		started: make(chan string, 100),
		release: make(chan struct{}),
		ended:   make(chan error, 100),
		sse:     make(chan struct{}),
	}
}

func (a *app) last() *http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		return nil
	}
	return a.seen[len(a.seen)-1]
}

// pattern is the byte at offset i of the large test bodies.
func pattern(i int64) byte { return byte(i*7 + i>>13) }

// patternReader yields n bytes of pattern without holding them.
type patternReader struct{ off, n int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	k := min(int64(len(b)), p.n-p.off)
	for i := range k {
		b[i] = pattern(p.off + i)
	}
	p.off += k
	return int(k), nil
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	a.mu.Lock()
	a.seen = append(a.seen, r.Clone(context.Background()))
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		a.locals[la.String()]++
	}
	a.mu.Unlock()
	switch {
	case r.URL.Path == "/hello":
		id, ok := client.IdentityOf(r)
		fmt.Fprintf(w, "hello %s (%v)", id.Email, ok)
	case strings.HasPrefix(r.URL.Path, "/echo/"):
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path, "raw": r.URL.RawPath, "query": r.URL.RawQuery, "host": r.Host})
	case r.URL.Path == "/upload":
		// Reads incrementally and checks every byte against the pattern.
		buf := make([]byte, 32<<10)
		var off int64
		h := sha256.New()
		for {
			n, err := r.Body.Read(buf)
			for i := range n {
				if buf[i] != pattern(off+int64(i)) {
					http.Error(w, fmt.Sprintf("byte %d is wrong", off+int64(i)), http.StatusBadRequest)
					return
				}
			}
			h.Write(buf[:n])
			off += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		fmt.Fprintf(w, "%d %s", off, hex.EncodeToString(h.Sum(nil)))
	case r.URL.Path == "/download":
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		io.CopyBuffer(w, &patternReader{n: n}, make([]byte, 32<<10))
	case r.URL.Path == "/sse":
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 3; i++ {
			if i > 1 {
				select {
				case <-a.sse:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "event: tick\ndata: %d\n\n", i)
			http.NewResponseController(w).Flush()
		}
	case r.URL.Path == "/block":
		a.started <- r.URL.Path
		select {
		case <-r.Context().Done():
			a.ended <- r.Context().Err()
		case <-a.release:
			io.WriteString(w, "released")
		}
	case r.URL.Path == "/ws":
		if !strings.EqualFold(r.Header.Get("Upgrade"), "echo") || !wire.HeaderHasToken(r.Header, "Connection", "upgrade") || r.ProtoMajor != 1 {
			http.Error(w, "want an HTTP/1.1 request with Upgrade: echo", http.StatusUpgradeRequired)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		id, _ := client.IdentityOf(r)
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Echo-User: %s\r\n\r\n", id.UserID)
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			if line == "bye\n" {
				return
			}
			brw.WriteString(strings.ToUpper(line))
			brw.Flush()
		}
	case r.URL.Path == "/ws-refused":
		http.Error(w, "no upgrades here", http.StatusBadRequest)
	default:
		http.NotFound(w, r)
	}
}

func TestProxyReachesRuntime(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	cl := startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)

	if st := cl.State(); !st.Healthy() || st.Connected != client.DefaultConns || st.Want != client.DefaultConns {
		t.Errorf("client state = %+v, want %d connections up", st, client.DefaultConns)
	}
	for _, ref := range []string{"prod", "rt-a"} { // by name in the caller's account, by ID
		code, _, body := get(t, hc, c.url+"/runtimes/"+ref+"/hello", "alice")
		if code != http.StatusOK || body != "hello alice@acme.test (true)" {
			t.Errorf("GET /runtimes/%s/hello = %d %q, want 200 from the runtime", ref, code, body)
		}
	}
	code, _, body := get(t, hc, c.url+"/runtimes/prod/echo/a%2Fb/c?x=1&y=%20", "alice")
	var echo map[string]string
	json.Unmarshal([]byte(body), &echo)
	if code != http.StatusOK || echo["path"] != "/echo/a/b/c" || echo["raw"] != "/echo/a%2Fb/c" || echo["query"] != "x=1&y=%20" {
		t.Errorf("escaped path and query = %d %v, want path /echo/a/b/c raw /echo/a%%2Fb/c query x=1&y=%%20", code, echo)
	}
	st := c.srv.Connected()
	if len(st) != 1 || st[0].Runtime != rtA || len(st[0].Conns) != client.DefaultConns {
		t.Errorf("Connected() = %+v, want %s with %d connections", st, rtA.ID, client.DefaultConns)
	}
	if ev := c.connectEvents(); len(ev) != 2 || ev[0] != "+rt-a:1" || ev[1] != "+rt-a:2" {
		t.Errorf("OnConnect events = %v, want +rt-a:1 +rt-a:2", ev)
	}
}

func TestTunnelOverTLS(t *testing.T) {
	checkLeaks(t)
	c := newCPWith(t, true, nil)
	a := newApp()
	pool := x509.NewCertPool()
	pool.AddCert(c.ts.Certificate())
	startRuntime(t, c, "token-a", a, func(o *client.Options) { o.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "example.com"} })
	hc := c.ts.Client() // speaks HTTP/2 to the control plane
	t.Cleanup(hc.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodGet, c.url+"/runtimes/prod/hello", nil)
	req.Header.Set(headerUser, "alice")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 || string(b) != "hello alice@acme.test (true)" {
		t.Errorf("over TLS = %s %s %q, want 200 over HTTP/2 from the runtime", resp.Proto, resp.Status, b)
	}
	if h := a.last().Header.Get("X-Forwarded-Proto"); h != "https" {
		t.Errorf("X-Forwarded-Proto = %q, want https", h)
	}
}

func TestNotConnectedAnswers502(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	hc := httpClient(t)
	code, h, body := get(t, hc, c.url+"/runtimes/prod/hello", "alice")
	e := errorBody(t, body)
	if code != http.StatusBadGateway || e.Code != "unavailable" || !strings.Contains(e.Message, "runtime prod is not connected") || e.RequestID != h.Get("X-Request-Id") {
		t.Errorf("no tunnel: %d %+v, want 502 unavailable \"runtime prod is not connected…\" with the request ID", code, e)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	code, _, body = get(t, hc, c.url+"/runtimes/", "alice")
	if e := errorBody(t, body); code != http.StatusNotFound || e.Code != "not_found" {
		t.Errorf("GET /runtimes/ = %d %+v, want 404 not_found", code, e)
	}
}

func TestBadTokenRefusedBeforeRegistration(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.Dial(ctx, client.Options{ServerURL: c.url, Token: "stolen", Handler: a})
	if !errors.Is(err, client.ErrRefused) {
		t.Fatalf("Dial with a bad token = %v, want ErrRefused", err)
	}
	if !strings.Contains(err.Error(), "401") {
		t.Errorf("refusal %q does not say 401", err)
	}
	rej := c.rejections()
	if len(rej) == 0 || !errors.Is(rej[0], errdefs.ErrUnauthenticated) {
		t.Errorf("OnRejected saw %v, want an unauthenticated refusal", rej)
	}
	if st := c.srv.Connected(); len(st) != 0 {
		t.Errorf("registry after a refused token: %+v, want empty", st)
	}
	if ev := c.connectEvents(); len(ev) != 0 {
		t.Errorf("OnConnect ran for a refused token: %v", ev)
	}

	// Not an upgrade at all, and an upgrade without a token: refused and audited too.
	hc := httpClient(t)
	code, _, body := get(t, hc, c.url+wire.ConnectPath, "")
	if e := errorBody(t, body); code != http.StatusBadRequest || e.Field != "Upgrade" {
		t.Errorf("plain GET of the connect endpoint = %d %+v, want 400 naming Upgrade", code, e)
	}
	req, _ := http.NewRequest(http.MethodGet, c.url+wire.ConnectPath, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", wire.Protocol)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("upgrade without a token = %d (WWW-Authenticate %q), want 401 with a challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if n := len(c.rejections()); n != len(rej)+2 {
		t.Errorf("OnRejected calls = %d, want %d", n, len(rej)+2)
	}
	if a.calls.Load() != 0 {
		t.Errorf("the runtime's handler ran %d times", a.calls.Load())
	}
}

func TestAuthorizeDeniedNeverReachesRuntime(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)

	for _, tc := range []struct {
		user, path string
		code       int
		errCode    string
	}{
		{"bob", "/runtimes/rt-a/hello", http.StatusForbidden, "permission_denied"},    // another account, by ID
		{"victor", "/runtimes/prod/hello", http.StatusForbidden, "permission_denied"}, // a viewer
		{"", "/runtimes/prod/hello", http.StatusUnauthorized, "unauthenticated"},      // nobody
		{"bob", "/runtimes/prod/hello", http.StatusBadGateway, "unavailable"},         // bob's own "prod" is not connected
	} {
		code, _, body := get(t, hc, c.url+tc.path, tc.user)
		if e := errorBody(t, body); code != tc.code || e.Code != tc.errCode {
			t.Errorf("%q GET %s = %d %+v, want %d %s", tc.user, tc.path, code, e, tc.code, tc.errCode)
		}
	}
	if n := a.calls.Load(); n != 0 {
		t.Errorf("the runtime saw %d requests it should never have seen", n)
	}
	if d := c.denials(); len(d) != 2 || d[0] != "bob→rt-a" || d[1] != "victor→rt-a" {
		t.Errorf("OnDenied saw %v, want bob→rt-a victor→rt-a", d)
	}
}

func TestIdentityHeadersStrippedAndSet(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)

	req, _ := http.NewRequest(http.MethodGet, c.url+"/runtimes/prod/hello", nil)
	req.Header.Set(headerUser, "alice")
	req.Header.Set("X-Freshet-User", "u-mallory")
	req.Header.Set("x-freshet-role", "admin")
	req.Header.Set("X-Freshet-Account", "acct-b")
	req.Header.Set("X-Freshet-Tunnel-Raw", "1")
	req.Header.Set("X-Freshet-Anything", "forged")
	req.Header.Set("Authorization", "Bearer alice-secret-token")
	req.Header.Set("Cookie", "freshet_session=sess; theme=dark; freshet_csrf=x")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "per-connection")
	req.Header.Set("X-Custom", "kept")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := a.last().Header
	want := map[string]string{
		"X-Freshet-User":       "u-alice",
		"X-Freshet-Email":      "alice@acme.test",
		"X-Freshet-Account":    "acct-a",
		"X-Freshet-Role":       "member",
		"X-Freshet-Runtime":    "rt-a",
		"X-Freshet-Request-Id": resp.Header.Get("X-Request-Id"),
		"X-Freshet-Anything":   "",
		"X-Freshet-Tunnel-Raw": "",
		"Authorization":        "",
		"Cookie":               "theme=dark",
		"X-Hop":                "",
		"X-Custom":             "kept",
		"X-Forwarded-Prefix":   "/runtimes/prod",
		"X-Forwarded-Proto":    "http",
		"X-Forwarded-For":      "127.0.0.1",
	}
	for k, v := range want {
		if g := got.Get(k); g != v {
			t.Errorf("runtime saw %s = %q, want %q", k, g, v)
		}
	}
	if v := got.Values("X-Freshet-User"); len(v) != 1 {
		t.Errorf("X-Freshet-User values = %q, want exactly the trusted one", v)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("no request ID in the response")
	}

	// The identity is only trusted for requests that came through the tunnel.
	direct, _ := http.NewRequest(http.MethodGet, "/hello", nil)
	direct.Header.Set("X-Freshet-User", "u-mallory")
	direct.Header.Set("X-Freshet-Account", "acct-a")
	if id, ok := client.IdentityOf(direct); ok {
		t.Errorf("IdentityOf trusted headers of a request that did not come through the tunnel: %+v", id)
	}
}

func TestLargeBodiesStream(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)
	// 100 MiB each way under the race detector on a loaded machine takes far longer than the
	// usual per-request bound; this one is still bounded.
	hc.Timeout = 5 * time.Minute
	const size = 100 << 20

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop) // a failed request ends the test early: stop the sampler
		}
		<-sampled
	}()
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()

	// Upload: the runtime reads and checks it incrementally.
	want := sha256.New()
	io.Copy(want, &patternReader{n: size})
	req, _ := http.NewRequest(http.MethodPost, c.url+"/runtimes/prod/upload", &patternReader{n: size})
	req.ContentLength = size
	req.Header.Set(headerUser, "alice")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if wantBody := fmt.Sprintf("%d %x", size, want.Sum(nil)); resp.StatusCode != http.StatusOK || string(body) != wantBody {
		t.Errorf("upload of 100 MiB = %d %q, want 200 %q", resp.StatusCode, body, wantBody)
	}

	// Download: read incrementally and checked.
	req, _ = http.NewRequest(http.MethodGet, c.url+"/runtimes/prod/download?n="+strconv.Itoa(size), nil)
	req.Header.Set(headerUser, "alice")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, bad := checkPattern(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n != size || bad >= 0 || resp.ContentLength != size {
		t.Errorf("download of 100 MiB = %d, %d bytes (Content-Length %d), first bad byte %d; want 200 and %d good bytes", resp.StatusCode, n, resp.ContentLength, bad, size)
	}
	close(stop)
	<-sampled
	if grew := int64(peak.Load()) - int64(base); grew > 48<<20 {
		t.Errorf("heap grew by %d MiB while moving 100 MiB each way: bodies are being buffered", grew>>20)
	} else {
		t.Logf("heap peak %d MiB above the start while moving 100 MiB each way", max(grew, 0)>>20)
	}
}

// checkPattern reads r and returns its length and the offset of the first byte that is not
// the pattern (-1 when all are).
func checkPattern(r io.Reader) (n, bad int64) {
	bad = -1
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		for i := range k {
			if bad < 0 && buf[i] != pattern(n+int64(i)) {
				bad = n + int64(i)
			}
		}
		n += int64(k)
		if err != nil {
			return n, bad
		}
	}
}

func TestServerSentEventsArriveOneByOne(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)

	req, _ := http.NewRequest(http.MethodGet, c.url+"/runtimes/prod/sse", nil)
	req.Header.Set(headerUser, "alice")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("SSE answer %d %q", resp.StatusCode, ct)
	}
	lines := make(chan string, 10)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				lines <- sc.Text()
			}
		}
	}()
	for i := 1; i <= 3; i++ {
		// Event i must arrive while the runtime is still waiting to write event i+1.
		select {
		case l := <-lines:
			if l != fmt.Sprintf("data: %d", i) {
				t.Fatalf("event %d = %q", i, l)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d did not arrive before the next was written: the stream is buffered", i)
		}
		if i < 3 {
			a.sse <- struct{}{}
		}
	}
	if _, ok := <-lines; ok {
		t.Error("more events than written")
	}
}

// upgrade opens a raw connection to the control plane and asks to upgrade path to "echo".
func upgrade(t *testing.T, base, path, user string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: cp.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n%s: %s\r\n\r\n", path, headerUser, user)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("upgrade %s: %v", path, err)
	}
	return conn, br, resp
}

func echoRounds(t *testing.T, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	for _, msg := range []string{"ping\n", "hello through the tunnel\n", strings.Repeat("x", 100000) + "\n"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != strings.ToUpper(msg) {
			t.Fatalf("echo of %d bytes = %d bytes, %v", len(msg), len(got), err)
		}
	}
	io.WriteString(conn, "bye\n")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after bye: %v, want EOF (the runtime closed)", err)
	}
}

func TestUpgradePassesThrough(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)

	conn, br, resp := upgrade(t, c.url, "/runtimes/prod/ws", "alice")
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "echo" || resp.Header.Get("X-Echo-User") != "u-alice" {
		t.Fatalf("upgrade answer %s %v, want 101 from the runtime with the caller's identity", resp.Status, resp.Header)
	}
	echoRounds(t, conn, br)
	conn.Close()

	// A runtime that refuses the upgrade answers as usual.
	_, _, resp = upgrade(t, c.url, "/runtimes/prod/ws-refused", "alice")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("refused upgrade = %s, want 400 from the runtime", resp.Status)
	}
	// And an upgrade is authorized like any request.
	_, _, resp = upgrade(t, c.url, "/runtimes/rt-a/ws", "bob")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's upgrade = %s, want 403", resp.Status)
	}
}

func TestCallerCancelReachesRuntime(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/runtimes/prod/block", nil)
	req.Header.Set(headerUser, "alice")
	done := make(chan error, 1)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-a.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the runtime")
	}
	cancel()
	select {
	case err := <-a.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("runtime handler's context ended with %v, want canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller went away but the runtime's handler was not cancelled")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("caller: %v", err)
	}
}

func TestTunnelCutAndReconnect(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	d := &dialer{}
	cl := startRuntime(t, c, "token-a", a, func(o *client.Options) { o.DialContext = d.dial })
	hc := httpClient(t)

	// Three requests in flight when the network is cut.
	type answer struct {
		code int
		body string
	}
	answers := make(chan answer, 3)
	for range 3 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, c.url+"/runtimes/prod/block", nil)
			req.Header.Set(headerUser, "alice")
			resp, err := hc.Do(req)
			if err != nil {
				answers <- answer{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(b)}
		}()
	}
	for range 3 {
		<-a.started
	}
	d.cut()
	for range 3 {
		ans := <-answers
		if ans.code != http.StatusBadGateway {
			t.Fatalf("in-flight request after the cut = %d %q, want 502", ans.code, ans.body)
		}
		if e := errorBody(t, ans.body); e.Code != "unavailable" || !strings.Contains(e.Message, "lost while the request was in flight") {
			t.Errorf("in-flight 502 body %+v, want unavailable \"…lost while the request was in flight…\"", e)
		}
	}
	waitFor(t, "the server to drop the runtime", func() bool { return c.srv.Conns("rt-a") == 0 })
	waitFor(t, "the client to notice", func() bool { return cl.State().Connected == 0 })
	code, _, body := get(t, hc, c.url+"/runtimes/prod/hello", "alice")
	if e := errorBody(t, body); code != http.StatusBadGateway || !strings.Contains(e.Message, "not connected") {
		t.Errorf("request while cut = %d %+v, want 502 not connected", code, e)
	}
	if st := cl.State(); st.Healthy() || st.LastError == nil {
		t.Errorf("client state while cut = %+v, want unhealthy with the dial error", st)
	}

	d.heal()
	waitFor(t, "the runtime to reconnect", func() bool { return c.srv.Conns("rt-a") == client.DefaultConns })
	code, _, body = get(t, hc, c.url+"/runtimes/prod/hello", "alice")
	if code != http.StatusOK {
		t.Errorf("after reconnect = %d %q, want 200", code, body)
	}
	if st := cl.State(); !st.Healthy() || st.LastError != nil {
		t.Errorf("client state after reconnect = %+v", st)
	}
}

func TestSeveralConnectionsShareTheLoad(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()
	startRuntime(t, c, "token-a", a, func(o *client.Options) { o.Conns = 3 })
	hc := httpClient(t)

	// Connections fill in order, tunnel.SpillAt requests each.
	const extra = 8
	n := 2*tunnel.SpillAt + extra
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			code, _, body := get(t, hc, c.url+"/runtimes/prod/block", "alice")
			if code != http.StatusOK || body != "released" {
				t.Errorf("blocked request = %d %q", code, body)
			}
		})
	}
	for range n { // all in flight at once
		<-a.started
	}
	st := c.srv.Connected()
	close(a.release)
	wg.Wait()
	if len(st) != 1 || len(st[0].Conns) != 3 {
		t.Fatalf("Connected() = %+v, want one runtime with 3 connections", st)
	}
	var loads []int64
	for _, cs := range st[0].Conns {
		loads = append(loads, cs.InFlight)
	}
	slices.Sort(loads)
	if want := []int64{extra, tunnel.SpillAt, tunnel.SpillAt}; !slices.Equal(loads, want) {
		t.Errorf("requests in flight per connection = %v, want %v (filled in order, SpillAt each)", loads, want)
	}
	a.mu.Lock()
	used := len(a.locals)
	a.mu.Unlock()
	if used != 3 {
		t.Errorf("requests arrived over %d tunnel connections, want 3", used)
	}
}

func TestHostRouting(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, func(o *tunnel.Options) { o.TunnelDomain = "tunnel.test" })
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)

	for _, tc := range []struct {
		host, user string
		code       int
	}{
		{"acme-prod.tunnel.test", "alice", http.StatusOK},
		{"ACME-prod.tunnel.test:8443", "alice", http.StatusOK},
		{"acme-prod.tunnel.test", "bob", http.StatusForbidden},
		{"bolt-prod.tunnel.test", "bob", http.StatusBadGateway},
		{"cp.test", "alice", http.StatusTeapot}, // not a tunnel host: the rest of the control plane
	} {
		req, _ := http.NewRequest(http.MethodGet, c.url+"/echo/x", nil)
		req.Host = tc.host
		req.Header.Set(headerUser, tc.user)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s as %s = %d %s, want %d", tc.host, tc.user, resp.StatusCode, b, tc.code)
		}
		if tc.code == http.StatusOK && !strings.Contains(string(b), `"path":"/echo/x"`) {
			t.Errorf("%s: runtime saw %s, want the whole path /echo/x", tc.host, b)
		}
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, func(o *tunnel.Options) { o.ResponseHeaderTimeout = 100 * time.Millisecond })
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	hc := httpClient(t)
	code, _, body := get(t, hc, c.url+"/runtimes/prod/block", "alice")
	if e := errorBody(t, body); code != http.StatusGatewayTimeout || e.Code != "unavailable" || !strings.Contains(e.Message, "did not answer within 100ms") {
		t.Errorf("slow runtime = %d %+v, want 504", code, e)
	}
	select {
	case err := <-a.ended:
		if err == nil {
			t.Error("handler not cancelled")
		}
	case <-time.After(5 * time.Second):
		t.Error("the runtime's handler was not cancelled after the timeout")
	}
}

func TestTooManyConnectionsRefused(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, func(o *tunnel.Options) { o.MaxConnsPerRuntime = 2 })
	a := newApp()
	startRuntime(t, c, "token-a", a, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.Dial(ctx, client.Options{ServerURL: c.url, Token: "token-a", Handler: a, Conns: 1})
	if !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "429") {
		t.Errorf("third connection = %v, want refused with 429", err)
	}
	if n := c.srv.Conns("rt-a"); n != 2 {
		t.Errorf("connections = %d, want 2", n)
	}
}

func TestOptionsValidate(t *testing.T) {
	_, err := tunnel.NewServer(tunnel.Options{})
	var fe *errdefs.FieldError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "Authenticate") || !strings.Contains(err.Error(), "Authorize") {
		t.Errorf("NewServer without hooks: %v, want errors naming Authenticate and Authorize", err)
	}
	ok := func(context.Context, string) (tunnel.Runtime, error) { return tunnel.Runtime{}, nil }
	allow := func(*http.Request, tunnel.Runtime) error { return nil }
	_, err = tunnel.NewServer(tunnel.Options{Authenticate: ok, Authorize: allow, Presence: memPresence{}, HopSecret: []byte("short")})
	if err == nil || !strings.Contains(err.Error(), "HopSecret") || !strings.Contains(err.Error(), "AdvertiseURL") {
		t.Errorf("presence without secret or address: %v, want errors naming HopSecret and AdvertiseURL", err)
	}
	_, err = client.New(client.Options{ServerURL: "ftp://x", Conns: 99})
	for _, f := range []string{"ServerURL", "Token", "Handler", "Conns"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("client.New with bad options: %v, want an error naming %s", err, f)
		}
	}
}

type memPresence struct{}

func (memPresence) Publish(context.Context, tunnel.Announcement) error { return nil }
func (memPresence) Subscribe(func(tunnel.Announcement)) (func(), error) {
	return func() {}, nil
}
