package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// The contract suite: every test here runs on SQLite and, when FRESHET_TEST_POSTGRES is set, on
// PostgreSQL.

func seed(t *testing.T, db *store.DB, name string) (store.Account, store.User) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	a := store.Account{ID: store.NewID(store.PrefixAccount), Name: name, CreatedAt: now}
	u := store.User{ID: store.NewID(store.PrefixUser), Email: "Admin@" + name + ".test", Name: "admin", PasswordHash: "h", CreatedAt: now}
	err := db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateAccount(ctx, a); err != nil {
			return err
		}
		if err := tx.CreateUser(ctx, u); err != nil {
			return err
		}
		return tx.AddMember(ctx, a.ID, u.ID, "admin", now)
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, u
}

func TestAccountsAndMembers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, u := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")

		got, err := db.GetAccount(ctx, a.ID)
		if err != nil || got.Name != "acme" || got.CreatedAt.IsZero() {
			t.Fatalf("GetAccount = %+v, %v", got, err)
		}
		if _, err := db.GetAccount(ctx, "acc_missing"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("missing account: err = %v, want ErrNotFound", err)
		}
		if err := db.CreateAccount(ctx, store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("duplicate account name: err = %v, want ErrConflict", err)
		}
		// Emails are case-insensitive and unique.
		byEmail, err := db.UserByEmail(ctx, "admin@ACME.test")
		if err != nil || byEmail.ID != u.ID || byEmail.Email != "admin@acme.test" {
			t.Fatalf("UserByEmail = %+v, %v", byEmail, err)
		}
		dup := store.User{ID: store.NewID(store.PrefixUser), Email: "ADMIN@acme.test", PasswordHash: "x", CreatedAt: time.Now()}
		if err := db.CreateUser(ctx, dup); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("duplicate email: err = %v, want ErrConflict", err)
		} else if msg := strings.ToLower(err.Error()); strings.Contains(msg, "constraint") || strings.Contains(msg, "sqlstate") || strings.Contains(msg, "users") {
			t.Fatalf("duplicate email: message %q carries the driver's text, which clients would see", err)
		}
		// Tenant scoping: a's user is not a member of b.
		if _, err := db.GetMember(ctx, b.ID, u.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("GetMember across accounts: err = %v, want ErrNotFound", err)
		}
		if err := db.RemoveMember(ctx, b.ID, u.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("RemoveMember across accounts: err = %v, want ErrNotFound", err)
		}
		if _, err := db.GetUser(ctx, u.ID); err != nil {
			t.Fatalf("user removed by a cross-account delete: %v", err)
		}
		// A user in two accounts.
		if err := db.AddMember(ctx, b.ID, u.ID, "viewer", time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := db.AddMember(ctx, b.ID, u.ID, "viewer", time.Now()); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("second membership: err = %v, want ErrConflict", err)
		}
		ms, err := db.MembershipsOf(ctx, u.ID)
		if err != nil || len(ms) != 2 || ms[0].Account.ID != a.ID || ms[1].Role != "viewer" {
			t.Fatalf("MembershipsOf = %+v, %v", ms, err)
		}
		if err := db.SetMemberRole(ctx, b.ID, u.ID, "member"); err != nil {
			t.Fatal(err)
		}
		m, err := db.GetMember(ctx, b.ID, u.ID)
		if err != nil || m.Role != "member" || m.Email != "admin@acme.test" {
			t.Fatalf("GetMember = %+v, %v", m, err)
		}
		// Removing from b keeps the user (still in a); removing from a too deletes it.
		if err := db.RemoveMember(ctx, b.ID, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetUser(ctx, u.ID); err != nil {
			t.Fatalf("user with one membership left was deleted: %v", err)
		}
		if err := db.RemoveMember(ctx, a.ID, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetUser(ctx, u.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("orphaned user kept: err = %v", err)
		}
	})
}

