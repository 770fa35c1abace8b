package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

func TestMain(m *testing.M) { kube.Main(m) }

// sink records what the host reports.
type sink struct {
	mu   sync.Mutex
	reqs []runtimev1.ReportRequest
}

func (s *sink) send(_ context.Context, r runtimev1.ReportRequest) error {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
	return nil
}

func (s *sink) events(typ, app string) []runtimev1.AppEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []runtimev1.AppEvent
	for _, r := range s.reqs {
		for _, e := range r.Events {
			if e.Type == typ && e.App == app {
				out = append(out, e)
			}
		}
	}
	return out
}

type world struct {
	t      *testing.T
	h      *host.Host
	api    http.Handler
	ns     string
	source *gitserver.Repo
	kc     kubernetes.Interface
	sink   *sink
	repo   string
	dir    string
	opts   host.Options
	stop   func() // stops the host (idempotent)
}

func newWorld(t *testing.T) *world { return newWorldWith(t, nil) }

// newWorldWith is newWorld with its host's options adjusted by opt (the namespace is given).
func newWorldWith(t *testing.T, opt func(ns string, o *host.Options)) *world {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	srv := gitserver.New(t)
	source := srv.NewRepo("manifests")
	dir := t.TempDir()
	repoURL, err := host.InitLocalRepo(filepath.Join(dir, "installation.git"))
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{}
	o := host.Options{Dir: dir, InstallRepo: git.Repo{URL: repoURL}, InCluster: c.RESTConfig(), Sink: s.send,
		ClusterStore: host.FileClusterStore{Dir: filepath.Join(dir, "clusters")},
		Engine: engine.Options{InventoryNamespace: ns, PollStep: 100 * time.Millisecond, EventDebounce: 50 * time.Millisecond,
			HealthTimeout: 40 * time.Second}}
	if opt != nil {
		opt(ns, &o)
	}
	h, err := host.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, h: h, api: h.Handler(), ns: ns, source: source, kc: kc, sink: s, repo: repoURL, dir: dir, opts: o, stop: stop}
}

// call sends a request to the applications API as role and decodes the answer into out.
func (w *world) call(role, method, path string, body string, out any) int {
	w.t.Helper()
	req := httptest.NewRequest(method, host.APIPrefix+path, strings.NewReader(body))
	if role != "" {
		req.Header.Set(wire.HeaderAccount, "acc-1")
		req.Header.Set(wire.HeaderRole, role)
		req.Header.Set(wire.HeaderEmail, "dev@example.com")
	}
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			w.t.Fatalf("%s %s: %d %q: %v", method, path, rec.Code, rec.Body.String(), err)
		}
	}
	return rec.Code
}

