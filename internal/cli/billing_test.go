package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// `freshet plan get` reads the account's plan through the API; `freshet plan set` (the
// operator's, on the server's database) changes it, and the API shows the change at once;
// `freshet usage` prints the days as JSON or CSV; bad input names the field.
func TestPlanAndUsageCommands(t *testing.T) {
	var dataDir string
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { dataDir = o.DataDir }})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runIn(t, s.URL, key.Token, "", args...) }
	plan := func() client.Plan {
		t.Helper()
		code, out, errOut := run("plan", "get", "-o", "json")
		var p client.Plan
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("plan get: %d %s %s", code, out, errOut)
		}
		return p
	}
	if p := plan(); p.Name != "enterprise" || !p.Default || len(p.Limits) != 7 {
		t.Fatalf("a new account's plan: %+v", p)
	}
	code, out, errOut := run("plan", "set", "team", "--account", "first", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "team") || !strings.Contains(out, "concurrent-builds") {
		t.Fatalf("plan set team: %d %s %s", code, out, errOut)
	}
	p := plan()
	if p.Name != "team" || p.Default {
		t.Fatalf("after plan set team: %+v", p)
	}
	for _, l := range p.Limits {
		if l.Resource == "users" && (l.Limit != 50 || l.Used != 1) {
			t.Errorf("team's users: %+v", l)
		}
	}
	if code, _, errOut := run("plan", "set", "gold", "--account", "first", "--data-dir", dataDir); code == 0 ||
		!strings.Contains(errOut, `plan: "gold" names no plan of the catalogue: use free, team, enterprise`) {
		t.Errorf("plan set gold: %d %s", code, errOut)
	}
	if code, _, errOut := run("plan", "set", "team"); code != 2 || !strings.Contains(errOut, "--account is required") {
		t.Errorf("plan set without --account: %d %s", code, errOut)
	}

	code, out, errOut = run("usage", "--since", "30d", "-o", "json")
	var u client.Usage
	if code != 0 || json.Unmarshal([]byte(out), &u) != nil || u.Plan != "team" || len(u.Days) != 1 || u.Days[0].ActiveUsers != 1 {
		t.Fatalf("usage -o json: %d %s %s", code, out, errOut)
	}
	code, out, errOut = run("usage", "--format", "csv")
	if code != 0 || !strings.HasPrefix(out, "day,build_minutes,builds,deployments,active_users\n") || strings.Count(out, "\n") != 2 {
		t.Fatalf("usage --format csv: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := run("usage", "--since", "forever"); code == 0 || !strings.Contains(errOut, `since: "forever" is not a window`) {
		t.Errorf("usage --since forever: %d %s", code, errOut)
	}
}
