package rbac

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestRuleValidate(t *testing.T) {
	cases := []struct {
		name  string
		rule  Rule
		field string // empty: valid
		say   string // the message names this
	}{
		{"ok", Rule{TeamID: "t", Action: ActRun, Kind: KindPipelines, Tags: []string{"prod"}}, "", ""},
		{"gitops ok", Rule{UserID: "u", Action: ActSync, Kind: KindApplications, Runtime: "r1", Namespace: "web"}, "", ""},
		{"unknown kind", Rule{TeamID: "t", Action: ActRead, Kind: "widgets"}, "kind", "projects, pipelines, builds, contexts, runtimes, clusters, applications, gitsources"},
		{"unknown action", Rule{TeamID: "t", Action: "fly", Kind: KindPipelines}, "action", "create, read, update, delete, run, approve, sync, terminate"},
		{"action not of kind", Rule{TeamID: "t", Action: ActApprove, Kind: KindPipelines}, "action", "create, read, update, delete, run"},
		{"no subject", Rule{Action: ActRead, Kind: KindPipelines}, "team", ""},
		{"both subjects", Rule{TeamID: "t", UserID: "u", Action: ActRead, Kind: KindPipelines}, "team", ""},
		{"tags on runtimes", Rule{TeamID: "t", Action: ActRead, Kind: KindRuntimes, Tags: []string{"x"}}, "tags", "projects, pipelines and builds"},
		{"namespace on pipelines", Rule{TeamID: "t", Action: ActRead, Kind: KindPipelines, Namespace: "web"}, "namespace", "applications"},
		{"bad tag", Rule{TeamID: "t", Action: ActRead, Kind: KindPipelines, Tags: []string{"-x"}}, "tags[0]", "not a tag"},
		{"too many tags", Rule{TeamID: "t", Action: ActRead, Kind: KindPipelines, Tags: make([]string, MaxRuleTags+1)}, "tags", "more than 32"},
		{"owner ok", Rule{TeamID: "t", Action: ActRead, Kind: KindWorkflows, Owner: OwnTeam}, "", ""},
		{"owner on contexts", Rule{TeamID: "t", Action: ActRead, Kind: KindContexts, Owner: OwnTeam, OwnerName: OwnTeam}, "owner", "does not apply to contexts"},
	}
	for _, c := range cases {
		err := c.rule.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if errdefs.Field(err) != c.field || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%s: error %v, want field %s naming %q", c.name, err, c.field, c.say)
		}
	}
}

