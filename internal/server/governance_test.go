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

func status(err error) int {
	var ae *client.Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// A team's rule lets its members run and read prod-tagged pipelines and nothing else of the
// kind; REST, GraphQL and an API key all get the same answers, lists show only what may be read,
// and explain says why.
func TestRulesThroughTheAPI(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			admin := s.Admin
			if _, err := admin.CreateUser(ctx, client.CreateUserRequest{Email: "mo@first.test", Role: "member", Password: "mo-password-123"}); err != nil {
				t.Fatal(err)
			}
			mo := s.Login(t, "mo@first.test", "mo-password-123")
			moKey, err := mo.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "mo-ci"})
			if err != nil {
				t.Fatal(err)
			}
			moAPI := s.Client(moKey.Token)
			if _, err := admin.CreateProject(ctx, "web"); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.CreateProject(ctx, "payments", "pci"); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.CreateProject(ctx, "bad", "-x"); status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "tags[0]") {
				t.Fatalf("a project with a bad tag: %v", err)
			}
			for _, p := range []struct {
				name string
				tags []string
			}{{"deploy", []string{"prod"}}, {"test", []string{"ci"}}, {"lint", nil}} {
				if _, err := admin.CreatePipeline(ctx, client.PipelineRequest{Project: "web", Name: p.name, Spec: isolationSpec, Config: client.PipelineConfig{Tags: p.tags}}); err != nil {
					t.Fatal(err)
				}
			}
			// Without rules the role decides: mo (a member) sees and runs everything.
			if ps, err := mo.ListPipelines(ctx, "", client.ListOptions{}); err != nil || len(ps.Items) != 3 {
				t.Fatalf("mo's pipelines before any rule: %+v, %v", ps.Items, err)
			}

			if _, err := admin.CreateTeam(ctx, "release"); err != nil {
				t.Fatal(err)
			}
			if err := admin.AddTeamMember(ctx, "release", "mo@first.test"); err != nil {
				t.Fatal(err)
			}
			for _, a := range []string{"read", "run"} {
				if _, err := admin.CreateRule(ctx, client.CreateRuleRequest{Team: "release", Action: a, Kind: "pipelines", Tags: []string{"prod"}}); err != nil {
					t.Fatal(err)
				}
			}
			// Bad rules are refused naming the field and what is valid.
			_, err = admin.CreateRule(ctx, client.CreateRuleRequest{Team: "release", Action: "run", Kind: "deployments"})
			if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "projects, pipelines, builds, contexts, runtimes, clusters, applications, gitsources") {
				t.Fatalf("a rule of an unknown kind: %v", err)
			}
			_, err = admin.CreateRule(ctx, client.CreateRuleRequest{Team: "release", Action: "approve", Kind: "pipelines"})
			if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "does not apply to pipelines") {
				t.Fatalf("an action the kind does not take: %v", err)
			}

			for name, c := range map[string]*client.Client{"session": mo, "api key": moAPI} {
				ps, err := c.ListPipelines(ctx, "", client.ListOptions{})
				if err != nil || len(ps.Items) != 1 || ps.Items[0].FullName != "web/deploy" {
					t.Fatalf("%s: pipelines mo may read: %+v, %v", name, ps.Items, err)
				}
				if _, err := c.GetPipeline(ctx, "web/test"); status(err) != http.StatusForbidden || !strings.Contains(err.Error(), "no rule lets you read pipelines/web/test") {
					t.Fatalf("%s: reading an untagged pipeline: %v", name, err)
				}
				if _, err := c.RunPipeline(ctx, "web/test", client.RunRequest{Branch: "main"}); status(err) != http.StatusForbidden {
					t.Fatalf("%s: running a ci pipeline: %v", name, err)
				}
				if _, err := c.RunPipeline(ctx, "web/deploy", client.RunRequest{Branch: "main"}); err != nil {
					t.Fatalf("%s: running the prod pipeline: %v", name, err)
				}
			}
			// A page of one still reads past hidden pipelines (test, lint come after deploy).
			if ps, err := mo.ListPipelines(ctx, "", client.ListOptions{Limit: 1}); err != nil || len(ps.Items) != 1 {
				t.Fatalf("a page of one: %+v, %v", ps, err)
			}
			// Retagging into prod is an update, which no rule allows mo.
			if _, err := mo.UpdatePipeline(ctx, "web/deploy", client.PipelineRequest{Spec: isolationSpec, Config: client.PipelineConfig{Tags: []string{"prod"}}}); status(err) != http.StatusForbidden {
				t.Fatalf("mo updated a pipeline: %v", err)
			}
			// Projects by their tags: a rule for pci projects, and mo reads no other.
			if _, err := admin.CreateRule(ctx, client.CreateRuleRequest{Team: "release", Action: "read", Kind: "projects", Tags: []string{"pci"}}); err != nil {
				t.Fatal(err)
			}
			if prs, err := mo.ListProjects(ctx, client.ListOptions{}); err != nil || len(prs.Items) != 1 || prs.Items[0].Name != "payments" || prs.Items[0].Tags[0] != "pci" {
				t.Fatalf("mo's projects: %+v, %v", prs, err)
			}
			if _, err := mo.GetProject(ctx, "web"); status(err) != http.StatusForbidden {
				t.Fatalf("mo read an untagged project: %v", err)
			}
			// Removing a trigger changes its pipeline: no update rule, no removal.
			trg, err := admin.CreateTrigger(ctx, "web/deploy", client.TriggerRequest{Type: "git", Provider: "github",
				Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := mo.DeleteTrigger(ctx, trg.ID); status(err) != http.StatusForbidden {
				t.Fatalf("mo deleted a trigger of a pipeline no rule lets mo update: %v", err)
			}
			// Admins are not bound by rules.
			if ps, err := admin.ListPipelines(ctx, "", client.ListOptions{}); err != nil || len(ps.Items) != 3 {
				t.Fatalf("admin's pipelines: %+v, %v", ps.Items, err)
			}

			// GraphQL answers through the same path.
			var gq struct {
				AuthzExplain struct {
					Allowed bool
					Reasons []string
				}
				Rules struct{ Nodes []struct{ Summary string } }
				Teams struct {
					Nodes []struct {
						Name    string
						Members []struct{ Email string }
					}
				}
			}
			err = moAPI.GraphQL(ctx, `{ authzExplain(action: "run", resource: "pipelines/web/test") { allowed reasons }
				rules { nodes { summary } } teams { nodes { name members { email } } } }`, nil, &gq)
			if err != nil || gq.AuthzExplain.Allowed || len(gq.Rules.Nodes) != 3 || gq.Teams.Nodes[0].Members[0].Email != "mo@first.test" {
				t.Fatalf("GraphQL: %+v, %v", gq, err)
			}
			if !slices.ContainsFunc(gq.AuthzExplain.Reasons, func(r string) bool { return strings.Contains(r, "has none of the tags prod") }) {
				t.Fatalf("GraphQL explain does not say why: %v", gq.AuthzExplain.Reasons)
			}

			// Explain, for the admin asking about mo.
			ex, err := admin.ExplainAuthz(ctx, client.ExplainRequest{User: "mo@first.test", Action: "run", Resource: "pipelines/web/deploy"})
			if err != nil || !ex.Allowed || !ex.Governed || ex.Rule == "" || !slices.Equal(ex.Tags, []string{"prod"}) {
				t.Fatalf("explain run of web/deploy: %+v, %v", ex, err)
			}
			ex, err = admin.ExplainAuthz(ctx, client.ExplainRequest{User: "mo@first.test", Action: "delete", Resource: "pipelines/web/deploy"})
			if err != nil || ex.Allowed || !strings.Contains(strings.Join(ex.Reasons, "\n"), "none for this user or their teams lets them delete pipelines") {
				t.Fatalf("explain delete: %+v, %v", ex, err)
			}
			if _, err := admin.ExplainAuthz(ctx, client.ExplainRequest{User: "mo@first.test", Action: "fly", Resource: "pipelines/web/deploy"}); status(err) != http.StatusBadRequest {
				t.Fatalf("explain of an unknown action: %v", err)
			}
			adminMe, _ := admin.Me(ctx)
			if _, err := mo.ExplainAuthz(ctx, client.ExplainRequest{User: adminMe.User.Email, Action: "read", Resource: "pipelines/web/deploy"}); status(err) != http.StatusForbidden {
				t.Fatalf("a member explained the admin's rights: %v", err)
			}

			// Out of the team, mo reads no pipeline at all (the kind stays governed).
			if err := admin.RemoveTeamMember(ctx, "release", "mo@first.test"); err != nil {
				t.Fatal(err)
			}
			if ps, err := moAPI.ListPipelines(ctx, "", client.ListOptions{}); err != nil || len(ps.Items) != 0 {
				t.Fatalf("mo's pipelines after leaving the team: %+v, %v", ps.Items, err)
			}
		})
	}
}

