package identity

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log})
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
	// In a synctest bubble the waits are the hasher's own, not the machine's load: the hash
	// that gives its slot back after 5 ms does so before the waiting one's 20 ms run out.
	synctest.Test(t, func(t *testing.T) {
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
		if waited := time.Since(start); waited != 20*time.Millisecond {
			t.Fatalf("refused after %s, want after its wait of 20ms", waited)
		}
		// A waiting hash gets the slot a finished one gives back.
		go func() { time.Sleep(5 * time.Millisecond); r1() }()
		start = time.Now()
		r3, err := h.acquire(ctx)
		if err != nil {
			t.Fatalf("waiting hash: %v", err)
		}
		if waited := time.Since(start); waited != 5*time.Millisecond {
			t.Fatalf("the waiting hash got its slot after %s, want when the first gave it back (5ms)", waited)
		}
		r2()
		r3()
		if ok, err := h.check(ctx, dummyHash, "freshet-dummy-password"); !ok || err != nil {
			t.Fatalf("check = %v, %v", ok, err)
		}
		if len(h.slots) != 0 {
			t.Fatalf("%d slots still held", len(h.slots))
		}
	})
}

// An admin adding an email that already has a login invites it: no membership until the user
// accepts, and the admin's view of the new "user" is the same as of a new one.
func TestInvitations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, now := newService(t, db)
		login := func(email, pw string) rbac.Principal {
			t.Helper()
			res, err := s.Login(ctx, email, pw, "")
			if err != nil {
				t.Fatalf("login %s: %v", email, err)
			}
			return res.Principal
		}
		if _, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password"); err != nil {
			t.Fatal(err)
		}
		aAdmin := login("admin@acme.test", "admin-password")
		if _, err := s.CreateUser(ctx, aAdmin, CreateUserInput{Email: "alice@acme.test", Role: "member", Password: "alice-password"}); err != nil {
			t.Fatal(err)
		}
		alice := login("alice@acme.test", "alice-password")
		if _, err := s.Provision(ctx, "bravo", "eve@bravo.test", "eve-password"); err != nil {
			t.Fatal(err)
		}
		bAdmin := login("eve@bravo.test", "eve-password")

		fresh, err := s.CreateUser(ctx, bAdmin, CreateUserInput{Email: "new@bravo.test", Role: "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		invited, err := s.CreateUser(ctx, bAdmin, CreateUserInput{Email: "Alice@acme.test", Name: "Al", Role: "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		// The same shape: an ID of B's own (not alice's), the name B gave, a generated password.
		if invited.Member.ID == alice.UserID || !strings.HasPrefix(invited.Member.ID, "usr_") || invited.Member.Email != "alice@acme.test" ||
			invited.Member.Name != "Al" || invited.Member.Role != rbac.Viewer || len(invited.Password) != len(fresh.Password) || invited.Member.CreatedAt.IsZero() {
			t.Fatalf("invited = %+v; new user = %+v", invited, fresh)
		}
		// What creation answers is what a read gives.
		for _, created := range []Member{fresh.Member, invited.Member} {
			if got, err := s.GetUser(ctx, bAdmin, created.ID); err != nil || got != created {
				t.Fatalf("created %+v, read %+v, %v", created, got, err)
			}
		}
		if _, err := s.CreateUser(ctx, bAdmin, CreateUserInput{Email: "alice@acme.test", Role: "admin"}); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("inviting twice: %v, want conflict", err)
		}
		// B lists, reads, changes it like a member; alice is in no account of B's yet.
		users, err := s.ListUsers(ctx, bAdmin, paging.Page{})
		if err != nil || len(users) != 3 || users[2].ID != invited.Member.ID {
			t.Fatalf("B's users = %+v, %v", users, err)
		}
		if page, _ := s.ListUsers(ctx, bAdmin, paging.Page{Limit: 2}); len(page) != 2 || page[1].ID != fresh.Member.ID {
			t.Fatalf("B's first page of 2 = %+v", page)
		}
		if page, _ := s.ListUsers(ctx, bAdmin, paging.Page{After: fresh.Member.ID}); len(page) != 1 || page[0].ID != invited.Member.ID {
			t.Fatalf("B's page after the new user = %+v", page)
		}
		if m, err := s.SetUserRole(ctx, bAdmin, invited.Member.ID, "member"); err != nil || m.Role != rbac.Member || m.ID != invited.Member.ID {
			t.Fatalf("role of the invited = %+v, %v", m, err)
		}
		if _, err := s.GetUser(ctx, aAdmin, invited.Member.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("A reads B's invitation: %v", err)
		}
		if me, _ := s.Me(ctx, alice); len(me.Memberships) != 1 {
			t.Fatalf("alice joined B without accepting: %+v", me.Memberships)
		}
		if _, err := s.Login(ctx, "alice@acme.test", invited.Password, ""); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("the password B was shown logs alice in: %v", err)
		}

		// alice sees the invitation; nobody else can answer it, nor alice with an API key.
		invs, err := s.ListInvitations(ctx, alice)
		if err != nil || len(invs) != 1 || invs[0].Account.Name != "bravo" || invs[0].Role != rbac.Member || invs[0].InvitedBy != "eve@bravo.test" ||
			!invs[0].ExpiresAt.Equal(invs[0].CreatedAt.Add(InvitationTTL)) {
			t.Fatalf("alice's invitations = %+v, %v", invs, err)
		}
		if _, err := s.AcceptInvitation(ctx, aAdmin, invs[0].ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("another user accepts alice's invitation: %v", err)
		}
		_, keyTok, err := s.CreateAPIKey(ctx, alice, CreateAPIKeyInput{Name: "k"})
		if err != nil {
			t.Fatal(err)
		}
		aliceKey, _ := s.Authenticate(ctx, keyTok)
		if _, err := s.AcceptInvitation(ctx, aliceKey, invs[0].ID); errdefs.Field(err) != "session" {
			t.Fatalf("accept with an API key: %v", err)
		}
		m, err := s.AcceptInvitation(ctx, alice, invs[0].ID)
		if err != nil || m.Account.Name != "bravo" || m.Role != rbac.Member {
			t.Fatalf("accept = %+v, %v", m, err)
		}
		if _, err := s.AcceptInvitation(ctx, alice, invs[0].ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("accepted twice: %v", err)
		}
		// Now B sees alice herself: her ID, her name; the invitation's ID is gone.
		if _, err := s.GetUser(ctx, bAdmin, invited.Member.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("the accepted invitation is still a user: %v", err)
		}
		if u, err := s.GetUser(ctx, bAdmin, alice.UserID); err != nil || u.Role != rbac.Member || u.Name != "alice" {
			t.Fatalf("alice in B = %+v, %v", u, err)
		}
		if me, _ := s.Me(ctx, alice); len(me.Memberships) != 2 {
			t.Fatalf("alice's accounts after accepting: %+v", me.Memberships)
		}
		events := func(p rbac.Principal, action string) []audit.Event {
			evs, err := s.audit.List(ctx, p, audit.Filter{Action: action, Result: audit.ResultSuccess}, paging.Page{})
			if err != nil {
				t.Fatal(err)
			}
			return evs
		}
		if evs := events(bAdmin, "invitation.accept"); len(evs) != 1 || evs[0].Actor != "alice@acme.test" || evs[0].ResourceID != alice.UserID {
			t.Fatalf("B's accept records = %+v", evs)
		}
		if evs := events(aAdmin, "invitation.accept"); len(evs) != 1 || !strings.Contains(evs[0].Detail, `"bravo"`) {
			t.Fatalf("A's accept records = %+v", evs)
		}
		for _, e := range events(aAdmin, "user.*") {
			if strings.Contains(e.Actor, "eve@") {
				t.Fatalf("A's audit has B's action: %+v", e)
			}
		}

		// Decline: B's user goes, alice joins nothing.
		if _, err := s.Provision(ctx, "charlie", "carl@charlie.test", "carl-password"); err != nil {
			t.Fatal(err)
		}
		cAdmin := login("carl@charlie.test", "carl-password")
		toC, err := s.CreateUser(ctx, cAdmin, CreateUserInput{Email: "alice@acme.test", Role: "admin", Password: "not-alices-pw"})
		if err != nil {
			t.Fatal(err)
		}
		invs, _ = s.ListInvitations(ctx, alice)
		if len(invs) != 1 || invs[0].Account.Name != "charlie" || invs[0].Role != rbac.Admin {
			t.Fatalf("alice's invitations = %+v", invs)
		}
		if err := s.DeclineInvitation(ctx, alice, invs[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetUser(ctx, cAdmin, toC.Member.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("declined invitation still a user of C: %v", err)
		}
		if evs := events(cAdmin, "invitation.decline"); len(evs) != 1 || evs[0].ResourceID != toC.Member.ID {
			t.Fatalf("C's decline records = %+v", evs)
		}
		if _, err := s.Login(ctx, "alice@acme.test", "not-alices-pw", ""); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("C set alice's password: %v", err)
		}

		// Expiry: after InvitationTTL neither side sees it, and it can be sent again.
		again, err := s.CreateUser(ctx, cAdmin, CreateUserInput{Email: "alice@acme.test", Role: "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		invs, _ = s.ListInvitations(ctx, alice)
		*now = now.Add(InvitationTTL + time.Second)
		if l, _ := s.ListInvitations(ctx, alice); len(l) != 0 {
			t.Fatalf("expired invitations listed: %+v", l)
		}
		if _, err := s.GetUser(ctx, cAdmin, again.Member.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("expired invitation is a user of C: %v", err)
		}
		if _, err := s.AcceptInvitation(ctx, alice, invs[0].ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("accepting an expired invitation: %v", err)
		}
		if _, err := s.CreateUser(ctx, cAdmin, CreateUserInput{Email: "alice@acme.test", Role: "viewer"}); err != nil {
			t.Fatalf("inviting again after expiry: %v", err)
		}
		// Removing an invitation is removing the user, for C.
		if err := s.DeleteUser(ctx, cAdmin, again.Member.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("deleting the expired one: %v", err)
		}
		users, _ = s.ListUsers(ctx, cAdmin, paging.Page{})
		if len(users) != 2 {
			t.Fatalf("C's users = %+v", users)
		}
		if err := s.DeleteUser(ctx, cAdmin, users[1].ID); err != nil {
			t.Fatal(err)
		}
		if l, _ := s.ListInvitations(ctx, alice); len(l) != 0 {
			t.Fatalf("removed invitation still listed: %+v", l)
		}
	})
}

