package tunnel_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/tunnel"
	"github.com/freshet-dev/freshet/internal/tunnel/client"
)

// replica starts a control-plane replica announcing over its own connection to the shared NATS.
func replica(t *testing.T, b *bus.Bus, id string, secret []byte) *cp {
	t.Helper()
	return replicaWith(t, b, id, secret, nil)
}

// replicaWith is replica with edit applied to its options.
func replicaWith(t *testing.T, b *bus.Bus, id string, secret []byte, edit func(*tunnel.Options)) *cp {
	t.Helper()
	nc, err := nats.Connect(b.ClientURL(), nats.Name("replica-"+id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := newCP(t, func(o *tunnel.Options) {
		o.Presence = tunnel.NewNATSPresence(nc)
		o.ReplicaID = id
		o.HopSecret = secret
		o.PresenceInterval = 200 * time.Millisecond
		if edit != nil {
			edit(o)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica %s Run: %v", id, err)
		}
	})
	return c
}

func TestRequestOnOtherReplicaIsForwarded(t *testing.T) {
	checkLeaks(t)
	b, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir(), ListenLoopback: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	secret := bytes.Repeat([]byte("replica-secret!!"), 2)
	ra := replica(t, b, "a", secret)
	rb := replica(t, b, "b", secret)
	a := newApp()
	cl := startRuntime(t, ra, "token-a", a, nil)
	hc := httpClient(t)

	// B learns from A's announcement that A holds the tunnel, and forwards to A.
	var code int
	var body string
	waitFor(t, "replica b to forward to replica a", func() bool {
		code, _, body = get(t, hc, rb.url+"/runtimes/prod/hello", "alice")
		return code == http.StatusOK
	})
	if body != "hello alice@acme.test (true)" {
		t.Errorf("through replica b: %q", body)
	}
	if n := rb.srv.Conns("rt-a"); n != 0 {
		t.Errorf("replica b holds %d connections of rt-a, want 0 (the request went through a)", n)
	}
	h := a.last().Header
	if h.Get("X-Freshet-User") != "u-alice" || h.Get("X-Freshet-Account") != "acct-a" || h.Get("X-Forwarded-Host") != strings.TrimPrefix(rb.url, "http://") || h.Get("X-Freshet-Tunnel-Hop") != "" {
		t.Errorf("runtime saw %v: want alice's identity, b's host and no hop headers", h)
	}

	// By ID, a large body both ways, an upgrade, a denial: all as on the holding replica.
	req, _ := http.NewRequest(http.MethodPost, rb.url+"/runtimes/rt-a/upload", &patternReader{n: 8 << 20})
	req.ContentLength = 8 << 20
	req.Header.Set(headerUser, "alice")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(got), strconv.Itoa(8<<20)+" ") {
		t.Errorf("8 MiB upload through b = %d %q", resp.StatusCode, got)
	}
	req, _ = http.NewRequest(http.MethodGet, rb.url+"/runtimes/prod/download?n="+strconv.Itoa(8<<20), nil)
	req.Header.Set(headerUser, "alice")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, bad := checkPattern(resp.Body)
	resp.Body.Close()
	if n != 8<<20 || bad >= 0 {
		t.Errorf("8 MiB download through b: %d bytes, first bad %d", n, bad)
	}
	conn, br, uresp := upgrade(t, rb.url, "/runtimes/prod/ws", "alice")
	if uresp.StatusCode != http.StatusSwitchingProtocols || uresp.Header.Get("X-Echo-User") != "u-alice" {
		t.Fatalf("upgrade through b = %s %v", uresp.Status, uresp.Header)
	}
	echoRounds(t, conn, br)
	calls := a.calls.Load()
	code, _, body = get(t, hc, rb.url+"/runtimes/rt-a/hello", "bob")
	if e := errorBody(t, body); code != http.StatusForbidden || e.Code != "permission_denied" {
		t.Errorf("bob through b = %d %+v, want 403", code, e)
	}
	if d := rb.denials(); len(d) != 1 || d[0] != "bob→rt-a" {
		t.Errorf("replica b's OnDenied saw %v, want bob→rt-a", d)
	}

	// Only replicas can use the hop: no signature, a wrong one, a stale one.
	for i, hdr := range []map[string]string{
		{},
		{"X-Freshet-Tunnel-Hop": "b", "X-Freshet-Tunnel-Hop-Time": strconv.FormatInt(time.Now().Unix(), 10), "X-Freshet-Tunnel-Hop-Signature": strings.Repeat("0", 64), "X-Freshet-User": "u-mallory", "X-Freshet-Account": "acct-a"},
		{"X-Freshet-Tunnel-Hop": "b", "X-Freshet-Tunnel-Hop-Time": "1", "X-Freshet-Tunnel-Hop-Signature": strings.Repeat("0", 64)},
	} {
		req, _ := http.NewRequest(http.MethodGet, ra.url+tunnel.DefaultHopPath+"rt-a/hello", nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("forged hop %d = %d %s, want 403", i, resp.StatusCode, b)
		}
	}
	if n := a.calls.Load(); n != calls {
		t.Errorf("the runtime saw %d requests it should not have", n-calls)
	}

	// When the runtime goes away, b stops forwarding once a says so. A request that
	// races the close may instead be told the tunnel was lost in flight (also a 502);
	// once the close has settled every answer must be "not connected".
	cl.Close()
	waitFor(t, "replica b to answer 502 not connected", func() bool {
		code, _, body = get(t, hc, rb.url+"/runtimes/prod/hello", "alice")
		if code != http.StatusBadGateway {
			return false
		}
		e := errorBody(t, body)
		if !strings.Contains(e.Message, "not connected") && !strings.Contains(e.Message, "lost while the request was in flight") {
			t.Fatalf("after the runtime left: %+v", e)
		}
		return strings.Contains(e.Message, "not connected")
	})
	fmt.Fprint(io.Discard, ra.connectEvents())
}

// mutePresence is a replica's presence that stops announcing when muted, as a killed replica
// does: it never withdraws what it announced.
type mutePresence struct {
	tunnel.Presence
	muted atomic.Bool
}

func (p *mutePresence) Publish(ctx context.Context, a tunnel.Announcement) error {
	if p.muted.Load() {
		return nil
	}
	return p.Presence.Publish(ctx, a)
}

// A replica holding a runtime's tunnel dies without withdrawing its announcement (SIGKILL)
// while another replica holds a tunnel connection of the same runtime too. A request on a third
// replica that picks the dead one finds it refusing connections, forgets it, and goes to the
// live holder: no request fails because of the dead replica's announcement (make chaos found
// such requests failing with 502 for up to 3 presence intervals).
func TestHopSkipsAReplicaThatRefuses(t *testing.T) {
	checkLeaks(t)
	b, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir(), ListenLoopback: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	secret := bytes.Repeat([]byte("replica-secret!!"), 2)
	ra := replica(t, b, "a", secret)
	var ghostPresence *mutePresence
	ghost := replicaWith(t, b, "ghost", secret, func(o *tunnel.Options) {
		ghostPresence = &mutePresence{Presence: o.Presence}
		o.Presence = ghostPresence
		// Its announcements outlive a's: the other replicas prefer it while it lasts.
		o.PresenceInterval = 10 * time.Second
	})
	rc := replica(t, b, "c", secret)
	startRuntime(t, ra, "token-a", newApp(), nil)
	startRuntime(t, ghost, "token-a", newApp(), func(o *client.Options) { o.MaxBackoff = time.Hour })
	hc := httpClient(t)
	waitFor(t, "replica c to forward to the runtime", func() bool {
		code, _, _ := get(t, hc, rc.url+"/runtimes/prod/hello", "alice")
		return code == http.StatusOK && ghost.srv.Conns("rt-a") > 0 && ra.srv.Conns("rt-a") > 0
	})

	// The ghost dies: silent, its port refusing connections.
	ghostPresence.muted.Store(true)
	ghost.ts.CloseClientConnections()
	ghost.ts.Listener.Close()
	for i := range 20 {
		if code, _, body := get(t, hc, rc.url+"/runtimes/prod/hello", "alice"); code != http.StatusOK {
			t.Fatalf("request %d after the ghost died = %d %s, want 200 through replica a", i, code, body)
		}
	}
}
