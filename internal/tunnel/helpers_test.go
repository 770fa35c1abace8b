package tunnel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/tunnel"
	"github.com/freshet-dev/freshet/internal/tunnel/client"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// Runtimes and users of the tests. Two accounts each have a runtime named "prod".
var (
	rtA = tunnel.Runtime{ID: "rt-a", AccountID: "acct-a", Account: "acme", Name: "prod"}
	rtB = tunnel.Runtime{ID: "rt-b", AccountID: "acct-b", Account: "bolt", Name: "prod"}

	tokens = map[string]tunnel.Runtime{"token-a": rtA, "token-b": rtB}

	users = map[string]rbac.Principal{
		"alice":  {AccountID: "acct-a", UserID: "u-alice", Email: "alice@acme.test", Role: rbac.Member},
		"victor": {AccountID: "acct-a", UserID: "u-victor", Email: "victor@acme.test", Role: rbac.Viewer},
		"bob":    {AccountID: "acct-b", UserID: "u-bob", Email: "bob@bolt.test", Role: rbac.Admin},
	}
)

// headerUser picks the test caller; the control plane's real principal comes from
// httpx.Authenticate.
const headerUser = "X-Test-User"

// cp is a control plane under test: a tunnel server mounted the way the server mounts it.
type cp struct {
	t   testing.TB
	srv *tunnel.Server
	ts  *httptest.Server
	url string

	mu       sync.Mutex
	rejected []error
	denied   []string
	connects []string
}

func (c *cp) rejections() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.rejected...)
}

func (c *cp) denials() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.denied...)
}

func (c *cp) connectEvents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.connects...)
}

// newCP starts a control plane; edit adjusts its options before NewServer.
func newCP(t testing.TB, edit func(*tunnel.Options)) *cp {
	return newCPWith(t, false, edit)
}

// newCPWith starts a control plane, serving TLS (with HTTP/2 offered, as a real server
// does) when withTLS.
func newCPWith(t testing.TB, withTLS bool, edit func(*tunnel.Options)) *cp {
	t.Helper()
	c := &cp{t: t}
	var h atomic.Value
	c.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Load().(http.Handler).ServeHTTP(w, r)
	}))
	if withTLS {
		c.ts.EnableHTTP2 = true
		c.ts.StartTLS()
	} else {
		c.ts.Start()
	}
	c.url = c.ts.URL
	opts := tunnel.Options{
		Authenticate: func(_ context.Context, token string) (tunnel.Runtime, error) {
			rt, ok := tokens[token]
			if !ok {
				return tunnel.Runtime{}, fmt.Errorf("unknown runtime token: %w", errdefs.ErrUnauthenticated)
			}
			return rt, nil
		},
		Authorize: func(r *http.Request, rt tunnel.Runtime) error {
			p, err := httpx.Principal(r.Context())
			if err != nil {
				return err
			}
			if p.AccountID != rt.AccountID || !p.Role.AtLeast(rbac.Member) {
				return fmt.Errorf("runtime %s: %w", rt.Name, errdefs.ErrForbidden)
			}
			return nil
		},
		OnRejected: func(_ *http.Request, err error) {
			c.mu.Lock()
			c.rejected = append(c.rejected, err)
			c.mu.Unlock()
		},
		OnDenied: func(r *http.Request, rt tunnel.Runtime, err error) {
			c.mu.Lock()
			c.denied = append(c.denied, r.Header.Get(headerUser)+"→"+rt.ID)
			c.mu.Unlock()
		},
		OnConnect: func(rt tunnel.Runtime, n int) {
			c.mu.Lock()
			c.connects = append(c.connects, fmt.Sprintf("+%s:%d", rt.ID, n))
			c.mu.Unlock()
		},
		OnDisconnect: func(rt tunnel.Runtime, n int) {
			c.mu.Lock()
			c.connects = append(c.connects, fmt.Sprintf("-%s:%d", rt.ID, n))
			c.mu.Unlock()
		},
		PingInterval: 2 * time.Second,
		PingTimeout:  2 * time.Second,
		AdvertiseURL: c.url,
	}
	if edit != nil {
		edit(&opts)
	}
	srv, err := tunnel.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.srv = srv
	mux := http.NewServeMux()
	mux.Handle(wire.ConnectPath, srv.ConnectHandler())
	mux.Handle(tunnel.DefaultHopPath, srv.HopHandler())
	mux.Handle("/runtimes/", srv.ProxyHandler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "control plane", http.StatusTeapot) })
	// What the server's middleware does: request IDs, then the caller's principal.
	h.Store(httpx.WithRequestID(testAuth(srv.HostRouter(mux))))
	t.Cleanup(func() {
		srv.Close()
		c.ts.CloseClientConnections()
		c.ts.Close()
	})
	return c
}

func testAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := users[r.Header.Get(headerUser)]; ok {
			r = r.WithContext(httpx.WithPrincipal(r.Context(), p))
		}
		next.ServeHTTP(w, r)
	})
}

// dialer dials the control plane for a runtime and can cut its connections.
type dialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	blocked bool
	dials   int
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	blocked := d.blocked
	d.mu.Unlock()
	if blocked {
		return nil, errors.New("network cut by the test")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.dials++
	d.mu.Unlock()
	return c, nil
}

// cut resets every connection and refuses new ones until heal.
func (d *dialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.blocked = true
	for _, c := range d.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	d.conns = nil
}

func (d *dialer) heal() {
	d.mu.Lock()
	d.blocked = false
	d.mu.Unlock()
}

// startRuntime connects a runtime serving h with token; edit adjusts the options.
func startRuntime(t testing.TB, c *cp, token string, h http.Handler, edit func(*client.Options)) *client.Client {
	t.Helper()
	opts := client.Options{
		ServerURL:    c.url,
		Token:        token,
		RuntimeName:  tokens[token].Name,
		Handler:      h,
		MinBackoff:   20 * time.Millisecond,
		MaxBackoff:   200 * time.Millisecond,
		PingInterval: 2 * time.Second,
		PingTimeout:  2 * time.Second,
	}
	if edit != nil {
		edit(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, opts)
	if err != nil {
		t.Fatalf("runtime with %s: %v", token, err)
	}
	t.Cleanup(func() { cl.Close() })
	want := opts.Conns
	if want == 0 {
		want = client.DefaultConns
	}
	waitFor(t, fmt.Sprintf("%d tunnel connections of %s", want, tokens[token].ID), func() bool {
		return c.srv.Conns(tokens[token].ID) == want && cl.State().Connected == want
	})
	return cl
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// httpClient is a client of the control plane whose connections end with the test.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// get sends a GET as user and returns the status and body.
func get(t *testing.T, hc *http.Client, url, user string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if user != "" {
		req.Header.Set(headerUser, user)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// errorBody decodes the standard error body.
func errorBody(t *testing.T, body string) errdefs.Detail {
	t.Helper()
	var eb errdefs.Body
	if err := json.Unmarshal([]byte(body), &eb); err != nil {
		t.Fatalf("not the standard error body: %q: %v", body, err)
	}
	return eb.Error
}

var goroutineHeader = regexp.MustCompile(`^goroutine (\d+) `)

// goroutines returns the stacks of the live goroutines by ID.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if m := goroutineHeader.FindStringSubmatch(g); m != nil {
			out[m[1]] = g
		}
	}
	return out
}

// checkLeaks fails the test if goroutines started during it are still alive after its
// cleanups (it registers itself first, so it runs last).
func checkLeaks(t *testing.T) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() {
		var leaked []string
		deadline := time.Now().Add(10 * time.Second)
		for {
			leaked = leaked[:0]
			for id, g := range goroutines() {
				if _, ok := before[id]; ok || strings.Contains(g, "testing.(*T).Run") || strings.Contains(g, "testing.tRunner") {
					continue
				}
				leaked = append(leaked, g)
			}
			if len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(leaked) > 0 {
			t.Errorf("%d goroutines leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}
