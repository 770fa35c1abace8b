package identity

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash format: %s", h)
	}
	if !CheckPassword(h, "s3cret-pass") || CheckPassword(h, "s3cret-pasS") || CheckPassword(h, "") {
		t.Fatal("password check wrong")
	}
	h2, _ := HashPassword("s3cret-pass")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, bad := range []string{"", "$argon2id$", "$bcrypt$v=19$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=0,t=0,p=0$AAAA$AAAA", "$argon2id$v=19$m=8,t=1,p=1$!!$AAAA"} {
		if CheckPassword(bad, "x") {
			t.Errorf("malformed hash %q matched", bad)
		}
	}
}

func TestCSRFTokenIsDerivedFromTheSession(t *testing.T) {
	if a1, a2 := CSRFToken("a"), CSRFToken("a"); CSRFToken("a") == CSRFToken("b") || a1 != a2 || len(a1) != 32 {
		t.Fatal("CSRF tokens not derived from the session")
	}
}

func TestFailureLimiter(t *testing.T) {
	l := newFailureLimiter(3)
	now := time.Unix(1000, 0)
	for i := range 3 {
		if ok, _ := l.reserve("k", now.Add(time.Duration(i)*time.Second)); !ok {
			t.Fatalf("refused after %d failures", i)
		}
	}
	ok, wait := l.reserve("k", now.Add(3*time.Second))
	if ok || wait != loginWindow-3*time.Second {
		t.Fatalf("4th attempt: ok=%v wait=%s", ok, wait)
	}
	if ok, _ := l.reserve("other", now); !ok {
		t.Fatal("another key refused")
	}
	// A released attempt (its password was right) is not a failure.
	l.release("k", now.Add(2*time.Second))
	if ok, _ := l.reserve("k", now.Add(3*time.Second)); !ok {
		t.Fatal("released attempt still counted")
	}
	// The window slides: after it, the first failure is forgotten.
	if ok, _ := l.reserve("k", now.Add(loginWindow)); !ok {
		t.Fatal("still refused after the window")
	}
	l.reset("k")
	l.release("other", now)
	if len(l.hits) != 0 {
		t.Fatalf("reset and release kept state: %v", l.hits)
	}
}

// Parallel attempts reserve before any is checked: however many race, at most max pass.
func TestFailureLimiterUnderRace(t *testing.T) {
	l := newFailureLimiter(maxFailuresPerEmail)
	now := time.Now()
	var passed atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			if ok, _ := l.reserve("victim@x.test", now); ok {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	if passed.Load() != maxFailuresPerEmail {
		t.Fatalf("%d of 40 parallel attempts passed, want %d", passed.Load(), maxFailuresPerEmail)
	}
}

func TestAPIKeyStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		name             string
		expires, revoked time.Time
		want             APIKeyStatus
	}{
		{"never expires", time.Time{}, time.Time{}, APIKeyActive},
		{"expires later", now.Add(time.Second), time.Time{}, APIKeyActive},
		{"expires now", now, time.Time{}, APIKeyActive},
		{"expired", now.Add(-time.Second), time.Time{}, APIKeyExpired},
		{"revoked", now.Add(time.Hour), now.Add(-time.Hour), APIKeyRevoked},
		{"revoked after expiry", now.Add(-2 * time.Hour), now.Add(-time.Hour), APIKeyRevoked},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := apiKeyOf(store.APIKey{ID: "key_1", SecretHash: "hash", Role: "viewer", ExpiresAt: c.expires, RevokedAt: c.revoked}, now)
			if k.Status != c.want || k.Role != rbac.Viewer || !k.ExpiresAt.Equal(c.expires) || !k.RevokedAt.Equal(c.revoked) {
				t.Fatalf("got %+v, want status %s", k, c.want)
			}
		})
	}
}

func TestParseAPIKeyTTL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration // -1: the default (nil)
		bad  bool
	}{
		{"", -1, false},
		{"0", 0, false},
		{"0s", 0, false},
		{"0h0m", 0, false},
		{"1m", time.Minute, false},
		{"1.5h", 90 * time.Minute, false},
		{"720h", 720 * time.Hour, false},
		{"0.5ns", 0, true}, // rounds to zero: would never expire
		{"59s", 0, true},   // below the minimum
		{"50ms", 0, true},  // below the minimum
		{"90.5s", 0, true}, // not whole seconds
		{"1m0.001s", 0, true},
		{"-1h", 0, true},
		{"soon", 0, true},
	} {
		d, err := ParseAPIKeyTTL(c.in)
		switch {
		case c.bad:
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "expiresIn" {
				t.Errorf("%q: %v, %v; want an expiresIn error", c.in, d, err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.want < 0 && d != nil, c.want >= 0 && (d == nil || *d != c.want):
			t.Errorf("%q = %v, want %v", c.in, d, c.want)
		}
	}
}

// newService is a Service on a fresh database of backend d, with a clock the test moves.
func newService(t *testing.T, db *store.DB) (*Service, *time.Time) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	s := New(db, audit.NewLog(db, log), log)
	now := time.Now()
	s.now = func() time.Time { return now }
	return s, &now
}

func TestExpiredAPIKeyStopsWorking(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, now := newService(t, db)
		res, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password")
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Login(ctx, "admin@acme.test", "admin-password", "")
		if err != nil {
			t.Fatal(err)
		}
		ttl := MinAPIKeyTTL
		k, tok, err := s.CreateAPIKey(ctx, p.Principal, CreateAPIKeyInput{Name: "short", ExpiresIn: &ttl})
		if err != nil || !k.ExpiresAt.Equal(now.Add(ttl)) {
			t.Fatalf("key = %+v, %v", k, err)
		}
		if kp, err := s.Authenticate(ctx, tok); err != nil || kp.AccountID != res.Account.ID {
			t.Fatalf("fresh key: %+v, %v", kp, err)
		}
		*now = now.Add(ttl + time.Second)
		if _, err := s.Authenticate(ctx, tok); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("expired key: %v, want unauthenticated", err)
		}
		ks, _ := s.ListAPIKeys(ctx, p.Principal, paging.Page{})
		if len(ks) != 1 || ks[0].Status != APIKeyExpired {
			t.Fatalf("listed = %+v", ks)
		}
	})
}

func TestHasherBound(t *testing.T) {
	if maxConcurrentHashes < 1 || maxConcurrentHashes*argonMemory<<10 > hashMemoryBudget {
		t.Fatalf("%d hashes of %d KiB exceed the budget of %d bytes", maxConcurrentHashes, argonMemory, hashMemoryBudget)
	}
	ctx := context.Background()
	h := newHasher(2, 20*time.Millisecond)
	r1, err1 := h.acquire(ctx)
	r2, err2 := h.acquire(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	start := time.Now()
	_, err := h.acquire(ctx)
	var ra *errdefs.RetryAfterError
	if !errors.Is(err, errdefs.ErrRateLimited) || !errors.As(err, &ra) || ra.After != hashRetryAfter {
		t.Fatalf("third hash at once: %v, want rate limited with Retry-After", err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("refused after %s, before its wait", waited)
	}
	// A waiting hash gets the slot a finished one gives back.
	go func() { time.Sleep(5 * time.Millisecond); r1() }()
	r3, err := h.acquire(ctx)
	if err != nil {
		t.Fatalf("waiting hash: %v", err)
	}
	r2()
	r3()
	if ok, err := h.check(ctx, dummyHash, "freshet-dummy-password"); !ok || err != nil {
		t.Fatalf("check = %v, %v", ok, err)
	}
	if len(h.slots) != 0 {
		t.Fatalf("%d slots still held", len(h.slots))
	}
}
