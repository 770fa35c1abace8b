package agent_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// TestIngressAuthentication: on its own ingress the runtime checks the caller's key with the
// control plane, serves only its own account, ignores identity headers a client forges, and
// stops accepting a revoked key once the cache entry expires.
func TestIngressAuthentication(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "ingress", IngressHost: "edge.example"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.New(agent.Options{Server: s.URL, Token: reg.Token, AccessMode: "ingress", Listen: "127.0.0.1:0", IngressURL: "https://edge.example",
		DataDir: t.TempDir(), NoInCluster: true, Version: "test", IngressAuthTTL: 300 * time.Millisecond}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); r.Status().Account == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat answered")
		}
	}
	ing := httptest.NewServer(r.IngressHandler())
	t.Cleanup(ing.Close)

	viewer, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "v", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	prov, err := s.Identity().Provision(ctx, "bravo", "eve@bravo.test", "eve-password")
	if err != nil {
		t.Fatal(err)
	}
	eve := s.Login(t, "eve@bravo.test", "eve-password")
	other, err := eve.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}

	call := func(method, path, token string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ing.URL+path, strings.NewReader("{}"))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	forged := map[string]string{"X-Freshet-Role": "admin", "X-Freshet-Account": prov.Account.ID}
	for _, c := range []struct {
		name, method, path, token string
		hdr                       map[string]string
		want                      int
	}{
		{"health needs no key", "GET", "/app-proxy/healthz", "", nil, 200},
		{"no key", "GET", "/app-proxy/api/v1/applications", "", nil, 401},
		{"forged identity without a key", "GET", "/app-proxy/api/v1/applications", "", forged, 401},
		{"a wrong key", "GET", "/app-proxy/api/v1/applications", "fk_nope", nil, 401},
		{"viewer reads", "GET", "/app-proxy/api/v1/applications", viewer.Token, nil, 200},
		{"viewer cannot write, even claiming admin", "POST", "/app-proxy/api/v1/applications/x/sync", viewer.Token, forged, 403},
		{"admin writes (the app does not exist)", "POST", "/app-proxy/api/v1/applications/x/sync", admin.Token, nil, 404},
		{"another account's admin", "GET", "/app-proxy/api/v1/applications", other.Token, forged, 403},
		// Webhook events need no key (their signatures are checked by the event source; this
		// runtime has no cluster, so none serves them), and the path cannot climb out of them.
		{"event webhook needs no key", "POST", "/app-proxy/events/ns/github/push", "", nil, 404},
		{"no climbing out of events", "POST", "/app-proxy/events/../api/v1/applications/x/sync", "", nil, 401},
	} {
		if code, body := call(c.method, c.path, c.token, c.hdr); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}

	// Changes made on the ingress are in the control plane's audit log (the control plane never
	// saw them): the admin's POST and the viewer's refused one; reads are not.
	var recs []client.AuditEvent
	for deadline := time.Now().Add(10 * time.Second); len(recs) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		l, err := s.Admin.ListAudit(ctx, client.AuditFilter{Action: "runtime.app-proxy"})
		if err != nil {
			t.Fatal(err)
		}
		recs = l.Items
	}
	if len(recs) != 2 {
		t.Fatalf("audit records of ingress changes: %+v", recs)
	}
	for _, r := range recs {
		if r.ResourceID != reg.ID || !strings.Contains(r.Actor, "via runtime edge's ingress") || !strings.Contains(r.Detail, "POST /app-proxy/api/v1/applications/x/sync") {
			t.Errorf("audit record %+v", r)
		}
	}
	if recs[0].Result == recs[1].Result {
		t.Errorf("the viewer's refused change and the admin's must differ in result: %+v", recs)
	}

	// A revoked key works until its cache entry expires, then no more.
	if err := s.Admin.RevokeAPIKey(ctx, viewer.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if code, _ := call("GET", "/app-proxy/api/v1/applications", viewer.Token, nil); code != 401 {
		t.Errorf("a revoked key after the cache TTL: %d, want 401", code)
	}
}
