package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func TestPasswordsSessionsAndResets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, u := seed(t, db, "acme")
		_, other := seed(t, db, "globex")
		now := time.Now()
		if err := db.SetUserPassword(ctx, u.ID, "new-hash"); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.GetUser(ctx, u.ID); got.PasswordHash != "new-hash" {
			t.Fatalf("password hash = %q", got.PasswordHash)
		}
		if err := db.SetUserPassword(ctx, "usr_missing", "x"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("SetUserPassword of no user: %v", err)
		}
		var ids []string
		for i, exp := range []time.Time{now.Add(time.Hour), now.Add(time.Hour), now.Add(-time.Hour)} {
			s := store.Session{ID: store.NewID(store.PrefixSession), TokenHash: string(rune('a' + i)), UserID: u.ID, AccountID: a.ID, CreatedAt: now, ExpiresAt: exp}
			if err := db.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s.ID)
		}
		ss, err := db.SessionsOf(ctx, u.ID, now)
		if err != nil || len(ss) != 2 || ss[0].ID != ids[0] {
			t.Fatalf("SessionsOf = %+v, %v (the expired one is left out)", ss, err)
		}
		if err := db.DeleteSessionOf(ctx, other.ID, ids[0]); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("another user ended the session: %v", err)
		}
		if err := db.DeleteSessionOf(ctx, u.ID, ids[0]); err != nil {
			t.Fatal(err)
		}
		if n, err := db.DeleteSessionsOf(ctx, u.ID, ids[1]); err != nil || n != 1 {
			t.Fatalf("DeleteSessionsOf = %d, %v; want the expired one gone and the kept one kept", n, err)
		}
		if ss, _ := db.SessionsOf(ctx, u.ID, now); len(ss) != 1 || ss[0].ID != ids[1] {
			t.Fatalf("sessions left: %+v", ss)
		}

		r := store.PasswordReset{ID: "abcd1234", UserID: u.ID, AccountID: a.ID, SecretHash: "h", CreatedBy: "admin", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := db.CreatePasswordReset(ctx, r); err != nil {
			t.Fatal(err)
		}
		// A second reset replaces the first.
		r2 := r
		r2.ID = "efgh5678"
		if err := db.CreatePasswordReset(ctx, r2); err != nil {
			t.Fatal(err)
		}
		if _, err := db.PasswordResetByID(ctx, r.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("the first reset still works: %v", err)
		}
		got, err := db.PasswordResetByID(ctx, r2.ID)
		if err != nil || got.UserID != u.ID || !got.UsedAt.IsZero() || got.ExpiresAt.Unix() != r2.ExpiresAt.Unix() {
			t.Fatalf("PasswordResetByID = %+v, %v", got, err)
		}
		// Used once: of 8 uses at once, one wins.
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if db.UsePasswordReset(ctx, r2.ID, now) == nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d uses of one reset token succeeded", wins.Load())
		}
		if got, _ := db.PasswordResetByID(ctx, r2.ID); got.UsedAt.IsZero() {
			t.Fatal("used reset has no use time")
		}
	})
}
