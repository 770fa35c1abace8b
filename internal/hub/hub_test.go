package hub_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/hub"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

func tmpl(name, version, entrypoint string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: %s
  annotations:
    argo-hub/version: %q
    argo-hub/description: Say hello from %s
    argo-hub/categories: demo, Greetings
    argo-hub/tags: hello
spec:
  entrypoint: %s
  arguments:
    parameters:
      - name: who
        value: world
        description: Whom to greet.
      - name: loud
        enum: ["yes", "no"]
        description: Shout.
  templates:
    - name: main
      metadata:
        annotations:
          argo-hub-template/description: Prints the greeting.
      inputs:
        parameters:
          - name: who
      container:
        image: busybox
        command: [echo, "hello {{inputs.parameters.who}}"]
`, name, version, name, entrypoint)
}

type env struct {
	svc          *hub.Service
	db           *store.DB
	admin        rbac.Principal
	member       rbac.Principal
	repo         *gitserver.Repo
	auditEntries func() []audit.Event
}

func newEnv(t *testing.T, db *store.DB, policy *netpolicy.Policy) *env {
	t.Helper()
	ctx := context.Background()
	id := identity.New(identity.Deps{Store: db, Audit: audit.NewLog(db, nil)})
	if _, err := id.Bootstrap(ctx, "acme", "admin@acme.test", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	login, err := id.Login(ctx, "admin@acme.test", "correct-horse-battery", "")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := git.NewCache(filepath.Join(t.TempDir(), "git"), git.Options{Policy: policy, RefsTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	log := audit.NewLog(db, nil)
	svc, err := hub.New(hub.Deps{Store: db, Audit: log, Git: cache, Net: policy})
	if err != nil {
		t.Fatal(err)
	}
	admin := login.Principal
	member := rbac.Principal{AccountID: admin.AccountID, UserID: admin.UserID, Email: "dev@acme.test", Role: rbac.Member}
	return &env{svc: svc, db: db, admin: admin, member: member, repo: gitserver.New(t).NewRepo("team-hub"),
		auditEntries: func() []audit.Event {
			evs, err := log.List(ctx, admin, audit.Filter{}, pageAll())
			if err != nil {
				t.Fatal(err)
			}
			return evs
		}}
}

func loopback(t *testing.T) *netpolicy.Policy {
	p, err := (netpolicy.Options{PrivateNetworks: []string{"loopback"}}).Policy()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An admin adds a git repository in Argo Hub's layout to the account's catalogue: its valid
// templates join the builtin ones with their versions (newest first), parameters and READMEs;
// a template that fails the workflow engine's lint, one whose name the builtin catalogue has
// and one whose version directory disagrees with its annotation are left out, each reported
// with the repository, the file and the field. A push shows on the next read; a member may
// read but not add; a source that cannot be read is refused naming the field; nothing of a
// refused source is stored.
func TestSourcesFromGit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, loopback(t))
		e.repo.Commit("main", map[string]string{
			"workflows/hello/versions/1.0.0/workflowTemplate.yaml":     tmpl("hello", "1.0.0", "main"),
			"workflows/hello/versions/1.0.0/README.md":                 "# hello 1.0\n<script>alert(1)</script>\n",
			"workflows/hello/versions/1.2.0/workflowTemplate.yaml":     tmpl("hello", "1.2.0", "main"),
			"workflows/hello/README.md":                                "# hello (shared)\n",
			"workflows/broken/versions/0.1.0/workflowTemplate.yaml":    tmpl("broken", "0.1.0", "nope"),
			"workflows/git-clone/versions/9.0.0/workflowTemplate.yaml": tmpl("git-clone", "9.0.0", "main"),
			"workflows/skew/versions/2.0.0/workflowTemplate.yaml":      tmpl("skew", "1.0.0", "main"),
			"README.md": "a hub",
		}, "templates")

		src := hub.Source{Name: "team", URL: e.repo.URL(), Revision: "main", Path: "workflows"}
		if _, err := e.svc.AddSource(ctx, e.member, src); !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("a member added a source: %v", err)
		}
		for _, bad := range []struct {
			src   hub.Source
			field string
		}{
			{hub.Source{Name: "nowhere", URL: e.repo.URL() + "x", Path: "workflows"}, "url"},
			{hub.Source{Name: "nopath", URL: e.repo.URL(), Path: "templates"}, "path"},
			{hub.Source{Name: "up", URL: e.repo.URL(), Path: "../etc"}, "path"},
			{hub.Source{Name: "Bad_Name", URL: e.repo.URL()}, "name"},
			{hub.Source{Name: "builtin", URL: e.repo.URL()}, "name"},
			{hub.Source{Name: "creds", URL: "https://user:secret@example.com/x.git"}, "url"},
			{hub.Source{Name: "rev", URL: e.repo.URL(), Revision: "--upload-pack=x"}, "revision"},
		} {
			_, err := e.svc.AddSource(ctx, e.admin, bad.src)
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field != bad.field {
				t.Errorf("source %+v: %v, want an error naming %s", bad.src, err, bad.field)
			}
		}
		if rows, _ := db.ListHubSources(ctx, e.admin.AccountID); len(rows) != 0 {
			t.Fatalf("refused sources were stored: %+v", rows)
		}

		st, err := e.svc.AddSource(ctx, e.admin, src)
		if err != nil {
			t.Fatal(err)
		}
		if st.Templates != 2 || len(st.Commit) != 40 { // hello and git-clone (dropped in the listing); broken and skew are out
			t.Errorf("added source status: %+v", st)
		}
		cat, err := e.svc.List(ctx, e.member, hub.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var hello *hub.Template
		names := map[string]string{}
		for i, tp := range cat.Templates {
			names[tp.Name] = tp.Source
			if tp.Name == "hello" {
				hello = &cat.Templates[i]
			}
		}
		if names["git-clone"] != hub.BuiltinSource || names["build-image"] != hub.BuiltinSource || names["broken"] != "" || names["skew"] != "" {
			t.Errorf("catalogue names and sources: %v", names)
		}
		if hello == nil || hello.Source != "team" || len(hello.Versions) != 2 || hello.Latest().Version != "1.2.0" || hello.Description != "Say hello from hello" {
			t.Fatalf("hello: %+v", hello)
		}
		l := hello.Latest()
		if l.README != "# hello (shared)\n" || len(l.Parameters) != 2 || !l.Parameters[1].Required || l.Parameters[0].Default != "world" ||
			strings.Join(l.Parameters[1].Enum, ",") != "yes,no" || strings.Join(hello.Categories, ",") != "demo,greetings" ||
			len(l.Templates) != 1 || l.Templates[0].Description != "Prints the greeting." || l.File != "hello/versions/1.2.0/workflowTemplate.yaml" {
			t.Errorf("hello 1.2.0: %+v", l)
		}
		if len(cat.Sources) != 1 {
			t.Fatalf("sources: %+v", cat.Sources)
		}
		errs := strings.Join(cat.Sources[0].Errors, "\n")
		for _, want := range []string{
			"hub source team (" + e.repo.URL() + " at main): workflows/broken/versions/0.1.0/workflowTemplate.yaml: spec.entrypoint: \"nope\"",
			"workflows/skew/versions/2.0.0/workflowTemplate.yaml: metadata.annotations.argo-hub/version: \"1.0.0\" must be the version's directory name \"2.0.0\"",
			"git-clone: left out: the name is taken by the builtin template",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("source errors lack %q:\n%s", want, errs)
			}
		}

		_, v, err := e.svc.Get(ctx, e.member, "hello", "1.0.0")
		if err != nil || v.README != "# hello 1.0\n<script>alert(1)</script>\n" || !strings.Contains(v.Manifest, `argo-hub/version: "1.0.0"`) {
			t.Errorf("hello 1.0.0: %+v %v", v, err)
		}
		var fe *errdefs.FieldError
		if _, _, err := e.svc.Get(ctx, e.member, "hello", "3.0.0"); !errors.As(err, &fe) || fe.Field != "version" || !strings.Contains(fe.Reason, "1.2.0, 1.0.0") {
			t.Errorf("an unknown version: %v", err)
		}
		if _, _, err := e.svc.Get(ctx, e.member, "absent", ""); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("an unknown template: %v", err)
		}
		if cat, _ := e.svc.List(ctx, e.member, hub.Filter{Search: "GREET"}); len(cat.Templates) != 1 || cat.Templates[0].Name != "hello" {
			t.Errorf("search: %+v", cat.Templates)
		}
		if cat, _ := e.svc.List(ctx, e.member, hub.Filter{Category: "gitops"}); len(cat.Templates) != 1 || cat.Templates[0].Name != "promote-image-tag" {
			t.Errorf("category: %+v", cat.Templates)
		}

		// A push: the next read has the new version.
		e.repo.Commit("main", map[string]string{"workflows/hello/versions/1.3.0-rc.1/workflowTemplate.yaml": tmpl("hello", "1.3.0-rc.1", "main")}, "rc")
		if _, tp, err := e.svc.Get(ctx, e.member, "hello", ""); err != nil || tp.Version != "1.3.0-rc.1" {
			t.Errorf("after a push, latest: %+v %v", tp.Version, err)
		}

		if _, err := e.svc.AddSource(ctx, e.admin, src); !errors.Is(err, errdefs.ErrConflict) {
			t.Errorf("the same name twice: %v", err)
		}
		if err := e.svc.DeleteSource(ctx, e.member, "team"); !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("a member deleted a source: %v", err)
		}
		if err := e.svc.DeleteSource(ctx, e.admin, "team"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.Get(ctx, e.member, "hello", ""); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("a deleted source's template: %v", err)
		}
		var actions []string
		for _, ev := range e.auditEntries() {
			if strings.HasPrefix(ev.Action, "hub.") {
				actions = append(actions, ev.Action+":"+ev.Result)
			}
		}
		if s := strings.Join(actions, " "); !strings.Contains(s, "hub.source.create:success") || !strings.Contains(s, "hub.source.delete:success") || !strings.Contains(s, "hub.source.create:denied") {
			t.Errorf("audit: %s", s)
		}
	})
}

// The operator's policy for URLs from tenants applies to hub sources: a loopback repository is
// refused when the policy does not allow private addresses, naming the field.
func TestSourceURLPolicy(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	p, err := (netpolicy.Options{}).Policy()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, db, p)
	e.repo.Commit("main", map[string]string{"hello/versions/1.0.0/workflowTemplate.yaml": tmpl("hello", "1.0.0", "main")}, "t")
	_, err = e.svc.AddSource(context.Background(), e.admin, hub.Source{Name: "local", URL: e.repo.URL()})
	var fe *errdefs.FieldError
	if !errors.As(err, &fe) || fe.Field != "url" {
		t.Fatalf("a loopback repository under the default policy: %v", err)
	}
	if _, err := e.svc.AddSource(context.Background(), e.admin, hub.Source{Name: "file", URL: "file://" + e.repo.Dir()}); !errors.As(err, &fe) || fe.Field != "url" {
		t.Fatalf("a file:// repository: %v", err)
	}
}

// "Use this template" checks what it can before reaching a runtime: the runtime and Git
// Source are required, the version must exist, a new name must be a name; each refusal is
// audited.
func TestUseRefusals(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newEnv(t, db, loopback(t))
	ctx := context.Background()
	for _, c := range []struct {
		req   hub.UseRequest
		field string
	}{
		{hub.UseRequest{Template: "git-clone", GitSource: "ci"}, "runtime"},
		{hub.UseRequest{Template: "git-clone", Runtime: "prod"}, "gitSource"},
		{hub.UseRequest{Template: "git-clone", Runtime: "prod", GitSource: "ci", Version: "7.0.0"}, "version"},
		{hub.UseRequest{Template: "git-clone", Runtime: "prod", GitSource: "ci", Name: "Not A Name"}, "name"},
	} {
		_, err := e.svc.Use(ctx, e.member, c.req)
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("use %+v: %v, want an error naming %s", c.req, err, c.field)
		}
	}
	n := 0
	for _, ev := range e.auditEntries() {
		if ev.Action == "hub.template.use" && ev.Result == "failure" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("audited refusals: %d, want 4", n)
	}
}

func pageAll() paging.Page { return paging.Page{Limit: paging.MaxLimit} }

// A source whose every template is broken is still added (its repository and path are
// readable): each file is reported, none joins the catalogue.
func TestSourceOfBrokenTemplates(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newEnv(t, db, loopback(t))
	e.repo.Commit("main", map[string]string{
		"a/versions/1.0.0/workflowTemplate.yaml": strings.Replace(tmpl("a", "1.0.0", "main"), "      container:", "      outputs: {parameters: [{name: o, valueFrom: {jsonPath: x}}]}\n      container:", 1),
		"b/versions/1.0.0/workflowTemplate.yaml": "kind: [",
		"c/versions/1.0.0/README.md":             "no manifest",
	}, "broken")
	st, err := e.svc.AddSource(context.Background(), e.admin, hub.Source{Name: "broken", URL: e.repo.URL()})
	if err != nil {
		t.Fatal(err)
	}
	errs := strings.Join(st.Errors, "\n")
	if st.Templates != 0 || len(st.Errors) != 3 || !strings.Contains(errs, "a/versions/1.0.0/workflowTemplate.yaml: spec.templates[0].outputs.parameters[0].valueFrom.jsonPath") ||
		!strings.Contains(errs, "b/versions/1.0.0/workflowTemplate.yaml: workflowTemplate.yaml: is not YAML") || !strings.Contains(errs, "c/versions/1.0.0/workflowTemplate.yaml: is missing") {
		t.Errorf("status: %+v", st)
	}
}
