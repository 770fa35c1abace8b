package host_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// TestApplicationSetInGitSource: an ApplicationSet in a Git Source's directory generates
// applications (git directory generator over another repository) that sync; the API shows
// their owner and its kind and refuses to delete them; a push that adds a directory adds an
// application.
func TestApplicationSetInGitSource(t *testing.T) {
	w := newWorld(t)
	cmNamed := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n", name)
	}
	w.source.Commit("main", map[string]string{"envs/dev/cm.yaml": cmNamed("dev"), "envs/qa/cm.yaml": cmNamed("qa")}, "envs")
	appsRepo := gitserver.New(t).NewRepo("apps")
	set := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: envs
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - git:
      repoURL: %s
      revision: main
      directories:
      - path: envs/*
  template:
    metadata:
      name: 'env-{{.path.basename}}'
    spec:
      project: default
      source: {repoURL: %s, targetRevision: main, path: '{{.path.path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: %s}
      syncPolicy: {automated: {prune: true}}
`, w.source.URL(), w.source.URL(), w.ns)
	appsRepo.Commit("main", map[string]string{"prod/envs.yaml": set}, "appset")
	gs := fmt.Sprintf("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: apps}\nspec:\n  repoURL: %s\n  path: prod\n  destination: {name: in-cluster, namespace: %s}\n", appsRepo.URL(), w.ns)
	var e struct {
		Error struct{ Code, Message, Field string }
	}
	if code := w.call("member", "POST", "git-sources", gs, &e); code != http.StatusCreated {
		t.Fatalf("create git source: %d %+v", code, e)
	}
	for _, name := range []string{"env-dev", "env-qa"} {
		a := w.waitApp(name, synced)
		if a.Owner != "envs" || a.OwnerKind != engine.KindApplicationSet || !strings.Contains(a.File, "prod/envs.yaml") {
			t.Errorf("%s: owner %q kind %q file %q", name, a.Owner, a.OwnerKind, a.File)
		}
	}
	var raw map[string]any
	w.call("viewer", "GET", "applications/env-dev", "", &raw)
	if raw["ownerKind"] != "ApplicationSet" {
		t.Errorf("API answer has ownerKind %v", raw["ownerKind"])
	}
	if code := w.call("member", "DELETE", "applications/env-dev", "", &e); code != http.StatusConflict || !strings.Contains(e.Error.Message, "ApplicationSet") {
		t.Errorf("deleting a generated app: %d %+v", code, e)
	}
	w.source.Commit("main", map[string]string{"envs/prod/cm.yaml": cmNamed("prod")}, "prod")
	w.call("member", "POST", "notify", fmt.Sprintf(`{"repoURL": %q, "revision": "main"}`, w.source.URL()), nil)
	w.waitApp("env-prod", synced)
	sets := w.h.ApplicationSets()
	if len(sets) != 1 || sets[0].Name != "envs" || len(sets[0].Applications) != 3 {
		t.Errorf("ApplicationSets %+v", sets)
	}
}

// TestApplicationSetInInstallationRepository: an ApplicationSet in apps/ generates its
// applications; a file that no longer decodes keeps them (and the component health says why);
// removing the file deletes them.
func TestApplicationSetInInstallationRepository(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "green")}, "web")
	cache, err := git.NewCache(t.TempDir(), git.Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(ch git.FileChange) {
		t.Helper()
		if _, err := cache.Commit(ctx, git.Repo{URL: w.repo}, git.CommitRequest{Message: "edit", Author: git.Signature{Name: "t", Email: "t@example.com"}, Changes: []git.FileChange{ch}}); err != nil {
			t.Fatal(err)
		}
		if err := w.h.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	set := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: webs}
spec:
  generators:
  - list:
      elements:
      - {name: one}
  template:
    metadata: {name: 'web-{{name}}'}
    spec:
      project: default
      source: {repoURL: %s, targetRevision: main, path: web}
      destination: {server: https://kubernetes.default.svc, namespace: %s}
      syncPolicy: {automated: {}}
`, w.source.URL(), w.ns)
	commit(git.FileChange{Path: "apps/webs.yaml", Content: []byte(set)})
	a := w.waitApp("web-one", synced)
	if a.Owner != "webs" || a.OwnerKind != engine.KindApplicationSet || !strings.Contains(a.File, "apps/webs.yaml") {
		t.Errorf("owner %q kind %q file %q", a.Owner, a.OwnerKind, a.File)
	}
	commit(git.FileChange{Path: "apps/webs.yaml", Content: []byte(strings.Replace(set, "generators:", "generatorz:", 1))})
	if c := w.h.Health(); !strings.Contains(c.Message, "generatorz") {
		t.Errorf("health does not name the broken field: %+v", c)
	}
	if code := w.call("viewer", "GET", "applications/web-one", "", nil); code != http.StatusOK {
		t.Errorf("a broken file removed the generated app: %d", code)
	}
	commit(git.FileChange{Path: "apps/webs.yaml", Delete: true})
	deadline := time.Now().Add(30 * time.Second)
	for w.call("viewer", "GET", "applications/web-one", "", nil) != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the generated app outlived its ApplicationSet's file")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
