package tunnel_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/tunnel"
)

var errRevoked = errors.New("access revoked")

// holds is an Options.Hold whose holds a test ends by user, as the control plane's
// httpx.Access does when a user's key is revoked.
type holds struct {
	mu      sync.Mutex
	cancels map[string][]context.CancelCauseFunc
	open    int
}

func newHolds() *holds { return &holds{cancels: map[string][]context.CancelCauseFunc{}} }

func (h *holds) hold(r *http.Request, _ tunnel.Runtime) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	h.mu.Lock()
	h.cancels[r.Header.Get(headerUser)] = append(h.cancels[r.Header.Get(headerUser)], cancel)
	h.open++
	h.mu.Unlock()
	return ctx, func() {
		h.mu.Lock()
		h.open--
		h.mu.Unlock()
		cancel(nil)
	}
}

func (h *holds) revoke(user string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.cancels[user] {
		c(errRevoked)
	}
}

func (h *holds) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

// endsWithin reports whether r yields EOF or an error within d (reading and dropping data).
func endsWithin(r io.Reader, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// An event stream and an upgraded connection through the tunnel end when the caller's hold
// ends, on the replica holding the tunnel and through another replica's hop.
func TestHoldEndsProxiedStreams(t *testing.T) {
	checkLeaks(t)
	b, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir(), ListenLoopback: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	secret := bytes.Repeat([]byte("replica-secret!!"), 2)
	ha, hb := newHolds(), newHolds()
	ra := replicaWith(t, b, "a", secret, func(o *tunnel.Options) { o.Hold = ha.hold })
	rb := replicaWith(t, b, "b", secret, func(o *tunnel.Options) { o.Hold = hb.hold })
	a := newApp()
	startRuntime(t, ra, "token-a", a, nil)
	hc := httpClient(t)
	waitFor(t, "replica b to forward to replica a", func() bool {
		code, _, _ := get(t, hc, rb.url+"/runtimes/prod/hello", "alice")
		return code == http.StatusOK
	})

	for _, c := range []struct {
		name string
		url  string
		h    *holds
	}{{"holding replica", ra.url, ha}, {"other replica", rb.url, hb}} {
		// An event stream: the first event arrives, then the runtime waits.
		req, _ := http.NewRequest(http.MethodGet, c.url+"/runtimes/prod/sse", nil)
		req.Header.Set(headerUser, "alice")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "event: tick") {
			t.Fatalf("%s: first event %q, %v", c.name, line, err)
		}
		// An upgraded connection, echoing.
		conn, cbr, uresp := upgrade(t, c.url, "/runtimes/prod/ws", "alice")
		if uresp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: upgrade %s", c.name, uresp.Status)
		}
		io.WriteString(conn, "ping\n")
		if got, err := cbr.ReadString('\n'); err != nil || got != "PING\n" {
			t.Fatalf("%s: echo %q, %v", c.name, got, err)
		}
		if n := c.h.held(); n != 2 {
			t.Fatalf("%s: %d holds, want the stream's and the upgrade's", c.name, n)
		}

		c.h.revoke("alice")
		if !endsWithin(br, 5*time.Second) {
			t.Errorf("%s: the event stream is still open after its hold ended", c.name)
		}
		if !endsWithin(cbr, 5*time.Second) {
			t.Errorf("%s: the upgraded connection is still open after its hold ended", c.name)
		}
		resp.Body.Close()
		conn.Close()
		waitFor(t, c.name+" to release its holds", func() bool { return c.h.held() == 0 })
	}
}
