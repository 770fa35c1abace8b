package identity

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Rules reach a request through Authenticate: a rule created, a member added to a team or
// taken out, a rule deleted — each is in force on the very next request, on a service whose
// cache held the account's rules before (as another replica's would).
func TestTeamsAndRulesReachAuthenticate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		var heard []string
		s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log, OnRevoke: func(a, u string) { heard = append(heard, u) }})
		other := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log}) // another replica
		if _, err := s.Bootstrap(ctx, "acme", "admin@acme.test", "admin-password-123"); err != nil {
			t.Fatal(err)
		}
		admin, err := s.Login(ctx, "admin@acme.test", "admin-password-123", "")
		if err != nil {
			t.Fatal(err)
		}
		ap := admin.Principal
		if _, err := s.CreateUser(ctx, ap, CreateUserInput{Email: "dana@acme.test", Role: "member", Password: "dana-password-123"}); err != nil {
			t.Fatal(err)
		}
		dana, err := s.Login(ctx, "dana@acme.test", "dana-password-123", "")
		if err != nil {
			t.Fatal(err)
		}
		auth := func() rbac.Principal {
			t.Helper()
			p, err := other.Authenticate(ctx, dana.Token)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		prod := rbac.Resource{Kind: rbac.KindPipelines, Name: "web/deploy", Attrs: rbac.Attributes{Tags: []string{"prod"}}}
		if err := rbac.Authorize(auth(), rbac.ActRun, prod); err != nil {
			t.Fatalf("without rules the role decides: %v", err)
		}

		team, err := s.CreateTeam(ctx, ap, "release")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTeam(ctx, ap, "release"); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("second team of one name: %v, want ErrConflict", err)
		}
		if _, err := s.CreateTeam(ctx, dana.Principal, "mine"); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("a member created a team: %v", err)
		}
		rule, err := s.CreateRule(ctx, ap, RuleInput{Team: "release", Action: "run", Kind: "pipelines", Tags: []string{"prod"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(heard) != 1 || heard[0] != "" {
			t.Fatalf("a new rule re-checked %q, want every stream of the account", heard)
		}
		if rule.Subject != "team release" || rule.Describe() != "team release may run pipelines tagged prod" {
			t.Fatalf("rule = %+v", rule)
		}
		// Pipelines are governed now, and dana is in no team with a rule.
		if err := rbac.Authorize(auth(), rbac.ActRun, prod); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("run after the rule, before dana joined: %v, want ErrForbidden", err)
		}
		if err := s.AddTeamMember(ctx, ap, team.ID, "dana@acme.test"); err != nil {
			t.Fatal(err)
		}
		if err := rbac.Authorize(auth(), rbac.ActRun, prod); err != nil {
			t.Fatalf("run once dana joined the team: %v", err)
		}
		if err := rbac.Authorize(auth(), rbac.ActRun, rbac.Resource{Kind: rbac.KindPipelines, Name: "web/test"}); err == nil {
			t.Fatal("the rule let dana run an untagged pipeline")
		}
		teams, err := s.ListTeams(ctx, dana.Principal, paging.Page{})
		if err != nil || len(teams) != 1 || len(teams[0].Members) != 1 || teams[0].Members[0].Email != "dana@acme.test" {
			t.Fatalf("ListTeams = %+v, %v", teams, err)
		}
		ex, err := s.Explain(ctx, ap, "dana@acme.test", "run", "pipelines/web/deploy", prod.Attrs)
		if err != nil || !ex.Allowed || ex.Rule == nil || ex.Rule.ID != rule.ID || ex.User != "dana@acme.test" {
			t.Fatalf("Explain = %+v, %v", ex, err)
		}
		if _, err := s.Explain(ctx, dana.Principal, "admin@acme.test", "run", "pipelines/web/deploy", prod.Attrs); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("a member explained another user's rights: %v", err)
		}
		if ex, err := s.Explain(ctx, dana.Principal, "", "delete", "pipelines/web/deploy", prod.Attrs); err != nil || ex.Allowed {
			t.Fatalf("dana explains her own delete: %+v, %v", ex, err)
		}
		if err := s.RemoveTeamMember(ctx, ap, "release", dana.Principal.UserID); err != nil {
			t.Fatal(err)
		}
		if err := rbac.Authorize(auth(), rbac.ActRun, prod); err == nil {
			t.Fatal("dana still runs prod pipelines after leaving the team")
		}
		if err := s.RemoveTeamMember(ctx, ap, "release", "dana@acme.test"); errdefs.Field(err) != "user" {
			t.Fatalf("removing a non-member: %v, want an error naming user", err)
		}
		if err := s.DeleteRule(ctx, ap, rule.ID); err != nil {
			t.Fatal(err)
		}
		if err := rbac.Authorize(auth(), rbac.ActRun, prod); err != nil {
			t.Fatalf("with the last rule gone the role decides again: %v", err)
		}
	})
}

func TestCreateRuleRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	log := slog.New(slog.DiscardHandler)
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log})
	if _, err := s.Bootstrap(ctx, "acme", "admin@acme.test", "admin-password-123"); err != nil {
		t.Fatal(err)
	}
	admin, err := s.Login(ctx, "admin@acme.test", "admin-password-123", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTeam(ctx, admin.Principal, "dev"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in    RuleInput
		field string
		say   string
	}{
		{RuleInput{Team: "dev", Action: "read", Kind: "widgets"}, "kind", "use one of projects, pipelines, builds"},
		{RuleInput{Team: "dev", Action: "fly", Kind: "pipelines"}, "action", "use one of create, read"},
		{RuleInput{Team: "dev", Action: "sync", Kind: "pipelines"}, "action", "does not apply to pipelines"},
		{RuleInput{Team: "nope", Action: "read", Kind: "pipelines"}, "team", "is not a team"},
		{RuleInput{User: "ghost@acme.test", Action: "read", Kind: "pipelines"}, "user", "is not a member"},
		{RuleInput{Action: "read", Kind: "pipelines"}, "team", "or user must be given"},
		{RuleInput{Team: "dev", Action: "read", Kind: "applications", Namespace: "a b"}, "namespace", "is not a name"},
	}
	for _, c := range cases {
		_, err := s.CreateRule(ctx, admin.Principal, c.in)
		if errdefs.Field(err) != c.field || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%+v: %v, want field %s saying %q", c.in, err, c.field, c.say)
		}
	}
	if rs, _ := s.ListRules(ctx, admin.Principal, paging.Page{}); len(rs) != 0 {
		t.Fatalf("refused rules were stored: %+v", rs)
	}
}
