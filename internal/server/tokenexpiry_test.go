package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
	tunnelclient "github.com/freshet-dev/freshet/internal/tunnel/client"
)

// A runtime whose token expired is refused over the real tunnel handshake and the real
// heartbeat with the same message, naming the runtime, when, and the command to run; the
// refusal shows in GET runtime. Its old token, once rotated, is refused as replaced; the new
// token connects, and the refusal is gone.
func TestExpiredRuntimeTokenRefused(t *testing.T) {
	ctx := context.Background()
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.RuntimeTokenTTL = time.Hour }})
	before := time.Now()
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	if e := reg.TokenExpiresAt; e == nil || e.Before(before.Add(time.Hour-time.Minute)) || e.After(time.Now().Add(time.Hour)) {
		t.Fatalf("registered with --runtime-token-ttl 1h: tokenExpiresAt = %v", e)
	}

	// Its token expires: a token whose time ran out a minute ago, set through the store.
	prefix, _, _ := token.Runtime.Parse(reg.Token)
	row, err := s.DB().RuntimeByPrefix(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	expired := token.Runtime.New()
	expiredAt := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	if err := s.DB().Tx(ctx, func(tx *store.Tx) error {
		return tx.SetRuntimeToken(ctx, row.AccountID, row.ID, expired.ID, expired.Hash, expiredAt, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	want := "runtime token of edge expired at " + expiredAt.Format(time.RFC3339) + ": rotate it with `freshet runtime rotate-token edge`"

	// The heartbeat, as the runtime protocol's client sends it: refused with the message, and
	// recorded on the runtime.
	req, _ := http.NewRequest(http.MethodPost, s.URL+runtimev1.ProcedureHeartbeat, strings.NewReader(`{"protocol":1,"version":"test"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+expired.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ce struct{ Code, Message string }
	json.NewDecoder(resp.Body).Decode(&ce)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || ce.Code != "unauthenticated" || ce.Message != want {
		t.Fatalf("heartbeat with an expired token: %d %+v, want 401 unauthenticated %q", resp.StatusCode, ce, want)
	}
	r, err := s.Admin.GetRuntime(ctx, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if f := r.TokenRefusal; f == nil || f.Kind != "expired" || f.Reason != want || f.Remote != "127.0.0.1" {
		t.Fatalf("GET runtime after a refused heartbeat: tokenRefusal = %+v", r.TokenRefusal)
	}

	// The tunnel handshake (the refusal forgotten first, to see that the handshake records it).
	if err := s.DB().ClearRuntimeRefused(ctx, row.ID); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = tunnelclient.Dial(dctx, tunnelclient.Options{ServerURL: s.URL, Token: expired.Token, Handler: http.NotFoundHandler()})
	if !errors.Is(err, tunnelclient.ErrRefused) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), want) {
		t.Fatalf("tunnel handshake with an expired token: %v\nwant ErrRefused, 401, %q", err, want)
	}
	r, err = s.Admin.GetRuntime(ctx, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if f := r.TokenRefusal; f == nil || f.Kind != "expired" || f.Reason != want || f.Remote != "127.0.0.1" || time.Since(f.At) > time.Minute {
		t.Fatalf("GET runtime after a refused handshake: tokenRefusal = %+v", r.TokenRefusal)
	}
	if r.TokenExpiresAt == nil || !r.TokenExpiresAt.Equal(expiredAt) {
		t.Fatalf("tokenExpiresAt = %v, want %v", r.TokenExpiresAt, expiredAt)
	}

	// The heartbeat: the agent stops with the same message (not a hot retry loop).
	a, err := agent.New(agent.Options{Server: s.URL, Token: expired.Token, AccessMode: "tunnel", Version: "test", DataDir: t.TempDir()}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := a.Run(rctx); err == nil || !strings.Contains(err.Error(), "refused this runtime") || !strings.Contains(err.Error(), want) {
		t.Fatalf("runtime agent with an expired token: Run = %v, want the refusal %q", err, want)
	}
	if rctx.Err() != nil {
		t.Fatal("the agent retried until its deadline instead of stopping on the refusal")
	}

	// Rotated: the expired token is now refused as replaced, and the list shows it.
	rot, err := s.Admin.RotateRuntimeToken(ctx, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if rot.TokenExpiresAt == nil || rot.TokenExpiresAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("rotated token expires at %v, want in about an hour", rot.TokenExpiresAt)
	}
	_, err = tunnelclient.Dial(dctx, tunnelclient.Options{ServerURL: s.URL, Token: expired.Token, Handler: http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), "runtime token of edge was replaced at ") || !strings.Contains(err.Error(), "by rotate-token") {
		t.Fatalf("tunnel handshake with the replaced token: %v", err)
	}
	l, err := s.Admin.ListRuntimes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].TokenRefusal == nil || l.Items[0].TokenRefusal.Kind != "replaced" {
		t.Fatalf("list after the replaced token was refused: %+v", l.Items)
	}

	// The new token connects; the refusal is forgotten.
	startRuntime(t, s, rot.Token)
	r = waitRuntime(t, s.Admin, "edge", 10*time.Second, "healthy")
	if r.TokenRefusal != nil {
		t.Fatalf("healthy runtime still shows tokenRefusal %+v", r.TokenRefusal)
	}
}