// Expired sessions and invitations are swept on their own schedule, not by the calls that add
// users (which must cost the same whatever the email); an expired invitation is replaced by a
// new one all the same.
func TestSweepExpiredSessionsAndInvitations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s, now := newService(t, db)
		if _, err := s.Provision(ctx, "acme", "admin@acme.test", "admin-password"); err != nil {
			t.Fatal(err)
		}
		b, err := s.Provision(ctx, "globex", "admin@globex.test", "admin-password")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Login(ctx, "admin@acme.test", "admin-password", ""); err != nil {
			t.Fatal(err)
		}
		bAdmin := rbac.Principal{AccountID: b.Account.ID, Email: "admin@globex.test", Role: rbac.Admin}
		if _, err := s.CreateUser(ctx, bAdmin, CreateUserInput{Email: "admin@acme.test", Role: "member"}); err != nil {
			t.Fatal(err)
		}
		if sessions, invitations, err := s.SweepExpired(ctx); err != nil || sessions != 0 || invitations != 0 {
			t.Fatalf("SweepExpired before anything expired = %d, %d, %v", sessions, invitations, err)
		}
		*now = now.Add(InvitationTTL + time.Minute)
		// The expired invitation does not stop a new one.
		if _, err := s.CreateUser(ctx, bAdmin, CreateUserInput{Email: "admin@acme.test", Role: "viewer"}); err != nil {
			t.Fatalf("invite again after the first expired: %v", err)
		}
		*now = now.Add(max(SessionTTL, InvitationTTL) + time.Minute)
		if sessions, invitations, err := s.SweepExpired(ctx); err != nil || sessions != 1 || invitations != 1 {
			t.Fatalf("SweepExpired after both expired = %d sessions, %d invitations, %v; want 1 and 1", sessions, invitations, err)
		}
	})
}
