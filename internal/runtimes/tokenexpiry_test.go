package runtimes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A runtime token minted under a TTL stops working when it runs out, and a token replaced by
// rotate-token stops at once; both are refused naming the runtime, when, and what to do. The
// refusal is recorded on the runtime (what GET runtime shows) and forgotten when its new
// token works. On SQLite and PostgreSQL.
func TestTokenExpiryAndRefusal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		s.tokenTTL = 24 * time.Hour
		now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		s.now = func() time.Time { return now }
		rt, tok := seedRuntime(t, s, "acme", "edge")
		admin := rbac.Principal{AccountID: rt.AccountID, Email: "a@acme.test", Role: rbac.Admin}
		if want := now.Add(24 * time.Hour); !rt.TokenExpiresAt.Equal(want) {
			t.Fatalf("TokenExpiresAt = %v, want %v", rt.TokenExpiresAt, want)
		}
		if _, err := s.Authenticate(ctx, tok); err != nil {
			t.Fatalf("fresh token: %v", err)
		}

		now = now.Add(24 * time.Hour) // the TTL has run out
		_, err := s.Authenticate(ctx, tok)
		var re *RefusedError
		want := "runtime token of edge expired at 2026-11-02T12:00:00Z: rotate it with `freshet runtime rotate-token edge`"
		if !errors.As(err, &re) || !errors.Is(err, errdefs.ErrUnauthenticated) || err.Error() != want || re.Kind != RefusedExpired {
			t.Fatalf("expired token: %v, want %q (ErrUnauthenticated)", err, want)
		}
		s.RecordRefusal(ctx, err, "10.0.0.7")
		got, err := s.Get(ctx, admin, "edge")
		if err != nil {
			t.Fatal(err)
		}
		if f := got.Refusal; f == nil || f.Kind != RefusedExpired || f.Reason != want || f.Remote != "10.0.0.7" || !f.At.Equal(now) {
			t.Fatalf("recorded refusal = %+v", got.Refusal)
		}
		// The same refusal again within a minute is not written again; a later one is.
		now = now.Add(10 * time.Second)
		if wrote, err := db.SetRuntimeRefused(ctx, rt.ID, now, RefusedExpired, want, "10.0.0.7"); err != nil || wrote {
			t.Fatalf("repeated refusal written = %v, %v; want not written", wrote, err)
		}
		if wrote, err := db.SetRuntimeRefused(ctx, rt.ID, now.Add(store.RefusalRecordEvery), RefusedExpired, want, "10.0.0.7"); err != nil || !wrote {
			t.Fatalf("refusal a minute later written = %v, %v; want written", wrote, err)
		}

		// A wrong secret under the runtime's prefix says nothing about the runtime.
		if _, err := s.Authenticate(ctx, tok[:len(tok)-4]+"AAAA"); err == nil || strings.Contains(err.Error(), "edge") {
			t.Fatalf("wrong secret: %v, want the plain refusal", err)
		}

		rotatedAt := now
		newTok, err := s.RotateToken(ctx, admin, "edge")
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Authenticate(ctx, tok)
		wantReplaced := "runtime token of edge was replaced at " + rotatedAt.Format(time.RFC3339) + " by rotate-token"
		if !errors.As(err, &re) || !errors.Is(err, errdefs.ErrUnauthenticated) || !strings.HasPrefix(err.Error(), wantReplaced) || re.Kind != RefusedReplaced {
			t.Fatalf("replaced token: %v, want %q…", err, wantReplaced)
		}
		s.RecordRefusal(ctx, err, "10.0.0.8")
		if got, _ := s.Get(ctx, admin, "edge"); got.Refusal == nil || got.Refusal.Kind != RefusedReplaced || got.Refusal.Remote != "10.0.0.8" {
			t.Fatalf("recorded refusal after rotation = %+v", got.Refusal)
		}

		// The new token works, for another TTL, and its first use forgets the refusal.
		ok, err := s.Authenticate(ctx, newTok)
		if err != nil {
			t.Fatalf("rotated token: %v", err)
		}
		if ok.Refusal != nil || !ok.TokenExpiresAt.Equal(rotatedAt.Add(24*time.Hour)) {
			t.Fatalf("after a working token: refusal %+v, expires %v", ok.Refusal, ok.TokenExpiresAt)
		}
		if got, _ := s.Get(ctx, admin, "edge"); got.Refusal != nil {
			t.Fatalf("GET after a working token still shows refusal %+v", got.Refusal)
		}

		// Only the token one rotation back is recognised; older ones are unknown.
		if _, err := s.RotateToken(ctx, admin, "edge"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, tok); err == nil || errors.As(err, &re) || !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("token two rotations back: %v, want the plain refusal", err)
		}
	})
}

// Without a TTL tokens never expire, and tokens of hosted runtimes (the platform holds them)
// and of `freshet up`'s own runtime never expire whatever the TTL.
func TestTokenTTLExemptions(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	rt, tok := seedRuntime(t, s, "acme", "edge")
	if !rt.TokenExpiresAt.IsZero() {
		t.Fatalf("no TTL: TokenExpiresAt = %v", rt.TokenExpiresAt)
	}
	s.tokenTTL = time.Hour
	s.now = func() time.Time { return time.Now().Add(1000 * time.Hour) }
	if _, err := s.Authenticate(ctx, tok); err != nil {
		t.Fatalf("a token minted without a TTL: %v", err)
	}
	if !s.expiry(TypeHosted).IsZero() {
		t.Fatalf("hosted runtimes' tokens expire at %v", s.expiry(TypeHosted))
	}
	file := t.TempDir() + "/token"
	upTok, err := s.EnsureRuntime(ctx, rt.AccountID, "local", file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Authenticate(ctx, upTok)
	if err != nil || !got.TokenExpiresAt.IsZero() {
		t.Fatalf("freshet up's runtime: %v, expires %v", err, got.TokenExpiresAt)
	}
}
