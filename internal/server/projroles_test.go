package server_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A runtime's AppProject roles become rules (docs/security.md, "Rules derived from AppProject
// roles"): a role granting team qa sync on proj/web-* lets a member of qa sync web-1 through
// the app-proxy route and refuses web-2's delete, another project's app and what a deny line
// names; the derived rules are listed with their origin, cannot be deleted through the rules
// API, and go when the runtime reports the project gone.
func TestRulesDerivedFromAppProjectRoles(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "qa@first.test", Role: "member", Password: "qa-password-1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateTeam(ctx, "qa"); err != nil {
				t.Fatal(err)
			}
			if err := s.Admin.AddTeamMember(ctx, "qa", "qa@first.test"); err != nil {
				t.Fatal(err)
			}
			qa := s.Login(t, "qa@first.test", "qa-password-1")
			key, err := qa.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "qa"})
			if err != nil {
				t.Fatal(err)
			}
			app := func(name, project string) runtimev1.Application {
				return runtimev1.Application{Name: name, Project: project, RepoURL: "https://git.example/a.git", DestServer: "https://kubernetes.default.svc",
					DestNamespace: "web", Sync: "Synced", Health: "Healthy", ReconciledAt: time.Now().UTC()}
			}
			roles := []runtimev1.ProjectRoleRecord{{Project: "proj", Role: "deployer", Groups: []string{"qa", "nobody-team"}, Policies: []runtimev1.ProjectPolicyRecord{
				{Resource: "applications", Action: "sync", Object: "web-*", Allow: true},
				{Resource: "applications", Action: "get", Object: "*", Allow: true},
				{Resource: "applications", Action: "sync", Object: "web-3"}, // deny
			}}}
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true,
				Applications: []runtimev1.Application{app("web-1", "proj"), app("web-2", "proj"), app("web-3", "proj"), app("api-1", "other")},
				Events:       []runtimev1.AppEvent{{Type: runtimev1.ProjectRolesListed, At: time.Now(), ProjectRoles: roles}}})

			// Derived rules alone do not make applications governed: an AppProject with a role,
			// applied by whoever may write to the runtime's namespace, takes nothing from anyone.
			// qa's role decides (allowed: 502, the runtime is not connected).
			if st, body, _ := call(t, "DELETE", s.URL+"/runtimes/edge/app-proxy/api/v1/applications/web-2", key.Token, nil); st != http.StatusBadGateway {
				t.Fatalf("delete while no hand-written rule governs applications: %d %v, want 502", st, body)
			}
			// Once the account governs applications with a rule of its own, the roles refine it.
			if _, err := s.Admin.CreateTeam(ctx, "ops"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{Team: "ops", Action: "read", Kind: "applications", Runtime: "elsewhere"}); err != nil {
				t.Fatal(err)
			}

			// Allowed requests pass the control plane's decision and find no tunnel (502: the
			// runtime is not connected); refused ones are 403 from the control plane.
			for _, c := range []struct {
				method, path string
				want         int
			}{
				{"POST", "/app-proxy/api/v1/applications/web-1/sync", http.StatusBadGateway},
				{"GET", "/app-proxy/api/v1/applications/web-2", http.StatusBadGateway},
				{"DELETE", "/app-proxy/api/v1/applications/web-2", http.StatusForbidden},
				{"POST", "/app-proxy/api/v1/applications/api-1/sync", http.StatusForbidden},
				{"POST", "/app-proxy/api/v1/applications/web-3/sync", http.StatusForbidden}, // the deny line wins
			} {
				if st, body, _ := call(t, c.method, s.URL+"/runtimes/edge"+c.path, key.Token, []byte(`{}`)); st != c.want {
					t.Errorf("%s %s: %d %v, want %d", c.method, c.path, st, body, c.want)
				}
			}

			derived := func() []client.Rule {
				t.Helper()
				rules, err := s.Admin.ListRules(ctx, client.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var out []client.Rule
				for _, r := range rules.Items {
					if strings.Contains(r.Summary, "derived from") {
						out = append(out, r)
					}
				}
				return out
			}
			rules := derived()
			if len(rules) != 2 {
				t.Fatalf("derived rules: %+v", rules)
			}
			for _, r := range rules {
				if r.Team != "qa" || !strings.Contains(r.Summary, "in Argo CD project proj") || !strings.Contains(r.Summary, "(derived from AppProject proj of runtime edge, role deployer)") {
					t.Errorf("derived rule listed as %+v", r)
				}
				// The origin and the project are fields too, for the UI to show the rule read-only.
				if r.Origin != "AppProject proj of runtime edge, role deployer" || r.Project != "proj" || len(r.Apps) == 0 {
					t.Errorf("derived rule's origin, project and apps: %+v", r)
				}
			}
			if err := s.Admin.DeleteRule(ctx, rules[0].ID); status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "change the AppProject's roles instead") {
				t.Errorf("deleting a derived rule: %v", err)
			}
			ex, err := s.Admin.ExplainAuthz(ctx, client.ExplainRequest{User: "qa@first.test", Action: "sync", Resource: "applications/edge/web-1"})
			if err != nil || !ex.Allowed || !slices.ContainsFunc(ex.Reasons, func(r string) bool {
				return strings.Contains(r, "derived from AppProject proj of runtime edge, role deployer")
			}) {
				t.Errorf("explain does not name the origin: %+v, %v", ex, err)
			}

			// The AppProject deleted: the next list has no roles, and the rules go.
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.ProjectRolesListed, At: time.Now()}}})
			if rules := derived(); len(rules) != 0 {
				t.Fatalf("rules after the project went: %+v", rules)
			}

			// Reported again, then the runtime deleted: its derived rules go with it.
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.ProjectRolesListed, At: time.Now(), ProjectRoles: roles}}})
			if st, _, _ := call(t, "DELETE", s.URL+"/runtimes/edge/app-proxy/api/v1/applications/web-2", key.Token, nil); st != http.StatusForbidden {
				t.Fatalf("delete with the rules back: %d", st)
			}
			if err := s.Admin.DeleteRuntime(ctx, "edge"); err != nil {
				t.Fatal(err)
			}
			if rules := derived(); len(rules) != 0 {
				t.Fatalf("rules after the runtime went: %+v", rules)
			}
		})
	}
}
