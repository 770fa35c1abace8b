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

// Team-owned resources from the CLI: create with --team, list by --owner, set-owner, team get
// and list show what a team owns, rules with --owner, explain names the owner, and team delete
// refuses a team that owns something.
func TestTeamOwnershipCommands(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "kim@first.test", Role: "member", Password: "kim-password-1"}); err != nil {
		t.Fatal(err)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runAs(t, s.URL, key.Token, args...)
		if code != want {
			t.Fatalf("freshet %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out + errs
	}
	run(0, "team", "create", "web")
	run(0, "team", "create", "data")
	run(0, "team", "add-member", "web", "kim@first.test")
	run(0, "project", "create", "shop", "--team", "web")
	run(0, "project", "create", "lake")
	if out := run(1, "project", "create", "x", "--team", "nope"); !strings.Contains(out, "team") || !strings.Contains(out, "nope") {
		t.Fatalf("project of an unknown team: %q", out)
	}
	if out := run(0, "project", "list", "--owner", "web"); !strings.Contains(out, "shop") || strings.Contains(out, "lake") {
		t.Fatalf("project list --owner web: %q", out)
	}
	if out := run(0, "project", "set-owner", "lake", "data"); !strings.Contains(out, "Project lake is owned by team data.") {
		t.Fatalf("set-owner: %q", out)
	}
	if out := run(0, "runtime", "register", "edge", "--team", "web"); !strings.Contains(out, "Registered runtime edge") {
		t.Fatalf("runtime register --team: %q", out)
	}
	if out := run(0, "runtime", "list", "--owner", "web"); !strings.Contains(out, "edge") {
		t.Fatalf("runtime list --owner web: %q", out)
	}
	if out := run(0, "team", "get", "web"); !strings.Contains(out, "Owns projects:  shop") || !strings.Contains(out, "Owns runtimes:  edge") {
		t.Fatalf("team get: %q", out)
	}
	if out := run(0, "team", "list"); !strings.Contains(out, "projects/shop,runtimes/edge") || !strings.Contains(out, "projects/lake") {
		t.Fatalf("team list: %q", out)
	}
	if out := run(0, "rule", "create", "--team", "web", "--action", "read", "--kind", "projects", "--owner", "own-team"); !strings.Contains(out, "team web may read projects owned by the team") {
		t.Fatalf("rule create --owner: %q", out)
	}
	if out := run(1, "rule", "create", "--team", "web", "--action", "read", "--kind", "contexts", "--owner", "own-team"); !strings.Contains(out, "owner") {
		t.Fatalf("rule on contexts with --owner: %q", out)
	}
	out := run(0, "authz", "explain", "--user", "kim@first.test", "--action", "read", "--resource", "projects/shop")
	if !strings.Contains(out, "MAY read projects/shop") || !strings.Contains(out, "owned by team web, the rule's own team") {
		t.Fatalf("authz explain: %q", out)
	}
	if out := run(1, "authz", "explain", "--user", "kim@first.test", "--action", "read", "--resource", "projects/lake"); !strings.Contains(out, "is owned by team data, not by the rule's team web") {
		t.Fatalf("authz explain (refused): %q", out)
	}
	if out := run(1, "team", "delete", "web"); !strings.Contains(out, "owns projects shop and runtimes edge") {
		t.Fatalf("team delete of an owner: %q", out)
	}
	run(0, "project", "set-owner", "lake")
	if out := run(0, "project", "get", "lake", "-o", "json"); strings.Contains(out, "ownerTeam") {
		t.Fatalf("lake after set-owner to none: %q", out)
	}
}
