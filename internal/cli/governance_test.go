package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

func TestTeamRuleAndAuthzCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "kim@first.test", Role: "member", Password: "kim-password-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateProject(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	tok := key.Token
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runAs(t, s.URL, tok, args...)
		if code != want {
			t.Fatalf("freshet %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out + errs
	}
	if out := run(0, "team", "create", "release"); !strings.HasPrefix(out, "Created team release (tm_") {
		t.Fatalf("team create: %q", out)
	}
	run(0, "team", "add-member", "release", "kim@first.test")
	if out := run(0, "team", "list"); !strings.Contains(out, "release") || !strings.Contains(out, "kim@first.test") {
		t.Fatalf("team list: %q", out)
	}
	spec := filepath.Join(t.TempDir(), "codefresh.yml")
	if err := os.WriteFile(spec, []byte("version: '1.0'\nsteps:\n  one:\n    commands: [\"echo one\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run(0, "pipeline", "create", "web/deploy", "-f", spec, "--tag", "prod"); !strings.Contains(out, "web/deploy") {
		t.Fatalf("pipeline create: %q", out)
	}
	if p, err := s.Admin.GetPipeline(ctx, "web/deploy"); err != nil || len(p.Config.Tags) != 1 || p.Config.Tags[0] != "prod" {
		t.Fatalf("the pipeline's tags: %+v, %v", p.Config, err)
	}
	out := run(0, "rule", "create", "--team", "release", "--action", "run", "--kind", "pipelines", "--tag", "prod")
	if !strings.Contains(out, "team release may run pipelines tagged prod") {
		t.Fatalf("rule create: %q", out)
	}
	if out := run(1, "rule", "create", "--team", "release", "--action", "run", "--kind", "widgets"); !strings.Contains(out, "use one of projects, pipelines") {
		t.Fatalf("rule of an unknown kind: %q", out)
	}
	var rules []client.Rule
	if err := json.Unmarshal([]byte(run(0, "rule", "list", "-o", "json")), &rules); err != nil || len(rules) != 1 {
		t.Fatalf("rule list -o json: %+v, %v", rules, err)
	}
	out = run(0, "authz", "explain", "--user", "kim@first.test", "--action", "run", "--resource", "pipelines/web/deploy")
	if !strings.HasPrefix(out, "kim@first.test (member) MAY run pipelines/web/deploy") || !strings.Contains(out, rules[0].ID) {
		t.Fatalf("authz explain (allowed): %q", out)
	}
	out = run(1, "authz", "explain", "--user", "kim@first.test", "--action", "delete", "--resource", "pipelines/web/deploy")
	if !strings.Contains(out, "MAY NOT delete") || !strings.Contains(out, "none for this user or their teams") {
		t.Fatalf("authz explain (refused): %q", out)
	}
	run(0, "team", "remove-member", "release", "kim@first.test")
	run(0, "rule", "delete", rules[0].ID)
	if out := run(0, "rule", "list"); strings.Contains(out, rules[0].ID) {
		t.Fatalf("rule list after delete: %q", out)
	}
}

// both is runIn's output and error output together.
func both(code int, out, errs string) (int, string) { return code, out + errs }

func TestPasswdResetAndSessionCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "kim@first.test", Role: "member", Password: "kim-password-1"}); err != nil {
		t.Fatal(err)
	}
	login := func(pw string) (string, error) {
		res, err := client.New(s.URL).Login(ctx, client.LoginRequest{Email: "kim@first.test", Password: pw})
		return res.Token, err
	}
	kim, err := login("kim-password-1")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := login("kim-password-1")
	if code, out := both(runIn(t, s.URL, kim, "", "session", "list")); code != 0 || strings.Count(out, "ses_") != 2 || !strings.Contains(out, "*") {
		t.Fatalf("session list: %d %s", code, out)
	}
	if code, out := both(runIn(t, s.URL, kim, "wrong-password\nkim-password-2\n", "user", "passwd", "--password-stdin")); code == 0 || !strings.Contains(out, "currentPassword") {
		t.Fatalf("passwd with a wrong current password: %d %s", code, out)
	}
	if code, out := both(runIn(t, s.URL, kim, "kim-password-1\nkim-password-2\n", "user", "passwd", "--password-stdin")); code != 0 || !strings.Contains(out, "Password changed") {
		t.Fatalf("passwd: %d %s", code, out)
	}
	if _, err := s.Client(other).Me(ctx); err == nil {
		t.Fatal("the other session survived the password change")
	}
	if _, err := login("kim-password-2"); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	admin, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	code, out := both(runIn(t, s.URL, admin.Token, "", "user", "reset-password", "kim@first.test"))
	i := strings.Index(out, "fpr_")
	if code != 0 || i < 0 {
		t.Fatalf("reset-password: %d %s", code, out)
	}
	tok := strings.Fields(out[i:])[0]
	if code, out := both(runIn(t, s.URL, "", "kim-password-3\n", "user", "passwd", "--reset-token", tok, "--password-stdin")); code != 0 || !strings.Contains(out, "Password set") {
		t.Fatalf("passwd --reset-token: %d %s", code, out)
	}
	if _, err := login("kim-password-3"); err != nil {
		t.Fatalf("login after the reset: %v", err)
	}
	if code, out := both(runIn(t, s.URL, "", "kim-password-4\n", "user", "passwd", "--reset-token", tok, "--password-stdin")); code == 0 || !strings.Contains(out, "invalid, used or expired") {
		t.Fatalf("a reset token used twice: %d %s", code, out)
	}
}
