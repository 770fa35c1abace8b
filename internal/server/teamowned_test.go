package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Teams own projects (with their pipelines and builds) and runtimes (with their applications);
// rules with owner: own-team or owner: TEAM follow ownership through REST, GraphQL and the log
// stream, tag rules keep giving what they gave, ownership changes take membership of both
// teams, and no team name of another account ever matches.
func TestTeamOwnedResources(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			admin := s.Admin
			login := func(email string) *client.Client {
				t.Helper()
				if _, err := admin.CreateUser(ctx, client.CreateUserRequest{Email: email, Role: "member", Password: "pass-word-1234"}); err != nil {
					t.Fatal(err)
				}
				return s.Login(t, email, "pass-word-1234")
			}
			mo, di, tg := login("mo@first.test"), login("di@first.test"), login("tg@first.test")
			for team, member := range map[string]string{"web": "mo@first.test", "data": "di@first.test"} {
				if _, err := admin.CreateTeam(ctx, team); err != nil {
					t.Fatal(err)
				}
				if err := admin.AddTeamMember(ctx, team, member); err != nil {
					t.Fatal(err)
				}
			}
			// Another account has a team named like A's and one A has not: neither ever
			// matches in A.
			prov, err := s.Identity().Provision(ctx, "bravo", "eve@bravo.test", "eve-password")
			if err != nil {
				t.Fatal(err)
			}
			eve := s.Login(t, prov.Email, "eve-password")
			bWeb, err := eve.CreateTeam(ctx, "web")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eve.CreateTeam(ctx, "bravo-only"); err != nil {
				t.Fatal(err)
			}

			// Owned at creation.
			shop, err := admin.CreateOwnedProject(ctx, "shop", "web", "pci")
			if err != nil || shop.OwnerTeam != "web" {
				t.Fatalf("shop: %+v, %v", shop, err)
			}
			if _, err := admin.CreateOwnedProject(ctx, "lake", "data"); err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"bravo-only", bWeb.ID, "nope"} {
				if _, err := admin.CreateOwnedProject(ctx, "x", bad); status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "team") {
					t.Fatalf("a project owned by %q: %v", bad, err)
				}
			}
			for _, p := range []struct{ name string }{{"shop/deploy"}, {"lake/etl"}} {
				project, name, _ := strings.Cut(p.name, "/")
				cfg := client.PipelineConfig{}
				if project == "shop" {
					cfg.Tags = []string{"prod"}
				}
				if _, err := admin.CreatePipeline(ctx, client.PipelineRequest{Project: project, Name: name, Spec: isolationSpec, Config: cfg}); err != nil {
					t.Fatal(err)
				}
			}
			edge, err := admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", Team: "web"})
			if err != nil || edge.OwnerTeam != "web" {
				t.Fatalf("edge: %+v, %v", edge, err)
			}
			core, err := admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "core"})
			if err != nil {
				t.Fatal(err)
			}
			if rt, err := admin.SetRuntimeOwner(ctx, "core", "data"); err != nil || rt.OwnerTeam != "data" {
				t.Fatalf("core to data: %+v, %v", rt, err)
			}
			at := time.Unix(1700000000, 0).UTC()
			for _, rt := range []struct{ token, app string }{{edge.Token, "storefront"}, {core.Token, "warehouse"}} {
				reportApps(t, s.URL, rt.token, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{{Name: rt.app,
					RepoURL: "https://git.example/acme/apps.git", Path: rt.app, DestName: "prod", DestNamespace: "apps", Sync: "Synced", Health: "Healthy", ReconciledAt: at}}})
			}

			// Rules: each team reads and runs what it owns; tg (in no team) reads prod-tagged
			// pipelines and the runtimes team data owns.
			for _, team := range []string{"web", "data"} {
				for _, r := range []struct{ action, kind string }{{"read", "projects"}, {"update", "projects"}, {"read", "pipelines"}, {"run", "pipelines"},
					{"read", "builds"}, {"read", "runtimes"}, {"read", "applications"}} {
					if _, err := admin.CreateRule(ctx, client.CreateRuleRequest{Team: team, Action: r.action, Kind: r.kind, Owner: "own-team"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := admin.CreateRule(ctx, client.CreateRuleRequest{User: "tg@first.test", Action: "read", Kind: "pipelines", Tags: []string{"prod"}}); err != nil {
				t.Fatal(err)
			}
			named, err := admin.CreateRule(ctx, client.CreateRuleRequest{User: "tg@first.test", Action: "read", Kind: "runtimes", Owner: "data"})
			if err != nil || named.Owner != "data" || !strings.Contains(named.Summary, "owned by team data") {
				t.Fatalf("a rule for runtimes team data owns: %+v, %v", named, err)
			}
			// Bad owners are refused naming the field, the value and what is valid.
			for _, c := range []struct {
				in   client.CreateRuleRequest
				want string
			}{
				{client.CreateRuleRequest{Team: "web", Action: "read", Kind: "pipelines", Owner: "nope"}, "use own-team or a team's name"},
				{client.CreateRuleRequest{Team: "web", Action: "read", Kind: "pipelines", Owner: "bravo-only"}, "is not a team of this account"},
				{client.CreateRuleRequest{Team: "web", Action: "read", Kind: "pipelines", Owner: bWeb.ID}, "is not a team of this account"},
				{client.CreateRuleRequest{Team: "web", Action: "read", Kind: "contexts", Owner: "own-team"}, "does not apply to contexts"},
			} {
				_, err := admin.CreateRule(ctx, c.in)
				var ae *client.Error
				if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ae) || ae.Field != "owner" {
					t.Fatalf("rule with owner %q on %s: %v", c.in.Owner, c.in.Kind, err)
				}
			}

			names := func(ps []client.Pipeline) []string {
				var out []string
				for _, p := range ps {
					out = append(out, p.FullName)
				}
				return out
			}
			for c, want := range map[*client.Client][]string{mo: {"shop/deploy"}, di: {"lake/etl"}, tg: {"shop/deploy"}} {
				ps, err := c.ListPipelines(ctx, "", client.ListOptions{})
				if err != nil || !slices.Equal(names(ps.Items), want) {
					t.Fatalf("pipelines: %v, %v; want %v", names(ps.Items), err, want)
				}
			}
			// A member of another team cannot act on what web owns.
			if _, err := di.GetPipeline(ctx, "shop/deploy"); status(err) != http.StatusForbidden {
				t.Fatalf("di read web's pipeline: %v", err)
			}
			if _, err := di.RunPipeline(ctx, "shop/deploy", client.RunRequest{Branch: "main"}); status(err) != http.StatusForbidden {
				t.Fatalf("di ran web's pipeline: %v", err)
			}
			if _, err := di.GetProject(ctx, "shop"); status(err) != http.StatusForbidden {
				t.Fatalf("di read web's project: %v", err)
			}
			// The tag rule gives tg a read, and nothing the owner rules give.
			if _, err := tg.GetPipeline(ctx, "shop/deploy"); err != nil {
				t.Fatalf("tg's tag rule: %v", err)
			}
			if _, err := tg.RunPipeline(ctx, "shop/deploy", client.RunRequest{Branch: "main"}); status(err) != http.StatusForbidden {
				t.Fatalf("tg ran a pipeline: %v", err)
			}
			b, err := mo.RunPipeline(ctx, "shop/deploy", client.RunRequest{Branch: "main"})
			if err != nil {
				t.Fatalf("mo runs web's pipeline: %v", err)
			}
			if _, err := mo.GetBuild(ctx, b.ID); err != nil {
				t.Fatalf("mo reads the build: %v", err)
			}
			if _, err := di.GetBuild(ctx, b.ID); status(err) != http.StatusForbidden {
				t.Fatalf("di read web's build: %v", err)
			}
			// The log stream takes the same decision.
			diKey, err := di.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "di"})
			if err != nil {
				t.Fatal(err)
			}
			if st, _, _ := call(t, "GET", s.URL+"/api/v1/builds/"+b.ID+"/logs", diKey.Token, nil); st != http.StatusForbidden {
				t.Fatalf("di's log stream of web's build: %d", st)
			}

			// GraphQL: runtimes and applications by their runtime's owner.
			var gq struct {
				Runtimes     []struct{ Name, OwnerTeam string }
				Applications struct{ Nodes []struct{ Name string } }
				Teams        struct {
					Nodes []struct {
						Name string
						Owns struct{ Projects, Runtimes []string }
					}
				}
				Rules struct{ Nodes []struct{ Owner *string } }
			}
			q := `{ runtimes { name ownerTeam } applications { nodes { name } } teams { nodes { name owns { projects runtimes } } } rules(first: 100) { nodes { owner } } }`
			if err := mo.GraphQL(ctx, q, nil, &gq); err != nil || len(gq.Runtimes) != 1 || gq.Runtimes[0].Name != "edge" || gq.Runtimes[0].OwnerTeam != "web" ||
				len(gq.Applications.Nodes) != 1 || gq.Applications.Nodes[0].Name != "storefront" {
				t.Fatalf("mo's GraphQL: %+v, %v", gq, err)
			}
			for _, tm := range gq.Teams.Nodes {
				if tm.Name == "web" && (!slices.Equal(tm.Owns.Projects, []string{"shop"}) || !slices.Equal(tm.Owns.Runtimes, []string{"edge"})) {
					t.Fatalf("what web owns: %+v", tm)
				}
			}
			gq.Runtimes = nil
			if err := tg.GraphQL(ctx, `{ runtimes { name ownerTeam } }`, nil, &gq); err != nil || len(gq.Runtimes) != 1 || gq.Runtimes[0].Name != "core" {
				t.Fatalf("tg's runtimes (owner: data rule): %+v, %v", gq.Runtimes, err)
			}
			if _, err := di.GetApplication(ctx, "edge", "storefront"); status(err) != http.StatusForbidden {
				t.Fatalf("di read web's application: %v", err)
			}

			// Explain says who owns it and why the rule matches, or does not.
			ex, err := admin.ExplainAuthz(ctx, client.ExplainRequest{User: "mo@first.test", Action: "run", Resource: "pipelines/shop/deploy"})
			all := strings.Join(ex.Reasons, "\n")
			if err != nil || !ex.Allowed || ex.Owner != "web" || !strings.Contains(all, "owner: pipelines/shop/deploy is owned by team web") ||
				!strings.Contains(all, "is owned by team web, the rule's own team (owner: own-team)") {
				t.Fatalf("explain for mo: %+v, %v", ex, err)
			}
			ex, err = admin.ExplainAuthz(ctx, client.ExplainRequest{User: "di@first.test", Action: "run", Resource: "pipelines/shop/deploy"})
			if err != nil || ex.Allowed || !strings.Contains(strings.Join(ex.Reasons, "\n"), "is owned by team web, not by the rule's team data") {
				t.Fatalf("explain for di: %+v, %v", ex, err)
			}

			// Listing by owner, and team get.
			if ps, err := admin.ListProjectsOwnedBy(ctx, "web", client.ListOptions{}); err != nil || len(ps.Items) != 1 || ps.Items[0].Name != "shop" {
				t.Fatalf("projects web owns: %+v, %v", ps, err)
			}
			if _, err := admin.ListProjectsOwnedBy(ctx, "bravo-only", client.ListOptions{}); status(err) != http.StatusBadRequest {
				t.Fatalf("projects another account's team owns: %v", err)
			}
			if rts, err := admin.ListRuntimesOwnedBy(ctx, "data"); err != nil || len(rts.Items) != 1 || rts.Items[0].Name != "core" {
				t.Fatalf("runtimes data owns: %+v, %v", rts, err)
			}
			if tm, err := admin.GetTeam(ctx, "data"); err != nil || !slices.Equal(tm.Owns.Projects, []string{"lake"}) || !slices.Equal(tm.Owns.Runtimes, []string{"core"}) {
				t.Fatalf("team data: %+v, %v", tm, err)
			}

			// Changing ownership: not by a non-member, not by a member of one side only, not to
			// another account's team; yes by a member of both, audited.
			if _, err := di.SetProjectOwner(ctx, "shop", "data"); status(err) != http.StatusForbidden {
				t.Fatalf("di took web's project: %v", err)
			}
			if _, err := mo.SetProjectOwner(ctx, "shop", "data"); status(err) != http.StatusForbidden || !strings.Contains(err.Error(), "member of team data") {
				t.Fatalf("mo gave web's project to a team mo is not in: %v", err)
			}
			if _, err := mo.SetProjectOwner(ctx, "shop", bWeb.ID); status(err) != http.StatusBadRequest {
				t.Fatalf("mo gave web's project to another account's team: %v", err)
			}
			if _, err := tg.SetProjectOwner(ctx, "shop", ""); status(err) != http.StatusForbidden {
				t.Fatalf("tg took ownership away: %v", err)
			}
			if _, err := mo.SetRuntimeOwner(ctx, "edge", "data"); status(err) != http.StatusForbidden {
				t.Fatalf("a member changed a runtime's owner: %v", err)
			}
			if err := admin.AddTeamMember(ctx, "data", "mo@first.test"); err != nil {
				t.Fatal(err)
			}
			if p, err := mo.SetProjectOwner(ctx, "shop", "data"); err != nil || p.OwnerTeam != "data" {
				t.Fatalf("mo (in both) gives shop to data: %+v, %v", p, err)
			}
			if _, err := di.GetPipeline(ctx, "shop/deploy"); err != nil {
				t.Fatalf("di after shop moved to data: %v", err)
			}
			if _, err := di.GetBuild(ctx, b.ID); err != nil {
				t.Fatalf("di reads the build after its project moved: %v", err)
			}
			ev, err := admin.ListAudit(ctx, client.AuditFilter{Action: "project.set-owner"})
			if err != nil || !slices.ContainsFunc(ev.Items, func(e client.AuditEvent) bool {
				return e.Result == "success" && e.Actor == "mo@first.test" && strings.Contains(e.Detail, "team web → team data")
			}) || !slices.ContainsFunc(ev.Items, func(e client.AuditEvent) bool { return e.Actor == "di@first.test" && e.Result != "success" }) {
				t.Fatalf("audit of owner changes: %+v, %v", ev.Items, err)
			}

			// A team that owns something is not deleted; the error names what it owns.
			if err := admin.DeleteTeam(ctx, "data"); status(err) != http.StatusConflict || !strings.Contains(err.Error(), "projects lake, shop") ||
				!strings.Contains(err.Error(), "runtimes core") {
				t.Fatalf("deleting a team that owns things: %v", err)
			}
			if err := admin.DeleteTeam(ctx, "web"); status(err) != http.StatusConflict || !strings.Contains(err.Error(), "runtimes edge") {
				t.Fatalf("deleting web: %v", err)
			}
			if _, err := admin.SetRuntimeOwner(ctx, "edge", ""); err != nil {
				t.Fatal(err)
			}
			if err := admin.DeleteTeam(ctx, "web"); err != nil {
				t.Fatalf("deleting web once it owns nothing: %v", err)
			}
			// B's team named web never reached A's resources: B's lists are B's.
			if ps, err := eve.ListProjects(ctx, client.ListOptions{}); err != nil || len(ps.Items) != 0 {
				t.Fatalf("B's projects: %+v, %v", ps, err)
			}
		})
	}
}

