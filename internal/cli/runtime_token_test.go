package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
	tunnelclient "github.com/freshet-dev/freshet/internal/tunnel/client"
)

// `freshet runtime get` and `list` show when a runtime's token expires and, once it was
// refused, that it expired and what to run.
func TestRuntimeTokenExpiryShown(t *testing.T) {
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.RuntimeTokenTTL = 2 * time.Hour }})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := runAs(t, s.URL, key.Token, args...)
		if code != 0 {
			t.Fatalf("freshet %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	if out := run("runtime", "get", "edge"); !strings.Contains(out, "Token expires:") || strings.Contains(out, "Token refused:") {
		t.Fatalf("runtime get of a fresh runtime:\n%s", out)
	}
	if out := run("runtime", "list"); !strings.Contains(out, "TOKEN") || !strings.Contains(out, "expires ") {
		t.Fatalf("runtime list of a fresh runtime:\n%s", out)
	}
	// Its token expires, and the runtime is refused.
	prefix, _, _ := token.Runtime.Parse(reg.Token)
	row, err := s.DB().RuntimeByPrefix(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	expired := token.Runtime.New()
	if err := s.DB().Tx(ctx, func(tx *store.Tx) error {
		return tx.SetRuntimeToken(ctx, row.AccountID, row.ID, expired.ID, expired.Hash, time.Now().Add(-time.Minute), time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tunnelclient.Dial(dctx, tunnelclient.Options{ServerURL: s.URL, Token: expired.Token, Handler: http.NotFoundHandler()}); err == nil {
		t.Fatal("an expired token connected")
	}
	if out := run("runtime", "get", "edge"); !strings.Contains(out, "Token refused:") || !strings.Contains(out, "from 127.0.0.1: runtime token of edge expired at ") ||
		!strings.Contains(out, "freshet runtime rotate-token edge") {
		t.Fatalf("runtime get of a refused runtime:\n%s", out)
	}
	if out := run("runtime", "list"); !strings.Contains(out, "expired — rotate") {
		t.Fatalf("runtime list of a refused runtime:\n%s", out)
	}
}