func TestAuthorize(t *testing.T) {
	prodRun := &Rule{ID: "r1", Subject: "team dev", Action: ActRun, Kind: KindPipelines, Tags: []string{"prod", "live"}}
	webSync := &Rule{ID: "r2", Subject: "user a@x", Action: ActSync, Kind: KindApplications, Namespace: "web", Cluster: "c1"}
	rules := NewRules([]Kind{KindPipelines, KindApplications}, []*Rule{prodRun, webSync})
	member := Principal{AccountID: "acc", Role: Member, Rules: rules}
	viewer := Principal{AccountID: "acc", Role: Viewer, Rules: rules}
	admin := Principal{AccountID: "acc", Role: Admin, Rules: NewRules([]Kind{KindPipelines}, nil)}
	nobody := Principal{AccountID: "acc", Role: Member, Rules: NewRules([]Kind{KindPipelines, KindApplications}, nil)}
	pipe := func(tags ...string) Resource {
		return Resource{Kind: KindPipelines, Name: "p/x", Attrs: Attributes{Tags: tags}}
	}
	app := Resource{Kind: KindApplications, Name: "rt/shop", Attrs: Attributes{Runtime: "rt", Cluster: "c1", Namespace: "web"}}
	cases := []struct {
		name string
		p    Principal
		a    Action
		res  Resource
		ok   bool
	}{
		{"rule with a matching tag", member, ActRun, pipe("live"), true},
		{"rule without a matching tag", member, ActRun, pipe("dev"), false},
		{"untagged pipeline", member, ActRun, pipe(), false},
		{"action no rule names", member, ActRead, pipe("prod"), false},
		{"role below the action's permission", viewer, ActRun, pipe("prod"), false},
		{"kind no rule governs", nobody, ActRun, Resource{Kind: KindBuilds, Name: "b1"}, true},
		{"governed kind, no rules for the user", nobody, ActRead, pipe("prod"), false},
		{"admins are not bound", admin, ActDelete, pipe(), true},
		{"gitops attributes match", member, ActSync, app, true},
		{"other namespace", member, ActSync, Resource{Kind: KindApplications, Name: "rt/db", Attrs: Attributes{Runtime: "rt", Cluster: "c1", Namespace: "db"}}, false},
		{"action not of the kind", admin, ActApprove, pipe(), false},
		{"no rules at all", Principal{AccountID: "acc", Role: Member}, ActRun, pipe(), true},
	}
	for _, c := range cases {
		err := Authorize(c.p, c.a, c.res)
		if (err == nil) != c.ok {
			t.Errorf("%s: Authorize = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("%s: %v is not ErrForbidden", c.name, err)
		}
		if d := Explain(c.p, c.a, c.res); d.Allowed != c.ok || len(d.Reasons) == 0 {
			t.Errorf("%s: Explain = %+v, want allowed=%v (as Authorize)", c.name, d, c.ok)
		}
	}
	d := Explain(member, ActRun, pipe("dev"))
	if !d.Governed || d.Rule != nil || !strings.Contains(strings.Join(d.Reasons, "\n"), "has none of the tags prod, live") {
		t.Fatalf("Explain of a refusal does not say which rule failed and why: %+v", d)
	}
	d = Explain(member, ActRun, pipe("prod"))
	if d.Rule != prodRun || !strings.Contains(d.Reasons[len(d.Reasons)-1], "team dev may run pipelines tagged prod or live") {
		t.Fatalf("Explain of an allowance does not name the rule: %+v", d)
	}
	if d := Explain(viewer, ActRun, pipe("prod")); d.RoleOK || !strings.Contains(d.Reasons[0], "needs role member") {
		t.Fatalf("Explain of a role refusal: %+v", d)
	}
}

// Owner rules: own-team for a team's rule is the team itself, for a user's rule a team the user
// is in; a named owner is that team (by ID, so another account's team of the same name cannot
// match); no owner matches nothing an owner rule names; rules without owner are as before.
func TestAuthorizeByOwner(t *testing.T) {
	webOwn := &Rule{ID: "r1", TeamID: "tm-web", Subject: "team web", Action: ActRead, Kind: KindPipelines, Owner: OwnTeam}
	userOwn := &Rule{ID: "r2", UserID: "u1", Subject: "user a@x", Action: ActRun, Kind: KindPipelines, Owner: OwnTeam}
	named := &Rule{ID: "r3", UserID: "u1", Subject: "user a@x", Action: ActSync, Kind: KindApplications, Owner: "tm-data", OwnerName: "data"}
	tagged := &Rule{ID: "r4", UserID: "u1", Subject: "user a@x", Action: ActDelete, Kind: KindPipelines, Tags: []string{"prod"}}
	gov := []Kind{KindPipelines, KindApplications}
	inWeb := Principal{AccountID: "acc", Role: Member, Rules: NewRules(gov, []*Rule{webOwn, userOwn, named, tagged}, "tm-web")}
	inNone := Principal{AccountID: "acc", Role: Member, Rules: NewRules(gov, []*Rule{userOwn, named, tagged})}
	pipe := func(owner string, tags ...string) Resource {
		return Resource{Kind: KindPipelines, Name: "p/x", Attrs: Attributes{Tags: tags, Owner: owner}}
	}
	app := func(owner string) Resource {
		return Resource{Kind: KindApplications, Name: "rt/a", Attrs: Attributes{Runtime: "rt", Owner: owner}}
	}
	cases := []struct {
		name string
		p    Principal
		a    Action
		res  Resource
		ok   bool
	}{
		{"team rule, owned by the team", inWeb, ActRead, pipe("tm-web"), true},
		{"team rule, owned by another team", inWeb, ActRead, pipe("tm-data"), false},
		{"team rule, owned by no team", inWeb, ActRead, pipe(""), false},
		{"user rule, owned by a team of theirs", inWeb, ActRun, pipe("tm-web"), true},
		{"user rule, owned by a team not theirs", inWeb, ActRun, pipe("tm-data"), false},
		{"user rule, user in no team", inNone, ActRun, pipe("tm-web"), false},
		{"named owner", inNone, ActSync, app("tm-data"), true},
		{"named owner, other team", inWeb, ActSync, app("tm-web"), false},
		{"named owner, unowned", inWeb, ActSync, app(""), false},
		{"tag rule ignores owner", inNone, ActDelete, pipe("tm-data", "prod"), true},
	}
	for _, c := range cases {
		if err := Authorize(c.p, c.a, c.res); (err == nil) != c.ok {
			t.Errorf("%s: Authorize = %v, want ok=%v", c.name, err, c.ok)
		}
		if d := Explain(c.p, c.a, c.res); d.Allowed != c.ok {
			t.Errorf("%s: Explain = %+v, want allowed=%v (as Authorize)", c.name, d, c.ok)
		}
	}
	if !inWeb.OwnerMatters(KindPipelines) || (Principal{AccountID: "acc", Role: Member, Rules: NewRules(gov, []*Rule{tagged})}).OwnerMatters(KindPipelines) {
		t.Fatal("OwnerMatters does not follow the user's rules")
	}
	res := pipe("tm-web")
	res.Attrs.OwnerName = "web"
	d := Explain(inWeb, ActRead, res)
	all := strings.Join(d.Reasons, "\n")
	if !strings.Contains(all, "owner: pipelines/p/x is owned by team web") || !strings.Contains(all, "rule r1 allows it (team web may read pipelines owned by the team); pipelines/p/x is owned by team web, the rule's own team") {
		t.Fatalf("Explain of an owner match: %s", all)
	}
	res.Attrs.Owner, res.Attrs.OwnerName = "tm-data", "data"
	if d := Explain(inWeb, ActRead, res); !strings.Contains(strings.Join(d.Reasons, "\n"), "is owned by team data, not by the rule's team web") {
		t.Fatalf("Explain of an owner mismatch: %v", d.Reasons)
	}
	if d := Explain(inNone, ActSync, app("")); !strings.Contains(strings.Join(d.Reasons, "\n"), "is owned by no team, not by team data") {
		t.Fatalf("Explain of an unowned resource: %v", d.Reasons)
	}
}
