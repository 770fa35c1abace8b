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
