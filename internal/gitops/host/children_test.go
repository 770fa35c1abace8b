package host_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// An application of the installation repository whose path renders Applications (app of
// apps): its children are applications of the API that name their owner, with the spec the
// engine runs; they cannot be created over or deleted by name; and a child whose project is
// defined in the installation repository uses it.
func TestAppOfAppsThroughTheAPI(t *testing.T) {
	w := newWorld(t)
	w.source.Commit("main", map[string]string{
		"web/cm.yaml":     fmt.Sprintf(cm, "green"),
		"root/child.yaml": strings.Replace(appYAML("child", w.source.URL(), w.ns, true), "project: default", "project: team", 1),
	}, "app of apps")
	project := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team}\nspec:\n  sourceRepos: ['%s']\n  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]\n", w.source.URL())
	commitInstall(t, w, map[string]string{"projects/team.yaml": project})
	root := strings.Replace(appYAML("root", w.source.URL(), w.ns, true), "path: web", "path: root", 1)
	var e struct {
		Error struct{ Code, Message string }
	}
	if code := w.call("member", "POST", "applications", root, &e); code != http.StatusCreated {
		t.Fatalf("create root: %d %+v", code, e)
	}
	child := w.waitApp("child", synced)
	if child.Owner != "root" || child.Spec == nil || child.Spec.Spec.Project != "team" || child.File != "application root" {
		t.Fatalf("child through the API: owner %q file %q spec %+v", child.Owner, child.File, child.Spec)
	}
	var list struct{ Items []host.Application }
	w.call("viewer", "GET", "applications", "", &list)
	owners := map[string]string{}
	for _, a := range list.Items {
		owners[a.Name] = a.Owner
	}
	if owners["child"] != "root" || owners["root"] != "" {
		t.Errorf("owners in the list: %v", owners)
	}
	if data, errs := w.gql("viewer", `{ application(name: "child") { name owner } }`, nil); len(errs) > 0 || data["application"].(map[string]any)["owner"] != "root" {
		t.Errorf("GraphQL owner of child: %v %v", data, errs)
	}
	if code := w.call("member", "DELETE", "applications/child", "", &e); code != http.StatusConflict || !strings.Contains(e.Error.Message, `rendered by application "root"`) {
		t.Errorf("deleting a child by name: %d %+v", code, e)
	}
	if code := w.call("member", "POST", "applications", appYAML("child", w.source.URL(), w.ns, false), &e); code != http.StatusConflict {
		t.Errorf("creating an app over a child: %d %+v", code, e)
	}
	// The reports to the control plane (events or a snapshot) name the owner too.
	deadline := time.Now().Add(10 * time.Second)
	for !w.sink.reported("child", func(a runtimev1.Application) bool { return a.Owner == "root" && a.RepoURL == w.source.URL() }) {
		if time.Now().After(deadline) {
			t.Fatal("no report of child with its owner and spec")
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.waitApp("root", synced)

	// Deleting the parent through the API (cascade, the default) deletes the child and its
	// resources.
	if code := w.call("member", "DELETE", "applications/root", "", nil); code != http.StatusNoContent {
		t.Fatalf("delete root: %d", code)
	}
	if code := w.call("viewer", "GET", "applications/child", "", nil); code != http.StatusNotFound {
		t.Errorf("child after its parent's cascading delete: %d", code)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(context.Background(), "settings", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's ConfigMap survived the parent's cascading delete: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A Git Source whose directory is a Helm chart renders its Applications; they are loaded as
// the source's; the API does not write into a rendered source.
func TestRenderedGitSource(t *testing.T) {
	w := newWorld(t)
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "manifests")
	appsRepo := gitserver.New(t).NewRepo("apps")
	tmpl := "{{- range .Values.apps }}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: {{ . }}}\nspec:\n  project: default\n  source: {repoURL: " +
		w.source.URL() + ", path: web}\n{{- end }}\n"
	appsRepo.Commit("main", map[string]string{
		"chart/Chart.yaml":          "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
		"chart/values.yaml":         "apps: [rs-one, rs-two]\n",
		"chart/templates/apps.yaml": tmpl,
	}, "chart")
	gs := fmt.Sprintf("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: charted}\nspec:\n  repoURL: %s\n  path: chart\n  destination: {name: in-cluster, namespace: %s}\n", appsRepo.URL(), w.ns)
	var e struct {
		Error struct{ Code, Message, Field string }
	}
	if code := w.call("member", "POST", "git-sources", gs, &e); code != http.StatusCreated {
		t.Fatalf("create git source: %d %+v", code, e)
	}
	for _, n := range []string{"rs-one", "rs-two"} {
		a := w.waitApp(n, func(engine.AppStatus) bool { return true })
		if a.Source != "charted" || a.Spec.Spec.Destination.Namespace != w.ns || !strings.Contains(a.File, "chart/templates/apps.yaml") {
			t.Errorf("%s: source %q file %q destination %+v", n, a.Source, a.File, a.Spec.Spec.Destination)
		}
	}
	if code := w.call("member", "POST", "applications?gitSource=charted", appYAML("rs-three", w.source.URL(), w.ns, false), &e); code != http.StatusBadRequest || e.Error.Field != "gitSource" {
		t.Errorf("creating into a rendered source: %d %+v", code, e)
	}
	if code := w.call("member", "DELETE", "applications/rs-one", "", &e); code != http.StatusConflict {
		t.Errorf("deleting an app of a rendered source: %d %+v", code, e)
	}
}

// commitInstall commits files to the world's installation repository and has the host load
// them.
func commitInstall(t *testing.T, w *world, files map[string]string) {
	t.Helper()
	cache, err := git.NewCache(t.TempDir(), git.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var changes []git.FileChange
	for p, c := range files {
		changes = append(changes, git.FileChange{Path: p, Content: []byte(c)})
	}
	ctx := context.Background()
	if _, err := cache.Commit(ctx, git.Repo{URL: w.repo}, git.CommitRequest{Message: "test", Author: git.Signature{Name: "t", Email: "t@example.com"}, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	if err := w.h.Load(ctx); err != nil {
		t.Fatal(err)
	}
}

// reported: some report (an event or a snapshot) carried app in a state ok accepts.
func (s *sink) reported(app string, ok func(runtimev1.Application) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		for _, a := range r.Applications {
			if a.Name == app && ok(a) {
				return true
			}
		}
		for _, e := range r.Events {
			if e.App == app && e.Application != nil && ok(*e.Application) {
				return true
			}
		}
	}
	return false
}

// The roles of an AppProject an application renders (app of apps) are reported to the control
// plane with the runtime's other AppProjects' (it derives rules from them: docs/security.md);
// pruned from the parent, the project's roles are reported gone.
func TestAppOfAppsProjectRolesReported(t *testing.T) {
	w := newWorld(t)
	proj := "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: rendered}\nspec:\n  sourceRepos: ['*']\n" +
		"  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]\n  roles:\n  - name: deployer\n    groups: [qa]\n" +
		"    policies:\n    - p, proj:rendered:deployer, applications, sync, rendered/web-*, allow\n"
	w.source.Commit("main", map[string]string{
		"web/cm.yaml":       fmt.Sprintf(cm, "green"),
		"root/keep.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {a: b}\n",
		"root/project.yaml": proj,
		"root/child.yaml":   strings.Replace(appYAML("child", w.source.URL(), w.ns, true), "project: default", "project: rendered", 1),
	}, "app of apps with a project")
	commitInstall(t, w, map[string]string{"projects/team.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team}\nspec:\n" +
		"  sourceRepos: ['*']\n  roles:\n  - name: viewer\n    groups: [ops]\n    policies:\n    - p, proj:team:viewer, applications, get, team/*, allow\n",
		"apps/root.yaml": strings.Replace(appYAML("root", w.source.URL(), w.ns, true), "path: web", "path: root", 1)})
	w.waitApp("child", synced)
	lastRoles := func() []runtimev1.ProjectRoleRecord {
		evs := w.sink.events(runtimev1.ProjectRolesListed, "")
		if len(evs) == 0 {
			return nil
		}
		return evs[len(evs)-1].ProjectRoles
	}
	want := []runtimev1.ProjectRoleRecord{
		{Project: "team", Role: "viewer", Groups: []string{"ops"}, Policies: []runtimev1.ProjectPolicyRecord{{Resource: "applications", Action: "get", Object: "*", Allow: true}}},
		{Project: "rendered", Role: "deployer", Groups: []string{"qa"}, Policies: []runtimev1.ProjectPolicyRecord{{Resource: "applications", Action: "sync", Object: "web-*", Allow: true}}},
	}
	deadline := time.Now().Add(30 * time.Second)
	for !reflect.DeepEqual(lastRoles(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("roles reported: %+v, want %+v", lastRoles(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The parent no longer renders the project (nor its app): its roles are reported gone.
	w.source.Delete("main", "no project", "root/project.yaml", "root/child.yaml")
	w.call("member", "POST", "applications/root/refresh", "", nil)
	deadline = time.Now().Add(30 * time.Second)
	for !reflect.DeepEqual(lastRoles(), want[:1]) {
		if time.Now().After(deadline) {
			t.Fatalf("roles reported after the prune: %+v, want %+v", lastRoles(), want[:1])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
