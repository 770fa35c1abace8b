package identity

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func TestPasswordChangeResetAndSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		var revoked []string
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, OnRevoke: func(a, u string) { revoked = append(revoked, u) }})
		if _, err := s.Bootstrap(ctx, "acme", "admin@acme.test", "admin-password-123"); err != nil {
			t.Fatal(err)
		}
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password-123", "")
		if err != nil {
			t.Fatal(err)
		}
		lee, err := s.CreateUser(ctx, admin.Principal, CreateUserInput{Email: "lee@acme.test", Role: "member", Password: "lee-password-123"})
		if err != nil {
			t.Fatal(err)
		}
		one, _ := s.Login(ctx, "lee@acme.test", "lee-password-123", "")
		two, _ := s.Login(ctx, "lee@acme.test", "lee-password-123", "")
		p1, err := s.Authenticate(ctx, one.Token)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := s.ListSessions(ctx, p1)
		if err != nil || len(ss) != 2 || !ss[0].Current || ss[1].Current || ss[0].Account.Name != "acme" {
			t.Fatalf("ListSessions = %+v, %v", ss, err)
		}

		// Change: the current password must be right; the other session ends, this one stays.
		if err := s.ChangePassword(ctx, p1, "wrong-password-1", "lee-new-password"); errdefs.Field(err) != "currentPassword" {
			t.Fatalf("wrong current password: %v", err)
		}
		if err := s.ChangePassword(ctx, p1, "lee-password-123", "short"); errdefs.Field(err) != "newPassword" {
			t.Fatalf("short new password: %v", err)
		}
		if err := s.ChangePassword(ctx, p1, "lee-password-123", "lee-new-password"); err != nil {
			t.Fatal(err)
		}
		// Wrong current passwords count as failed logins of the email.
		for i := 0; i < maxFailuresPerEmail; i++ {
			s.ChangePassword(ctx, p1, "wrong-password-1", "lee-other-password")
		}
		if err := s.ChangePassword(ctx, p1, "lee-new-password", "lee-other-password"); !errors.Is(err, errdefs.ErrRateLimited) {
			t.Fatalf("guess %d: %v, want ErrRateLimited", maxFailuresPerEmail+1, err)
		}
		s.byEmail.reset("lee@acme.test")
		if _, err := s.Authenticate(ctx, two.Token); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("the other session survived a password change: %v", err)
		}
		if _, err := s.Authenticate(ctx, one.Token); err != nil {
			t.Fatalf("the changing session ended: %v", err)
		}
		if len(revoked) == 0 {
			t.Fatal("ending sessions told no one (open streams would stay)")
		}
		if _, err := s.Login(ctx, "lee@acme.test", "lee-password-123", ""); err == nil {
			t.Fatal("the old password still logs in")
		}

		// Revoke: one's own session only.
		three, _ := s.Login(ctx, "lee@acme.test", "lee-new-password", "")
		p3, _ := s.Authenticate(ctx, three.Token)
		if err := s.RevokeSession(ctx, admin.Principal, p3.SessionID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("the admin ended lee's session: %v", err)
		}
		if err := s.RevokeSession(ctx, p1, p3.SessionID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, three.Token); err == nil {
			t.Fatal("a revoked session still authenticates")
		}

		// Reset: issued by an admin, works once, ends every session.
		if _, err := s.IssuePasswordReset(ctx, p1, "admin@acme.test"); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("a member issued a reset: %v", err)
		}
		r, err := s.IssuePasswordReset(ctx, admin.Principal, "lee@acme.test")
		if err != nil || r.UserID != lee.Member.ID || r.ExpiresAt.Before(time.Now().Add(23*time.Hour)) {
			t.Fatalf("IssuePasswordReset = %+v, %v", r, err)
		}
		if err := s.ResetPassword(ctx, r.Token+"x", "lee-third-password"); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("a wrong token: %v", err)
		}
		if err := s.ResetPassword(ctx, r.Token, "lee-third-password"); err != nil {
			t.Fatal(err)
		}
		if err := s.ResetPassword(ctx, r.Token, "lee-fourth-password"); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("a token used twice: %v", err)
		}
		if _, err := s.Authenticate(ctx, one.Token); err == nil {
			t.Fatal("a session survived a reset")
		}
		if _, err := s.Login(ctx, "lee@acme.test", "lee-third-password", ""); err != nil {
			t.Fatalf("login with the reset password: %v", err)
		}
		// An expired token does not work.
		r2, _ := s.IssuePasswordReset(ctx, admin.Principal, lee.Member.ID)
		s.now = func() time.Time { return time.Now().Add(PasswordResetTTL + time.Minute) }
		if err := s.ResetPassword(ctx, r2.Token, "lee-fifth-password"); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("an expired token: %v", err)
		}
		s.now = time.Now

		// A user who also belongs to another account cannot be reset by one of them.
		if _, err := s.Provision(ctx, "globex", "lee@acme.test", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.IssuePasswordReset(ctx, admin.Principal, "lee@acme.test"); errdefs.Field(err) != "user" {
			t.Fatalf("reset of a user of two accounts: %v", err)
		}
	})
}

// TestPasswordResetMailed: with a ResetMail sender the answer has no token, the sender gets it
// (and the issuing account's name), a user of two accounts may be reset, and a failed send
// leaves no new token and the earlier one working. (A real SMTP server is in
// internal/server/resetmail_test.go.)
func TestPasswordResetMailed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		var sent []ResetMail
		var fail error
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, ResetMail: func(_ context.Context, m ResetMail) error {
			if fail != nil {
				return fail
			}
			sent = append(sent, m)
			return nil
		}})
		if _, err := s.Bootstrap(ctx, "acme", "admin@acme.test", "admin-password-123"); err != nil {
			t.Fatal(err)
		}
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password-123", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateUser(ctx, admin.Principal, CreateUserInput{Email: "lee@acme.test", Role: "member", Password: "lee-password-123"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Provision(ctx, "globex", "lee@acme.test", ""); err != nil {
			t.Fatal(err)
		}
		r, err := s.IssuePasswordReset(ctx, admin.Principal, "lee@acme.test")
		if err != nil || r.Token != "" || !r.Emailed || len(sent) != 1 || sent[0].To != "lee@acme.test" || sent[0].Account != "acme" || sent[0].Token == "" {
			t.Fatalf("IssuePasswordReset = %+v, %v; sent %+v", r, err, sent)
		}
		fail = errors.New("connection refused")
		if _, err := s.IssuePasswordReset(ctx, admin.Principal, "lee@acme.test"); !errors.Is(err, errdefs.ErrUnavailable) {
			t.Fatalf("failed send = %v, want ErrUnavailable", err)
		}
		if err := s.ResetPassword(ctx, sent[0].Token, "lee-new-password"); err != nil {
			t.Fatalf("the earlier token after a failed send: %v", err)
		}
		if err := s.ResetPassword(ctx, sent[0].Token, "lee-newer-password"); !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("second use: %v", err)
		}
		if _, err := s.Login(ctx, "lee@acme.test", "lee-new-password", ""); err != nil {
			t.Fatal(err)
		}
	})
}
