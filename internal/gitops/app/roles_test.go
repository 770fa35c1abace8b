package app_test

import (
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

func TestParsePolicy(t *testing.T) {
	p, err := app.ParsePolicy("team", "ci", "p, proj:team:ci, applications, sync, team/*, allow")
	if err != nil || p.Resource != "applications" || p.Action != "sync" || p.Object != "team/*" || !p.Allow {
		t.Fatalf("%+v %v", p, err)
	}
	if p, err := app.ParsePolicy("team", "ci", "p,proj:team:ci,applications,action/apps/Deployment/restart,team/prod/web-*,deny"); err != nil || p.Allow {
		t.Fatalf("%+v %v", p, err)
	}
	for _, c := range []struct{ line, want string }{
		{"p, proj:team:ci, applications, sync, team/*", "has 5 comma-separated fields; want \"p, proj:team:ci, applications, <action>, team/<app>, allow|deny\""},
		{"g, proj:team:ci, applications, sync, team/*, allow", `starts with "g"`},
		{"p, proj:other:ci, applications, sync, team/*, allow", `names subject "proj:other:ci"`},
		{"p, proj:team:ci, clusters, get, team/*, allow", `resource "clusters" is not one a project role may name: applications, applicationsets, logs, exec`},
		{"p, proj:team:ci, applications, destroy, team/*, allow", `action "destroy" is not valid`},
		{"p, proj:team:ci, applications, sync, other/*, allow", `object "other/*" is not valid: use team/<app>`},
		{"p, proj:team:ci, applications, sync, team/a/b/c, allow", `object "team/a/b/c"`},
		{"p, proj:team:ci, applications, sync, team/[, allow", `is not a valid glob`},
		{"p, proj:team:ci, applications, sync, team/*, maybe", `effect "maybe" is not valid: use allow or deny`},
	} {
		if _, err := app.ParsePolicy("team", "ci", c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
		}
	}
}

func TestProjectRoles(t *testing.T) {
	p, err := app.DecodeAppProject([]byte(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team}
spec:
  roles:
  - name: ci
    description: CI syncs
    policies:
    - p, proj:team:ci, applications, sync, team/*, allow
    - p, proj:team:ci, applications, sync, team/*
    groups: [deployers]
    jwtTokens: [{iat: 1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings, "\n")
	for _, want := range []string{`spec.roles[0].policies[1] (role "ci", line 10)`, "has 5 comma-separated fields", "jwtTokens", "in git they are checked, not enforced"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
	if pols := p.RolePolicies("ci"); len(pols) != 1 || pols[0].Action != "sync" {
		t.Errorf("RolePolicies = %+v", pols)
	}
	for _, c := range []struct{ roles, want string }{
		{"[{name: 'bad name'}]", `spec.roles[0].name: "bad name" is not a valid role name`},
		{"[{name: a}, {name: a}]", `spec.roles[1].name: "a" is also the name of spec.roles[0]`},
		{"[{description: x}]", "spec.roles[0].name: is required"},
		{"[{name: a, groups: ['']}]", "spec.roles[0].groups[0]"},
	} {
		_, err := app.DecodeAppProject([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team}\nspec:\n  roles: " + c.roles + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.roles, err, c.want)
		}
	}
}

// FuzzParsePolicy: a project role's policy line (from a project anyone with write access to
// the repository or namespace writes) never panics the parser; what parses names the role's
// own project and a valid effect.
func FuzzParsePolicy(f *testing.F) {
	f.Add("team", "ci", "p, proj:team:ci, applications, sync, team/*, allow")
	f.Add("team", "ci", "p, proj:team:ci, applications, action/apps/Deployment/restart, team/ns/app, deny")
	f.Add("team", "ci", "p,,,,,")
	f.Add("t", "r", "p, proj:t:r, logs, get, t/[, allow")
	f.Fuzz(func(t *testing.T, project, role, line string) {
		p, err := app.ParsePolicy(project, role, line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !strings.HasPrefix(p.Object, project+"/") {
			t.Fatalf("object %q outside project %q", p.Object, project)
		}
	})
}

func TestPermitsSourceNamespace(t *testing.T) {
	p, err := app.DecodeAppProject([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team}\nspec:\n  sourceNamespaces: ['team-*', '!team-secret']\n"))
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"team-a": true, "team-secret": false, "other": false} {
		if err := p.PermitsSourceNamespace(ns); (err == nil) != want {
			t.Errorf("%s: %v, want allowed=%v", ns, err, want)
		} else if err != nil && (!strings.Contains(err.Error(), ns) || !strings.Contains(err.Error(), "team-*, !team-secret")) {
			t.Errorf("%s: %v does not name the namespace and the list", ns, err)
		}
	}
	if err := app.NewDefaultProject().PermitsSourceNamespace("x"); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("default project: %v, want refused (none listed)", err)
	}
	if _, err := app.DecodeAppProject([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team}\nspec:\n  sourceNamespaces: ['[']\n")); err == nil || !strings.Contains(err.Error(), "spec.sourceNamespaces[0]") {
		t.Errorf("bad glob: %v", err)
	}
}
