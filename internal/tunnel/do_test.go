package tunnel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/tunnel"
)

// system is the identity control-plane code sends with: the platform acting in account A.
var system = rbac.Principal{AccountID: "acct-a", Email: "system", Role: rbac.Member}

func doRequest(t *testing.T, srv *tunnel.Server, rt tunnel.Runtime, req *http.Request) (int, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := srv.Do(ctx, rt, system, req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestDoSendsThroughTheTunnelWithTheIdentity(t *testing.T) {
	checkLeaks(t)
	c := newCP(t, nil)
	a := newApp()

	// Not connected: an error saying so, nothing sent.
	req, _ := http.NewRequest(http.MethodGet, "/echo/x", nil)
	if _, _, err := doRequest(t, c.srv, rtA, req); !errors.Is(err, tunnel.ErrNotConnected) || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("not connected: %v, want ErrNotConnected", err)
	}

	startRuntime(t, c, "token-a", a, nil)
	req, _ = http.NewRequest(http.MethodGet, "/echo/a%2Fb?x=1&y=2", nil)
	req.Header.Set("X-Freshet-User", "u-mallory")
	req.Header.Set("X-Freshet-Role", "admin")
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("X-Custom", "kept")
	code, body, err := doRequest(t, c.srv, rtA, req)
	if err != nil || code != http.StatusOK {
		t.Fatalf("Do = %d %s, %v", code, body, err)
	}
	var echo map[string]string
	json.Unmarshal([]byte(body), &echo)
	if echo["path"] != "/echo/a/b" || echo["raw"] != "/echo/a%2Fb" || echo["query"] != "x=1&y=2" {
		t.Errorf("the runtime saw %v", echo)
	}
	h := a.last().Header
	for k, want := range map[string]string{
		"X-Freshet-User": "", "X-Freshet-Email": "system", "X-Freshet-Account": "acct-a", "X-Freshet-Role": "member",
		"X-Freshet-Runtime": "rt-a", "Authorization": "", "X-Custom": "kept", "X-Forwarded-For": "",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("runtime saw %s = %q, want %q", k, got, want)
		}
	}
	if h.Get("X-Freshet-Request-Id") == "" {
		t.Error("no request ID")
	}

	// A body goes through, and the connection counts the exchange until the body is closed.
	req, _ = http.NewRequest(http.MethodPost, "/upload", &patternReader{n: 100 << 10})
	req.ContentLength = 100 << 10
	ctx := context.Background()
	resp, err := c.srv.Do(ctx, rtA, system, req)
	if err != nil {
		t.Fatal(err)
	}
	if inflight(c.srv) != 1 {
		t.Errorf("in flight before the body is closed: %d, want 1", inflight(c.srv))
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(b), "102400 ") {
		t.Errorf("upload answer = %d %q", resp.StatusCode, b)
	}
	if inflight(c.srv) != 0 {
		t.Errorf("in flight after the body is closed: %d, want 0", inflight(c.srv))
	}

	// The caller's context ends the request at the runtime.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "/block", nil)
		resp, err := c.srv.Do(cctx, rtA, system, req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-a.started
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled Do returned no error")
	}
	select {
	case <-a.ended:
	case <-time.After(5 * time.Second):
		t.Error("the runtime's handler did not see the cancellation")
	}
}

func inflight(srv *tunnel.Server) int64 {
	var n int64
	for _, rt := range srv.Connected() {
		for _, c := range rt.Conns {
			n += c.InFlight
		}
	}
	return n
}

func TestDoThroughAnotherReplica(t *testing.T) {
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
	startRuntime(t, ra, "token-a", a, nil)
	var code int
	var body string
	waitFor(t, "replica b to reach the runtime held by a", func() bool {
		req, _ := http.NewRequest(http.MethodPost, "/echo/notify", strings.NewReader(`{"repoURL":"x"}`))
		code, body, err = doRequest(t, rb.srv, rtA, req)
		return err == nil && code == http.StatusOK
	})
	if !strings.Contains(body, `"/echo/notify"`) {
		t.Errorf("through b: %s", body)
	}
	h := a.last().Header
	if h.Get("X-Freshet-Account") != "acct-a" || h.Get("X-Freshet-Email") != "system" || h.Get("X-Freshet-Tunnel-Hop") != "" {
		t.Errorf("the runtime saw %v through b", h)
	}
	if n := rb.srv.Conns("rt-a"); n != 0 {
		t.Errorf("b holds %d connections of rt-a", n)
	}
}