// Requests to a runtime's app-proxy through the tunnel meet the same rules: the control plane
// decides before forwarding (403 from it), and what a rule allows reaches the runtime (which
// answers for itself: 404 for an application it does not have).
func TestRulesThroughTheTunnel(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startRuntime(t, s, reg.Token)
	defer stop()
	waitRuntime(t, s.Admin, "edge", 10*time.Second, "healthy")
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "ops@first.test", Role: "member", Password: "ops-password-1"}); err != nil {
		t.Fatal(err)
	}
	ops := s.Login(t, "ops@first.test", "ops-password-1")
	key, err := ops.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, path string) int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, _, _ := call(t, method, s.URL+"/runtimes/edge"+path, key.Token, []byte(`{}`))
			if st != http.StatusBadGateway || time.Now().After(deadline) { // the tunnel may still be coming up
				return st
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// No rules: the role decides, and the runtime answers.
	if st := get("GET", "/app-proxy/api/v1/applications/shop"); st != http.StatusNotFound {
		t.Fatalf("before rules: %d, want the runtime's 404", st)
	}
	if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{User: "ops@first.test", Action: "read", Kind: "applications", Runtime: "edge"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path string
		want         int
	}{
		{"GET", "/app-proxy/api/v1/applications/shop", http.StatusNotFound},        // read: allowed, forwarded
		{"GET", "/app-proxy/api/v1/applications", http.StatusOK},                   // list: allowed (runtime-wide rule)
		{"POST", "/app-proxy/api/v1/applications/shop/sync", http.StatusForbidden}, // sync: no rule
		{"DELETE", "/app-proxy/api/v1/applications/shop", http.StatusForbidden},    // delete: no rule
		{"POST", "/app-proxy/api/graphql", http.StatusForbidden},                   // not described by rules
		// An application's Rollouts are the application's: read allowed (forwarded; this
		// runtime has no cluster, so no Rollouts controller: 503), an operation needs sync; the
		// runtime-wide rollouts list is not described by rules.
		{"GET", "/app-proxy/api/v1/applications/shop/rollouts", http.StatusServiceUnavailable},
		{"GET", "/app-proxy/api/v1/applications/shop/rollouts/web/web", http.StatusServiceUnavailable},
		{"POST", "/app-proxy/api/v1/applications/shop/rollouts/web/web/promote", http.StatusForbidden},
		{"GET", "/app-proxy/api/v1/rollouts", http.StatusForbidden},
		// One object of an application's tree is the application's: its manifests and events
		// are a read (forwarded: the runtime has no such app, 404), deleting it needs delete,
		// restarting it sync.
		{"GET", "/app-proxy/api/v1/applications/shop/resource?kind=Pod&name=web-1", http.StatusNotFound},
		{"GET", "/app-proxy/api/v1/applications/shop/resource/events?kind=Pod&name=web-1", http.StatusNotFound},
		{"DELETE", "/app-proxy/api/v1/applications/shop/resource?kind=Pod&name=web-1", http.StatusForbidden},
		{"POST", "/app-proxy/api/v1/applications/shop/resource/restart?group=apps&kind=Deployment&name=web", http.StatusForbidden},
		{"GET", "/app-proxy/api/v1/applications/shop/resource/other", http.StatusForbidden},
	}
	for _, c := range cases {
		if st := get(c.method, c.path); st != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, st, c.want)
		}
	}
	// Workflows are described by rules of their own kind: ungoverned, the role decides and the
	// request reaches the runtime (no cluster here, so no workflow controller: 503); once a
	// rule names workflows, a read in its namespace is forwarded and the rest refused.
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/app-proxy/api/v1/workflows", http.StatusServiceUnavailable},
		{"POST", "/app-proxy/api/v1/workflows", http.StatusServiceUnavailable},
		{"POST", "/app-proxy/api/v1/workflows/ci/build-1/terminate", http.StatusServiceUnavailable},
		{"GET", "/app-proxy/api/v1/workflow-templates", http.StatusServiceUnavailable},
		{"POST", "/app-proxy/api/v1/cron-workflows", http.StatusServiceUnavailable},
		{"DELETE", "/app-proxy/api/v1/cron-workflows/ci/nightly", http.StatusServiceUnavailable},
		{"PUT", "/app-proxy/api/v1/cron-workflows/ci/nightly", http.StatusServiceUnavailable},
	} {
		if st := get(c.method, c.path); st != c.want {
			t.Errorf("workflows ungoverned: %s %s: %d, want %d", c.method, c.path, st, c.want)
		}
	}
	if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{User: "ops@first.test", Action: "read", Kind: "workflows", Runtime: "edge", Namespace: "ci"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/app-proxy/api/v1/workflows/ci/build-1", http.StatusServiceUnavailable},     // read in ci: forwarded
		{"GET", "/app-proxy/api/v1/workflows/ci/build-1/log", http.StatusServiceUnavailable}, // a log is a read
		{"GET", "/app-proxy/api/v1/workflows/prod/build-1", http.StatusForbidden},            // another namespace
		{"POST", "/app-proxy/api/v1/workflows/ci/build-1/terminate", http.StatusForbidden},   // terminate: no rule
		{"POST", "/app-proxy/api/v1/workflows/ci/build-1/retry", http.StatusForbidden},       // run: no rule
		{"POST", "/app-proxy/api/v1/workflows", http.StatusForbidden},                        // create: no rule
		{"DELETE", "/app-proxy/api/v1/workflows/ci/build-1", http.StatusForbidden},           // not described
		// CronWorkflows are workflows: reads and lint are reads, the rest needs its action.
		{"GET", "/app-proxy/api/v1/cron-workflows/ci/nightly", http.StatusServiceUnavailable},
		{"GET", "/app-proxy/api/v1/cron-workflows", http.StatusForbidden},       // no namespace: the rule names one
		{"POST", "/app-proxy/api/v1/cron-workflows/lint", http.StatusForbidden}, // likewise
		{"GET", "/app-proxy/api/v1/cron-workflows/prod/nightly", http.StatusForbidden},
		{"POST", "/app-proxy/api/v1/cron-workflows", http.StatusForbidden},                    // create: no rule
		{"DELETE", "/app-proxy/api/v1/cron-workflows/ci/nightly", http.StatusForbidden},       // delete: no rule
		{"POST", "/app-proxy/api/v1/cron-workflows/ci/nightly/resume", http.StatusForbidden},  // update: no rule
		{"PUT", "/app-proxy/api/v1/cron-workflows/ci/nightly", http.StatusForbidden},          // update (argo cron update): no rule
		{"POST", "/app-proxy/api/v1/cron-workflows/ci/nightly/explode", http.StatusForbidden}, // not described
	} {
		if st := get(c.method, c.path); st != c.want {
			t.Errorf("workflows governed: %s %s: %d, want %d", c.method, c.path, st, c.want)
		}
	}
	// A rule for one namespace cannot decide for an application the control plane has no copy
	// of (its namespace is unknown), so it refuses.
	if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{User: "ops@first.test", Action: "sync", Kind: "applications", Namespace: "web"}); err != nil {
		t.Fatal(err)
	}
	if st := get("POST", "/app-proxy/api/v1/applications/shop/sync"); st != http.StatusForbidden {
		t.Fatalf("sync with a namespace rule and no known namespace: %d", st)
	}
	// Runtimes governed too, with no rule for ops: the runtime is out of reach altogether.
	if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{User: "ops@first.test", Action: "read", Kind: "runtimes", Runtime: "other"}); err != nil {
		t.Fatal(err)
	}
	if st := get("GET", "/app-proxy/api/v1/applications/shop"); st != http.StatusForbidden {
		t.Fatalf("a runtime no rule lets ops read: %d", st)
	}
}

