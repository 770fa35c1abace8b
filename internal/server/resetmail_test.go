package server_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"mime/quotedprintable"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/smtpd"
)

var resetLink = regexp.MustCompile(`(https?://\S+)/reset-password\?token=(fpr_[A-Za-z0-9_-]+)`)

// TestPasswordResetByEmail: with an SMTP server set, an admin-issued reset goes to the user by
// mail (a real SMTP server with STARTTLS and a login) and the API answers without the token, so
// even a user who belongs to another account too can be reset; the mailed token works once. With
// the server down the admin gets a clear error and no token is left valid.
func TestPasswordResetByEmail(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			ms := smtpd.Start(t, "freshet", "smtp-secret-pw")
			pwFile := filepath.Join(t.TempDir(), "smtp-password")
			if err := os.WriteFile(pwFile, []byte("smtp-secret-pw\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			host, port, _ := net.SplitHostPort(ms.Addr)
			var dsn string
			s := servertest.StartWith(t, d, servertest.Config{Edit: func(o *server.Options) {
				p, _ := net.LookupPort("tcp", port)
				o.SMTP = server.SMTPOptions{Host: host, Port: p, Username: "freshet", PasswordFile: pwFile, From: "freshet@first.test",
					Security: "starttls", CAFile: ms.CAFile}
				dsn = o.DSN()
			}})
			unusedResets := func() int {
				driver := "sqlite"
				if d == store.Postgres {
					driver = "pgx"
				}
				db, err := sql.Open(driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var n int
				if err := db.QueryRowContext(ctx, `SELECT count(*) FROM password_resets WHERE used_at IS NULL`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}

			// lee belongs to "first" and, by accepting an invitation, to "other".
			if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "lee@first.test", Role: "member", Password: "lee-old-password"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateAccount(ctx, "other"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.SwitchAccount(ctx, "other"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "lee@first.test", Role: "viewer"}); err != nil {
				t.Fatal(err)
			}
			lee := s.Login(t, "lee@first.test", "lee-old-password")
			inv, err := lee.ListInvitations(ctx)
			if err != nil || len(inv.Items) != 1 {
				t.Fatalf("invitations = %+v, %v", inv, err)
			}
			if _, err := lee.AcceptInvitation(ctx, inv.Items[0].ID); err != nil {
				t.Fatal(err)
			}

			// "other"'s admin resets lee: allowed now, as the token goes to lee alone.
			r, err := s.Admin.IssuePasswordReset(ctx, "lee@first.test")
			if err != nil {
				t.Fatalf("issue reset: %v", err)
			}
			if r.Token != "" || !r.Emailed || r.Email != "lee@first.test" {
				t.Fatalf("answer = %+v, want no token and emailed", r)
			}
			mails := ms.Mails()
			if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0] != "lee@first.test" {
				t.Fatalf("mails = %+v", mails)
			}
			body, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(mails[0].Data[strings.Index(mails[0].Data, "\r\n\r\n")+4:])))
			if err != nil {
				t.Fatal(err)
			}
			m := resetLink.FindStringSubmatch(string(body))
			if m == nil || m[1] != s.URL {
				t.Fatalf("no reset link to %s in the mail:\n%s", s.URL, body)
			}
			if !strings.Contains(string(body), `"other"`) {
				t.Errorf("the mail does not name the account that asked:\n%s", body)
			}
			tok := m[2]

			anon := client.New(s.URL)
			if err := anon.ResetPassword(ctx, client.ResetPasswordRequest{Token: tok, NewPassword: "lee-new-password"}); err != nil {
				t.Fatalf("reset with the mailed token: %v", err)
			}
			if err := anon.ResetPassword(ctx, client.ResetPasswordRequest{Token: tok, NewPassword: "lee-other-password"}); !client.IsStatus(err, 401) {
				t.Fatalf("second use = %v, want 401", err)
			}
			s.Login(t, "lee@first.test", "lee-new-password")

			// A pending mailed reset, then the SMTP server goes down: the new reset fails with a
			// clear error, no token of it is left, and the pending one still works.
			if _, err := s.Admin.IssuePasswordReset(ctx, "lee@first.test"); err != nil {
				t.Fatal(err)
			}
			pending := resetLink.FindStringSubmatch(mailText(t, ms.Mails()[1].Data))
			if n := unusedResets(); n != 1 {
				t.Fatalf("unused resets = %d, want 1", n)
			}
			ms.Close()
			_, err = s.Admin.IssuePasswordReset(ctx, "lee@first.test")
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != 503 || !strings.Contains(ce.Message, "email the password reset to lee@first.test") || !strings.Contains(ce.Message, "no reset was made") {
				t.Fatalf("issue with SMTP down = %v, want a 503 saying the mail failed", err)
			}
			t.Logf("with SMTP down: %v", err)
			if n := unusedResets(); n != 1 {
				t.Fatalf("unused resets after the failed send = %d, want 1 (the pending one)", n)
			}
			if len(ms.Mails()) != 2 {
				t.Fatalf("mails = %d, want 2", len(ms.Mails()))
			}
			if err := anon.ResetPassword(ctx, client.ResetPasswordRequest{Token: pending[2], NewPassword: "lee-third-password"}); err != nil {
				t.Fatalf("the pending reset stopped working after a failed send: %v", err)
			}
		})
	}
}

func mailText(t *testing.T, data string) string {
	t.Helper()
	body, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(data[strings.Index(data, "\r\n\r\n")+4:])))
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestSMTPOptionsValidate: each bad SMTP setting is refused naming the flag.
func TestSMTPOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := func(edit func(*server.SMTPOptions)) server.SMTPOptions {
		o := server.SMTPOptions{Host: "smtp.example.com", Port: 587, Username: "u", PasswordFile: pw, From: "freshet@example.com", Security: "starttls"}
		edit(&o)
		return o
	}
	valid := ok(func(*server.SMTPOptions) {})
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	if err := (&server.SMTPOptions{Port: 587, Security: "starttls"}).Validate(); err != nil {
		t.Fatalf("no SMTP: %v", err)
	}
	t.Setenv(server.SMTPPasswordEnv, "")
	for _, c := range []struct {
		o    server.SMTPOptions
		flag string
	}{
		{server.SMTPOptions{From: "a@b.test", Port: 587, Security: "starttls"}, "smtp-host"},
		{ok(func(o *server.SMTPOptions) { o.Host = "smtp://x" }), "smtp-host"},
		{ok(func(o *server.SMTPOptions) { o.Port = 70000 }), "smtp-port"},
		{ok(func(o *server.SMTPOptions) { o.From = "Freshet <f@example.com>" }), "smtp-from"},
		{ok(func(o *server.SMTPOptions) { o.From = "" }), "smtp-from"},
		{ok(func(o *server.SMTPOptions) { o.Security = "ssl" }), "smtp-security"},
		{ok(func(o *server.SMTPOptions) { o.Security = "none" }), "smtp-security"},
		{ok(func(o *server.SMTPOptions) { o.Username = "" }), "smtp-username"},
		{ok(func(o *server.SMTPOptions) { o.PasswordFile = filepath.Join(dir, "missing") }), "smtp-password-file"},
		{ok(func(o *server.SMTPOptions) { o.CAFile = notPEM }), "smtp-ca-file"},
	} {
		err := (&c.o).Validate()
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: %v, want an error naming %s", c.o, err, c.flag)
		}
	}
}
