package app_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

func mustApp(t *testing.T, doc string) *app.Application {
	t.Helper()
	a, err := app.DecodeApplication([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestProjectPermits(t *testing.T) {
	proj, err := app.DecodeAppProject([]byte(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: team-a
spec:
  sourceRepos:
    - https://github.com/team-a/*
    - '!https://github.com/team-a/secret*'
    - git@gitlab.example.com:platform/manifests.git
  destinations:
    - server: https://kubernetes.default.svc
      namespace: team-a-*
    - name: staging
      namespace: '*'
    - server: '*'
      namespace: '!kube-system'
`))
	if err != nil {
		t.Fatal(err)
	}
	app1 := func(repo, server, name, ns string) *app.Application {
		a := &app.Application{Metadata: app.ObjectMeta{Name: "web"}, Spec: app.ApplicationSpec{
			Project: "team-a", Source: &app.Source{RepoURL: repo},
			Destination: app.Destination{Server: server, Name: name, Namespace: ns},
		}}
		return a
	}
	for _, tc := range []struct {
		name string
		a    *app.Application
		deny string // "" = permitted; else a substring of the error
	}{
		{"repo glob", app1("https://github.com/team-a/web.git", "https://kubernetes.default.svc", "", "team-a-web"), ""},
		{"repo normalized", app1("HTTPS://GitHub.com/team-a/web/", "https://kubernetes.default.svc", "", "team-a-web"), ""},
		{"scp repo vs ssh", app1("ssh://git@gitlab.example.com/platform/manifests", "https://kubernetes.default.svc", "", "team-a-x"), ""},
		{"repo not listed", app1("https://github.com/team-b/web", "https://kubernetes.default.svc", "", "team-a-web"), `source repository https://github.com/team-b/web is not permitted in project "team-a"; spec.sourceRepos allows "https://github.com/team-a/*"`},
		{"repo denied", app1("https://github.com/team-a/secrets", "https://kubernetes.default.svc", "", "team-a-web"), `denied in project "team-a" by spec.sourceRepos "!https://github.com/team-a/secret*"`},
		{"dest by name", app1("https://github.com/team-a/web", "", "staging", "anything"), ""},
		{"namespace glob miss is caught by catch-all", app1("https://github.com/team-a/web", "https://kubernetes.default.svc", "", "other"), ""},
		{"denied namespace", app1("https://github.com/team-a/web", "https://kubernetes.default.svc", "", "kube-system"), `destination https://kubernetes.default.svc namespace="kube-system" is denied`},
		{"name not listed", app1("https://github.com/team-a/web", "", "prod", "x"), `destination name=prod namespace="x" is not permitted in project "team-a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := proj.Permits(tc.a)
			if tc.deny == "" {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, errdefs.ErrForbidden) || !strings.Contains(err.Error(), tc.deny) {
				t.Fatalf("err = %v, want permission denied containing %q", err, tc.deny)
			}
		})
	}
	other := app1("https://github.com/team-a/web", "https://kubernetes.default.svc", "", "team-a-x")
	other.Spec.Project = "team-b"
	if err := proj.Permits(other); err == nil || !strings.Contains(err.Error(), `belongs to project "team-b"`) {
		t.Errorf("app of another project: %v", err)
	}
	if err := app.NewDefaultProject().Permits(mustApp(t, base)); err != nil {
		t.Errorf("default project denied guestbook: %v", err)
	}
}

func TestProjectPermitsResource(t *testing.T) {
	data, _ := os.ReadFile("testdata/project.yaml")
	proj, err := app.DecodeAppProject(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group, kind string
		namespaced  bool
		ok          bool
	}{
		{"", "Namespace", false, true},
		{"rbac.authorization.k8s.io", "ClusterRole", false, false}, // not whitelisted
		{"apps", "Deployment", true, true},
		{"", "Service", true, true},
		{"", "ConfigMap", true, false},     // not in the namespaced whitelist
		{"", "ResourceQuota", true, false}, // blacklisted
	} {
		err := proj.PermitsResource(tc.group, tc.kind, tc.namespaced)
		if (err == nil) != tc.ok {
			t.Errorf("%s/%s namespaced=%v: err = %v, want ok=%v", tc.group, tc.kind, tc.namespaced, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, errdefs.ErrForbidden) || !strings.Contains(err.Error(), tc.kind)) {
			t.Errorf("error %v does not name %s", err, tc.kind)
		}
	}
	open := &app.AppProject{Metadata: app.ObjectMeta{Name: "open"}}
	if err := open.PermitsResource("", "ConfigMap", true); err != nil {
		t.Errorf("no namespaced whitelist allows all: %v", err)
	}
	if err := open.PermitsResource("", "Namespace", false); err == nil {
		t.Errorf("an empty cluster whitelist allows nothing cluster-scoped")
	}
	closed := &app.AppProject{Metadata: app.ObjectMeta{Name: "closed"}, Spec: app.AppProjectSpec{NamespaceResourceWhitelist: []app.GroupKind{}}}
	if err := closed.PermitsResource("", "ConfigMap", true); err == nil {
		t.Errorf("an explicit empty namespaced whitelist allows nothing")
	}
	// The decoder keeps "[]" distinct from absent, as Argo CD does.
	p, err := app.DecodeAppProject([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p}\nspec:\n  namespaceResourceWhitelist: []\n"))
	if err != nil || p.Spec.NamespaceResourceWhitelist == nil {
		t.Errorf("decoded [] as %#v, %v", p.Spec.NamespaceResourceWhitelist, err)
	}
}

func TestProjectErrors(t *testing.T) {
	for _, tc := range []struct{ doc, path, contains string }{
		{"spec:\n  syncWindows:\n    - {kind: permit, schedule: '0 22 * * *', duration: 1h, applications: ['*']}\n", "spec.syncWindows[0].kind", `must be "allow" or "deny"`},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 25 * * *', duration: 1h, applications: ['*']}\n", "spec.syncWindows[0].schedule", "is not a valid cron expression"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 0 22 * * *', duration: 1h, applications: ['*']}\n", "spec.syncWindows[0].schedule", "has 6 fields"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '@daily', duration: 1h, applications: ['*']}\n", "spec.syncWindows[0].schedule", "descriptor"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 0 30 2 *', duration: 1h, applications: ['*']}\n", "spec.syncWindows[0].schedule", "never matches"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 22 * * *', duration: 1 hour, applications: ['*']}\n", "spec.syncWindows[0].duration", `e.g. "30m"`},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 22 * * *', duration: 0s, applications: ['*']}\n", "spec.syncWindows[0].duration", "positive"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 22 * * *', duration: 1h, timeZone: Europe/Atlantis, applications: ['*']}\n", "spec.syncWindows[0].timeZone", "not a known time zone"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 22 * * *', duration: 1h, applications: ['[']}\n", "spec.syncWindows[0].applications[0]", "not a valid glob"},
		{"spec:\n  syncWindows:\n    - {kind: deny, schedule: '0 22 * * *', duration: 1h, aplications: ['*']}\n", "spec.syncWindows[0].aplications", `did you mean "applications"?`},
		{"spec:\n  destinations:\n    - namespace: x\n", "spec.destinations[0]", "needs server or name"},
		{"spec:\n  clusterResourceWhitelist:\n    - group: ''\n", "spec.clusterResourceWhitelist[0].kind", "is required"},
		{"spec:\n  sourceRepo: ['*']\n", "spec.sourceRepo", `did you mean "sourceRepos"?`},
	} {
		_, err := app.DecodeAppProject([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p}\n" + tc.doc))
		if errdefs.Field(err) != tc.path || !strings.Contains(err.Error(), tc.contains) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: err = %v, want %s: %s with a line", tc.doc, err, tc.path, tc.contains)
		}
	}
}
