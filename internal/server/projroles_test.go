package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
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

// AppProjects committed to git — the installation repository's projects/ and a Git Source's
// directory — give rules through the same report as AppProject resources do: a real runtime
// loads them and reports their roles over the runtime protocol; the control plane derives the
// rules, which decide qa's requests through the app-proxy route; a role removed in git takes
// its rules with it.
func TestRulesDerivedFromGitAppProjects(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
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
			for _, team := range []string{"qa", "ops"} {
				if _, err := s.Admin.CreateTeam(ctx, team); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Admin.AddTeamMember(ctx, "qa", "qa@first.test"); err != nil {
				t.Fatal(err)
			}
			// The account governs applications with a rule of its own; project roles refine it.
			if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{Team: "ops", Action: "read", Kind: "applications", Runtime: "elsewhere"}); err != nil {
				t.Fatal(err)
			}
			key, err := s.Login(t, "qa@first.test", "qa-password-1").CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "qa"})
			if err != nil {
				t.Fatal(err)
			}

			work := t.TempDir()
			gitDo := func(dir string, args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.test", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.test")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			bare := filepath.Join(work, "install.git")
			gitDo(work, "init", "--bare", "-b", "main", bare)
			src := filepath.Join(work, "src")
			gitDo(work, "clone", bare, src)
			commit := func(files map[string]string) {
				t.Helper()
				for name, content := range files {
					os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)
					if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				gitDo(src, "add", ".")
				gitDo(src, "commit", "-m", "change")
				gitDo(src, "push", "origin", "main")
			}
			project := func(name, roles string) string {
				return "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: " + name + "}\nspec:\n  sourceRepos: ['*']\n" +
					"  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]\n" + roles
			}
			application := func(name, project string) string {
				return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + "}\nspec:\n  project: " + project + "\n" +
					"  source: {repoURL: 'file://" + bare + "', path: manifests, targetRevision: main}\n" +
					"  destination: {server: https://kubernetes.default.svc, namespace: web}\n"
			}
			teamRoles := "  roles:\n  - name: deployer\n    groups: [qa, nobody-team]\n    policies:\n" +
				"    - p, proj:team:deployer, applications, sync, team/web-*, allow\n" +
				"    - p, proj:team:deployer, applications, get, team/*, allow\n" +
				"    - p, proj:team:deployer, applications, sync, team/web-3, deny\n"
			commit(map[string]string{
				"manifests/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n",
				"projects/team.yaml":    project("team", teamRoles),
				"apps/web-1.yaml":       application("web-1", "team"),
				"apps/web-2.yaml":       application("web-2", "team"),
				"apps/web-3.yaml":       application("web-3", "team"),
				"apps/api-1.yaml":       application("api-1", "default"),
				"git-sources/more.yaml": "apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: more}\nspec:\n  repoURL: 'file://" + bare + "'\n  path: more\n",
				"more/extra.yaml": project("extra", "  roles:\n  - name: viewer\n    groups: [qa]\n    policies:\n    - p, proj:extra:viewer, applications, get, extra/*, allow\n") +
					"---\n" + application("x-1", "extra"),
			})

			var logs proc.Buffer
			a, err := agent.New(agent.Options{Server: s.URL, Token: reg.Token, AccessMode: "tunnel", Version: "test", DataDir: t.TempDir(),
				InstallRepo: git.Repo{URL: "file://" + bare}, NoInCluster: true}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- a.Run(rctx) }()
			defer func() { cancel(); <-done }()

			derived := func() []string {
				t.Helper()
				rules, err := s.Admin.ListRules(ctx, client.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, r := range rules.Items {
					if strings.Contains(r.Summary, "derived from") {
						out = append(out, r.Team+": "+r.Summary)
					}
				}
				slices.Sort(out)
				return out
			}
			waitUntil(t, "five applications reported", func() bool { return len(appsOf(t, s.Admin)) == 5 })
			var rules []string
			deadline := time.Now().Add(20 * time.Second)
			for rules = derived(); len(rules) != 3; rules = derived() {
				if time.Now().After(deadline) {
					t.Fatalf("derived rules: %q\nruntime log:\n%s", rules, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			for i, want := range []string{"(derived from AppProject extra of runtime edge, role viewer)", "(derived from AppProject team of runtime edge, role deployer)", "(derived from AppProject team of runtime edge, role deployer)"} {
				if !strings.HasPrefix(rules[i], "qa: ") || !strings.Contains(rules[i], want) {
					t.Errorf("derived rule %d: %q, want qa's %s", i, rules[i], want)
				}
			}

			// Allowed requests reach the runtime (which answers them); refused ones are 403
			// from the control plane.
			check := func(method, path string, allowed bool) {
				t.Helper()
				st, body, _ := call(t, method, s.URL+"/runtimes/edge/app-proxy/api/v1/applications/"+path, key.Token, []byte(`{}`))
				if (st == http.StatusForbidden) == allowed {
					t.Errorf("%s %s: %d %v, want allowed %v", method, path, st, body, allowed)
				}
			}
			check("GET", "web-1", true)
			check("POST", "web-1/sync", true)
			check("DELETE", "web-2", false)
			check("POST", "web-3/sync", false) // the deny line wins
			check("GET", "api-1", false)
			check("GET", "x-1", true) // the Git Source's project
			check("POST", "x-1/sync", false)

			// The deployer role removed in git: after the runtime reads the change, its rules go.
			commit(map[string]string{"projects/team.yaml": project("team", "")})
			if st, body, _ := call(t, "POST", s.URL+"/runtimes/edge/app-proxy/api/v1/notify", adminToken(t, s), []byte(`{"repoURL": "file://`+bare+`"}`)); st != http.StatusOK {
				t.Fatalf("notify: %d %v", st, body)
			}
			deadline = time.Now().Add(20 * time.Second)
			for rules = derived(); len(rules) != 1; rules = derived() {
				if time.Now().After(deadline) {
					t.Fatalf("derived rules after the role went: %q", rules)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !strings.Contains(rules[0], "AppProject extra") {
				t.Errorf("the rule left: %q", rules[0])
			}
			check("GET", "web-1", false)
			check("GET", "x-1", true)
		})
	}
}
