package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// runAs runs the CLI against url with token.
func runAs(t *testing.T, url, token string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(EnvServer, url)
	t.Setenv(EnvToken, token)
	t.Setenv("FRESHET_CLI_CONFIG", filepath.Join(t.TempDir(), "config.yaml"))
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestInvitationCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "alice@first.test", Role: "member", Password: "alice-password"}); err != nil {
		t.Fatal(err)
	}
	for _, acct := range []string{"bravo", "charlie"} {
		admin := "admin@" + acct + ".test"
		if _, err := s.Identity().Provision(ctx, acct, admin, "admin-password"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Login(t, admin, "admin-password").CreateUser(ctx, client.CreateUserRequest{Email: "alice@first.test", Role: "viewer"}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := client.New(s.URL).Login(ctx, client.LoginRequest{Email: "alice@first.test", Password: "alice-password"})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runAs(t, s.URL, res.Token, "invitation", "list")
	if code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, " bravo ") || !strings.Contains(out, "admin@charlie.test") {
		t.Fatalf("invitation list: exit %d\n%s%s", code, out, errs)
	}
	var invs []client.Invitation
	if code, out, _ := runAs(t, s.URL, res.Token, "invitation", "list", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &invs) != nil || len(invs) != 2 {
		t.Fatalf("invitation list -o json: exit %d %s", code, out)
	}
	code, out, errs = runAs(t, s.URL, res.Token, "invitation", "accept", invs[0].ID)
	if code != 0 || out != "Joined account bravo as viewer; switch to it with 'freshet account use bravo'.\n" {
		t.Fatalf("accept: exit %d %q %s", code, out, errs)
	}
	if code, out, errs = runAs(t, s.URL, res.Token, "invitation", "decline", invs[1].ID); code != 0 || out != "Declined invitation "+invs[1].ID+".\n" {
		t.Fatalf("decline: exit %d %q %s", code, out, errs)
	}
	if code, _, errs = runAs(t, s.URL, res.Token, "invitation", "decline", invs[1].ID); code == 0 || !strings.Contains(errs, "not found") {
		t.Fatalf("decline twice: exit %d %s", code, errs)
	}
	if code, out, _ := runAs(t, s.URL, res.Token, "account", "list"); code != 0 || !strings.Contains(out, "bravo") || strings.Contains(out, "charlie") {
		t.Fatalf("accounts after answering: %s", out)
	}
}
