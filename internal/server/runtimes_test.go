package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

func startRuntime(t *testing.T, s *servertest.Server, token string) (*agent.Runtime, func()) {
	t.Helper()
	a, err := agent.New(agent.Options{Server: s.URL, Token: token, AccessMode: "tunnel", Version: "test", DataDir: t.TempDir()}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return a, stop
}

func waitRuntime(t *testing.T, c *client.Client, name string, timeout time.Duration, status string) client.Runtime {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := c.GetRuntime(context.Background(), name)
		if err == nil && r.Status == status {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime %s is %q (%v), want %s", name, r.Status, err, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRuntimeLifecycle(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge-1", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Status != "installing" || reg.Token == "" {
		t.Fatalf("registered = %+v", reg)
	}
	if _, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge-1"}); !client.IsStatus(err, 409) {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "Bad_Name"}); !client.IsStatus(err, 400) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "in", AccessMode: "ingress"}); !client.IsStatus(err, 400) {
		t.Fatalf("ingress without host: %v", err)
	}
	a, stop := startRuntime(t, s, reg.Token)
	r := waitRuntime(t, s.Admin, "edge-1", 10*time.Second, "healthy")
	if r.Version != "test" || len(r.Components) == 0 || r.LastHeartbeat == nil {
		t.Fatalf("healthy runtime = %+v", r)
	}
	if st := a.Status(); st.Name != "edge-1" || st.Type != "hybrid" {
		t.Fatalf("agent sees %+v", st)
	}
	// Killed: marked disconnected once heartbeats stop (and audited).
	stop()
	start := time.Now()
	waitRuntime(t, s.Admin, "edge-1", 30*time.Second, "disconnected")
	t.Logf("killed runtime → disconnected in %s", time.Since(start).Round(100*time.Millisecond))
	evs, _ := s.Admin.ListAudit(ctx, client.AuditFilter{Action: "runtime.disconnected"})
	if len(evs.Items) != 1 {
		t.Fatalf("runtime.disconnected audit = %+v", evs.Items)
	}
	// A rotated token replaces the old one at once.
	rot, err := s.Admin.RotateRuntimeToken(ctx, "edge-1")
	if err != nil || rot.Token == "" || rot.Token == reg.Token {
		t.Fatalf("rotate: %+v, %v", rot, err)
	}
	old, _ := agent.New(agent.Options{Server: s.URL, Token: reg.Token, AccessMode: "tunnel", DataDir: t.TempDir()}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := old.Run(ctx); err == nil {
		t.Fatal("the old token still works")
	}
	startRuntime(t, s, rot.Token)
	waitRuntime(t, s.Admin, "edge-1", 10*time.Second, "healthy")
	// Deregistered: the token stops working.
	if err := s.Admin.DeleteRuntime(ctx, "edge-1"); err != nil {
		t.Fatal(err)
	}
	again, _ := agent.New(agent.Options{Server: s.URL, Token: rot.Token, AccessMode: "tunnel", DataDir: t.TempDir()}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := again.Run(ctx); err == nil {
		t.Fatal("a deregistered runtime's token still works")
	}
}

func TestHostedRuntimeLimits(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	h, err := s.Admin.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if h.Type != "hosted" || h.AccessMode != "tunnel" {
		t.Fatalf("hosted = %+v", h)
	}
	// The platform runs it: it reports healthy without anyone installing anything, CD only.
	r := waitRuntime(t, s.Admin, h.Name, 15*time.Second, "healthy")
	if len(r.Capabilities) != 1 || r.Capabilities[0] != "cd" {
		t.Fatalf("hosted capabilities = %v, want [cd]", r.Capabilities)
	}
	// One per account.
	if _, err := s.Admin.CreateHostedRuntime(ctx, "second"); !client.IsStatus(err, 409) || err.Error() == "" {
		t.Fatalf("second hosted runtime: %v", err)
	} else if ae := err.(*client.Error); ae.Message == "" || !contains([]string{ae.Message}, ae.Message) {
		t.Fatal(ae)
	}
	// A viewer cannot create one.
	s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "v@first.test", Role: "viewer", Password: "viewer-password"})
	if _, err := s.Login(t, "v@first.test", "viewer-password").CreateHostedRuntime(ctx, "x"); !client.IsStatus(err, 403) {
		t.Fatalf("viewer: %v", err)
	}
	// Uninstall stops it.
	if err := s.Admin.DeleteRuntime(ctx, h.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateHostedRuntime(ctx, "again"); err != nil {
		t.Fatalf("a new hosted runtime after uninstall: %v", err)
	}
}

func TestTunnelEndToEnd(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startRuntime(t, s, reg.Token)
	waitRuntime(t, s.Admin, "edge", 10*time.Second, "healthy")
	adminKey := adminToken(t, s)

	// Through the control plane and the tunnel to the app-proxy, with the caller's identity.
	var st int
	var out map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, out, _ = call(t, "GET", s.URL+"/runtimes/edge/app-proxy/api/version", adminKey, nil, "X-Freshet-User", "forged@evil.test")
		if st == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	caller, _ := out["caller"].(map[string]any)
	if st != 200 || caller["user"] == "forged@evil.test" || caller["role"] != "admin" {
		t.Fatalf("through the tunnel: %d %v", st, out)
	}
	// The UI keeps /runtimes and /runtimes/{name} as pages; only deeper paths go through the tunnel.
	for _, p := range []string{"/runtimes", "/runtimes/edge"} {
		resp, err := http.Get(s.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s, want the UI page", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	// Anonymous: 401. Another account's admin: the runtime does not exist for them.
	if st, _, _ := call(t, "GET", s.URL+"/runtimes/edge/app-proxy/api/version", "", nil); st != 401 {
		t.Fatalf("anonymous: %d", st)
	}
	if _, err := s.Identity().Provision(ctx, "bravo", "eve@bravo.test", "eve-password"); err != nil {
		t.Fatal(err)
	}
	eve := s.Login(t, "eve@bravo.test", "eve-password")
	ek, _ := eve.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "e"})
	for _, ref := range []string{"edge", reg.ID} {
		if st, _, _ := call(t, "GET", s.URL+"/runtimes/"+ref+"/app-proxy/api/version", ek.Token, nil); st != 404 && st != 403 {
			t.Fatalf("account B reaches A's runtime %s: %d", ref, st)
		}
	}
	evs, _ := eve.ListAudit(ctx, client.AuditFilter{Action: "runtime.proxy", Result: "denied"})
	if len(evs.Items) != 2 {
		t.Fatalf("B's attempts audited: %+v", evs.Items)
	}
	// The runtime dies: requests get 502 at once and the runtime is disconnected without
	// waiting for missed heartbeats.
	stop()
	start := time.Now()
	for {
		st, out, _ = call(t, "GET", s.URL+"/runtimes/edge/app-proxy/api/version", adminKey, nil)
		if st == 502 {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("after the runtime died: %d %v", st, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := waitRuntime(t, s.Admin, "edge", 5*time.Second, "disconnected")
	t.Logf("runtime killed → 502 and %s in %s", r.Status, time.Since(start).Round(time.Millisecond))
	if code, _, _ := errField(out); code != "unavailable" {
		t.Fatalf("502 body = %v", out)
	}
}