// Through the tunnel the control plane decides by the runtime's owner as it is at each request:
// a member of the owner team reaches the runtime's app-proxy, a member of another team does not,
// and a change of owner turns that around at once.
func TestTeamOwnedRuntimeThroughTheTunnel(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	admin := s.Admin
	for _, team := range []string{"web", "data"} {
		if _, err := admin.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel", Team: "web"})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startRuntime(t, s, reg.Token)
	defer stop()
	waitRuntime(t, admin, "edge", 10*time.Second, "healthy")
	keys := map[string]string{}
	for email, team := range map[string]string{"mo@first.test": "web", "di@first.test": "data"} {
		if _, err := admin.CreateUser(ctx, client.CreateUserRequest{Email: email, Role: "member", Password: "pass-word-1234"}); err != nil {
			t.Fatal(err)
		}
		if err := admin.AddTeamMember(ctx, team, email); err != nil {
			t.Fatal(err)
		}
		k, err := s.Login(t, email, "pass-word-1234").CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "k"})
		if err != nil {
			t.Fatal(err)
		}
		keys[email] = k.Token
		for _, kind := range []string{"runtimes", "applications"} {
			if _, err := admin.CreateRule(ctx, client.CreateRuleRequest{Team: team, Action: "read", Kind: kind, Owner: "own-team"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	get := func(email string) int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, _, _ := call(t, "GET", s.URL+"/runtimes/edge/app-proxy/api/v1/applications/shop", keys[email], nil)
			if st != http.StatusBadGateway || time.Now().After(deadline) {
				return st
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Forwarded (the runtime has no such application: its 404), or refused by the control plane.
	if st := get("mo@first.test"); st != http.StatusNotFound {
		t.Fatalf("mo (web owns edge): %d, want the runtime's 404", st)
	}
	if st := get("di@first.test"); st != http.StatusForbidden {
		t.Fatalf("di (data does not own edge): %d, want 403", st)
	}
	if _, err := admin.SetRuntimeOwner(ctx, "edge", "data"); err != nil {
		t.Fatal(err)
	}
	if st := get("mo@first.test"); st != http.StatusForbidden {
		t.Fatalf("mo after edge moved to data: %d, want 403", st)
	}
	if st := get("di@first.test"); st != http.StatusNotFound {
		t.Fatalf("di after edge moved to data: %d, want the runtime's 404", st)
	}
}