func (w *world) waitApp(name string, ok func(engine.AppStatus) bool) host.Application {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var a host.Application
	for {
		code := w.call("viewer", "GET", "applications/"+name, "", &a)
		if code == http.StatusOK && ok(a.Status) {
			return a
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("application %s: waited too long; last answer %d %+v", name, code, a.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const cm = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: %s
`

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

func appYAML(name, repo, ns string, automated bool) string {
	s := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  labels: {team: web}
spec:
  project: default
  source: {repoURL: %s, path: web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, name, repo, ns)
	if automated {
		s += "  syncPolicy: {automated: {prune: true}}\n"
	}
	return s
}

func synced(st engine.AppStatus) bool {
	return st.Sync == engine.Synced && st.Health.Status == "Healthy"
}

func TestApplicationLifecycleThroughTheAPI(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue"), "web/deploy.yaml": deploy}, "first")

	// Create commits to the installation repository; the app is loaded and auto-synced.
	var created host.Application
	if code := w.call("member", "POST", "applications", appYAML("web", w.source.URL(), w.ns, true), &created); code != http.StatusCreated {
		t.Fatalf("create: %d %+v", code, created)
	}
	if created.File != "apps/web.yaml" || created.Spec == nil || created.Spec.Spec.Source.Path != "web" {
		t.Errorf("created %+v: want file apps/web.yaml with the spec", created)
	}
	w.waitApp("web", synced)
	got, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || got.Data["color"] != "blue" {
		t.Fatalf("ConfigMap after auto-sync: %v %v", got.Data, err)
	}

	// Creating it again conflicts; a viewer cannot create; no identity at all is refused.
	var e struct {
		Error struct{ Code, Message, Field string }
	}
	if code := w.call("member", "POST", "applications", appYAML("web", w.source.URL(), w.ns, true), &e); code != http.StatusConflict {
		t.Errorf("second create: %d %+v, want 409", code, e)
	}
	if code := w.call("viewer", "POST", "applications/web/sync", "{}", &e); code != http.StatusForbidden || e.Error.Code != "permission_denied" {
		t.Errorf("viewer sync: %d %+v, want 403", code, e)
	}
	if code := w.call("", "GET", "applications", "", &e); code != http.StatusUnauthorized {
		t.Errorf("no identity: %d, want 401", code)
	}
	// Bad input names the field and creates nothing.
	bad := strings.Replace(appYAML("broken", w.source.URL(), w.ns, false), "project:", "projekt:", 1)
	if code := w.call("admin", "POST", "applications", bad, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "spec.projekt") {
		t.Errorf("bad create: %d %+v, want 400 naming spec.projekt", code, e)
	}
	var list struct{ Items []host.Application }
	w.call("viewer", "GET", "applications", "", &list)
	if len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Errorf("list: %+v, want just web", list.Items)
	}

	// Tree: Deployment → ReplicaSet → Pod.
	var tree struct{ Items []*engine.TreeNode }
	w.call("viewer", "GET", "applications/web/tree", "", &tree)
	var chain []string
	for _, n := range tree.Items {
		if n.Kind == "Deployment" {
			chain = append(chain, n.Kind)
			for _, rs := range n.Children {
				chain = append(chain, rs.Kind)
				for _, p := range rs.Children {
					chain = append(chain, p.Kind)
				}
			}
		}
	}
	if strings.Join(chain, ">") != "Deployment>ReplicaSet>Pod" {
		t.Errorf("tree chain %v, want Deployment>ReplicaSet>Pod", chain)
	}

	// A new commit: diff shows it after a refresh, then a manual sync applies it.
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "green")}, "green")
	var res engine.SyncResult
	if code := w.call("member", "POST", "applications/web/sync", `{"prune": true}`, &res); code != http.StatusOK || res.Phase != engine.PhaseSucceeded {
		t.Fatalf("sync: %d %+v", code, res)
	}
	got, _ = w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
	if got.Data["color"] != "green" {
		t.Errorf("after sync the ConfigMap says %v", got.Data)
	}
	var diff struct{ Items []engine.ResourceDiff }
	w.call("viewer", "GET", "applications/web/diff", "", &diff)
	for _, d := range diff.Items {
		if d.Status != engine.DiffSynced {
			t.Errorf("diff after sync: %s is %s", d.Name, d.Status)
		}
	}
	var hist struct{ Items []engine.HistoryEntry }
	w.call("viewer", "GET", "applications/web/history", "", &hist)
	if len(hist.Items) < 2 {
		t.Fatalf("history: %d entries, want 2", len(hist.Items))
	}
	if last := hist.Items[len(hist.Items)-1]; last.InitiatedBy != engine.InitiatedByUser || last.User != "dev@example.com" || hist.Items[0].User != "" {
		t.Errorf("history records who synced: %+v", hist.Items)
	}

	// Rollback to the first entry switches auto-sync off and restores blue.
	var rb engine.RollbackResult
	if code := w.call("member", "POST", "applications/web/rollback", fmt.Sprintf(`{"id": %d}`, hist.Items[0].ID), &rb); code != http.StatusOK || rb.Result == nil || rb.Result.Phase != engine.PhaseSucceeded || !rb.AutoSyncDisabled {
		t.Fatalf("rollback: %d %+v", code, rb)
	}
	got, _ = w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
	if got.Data["color"] != "blue" {
		t.Errorf("after rollback the ConfigMap says %v", got.Data)
	}

	// Switching auto-sync back on brings the app back to the branch's newest commit.
	var on host.Application
	if code := w.call("member", "POST", "applications/web/auto-sync", `{"enabled": true}`, &on); code != http.StatusOK || on.Status.AutoSyncDisabled {
		t.Fatalf("auto-sync on: %d %+v", code, on.Status)
	}
	deadline0 := time.Now().Add(30 * time.Second)
	for {
		got, _ = w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
		if got.Data["color"] == "green" {
			break
		}
		if time.Now().After(deadline0) {
			t.Fatalf("auto-sync did not bring green back: %v", got.Data)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Reports: the app's state and its finished syncs, with ids.
	deadline := time.Now().Add(5 * time.Second)
	for len(w.sink.events(runtimev1.SyncFinished, "web")) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	fin := w.sink.events(runtimev1.SyncFinished, "web")
	if len(fin) < 4 || fin[0].Sync == nil || fin[0].Sync.ID == 0 || fin[0].Sync.Commit == nil {
		t.Errorf("SyncFinished reports %+v: want 4 with ids and commits", fin)
	}
	// Each reports the commits it brought: the first its own, a rollback none, the sync to
	// green the green commit.
	var kinds []string
	green := false
	for _, ev := range fin {
		if c := ev.Sync.Commits; c != nil {
			kinds = append(kinds, c.Kind)
			green = green || (c.Kind == runtimev1.CommitsRange && len(c.Commits) > 0 && c.Commits[0].Message == "green" && c.From != "")
		} else {
			kinds = append(kinds, "none")
		}
	}
	if len(kinds) < 4 || kinds[0] != runtimev1.CommitsFirst || !slices.Contains(kinds, runtimev1.CommitsRollback) || !green ||
		len(fin[0].Sync.Commits.Commits) != 1 || fin[0].Sync.Commits.Commits[0].SHA != fin[0].Sync.Revision {
		t.Errorf("SyncFinished commit ranges: %v (green range %v)", kinds, green)
	}
	if ch := w.sink.events(runtimev1.AppChanged, "web"); len(ch) == 0 || ch[len(ch)-1].Application.RepoURL != w.source.URL() || ch[0].Application.Labels["team"] != "web" {
		t.Errorf("AppChanged reports lack the spec: %+v", ch)
	}

	// Delete with cascade: the file leaves the repository and the objects leave the cluster.
	if code := w.call("member", "DELETE", "applications/web", "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConfigMap still there after a cascading delete: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := w.call("viewer", "GET", "applications/web", "", nil); code != http.StatusNotFound {
		t.Errorf("get after delete: %d, want 404", code)
	}
	w.h.Load(ctx)
	w.call("viewer", "GET", "applications", "", &list)
	if len(list.Items) != 0 {
		t.Errorf("after delete and reload: %+v", list.Items)
	}
}

// TestBrokenFileKeepsTheApp: a commit that breaks an app's file keeps the app (and says so in
// the component health); removing the file removes the app.
func TestBrokenFileKeepsTheApp(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	if code := w.call("member", "POST", "applications", appYAML("web", w.source.URL(), w.ns, false), nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if c := w.h.Health(); c.Health != runtimev1.ComponentHealthy || !strings.Contains(c.Message, "1 applications") {
		t.Errorf("health %+v", c)
	}
	// Break the file with a direct commit to the installation repository.
	cache, err := git.NewCache(t.TempDir(), git.Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(ch git.FileChange) {
		t.Helper()
		if _, err := cache.Commit(ctx, git.Repo{URL: w.repo}, git.CommitRequest{Message: "edit", Author: git.Signature{Name: "t", Email: "t@example.com"}, Changes: []git.FileChange{ch}}); err != nil {
			t.Fatal(err)
		}
	}
	// The first report of the app already carries its spec's fields, and a change to the spec
	// alone (a label) is reported too.
	labelled := func(team string) bool {
		for _, e := range w.sink.events(runtimev1.AppChanged, "web") {
			if e.Application != nil && e.Application.Labels["team"] == team && e.Application.RepoURL == w.source.URL() {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(5 * time.Second)
	for !labelled("web") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !labelled("web") {
		t.Errorf("no AppChanged report with the app's labels and repository: %+v", w.sink.events(runtimev1.AppChanged, "web"))
	}
	commit(git.FileChange{Path: "apps/web.yaml", Content: []byte(strings.Replace(appYAML("web", w.source.URL(), w.ns, false), "team: web", "team: ops", 1))})
	if err := w.h.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !labelled("ops") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !labelled("ops") {
		t.Errorf("a label change was not reported")
	}

	commit(git.FileChange{Path: "apps/web.yaml", Content: bytes.Replace([]byte(appYAML("web", w.source.URL(), w.ns, false)), []byte("destination:"), []byte("destinatoin:"), 1)})
	if err := w.h.Load(ctx); err != nil {
		t.Fatal(err)
	}
	c := w.h.Health()
	if c.Health != runtimev1.ComponentDegraded || !strings.Contains(c.Message, "apps/web.yaml") || !strings.Contains(c.Message, "destinatoin") {
		t.Errorf("health after a broken file: %+v, want degraded naming the file and field", c)
	}
	if code := w.call("viewer", "GET", "applications/web", "", nil); code != http.StatusOK {
		t.Errorf("the app must survive a broken file: GET %d", code)
	}
	commit(git.FileChange{Path: "apps/web.yaml", Delete: true})
	if err := w.h.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if code := w.call("viewer", "GET", "applications/web", "", nil); code != http.StatusNotFound {
		t.Errorf("after the file is removed: GET %d, want 404", code)
	}
	if c := w.h.Health(); c.Health != runtimev1.ComponentHealthy {
		t.Errorf("health after removing the file: %+v", c)
	}
}

// TestManagedCluster: a second cluster is given to the runtime with a service-account token
// (as `freshet cluster add` does), kept only in the runtime's store, and apps deploy to it by
// name; it survives a restart and can be removed.
func TestManagedCluster(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	managed := kube.New(t)
	mns := managed.Namespace(t)
	mc, err := install.PrepareCluster(ctx, managed.RESTConfig(), "edge", "rt-test", install.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(struct {
		install.ManagedCluster
		Labels map[string]string `json:"labels"`
	}{mc, map[string]string{"env": "edge"}})
	var e struct {
		Error struct{ Code, Message string }
	}
	if code := w.call("member", "POST", "clusters", string(body), &e); code != http.StatusForbidden {
		t.Errorf("member adds a cluster: %d %+v, want 403", code, e)
	}
	bad := mc
	bad.Token = "not-a-token"
	badBody, _ := json.Marshal(bad)
	if code := w.call("admin", "POST", "clusters", string(badBody), &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "does not answer") {
		t.Errorf("a credential that does not work: %d %+v, want 400", code, e)
	}
	if code := w.call("admin", "POST", "clusters", strings.Replace(string(body), `"edge"`, `"in-cluster"`, 1), &e); code != http.StatusBadRequest {
		t.Errorf("a managed cluster named in-cluster: %d, want 400", code)
	}
	var added map[string]string
	if code := w.call("admin", "POST", "clusters", string(body), &added); code != http.StatusCreated || added["version"] == "" {
		t.Fatalf("add cluster: %d %v", code, added)
	}
	states := map[string]string{}
	for _, c := range w.h.ClusterStates() {
		states[c.Name] = c.Health
	}
	if states["edge"] != "healthy" {
		t.Errorf("cluster health after add: %v", states)
	}
	var list struct{ Items []engine.ClusterRef }
	w.call("viewer", "GET", "clusters", "", &list)
	if len(list.Items) != 2 || list.Items[0].Name != "edge" || list.Items[1].Name != "in-cluster" || list.Items[0].Labels["env"] != "edge" {
		t.Errorf("clusters: %+v", list.Items)
	}
	if code := w.call("admin", "POST", "clusters", strings.Replace(string(body), `"env":"edge"`, `"env":"not a value"`, 1), &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "labels[env]") {
		t.Errorf("a cluster label that is not a label value: %d %+v", code, e)
	}
	if raw := fmt.Sprint(list); strings.Contains(raw, mc.Token) {
		t.Error("the cluster list shows the token")
	}

	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "first")
	a := strings.Replace(appYAML("remote", w.source.URL(), mns, true), "server: https://kubernetes.default.svc", "name: edge", 1)
	if code := w.call("member", "POST", "applications", a, nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	w.waitApp("remote", synced)
	mkc, _ := kubernetes.NewForConfig(managed.RESTConfig())
	if got, err := mkc.CoreV1().ConfigMaps(mns).Get(ctx, "settings", metav1.GetOptions{}); err != nil || got.Data["color"] != "blue" {
		t.Errorf("ConfigMap in the managed cluster: %v %v", got, err)
	}
	if _, err := w.kc.CoreV1().ConfigMaps(mns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the app also landed in the runtime's own cluster: %v", err)
	}

	// A Git Source aimed at the managed cluster, and an app created into it through the API:
	// both are commits, and the app deploys to the managed cluster.
	w.source.Commit("main", map[string]string{"jobs/cm.yaml": strings.Replace(fmt.Sprintf(cm, "red"), "name: settings", "name: jobs", 1)}, "jobs")
	appsRepo := gitserver.New(t).NewRepo("edge-apps")
	appsRepo.Commit("main", map[string]string{"README.md": "apps of the edge cluster"}, "init")
	gs := fmt.Sprintf("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: edge-apps}\nspec:\n  repoURL: %s\n  destination: {name: edge, namespace: %s}\n", appsRepo.URL(), mns)
	if code := w.call("member", "POST", "git-sources", gs, nil); code != http.StatusCreated {
		t.Fatalf("create git source: %d", code)
	}
	jobs := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: jobs}\nspec:\n  project: default\n  source: {repoURL: %s, path: jobs}\n  syncPolicy: {automated: {}}\n", w.source.URL())
	if code := w.call("member", "POST", "applications?gitSource=edge-apps", jobs, &e); code != http.StatusCreated {
		t.Fatalf("create into the git source: %d %+v", code, e)
	}
	if f, ok := appsRepo.ReadFile("main", "jobs.yaml"); !ok || !strings.Contains(f, "name: jobs") {
		t.Errorf("jobs.yaml in the git source's repository: %q", f)
	}
	w.waitApp("jobs", synced)
	if got, err := mkc.CoreV1().ConfigMaps(mns).Get(ctx, "jobs", metav1.GetOptions{}); err != nil || got.Data["color"] != "red" {
		t.Errorf("the git source's app in the managed cluster: %v %v", got, err)
	}

	// A restarted runtime knows the cluster from its store.
	h2, err := host.New(host.Options{Dir: t.TempDir(), ClusterStore: host.FileClusterStore{Dir: filepath.Join(w.dir, "clusters")}})
	if err != nil {
		t.Fatal(err)
	}
	if cs := h2.Clusters(); len(cs) != 1 || cs[0].Name != "edge" {
		t.Errorf("clusters after a restart: %+v", cs)
	}

	if code := w.call("admin", "DELETE", "clusters/edge", "", nil); code != http.StatusNoContent {
		t.Fatalf("remove cluster: %d", code)
	}
	if code := w.call("admin", "DELETE", "clusters/in-cluster", "", nil); code != http.StatusBadRequest {
		t.Errorf("removing in-cluster: %d, want 400", code)
	}
	var st host.Application
	w.call("member", "POST", "applications/remote/refresh", "", &st)
	if c, ok := st.Status.Condition(engine.ConditionInvalidSpec); !ok || !strings.Contains(c.Message, "edge") {
		if c2, ok2 := st.Status.Condition(engine.ConditionComparisonError); !ok2 || !strings.Contains(c2.Message, "edge") {
			t.Errorf("after removing the cluster the app's conditions are %+v", st.Status.Conditions)
		}
	}
	if err := install.RemoveClusterAccess(ctx, managed.RESTConfig(), "rt-test", ""); err != nil {
		t.Errorf("remove access: %v", err)
	}
}

// TestGitSource: a Git Source's directory of Applications is loaded (with its default
// destination), apps created into it become commits there, a push is picked up, and removing
// the source removes its apps.
func TestGitSource(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.source.Commit("main", map[string]string{"web/cm.yaml": fmt.Sprintf(cm, "blue")}, "manifests")
	appsRepo := gitserver.New(t).NewRepo("apps")
	noDest := func(name string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: %s}\nspec:\n  project: default\n  source: {repoURL: %s, path: web}\n  syncPolicy: {automated: {}}\n", name, w.source.URL())
	}
	appsRepo.Commit("main", map[string]string{
		"prod/one.yaml":        noDest("gs-one"),
		"prod/skip/draft.yaml": noDest("gs-draft"),
		"prod/README.md":       "not yaml",
	}, "apps")

	var e struct {
		Error struct{ Code, Message, Field string }
	}
	bad := fmt.Sprintf("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: apps}\nspec: {repoURL: %s, pth: prod}\n", appsRepo.URL())
	if code := w.call("member", "POST", "git-sources", bad, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "pth") {
		t.Errorf("a GitSource with an unknown field: %d %+v", code, e)
	}
	gs := fmt.Sprintf("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: apps}\nspec:\n  repoURL: %s\n  path: prod\n  exclude: 'skip/*'\n  destination: {name: in-cluster, namespace: %s}\n", appsRepo.URL(), w.ns)
	if code := w.call("member", "POST", "git-sources", gs, &e); code != http.StatusCreated {
		t.Fatalf("create git source: %d %+v", code, e)
	}
	a := w.waitApp("gs-one", synced)
	if a.Source != "apps" || a.Spec.Spec.Destination.Namespace != w.ns {
		t.Errorf("app from the git source: source %q, destination %+v", a.Source, a.Spec.Spec.Destination)
	}
	if code := w.call("viewer", "GET", "applications/gs-draft", "", nil); code != http.StatusNotFound {
		t.Errorf("an excluded file's app was loaded: %d", code)
	}
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the git source's app did not deploy: %v", err)
	}

	// Creating an app into the source is a commit to its repository.
	two := strings.Replace(appYAML("gs-two", w.source.URL(), w.ns, false), "metadata:", "metadata:", 1)
	if code := w.call("member", "POST", "applications?gitSource=apps", two, &e); code != http.StatusCreated {
		t.Fatalf("create into the git source: %d %+v", code, e)
	}
	if f, ok := appsRepo.ReadFile("main", "prod/gs-two.yaml"); !ok || !strings.Contains(f, "gs-two") {
		t.Errorf("prod/gs-two.yaml in the source repository: %q %v", f, ok)
	}

	// A push to the source repository, notified, adds its new app.
	appsRepo.Commit("main", map[string]string{"prod/three.yaml": noDest("gs-three")}, "three")
	w.call("member", "POST", "notify", fmt.Sprintf(`{"repoURL": %q, "revision": "main"}`, appsRepo.URL()), nil)
	w.waitApp("gs-three", func(engine.AppStatus) bool { return true })

	// Picking a repository: the runtime lists them through the provider's API with the
	// caller's token (a recorded Gitea answer here).
	gitea := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token gt-1" {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		b, _ := os.ReadFile("../providers/testdata/gitea-repos.json")
		rw.Write(b)
	}))
	defer gitea.Close()
	req := httptest.NewRequest("GET", host.APIPrefix+"git/repositories?provider=gitea&baseURL="+gitea.URL, nil)
	req.Header.Set(wire.HeaderAccount, "acc-1")
	req.Header.Set(wire.HeaderRole, "viewer")
	req.Header.Set(host.GitTokenHeader, "gt-1")
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"cloneUrl":"https://gitea.example.com/ops/gitops.git"`) {
		t.Errorf("provider repositories: %d %s", rec.Code, rec.Body.String())
	}

	// Deleting the source removes its apps (their resources stay: no finalizer).
	if code := w.call("member", "DELETE", "git-sources/apps", "", nil); code != http.StatusNoContent {
		t.Fatalf("delete git source: %d", code)
	}
	for _, n := range []string{"gs-one", "gs-two", "gs-three"} {
		if code := w.call("viewer", "GET", "applications/"+n, "", nil); code != http.StatusNotFound {
			t.Errorf("%s after its source was deleted: %d", n, code)
		}
	}
	if _, err := w.kc.CoreV1().ConfigMaps(w.ns).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("removing an app without the finalizer deleted its resources: %v", err)
	}
}

// gql posts a GraphQL request as role.
func (w *world) gql(role, query string, vars map[string]any) (data map[string]any, errs []map[string]any) {
	w.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest("POST", "/app-proxy/api/graphql", bytes.NewReader(body))
	req.Header.Set(wire.HeaderAccount, "acc-1")
	req.Header.Set(wire.HeaderRole, role)
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	var out struct {
		Data   map[string]any   `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		w.t.Fatalf("graphql: %d %s", rec.Code, rec.Body.String())
	}
	return out.Data, out.Errors
}

// TestGraphQL: the app-proxy's GraphQL API creates, reads (with tree and history), syncs and
// switches auto-sync, with the same role checks as REST.
func TestGraphQL(t *testing.T) {
	w := newWorld(t)
	w.source.Commit("main", map[string]string{"web/deploy.yaml": deploy}, "first")
	const create = `mutation($m: String!) { createApplication(manifest: $m) { name repoUrl destination { namespace } } }`
	if _, errs := w.gql("viewer", create, map[string]any{"m": appYAML("g", w.source.URL(), w.ns, false)}); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "needs member or admin") {
		t.Errorf("viewer creates: errors %v", errs)
	}
	data, errs := w.gql("member", create, map[string]any{"m": appYAML("g", w.source.URL(), w.ns, false)})
	if len(errs) > 0 {
		t.Fatalf("create: %v", errs)
	}
	if got := data["createApplication"].(map[string]any); got["repoUrl"] != w.source.URL() || got["destination"].(map[string]any)["namespace"] != w.ns {
		t.Errorf("created %v", got)
	}
	data, errs = w.gql("member", `mutation { syncApplication(name: "g") }`, nil)
	if len(errs) > 0 || data["syncApplication"].(map[string]any)["phase"] != "Succeeded" {
		t.Fatalf("sync: %v %v", data, errs)
	}
	w.waitApp("g", synced)
	data, errs = w.gql("viewer", `{ applications { name syncStatus healthStatus history tree } application(name: "nope") { name } clusters { name } }`, nil)
	if len(errs) > 0 {
		t.Fatalf("query: %v", errs)
	}
	apps := data["applications"].([]any)
	a := apps[0].(map[string]any)
	if len(apps) != 1 || a["syncStatus"] != "Synced" || a["healthStatus"] != "Healthy" || len(a["history"].([]any)) != 1 || len(a["tree"].([]any)) == 0 {
		t.Errorf("applications: %v", apps)
	}
	if data["application"] != nil {
		t.Errorf("an unknown app: %v, want null", data["application"])
	}
	if _, errs := w.gql("viewer", `mutation { setAutoSync(name: "g", enabled: true) { name } }`, nil); len(errs) == 0 {
		t.Error("a viewer switched auto-sync")
	}
}

// TestClusterHealth: the runtime checks that it reaches its clusters; one whose API server does
// not answer is reported unreachable (for the heartbeat), the runtime's own one healthy.
func TestClusterHealth(t *testing.T) {
	c := kube.Shared(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	store := host.FileClusterStore{Dir: filepath.Join(dir, "clusters")}
	if err := store.Put(context.Background(), host.ClusterCredential{Name: "gone", Server: dead, Token: "t", Insecure: true}); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Dir: dir, InCluster: c.RESTConfig(), ClusterStore: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var states map[string]string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		states = map[string]string{}
		for _, s := range h.ClusterStates() {
			states[s.Name] = s.Health
		}
		if states["gone"] != "" && states["in-cluster"] != "" {
			break
		}
	}
	if states["in-cluster"] != "healthy" || !strings.HasPrefix(states["gone"], "unreachable: ") {
		t.Errorf("cluster health: %v", states)
	}
}
