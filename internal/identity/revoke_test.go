package identity

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Every committed change that may shrink a user's access tells the revoke hook, with the
// account and the user; a change that fails tells nothing.
func TestRevokeHookHearsEveryShrinkOfAccess(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		var heard []string
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log,
			OnRevoke: func(accountID, userID string) { heard = append(heard, accountID+"/"+userID) }})
		boot, err := s.Bootstrap(ctx, "acme", "admin@acme.test", "admin-password-123")
		if err != nil {
			t.Fatal(err)
		}
		acct := boot.Account.ID
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password-123", "")
		if err != nil {
			t.Fatal(err)
		}
		carol, err := s.CreateUser(ctx, admin.Principal, CreateUserInput{Email: "carol@acme.test", Role: "member", Password: "carol-password-123"})
		if err != nil {
			t.Fatal(err)
		}
		c := carol.Member.ID
		carolSession, err := s.Login(ctx, "carol@acme.test", "carol-password-123", "")
		if err != nil {
			t.Fatal(err)
		}
		key, _, err := s.CreateAPIKey(ctx, carolSession.Principal, CreateAPIKeyInput{Name: "k"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateAccount(ctx, admin.Principal, "other")
		if err != nil {
			t.Fatal(err)
		}
		if len(heard) != 0 {
			t.Fatalf("creations were heard as revocations: %v", heard)
		}

		steps := []struct {
			name string
			do   func() error
			want string // "" when the change fails and nothing is heard
		}{
			{"revoke carol's key (by the admin)", func() error { return s.RevokeAPIKey(ctx, admin.Principal, key.ID) }, acct + "/" + c},
			{"demote carol", func() error { _, err := s.SetUserRole(ctx, admin.Principal, c, "viewer"); return err }, acct + "/" + c},
			{"demote the last admin (refused)", func() error {
				_, err := s.SetUserRole(ctx, admin.Principal, admin.Principal.UserID, "viewer")
				return err
			}, ""},
			{"carol logs out", func() error { return s.Logout(ctx, carolSession.Principal) }, acct + "/" + c},
			{"the admin switches account", func() error { _, err := s.SwitchAccount(ctx, admin.Principal, other.ID); return err }, acct + "/" + admin.Principal.UserID},
			{"remove carol", func() error { return s.DeleteUser(ctx, admin.Principal, c) }, acct + "/" + c},
			{"remove carol again (not found)", func() error { return s.DeleteUser(ctx, admin.Principal, c) }, ""},
		}
		for _, st := range steps {
			before := len(heard)
			err := st.do()
			if (err == nil) != (st.want != "") {
				t.Fatalf("%s: err = %v", st.name, err)
			}
			got := heard[before:]
			if st.want == "" && len(got) != 0 || st.want != "" && !slices.Equal(got, []string{st.want}) {
				t.Fatalf("%s: heard %v, want %q", st.name, got, st.want)
			}
		}
	})
}
