package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func TestInvitations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, alice := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		c, _ := seed(t, db, "initech")
		now := time.Now().Truncate(time.Microsecond)
		inv := func(acct store.Account, ttl time.Duration) store.Invitation {
			return store.Invitation{ID: store.NewID(store.PrefixInvitation), MemberID: store.NewID(store.PrefixUser), AccountID: acct.ID,
				UserID: alice.ID, Name: "Al", Role: "viewer", InvitedBy: "admin@" + acct.Name + ".test", CreatedAt: now, ExpiresAt: now.Add(ttl)}
		}
		toB, toC := inv(b, time.Hour), inv(c, time.Minute)
		for _, i := range []store.Invitation{toB, toC} {
			if err := db.CreateInvitation(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		// One invitation per user and account.
		if err := db.CreateInvitation(ctx, inv(b, time.Hour)); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("second invitation to b: %v, want ErrConflict", err)
		}

		// The invited user sees theirs, with the account's name and their own email.
		mine, err := db.InvitationsOf(ctx, alice.ID, now)
		if err != nil || len(mine) != 2 || mine[0].ID != toB.ID || mine[0].AccountName != "globex" || mine[0].AccountCreatedAt.IsZero() || mine[0].Email != "admin@acme.test" ||
			mine[0].Role != "viewer" || mine[0].InvitedBy != "admin@globex.test" || !mine[0].ExpiresAt.Equal(toB.ExpiresAt) {
			t.Fatalf("InvitationsOf = %+v, %v", mine, err)
		}
		if got, err := db.InvitationOf(ctx, alice.ID, toC.ID, now); err != nil || got.AccountID != c.ID {
			t.Fatalf("InvitationOf = %+v, %v", got, err)
		}
		// Nobody else reaches them by ID, and an expired one is gone for every read.
		if _, err := db.InvitationOf(ctx, "usr_other", toB.ID, now); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("another user's invitation: %v, want ErrNotFound", err)
		}
		later := now.Add(2 * time.Minute)
		if _, err := db.InvitationOf(ctx, alice.ID, toC.ID, later); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("expired invitation: %v, want ErrNotFound", err)
		}
		if mine, _ := db.InvitationsOf(ctx, alice.ID, later); len(mine) != 1 || mine[0].ID != toB.ID {
			t.Fatalf("after c's expired: %+v", mine)
		}

		// The inviting account sees it under its member ID, and only there.
		if got, err := db.InvitationByMember(ctx, b.ID, toB.MemberID, now); err != nil || got.ID != toB.ID || got.Name != "Al" {
			t.Fatalf("InvitationByMember = %+v, %v", got, err)
		}
		if _, err := db.InvitationByMember(ctx, a.ID, toB.MemberID, now); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("b's invitation read from a: %v, want ErrNotFound", err)
		}
		if got, err := db.PendingInvitation(ctx, b.ID, alice.ID, now); err != nil || got.ID != toB.ID {
			t.Fatalf("PendingInvitation = %+v, %v", got, err)
		}
		if err := db.SetInvitationRole(ctx, a.ID, toB.MemberID, "admin"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("a changes b's invitation: %v, want ErrNotFound", err)
		}
		if err := db.SetInvitationRole(ctx, b.ID, toB.MemberID, "member"); err != nil {
			t.Fatal(err)
		}
		page, err := db.ListInvitations(ctx, b.ID, now, paging.Page{})
		if err != nil || len(page) != 1 || page[0].Role != "member" {
			t.Fatalf("ListInvitations(b) = %+v, %v", page, err)
		}
		if page, _ := db.ListInvitations(ctx, b.ID, now, paging.Page{After: toB.MemberID}); len(page) != 0 {
			t.Fatalf("page after the last: %+v", page)
		}
		if page, _ := db.ListInvitations(ctx, a.ID, now, paging.Page{}); len(page) != 0 {
			t.Fatalf("a lists b's invitations: %+v", page)
		}

		// An expired invitation is replaced by a new one in place, with no sweep first (adding a
		// user must cost the same whatever the email); the sweep then finds nothing of c's.
		again := inv(c, time.Hour)
		again.CreatedAt, again.ExpiresAt = later, later.Add(time.Hour)
		if err := db.CreateInvitation(ctx, again); err != nil {
			t.Fatalf("invitation over the expired one: %v", err)
		}
		if got, err := db.InvitationOf(ctx, alice.ID, again.ID, later); err != nil || got.AccountID != c.ID || !got.ExpiresAt.Equal(again.ExpiresAt) {
			t.Fatalf("the new invitation to c: %+v, %v", got, err)
		}
		if n, err := db.DeleteExpiredInvitations(ctx, later); err != nil || n != 0 {
			t.Fatalf("DeleteExpiredInvitations = %d, %v; want 0 (c's expired one was replaced)", n, err)
		}
		if n, err := db.DeleteExpiredInvitations(ctx, later.Add(2*time.Hour)); err != nil || n != 2 {
			t.Fatalf("DeleteExpiredInvitations after every invitation expired = %d, %v; want 2", n, err)
		}
		if err := db.CreateInvitation(ctx, inv(c, time.Hour)); err != nil {
			t.Fatalf("invitation after the expired ones were swept: %v", err)
		}
		if err := db.CreateInvitation(ctx, toB); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteInvitation(ctx, toB.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteInvitation(ctx, toB.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("deleted twice: %v", err)
		}
		// Invitations go with their user.
		if err := db.RemoveMember(ctx, a.ID, alice.ID); err != nil {
			t.Fatal(err)
		}
		if mine, _ := db.InvitationsOf(ctx, alice.ID, now); len(mine) != 0 {
			t.Fatalf("a deleted user's invitations remain: %+v", mine)
		}
	})
}