// Applications as the control plane holds them: lists, counts and reads keep to what a rule of
// namespace and cluster lets the caller read.
func TestRulesOnReportedApplications(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0).UTC()
	var apps []runtimev1.Application
	for _, a := range []struct{ name, ns, health string }{{"shop", "web", "Healthy"}, {"cart", "web", "Degraded"}, {"db", "data", "Healthy"}} {
		apps = append(apps, runtimev1.Application{Name: a.name, RepoURL: "https://git.example/acme/apps.git", Path: a.name,
			DestName: "prod", DestNamespace: a.ns, Sync: "Synced", Health: a.health, ReconciledAt: at})
	}
	reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: apps})
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "web@first.test", Role: "viewer", Password: "web-password-1"}); err != nil {
		t.Fatal(err)
	}
	viewer := s.Login(t, "web@first.test", "web-password-1")
	if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{User: "web@first.test", Action: "read", Kind: "applications", Cluster: "prod", Namespace: "web"}); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Applications struct{ Nodes []struct{ Name string } }
		Counts       struct {
			Total  int
			Health []struct {
				Status string
				Count  int
			}
		} `json:"applicationCounts"`
		Db *struct{ Name string } `json:"db"`
	}
	err = viewer.GraphQL(ctx, `{ applications(first: 1) { nodes { name } } applicationCounts { total health { status count } } }`, nil, &out)
	if err != nil || len(out.Applications.Nodes) != 1 || out.Counts.Total != 2 {
		t.Fatalf("viewer's applications and counts: %+v, %v", out, err)
	}
	if err := viewer.GraphQL(ctx, `{ db: application(runtime: "edge", name: "db") { name } }`, nil, &out); err == nil || out.Db != nil {
		t.Fatalf("the viewer read an application in another namespace: %+v, %v", out.Db, err)
	}
	if err := s.Admin.GraphQL(ctx, `{ applicationCounts { total } }`, nil, &out); err != nil || out.Counts.Total != 3 {
		t.Fatalf("admin's count: %+v, %v", out.Counts, err)
	}
	ex, err := s.Admin.ExplainAuthz(ctx, client.ExplainRequest{User: "web@first.test", Action: "read", Resource: "applications/edge/db"})
	if err != nil || ex.Allowed || ex.Namespace != "data" || ex.Cluster != "prod" {
		t.Fatalf("explain of the db application: %+v, %v", ex, err)
	}
}