func TestListMembersPagination(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		for i := range 25 {
			u := store.User{ID: store.NewID(store.PrefixUser), Email: fmt.Sprintf("u%02d@acme.test", i), PasswordHash: "h", CreatedAt: time.Now()}
			if err := db.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
			acct := a.ID
			if i%5 == 0 {
				acct = b.ID
			}
			if err := db.AddMember(ctx, acct, u.ID, "member", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		var all []string
		p := paging.Page{Limit: 7}
		for range 10 {
			page, err := db.ListMembers(ctx, a.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page {
				if m.AccountID != a.ID {
					t.Fatalf("member of %s listed for %s", m.AccountID, a.ID)
				}
				all = append(all, m.ID)
			}
			if len(page) < p.Limit {
				break
			}
			p.After = page[len(page)-1].ID
		}
		if len(all) != 21 { // admin + 20 of 25
			t.Fatalf("listed %d members of acme, want 21", len(all))
		}
		if !sort.StringsAreSorted(all) {
			t.Fatalf("pages not in ID order: %v", all)
		}
		seen := map[string]bool{}
		for _, id := range all {
			if seen[id] {
				t.Fatalf("member %s listed twice", id)
			}
			seen[id] = true
		}
	})
}

func TestAPIKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, u := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		exp := time.Now().Add(time.Hour).Truncate(time.Microsecond)
		k := store.APIKey{ID: store.NewID(store.PrefixAPIKey), AccountID: a.ID, UserID: u.ID, Name: "ci", Prefix: "abcd1234",
			SecretHash: "hash", Role: "member", CreatedAt: time.Now(), ExpiresAt: exp}
		if err := db.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err := db.APIKeyByPrefix(ctx, "abcd1234")
		if err != nil || got.ID != k.ID || !got.ExpiresAt.Equal(exp) || !got.RevokedAt.IsZero() {
			t.Fatalf("APIKeyByPrefix = %+v, %v", got, err)
		}
		if _, err := db.GetAPIKey(ctx, b.ID, k.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("GetAPIKey across accounts: %v", err)
		}
		if err := db.RevokeAPIKey(ctx, b.ID, k.ID, time.Now()); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("RevokeAPIKey across accounts: %v", err)
		}
		if keys, _ := db.ListAPIKeys(ctx, b.ID, "", paging.Page{}); len(keys) != 0 {
			t.Fatalf("account b lists a's keys: %+v", keys)
		}
		if keys, _ := db.ListAPIKeys(ctx, a.ID, "usr_other", paging.Page{}); len(keys) != 0 {
			t.Fatalf("user filter ignored: %+v", keys)
		}
		first := time.Now().Add(-time.Minute)
		if err := db.RevokeAPIKey(ctx, a.ID, k.ID, first); err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeAPIKey(ctx, a.ID, k.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		got, _ = db.GetAPIKey(ctx, a.ID, k.ID)
		if got.RevokedAt.UnixMicro() != first.UnixMicro() {
			t.Fatalf("revoked_at = %v, want the first revocation %v", got.RevokedAt, first)
		}
		dup := k
		dup.ID = store.NewID(store.PrefixAPIKey)
		if err := db.CreateAPIKey(ctx, dup); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("duplicate prefix: %v", err)
		}
	})
}

func TestSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, u := seed(t, db, "acme")
		s := store.Session{ID: store.NewID(store.PrefixSession), TokenHash: "th", UserID: u.ID, AccountID: a.ID,
			CreatedAt: time.Now(), ExpiresAt: time.Now().Add(-time.Second)}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if got, err := db.SessionByHash(ctx, "th"); err != nil || got.ID != s.ID {
			t.Fatalf("SessionByHash = %+v, %v", got, err)
		}
		n, err := db.DeleteExpiredSessions(ctx, time.Now())
		if err != nil || n != 1 {
			t.Fatalf("DeleteExpiredSessions = %d, %v", n, err)
		}
		if _, err := db.SessionByHash(ctx, "th"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("expired session still found: %v", err)
		}
	})
}

