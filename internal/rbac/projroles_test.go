package rbac

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func appRes(project, name string) Resource {
	return Resource{Kind: KindApplications, Name: name, Attrs: Attributes{Runtime: "edge", Project: project, App: name}}
}

// An AppProject role granting team qa sync on proj/web-* lets a member of qa sync web-1 and
// nothing else; a deny line wins; groups naming no team are returned, not guessed.
func TestDeriveProjectRules(t *testing.T) {
	teams := map[string]string{"qa": "team-qa", "ops": "team-ops"}
	roles := []ProjectRole{{Project: "proj", Role: "deployer", Groups: []string{"qa", "ghosts", "ops"}, Policies: []ProjectPolicy{
		{Resource: "applications", Action: "sync", Object: "web-*", Allow: true},
		{Resource: "applications", Action: "get", Object: "*", Allow: true},
		{Resource: "applications", Action: "*", Object: "web-9", Allow: false},
		{Resource: "logs", Action: "get", Object: "*", Allow: true},
	}}}
	rules, unknown, skipped := DeriveProjectRules("edge", teams, roles)
	if !slices.Equal(unknown, []string{"ghosts"}) {
		t.Errorf("unknown groups = %v", unknown)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "policies[3]") {
		t.Errorf("skipped = %v", skipped)
	}
	if len(rules) != 4 { // sync and read, for qa and ops
		t.Fatalf("rules = %d, want 4", len(rules))
	}
	for _, r := range rules {
		if err := r.Validate(); err != nil {
			t.Errorf("derived rule %s: %v", r.Describe(), err)
		}
	}
	var qa []*Rule
	for _, r := range rules {
		if r.TeamID == "team-qa" {
			qa = append(qa, r)
		}
	}
	p := Principal{AccountID: "acc_1", Role: Member, Rules: NewRules([]Kind{KindApplications}, qa, "team-qa")}
	for _, c := range []struct {
		act   Action
		res   Resource
		allow bool
	}{
		{ActSync, appRes("proj", "web-1"), true},
		{ActRead, appRes("proj", "web-2"), true},
		{ActDelete, appRes("proj", "web-2"), false},
		{ActSync, appRes("other", "web-1"), false},
		{ActSync, appRes("proj", "api"), false},
		{ActSync, appRes("proj", "web-9"), false}, // deny wins
		{ActRead, appRes("proj", "web-9"), false},
		{ActSync, Resource{Kind: KindApplications, Name: "web-1", Attrs: Attributes{Runtime: "other", Project: "proj", App: "web-1"}}, false},
	} {
		err := Authorize(p, c.act, c.res)
		if (err == nil) != c.allow || (err != nil && !errors.Is(err, errdefs.ErrForbidden)) {
			t.Errorf("%s %s/%s on %s: %v, want allowed %v", c.act, c.res.Attrs.Project, c.res.Name, c.res.Attrs.Runtime, err, c.allow)
		}
	}
	d := Explain(p, ActSync, appRes("proj", "web-1"))
	if !d.Allowed || !strings.Contains(strings.Join(d.Reasons, "\n"), "derived from AppProject proj of runtime edge, role deployer") {
		t.Errorf("explain does not name the origin: %v", d.Reasons)
	}
	d = Explain(p, ActSync, appRes("proj", "web-9"))
	if d.Allowed || !strings.Contains(strings.Join(d.Reasons, "\n"), "matches web-9, which the rule excepts (a deny line)") {
		t.Errorf("explain of a denied app: %v", d.Reasons)
	}
}

func TestRuleAppAttributesValidate(t *testing.T) {
	if err := (Rule{TeamID: "t", Action: ActRun, Kind: KindPipelines, Project: "p"}).Validate(); errdefs.Field(err) != "project" {
		t.Errorf("project on pipelines: %v", err)
	}
	if err := (Rule{TeamID: "t", Action: ActSync, Kind: KindApplications, Apps: []string{"web-["}}).Validate(); errdefs.Field(err) != "apps[0]" {
		t.Errorf("bad glob: %v", err)
	}
}
