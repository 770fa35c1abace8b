package security_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// A member bound by attribute-based rules tries every way around them: each REST operation on a
// pipeline and its builds that no rule allows, the same through an API key of theirs and through
// GraphQL, retagging a pipeline into what a rule allows, writing rules or joining teams
// themselves, and removing a trigger. Category `rules: reaching what no rule allows`.
func TestRulesCannotBeBypassed(t *testing.T) {
	ctx := context.Background()
	tn := startTenants(t, servertest.Config{})
	admin, alice := tn.aAdmin, tn.aMember
	const spec = "version: '1.0'\nsteps:\n  one:\n    commands: [\"echo one\"]\n"
	if _, err := admin.CreateProject(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, tag string }{{"deploy", "prod"}, {"secret", "restricted"}} {
		if _, err := admin.CreatePipeline(ctx, client.PipelineRequest{Project: "web", Name: p.name, Spec: spec, Config: client.PipelineConfig{Tags: []string{p.tag}}}); err != nil {
			t.Fatal(err)
		}
	}
	hidden, err := admin.RunPipeline(ctx, "web/secret", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	trg, err := admin.CreateTrigger(ctx, "web/secret", client.TriggerRequest{Type: "git", Provider: "github", Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTeam(ctx, "release"); err != nil {
		t.Fatal(err)
	}
	if err := admin.AddTeamMember(ctx, "release", "alice@first.test"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pipelines", "builds"} {
		for _, a := range []string{"read", "run"} {
			if _, err := admin.CreateRule(ctx, client.CreateRuleRequest{Team: "release", Action: a, Kind: k, Tags: []string{"prod"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	key, err := alice.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "alice-ci"})
	if err != nil {
		t.Fatal(err)
	}
	viaKey := tn.s.Client(key.Token)
	me, err := admin.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adminEmail := me.User.Email

	type try struct {
		name string
		do   func(c *client.Client) error
	}
	tries := []try{
		{"read the restricted pipeline", func(c *client.Client) error { _, err := c.GetPipeline(ctx, "web/secret"); return err }},
		{"run it", func(c *client.Client) error {
			_, err := c.RunPipeline(ctx, "web/secret", client.RunRequest{Branch: "main"})
			return err
		}},
		{"update it", func(c *client.Client) error {
			_, err := c.UpdatePipeline(ctx, "web/secret", client.PipelineRequest{Spec: spec, Config: client.PipelineConfig{Tags: []string{"prod"}}})
			return err
		}},
		{"retag the allowed one", func(c *client.Client) error {
			_, err := c.UpdatePipeline(ctx, "web/deploy", client.PipelineRequest{Spec: spec, Config: client.PipelineConfig{Tags: []string{"prod", "restricted"}}})
			return err
		}},
		{"create a pipeline tagged prod", func(c *client.Client) error {
			_, err := c.CreatePipeline(ctx, client.PipelineRequest{Project: "web", Name: "mine", Spec: spec, Config: client.PipelineConfig{Tags: []string{"prod"}}})
			return err
		}},
		{"delete it", func(c *client.Client) error { return c.DeletePipeline(ctx, "web/secret") }},
		{"read its build", func(c *client.Client) error { _, err := c.GetBuild(ctx, hidden.ID); return err }},
		{"cancel its build", func(c *client.Client) error { return c.CancelBuild(ctx, hidden.ID) }},
		{"approve its build", func(c *client.Client) error { return c.ApproveBuild(ctx, hidden.ID, true) }},
		{"list its triggers", func(c *client.Client) error { _, err := c.ListTriggers(ctx, "web/secret"); return err }},
		{"remove its trigger", func(c *client.Client) error { return c.DeleteTrigger(ctx, trg.ID) }},
		{"write a rule", func(c *client.Client) error {
			_, err := c.CreateRule(ctx, client.CreateRuleRequest{User: "alice@first.test", Action: "run", Kind: "pipelines"})
			return err
		}},
		{"join a team", func(c *client.Client) error { return c.AddTeamMember(ctx, "release", adminEmail) }},
		{"explain another member", func(c *client.Client) error {
			_, err := c.ExplainAuthz(ctx, client.ExplainRequest{User: adminEmail, Action: "read", Resource: "pipelines/web/secret"})
			return err
		}},
	}
	n, got := 0, 0
	for _, c := range []*client.Client{alice, viaKey} {
		for _, tr := range tries {
			n++
			err := tr.do(c)
			var ae *client.Error
			if err == nil || !errors.As(err, &ae) || (ae.Status != http.StatusForbidden && ae.Status != http.StatusBadRequest && ae.Status != http.StatusNotFound) {
				got++
				t.Errorf("%s: %v", tr.name, err)
			}
		}
		// Lists show nothing restricted.
		n++
		if ps, err := c.ListPipelines(ctx, "", client.ListOptions{}); err != nil || len(ps.Items) != 1 {
			got++
			t.Errorf("pipelines listed: %+v, %v", ps.Items, err)
		}
		n++
		if bs, err := c.ListBuilds(ctx, client.BuildFilter{}); err != nil || len(bs.Items) != 0 {
			got++
			t.Errorf("builds listed: %+v, %v", bs.Items, err)
		}
		// GraphQL answers the same.
		n++
		var out struct{ AuthzExplain struct{ Allowed bool } }
		if err := c.GraphQL(ctx, `{ authzExplain(action: "read", resource: "pipelines/web/secret") { allowed } }`, nil, &out); err != nil || out.AuthzExplain.Allowed {
			got++
			t.Errorf("GraphQL explain: %+v, %v", out, err)
		}
	}
	// The restricted pipeline, its build and trigger are as they were.
	if p, err := admin.GetPipeline(ctx, "web/secret"); err != nil || len(p.Config.Tags) != 1 || p.Config.Tags[0] != "restricted" {
		got++
		t.Errorf("the restricted pipeline changed: %+v, %v", p, err)
	}
	if ts, err := admin.ListTriggers(ctx, "web/secret"); err != nil || len(ts.Items) != 1 {
		got++
		t.Errorf("its trigger changed: %+v, %v", ts, err)
	}
	attack(t, "rules: reaching what no rule allows", n, got, 0)
}