func TestAuditFilters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, u := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		base := time.Now().Add(-time.Hour)
		actions := []string{"user.create", "user.delete", "apikey.create", "apikey.revoke", "user.create"}
		for i, act := range actions {
			e := store.AuditEvent{ID: store.NewID(store.PrefixAudit), AccountID: a.ID, ActorID: u.ID, Actor: u.Email, Action: act,
				ResourceType: "user", ResourceID: fmt.Sprint(i), RequestID: "r", SourceIP: "127.0.0.1", Result: "success",
				CreatedAt: base.Add(time.Duration(i) * time.Minute)}
			if err := db.InsertAudit(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.InsertAudit(ctx, store.AuditEvent{ID: store.NewID(store.PrefixAudit), AccountID: b.ID, Action: "user.create", Result: "success", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		count := func(f store.AuditFilter, p paging.Page) int {
			evs, err := db.ListAudit(ctx, a.ID, f, p)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(evs); i++ {
				if evs[i].ID > evs[i-1].ID {
					t.Fatal("audit not newest first")
				}
			}
			return len(evs)
		}
		cases := []struct {
			name string
			f    store.AuditFilter
			want int
		}{
			{"all", store.AuditFilter{}, 5},
			{"action", store.AuditFilter{Action: "user.create"}, 2},
			{"action prefix star", store.AuditFilter{Action: "user.*"}, 3},
			{"action prefix dot", store.AuditFilter{Action: "apikey."}, 2},
			{"actor id", store.AuditFilter{Actor: u.ID}, 5},
			{"actor email", store.AuditFilter{Actor: u.Email}, 5},
			{"actor other", store.AuditFilter{Actor: "nobody"}, 0},
			{"since", store.AuditFilter{Since: base.Add(150 * time.Second)}, 2},
			{"until", store.AuditFilter{Until: base.Add(90 * time.Second)}, 2},
			{"resource", store.AuditFilter{ResourceID: "3"}, 1},
		}
		for _, c := range cases {
			if got := count(c.f, paging.Page{}); got != c.want {
				t.Errorf("%s: %d events, want %d", c.name, got, c.want)
			}
		}
		first, _ := db.ListAudit(ctx, a.ID, store.AuditFilter{}, paging.Page{Limit: 2})
		if got := count(store.AuditFilter{}, paging.Page{After: first[1].ID}); got != 3 {
			t.Errorf("second page: %d, want 3", got)
		}
	})
}

func TestTxRollsBackEverything(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		boom := errors.New("boom")
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateAccount(ctx, store.Account{ID: store.NewID(store.PrefixAccount), Name: "half", CreatedAt: time.Now()}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Tx err = %v", err)
		}
		if n, _ := db.CountAccounts(ctx); n != 0 {
			t.Fatalf("rolled-back account persisted (%d accounts)", n)
		}
	})
}

func TestLedgerOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := db.Ledger()
		var mu sync.Mutex
		runs := 0
		handle := func(ctx context.Context) error {
			tx, ok := store.TxFrom(ctx)
			if !ok {
				t.Error("no transaction in handler context")
				return nil
			}
			mu.Lock()
			runs++
			mu.Unlock()
			return tx.CreateAccount(ctx, store.Account{ID: store.NewID(store.PrefixAccount), Name: "from-msg", CreatedAt: time.Now()})
		}
		// A failing handler records nothing, so the redelivery runs it again.
		if err := l.Once(ctx, "c", "k1", func(context.Context) error { return errors.New("temporary") }); err == nil {
			t.Fatal("handler error swallowed")
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.Once(ctx, "c", "k1", handle); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if runs != 1 {
			t.Fatalf("handler ran %d times for one key, want 1", runs)
		}
		if n, _ := db.CountAccounts(ctx); n != 1 {
			t.Fatalf("%d accounts, want 1", n)
		}
		// Another consumer handles the same key independently.
		if err := l.Once(ctx, "other", "k1", func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if n, err := db.ForgetProcessed(ctx, time.Now().Add(time.Second)); err != nil || n != 2 {
			t.Fatalf("ForgetProcessed = %d, %v", n, err)
		}
	})
}

func TestMigrationsIdempotentAndVersioned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		if store.SchemaVersion() < 1 {
			t.Fatal("no migrations embedded")
		}
	})
	// Reopening an existing SQLite file applies nothing and keeps the data.
	path := filepath.Join(t.TempDir(), "f.db")
	ctx := context.Background()
	db, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, db, "keep")
	db.Close()
	db, err = store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, _ := db.CountAccounts(ctx); n != 1 {
		t.Fatalf("accounts after reopen = %d", n)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"", "mysql://x"} {
		_, err := store.Open(ctx, dsn, nil)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "db" {
			t.Errorf("Open(%q) err = %v, want invalid field db", dsn, err)
		}
	}
	// Unreachable PostgreSQL: one clear error, password redacted.
	_, err := store.Open(ctx, "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2", nil)
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("unreachable postgres: err = %v", err)
	}
	if msg := err.Error(); !contains(msg, "xxxxx") || contains(msg, "secret") {
		t.Fatalf("error does not redact the password: %s", msg)
	}
}

// TestSQLiteFilesArePrivate: the database holds password hashes and encrypted secrets; a new
// SQLite file and its write-ahead log are readable by their owner only, whatever the umask.
func TestSQLiteFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "data", "freshet.db")
	db, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateAccount(ctx, store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v: others can read it", p, perm)
		}
	}
}

func TestNewIDSortsByTime(t *testing.T) {
	prev := store.NewID("x")
	for range 10000 {
		id := store.NewID("x")
		if id <= prev {
			t.Fatalf("%s <= %s", id, prev)
		}
		prev = id
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
