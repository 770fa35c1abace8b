package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
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
			if err != nil || gq.AuthzExplain.Allowed || len(gq.Rules.Nodes) != 2 || gq.Teams.Nodes[0].Members[0].Email != "mo@first.test" {
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
