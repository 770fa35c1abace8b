package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	argoapp "github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The Application built from flags is one the runtime's decoder accepts, with what the flags
// asked for.
func TestAppManifestFromFlags(t *testing.T) {
	o := appCreateOptions{
		Repo: "https://git.example.com/org/apps.git", Path: "guestbook", Revision: "main",
		DestServer: "https://kubernetes.default.svc", DestNamespace: "guestbook", Project: "default",
		SyncPolicy: "automated", AutoPrune: true, SelfHeal: true,
		SyncOptions: []string{"CreateNamespace=true", "PruneLast=true"},
	}
	y, err := o.Manifest("guestbook")
	if err != nil {
		t.Fatal(err)
	}
	a, err := argoapp.DecodeApplication(y)
	if err != nil {
		t.Fatalf("decode:\n%s\n%v", y, err)
	}
	src := a.EffectiveSource()
	pol := a.Spec.SyncPolicy
	if a.Metadata.Name != "guestbook" || a.APIVersion != argoapp.APIVersion || a.Kind != argoapp.KindApp || a.Spec.Project != "default" ||
		src.RepoURL != o.Repo || src.Path != "guestbook" || src.TargetRevision != "main" ||
		a.Spec.Destination != (argoapp.Destination{Server: o.DestServer, Namespace: "guestbook"}) ||
		!pol.IsAutomated() || !pol.Automated.Prune || !pol.Automated.SelfHeal ||
		!pol.SyncOptions.Enabled("CreateNamespace") || !pol.SyncOptions.Enabled("PruneLast") || len(a.Warnings) != 0 {
		t.Fatalf("decoded %+v from\n%s", a, y)
	}
	if !strings.HasPrefix(string(y), "apiVersion: argoproj.io/v1alpha1\nkind: Application\n") {
		t.Errorf("manifest does not start with apiVersion and kind:\n%s", y)
	}

	// Manual sync: no syncPolicy at all; a destination by name.
	o = appCreateOptions{Repo: "https://git.example.com/org/apps.git", Path: "x", DestName: "in-cluster", Project: "default", SyncPolicy: "manual"}
	y, err = o.Manifest("x")
	if err != nil {
		t.Fatal(err)
	}
	if a, err = argoapp.DecodeApplication(y); err != nil {
		t.Fatalf("decode:\n%s\n%v", y, err)
	}
	if a.Spec.SyncPolicy != nil || a.Spec.Destination.Name != "in-cluster" || strings.Contains(string(y), "syncPolicy") {
		t.Fatalf("manual app:\n%s", y)
	}
}

func TestAppManifestFlagErrors(t *testing.T) {
	base := appCreateOptions{Repo: "https://g/r.git", DestServer: "https://kubernetes.default.svc", SyncPolicy: "manual", Project: "default"}
	for _, tc := range []struct {
		name string
		edit func(*appCreateOptions)
		want string
	}{
		{"no repo", func(o *appCreateOptions) { o.Repo = "" }, "--repo is required"},
		{"no destination", func(o *appCreateOptions) { o.DestServer = "" }, "--dest-server or --dest-name is required"},
		{"two destinations", func(o *appCreateOptions) { o.DestName = "in-cluster" }, `--dest-server "https://kubernetes.default.svc" and --dest-name "in-cluster"`},
		{"bad policy", func(o *appCreateOptions) { o.SyncPolicy = "sometimes" }, `--sync-policy "sometimes": use manual or automated`},
		{"prune without automated", func(o *appCreateOptions) { o.AutoPrune = true }, "--auto-prune needs --sync-policy automated"},
		{"self-heal without automated", func(o *appCreateOptions) { o.SelfHeal = true }, "--self-heal needs --sync-policy automated"},
		{"bad sync option", func(o *appCreateOptions) { o.SyncOptions = []string{"CreateNamespace"} }, `--sync-option "CreateNamespace": use KEY=VALUE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			_, err := o.Manifest("x")
			var ee exitError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !asExit(err, &ee) || ee.code != 2 {
				t.Fatalf("err = %v, want a usage error with %q", err, tc.want)
			}
		})
	}
}

func asExit(err error, ee *exitError) bool {
	e, ok := err.(exitError)
	*ee = e
	return ok
}

// The client types carry every field of the engine's JSON: a value encoded by the engine,
// decoded by the client and encoded again is the same JSON (keys compared case-insensitively:
// render.Location has no JSON tags, so the engine spells its fields File and Line).
func TestClientTypesMatchEngineJSON(t *testing.T) {
	fx := newAppFixture(t)
	roundTrip(t, "Application", fx.application(), &client.Application{})
	roundTrip(t, "Application without a spec", host.Application{Name: "x", Status: fx.status}, &client.Application{})
	roundTrip(t, "SyncRequest", host.SyncRequest{Revision: "main", Prune: true, DryRun: true, Resources: []string{"Deployment/x"}, Options: []string{"Replace=true"}}, &client.SyncRequest{})
	roundTrip(t, "TreeNode", fx.tree, &[]client.TreeNode{})
	roundTrip(t, "ResourceDiff", fx.diffs, &[]client.ResourceDiff{})
	roundTrip(t, "HistoryEntry", fx.history, &[]client.HistoryEntry{})
	roundTrip(t, "RollbackResult", engine.RollbackResult{Result: fx.status.Operation, Entry: fx.history[0], AutoSyncDisabled: true}, &client.RollbackResult{})
	files, _ := filepath.Glob("../gitops/app/testdata/*.yaml")
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("kind: Application\n")) {
			continue
		}
		a, err := argoapp.DecodeApplication(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		roundTrip(t, filepath.Base(f), a, &client.ApplicationManifest{})
		n++
	}
	if n < 3 {
		t.Fatalf("only %d Application files in ../gitops/app/testdata", n)
	}
}

func roundTrip(t *testing.T, what string, v, into any) {
	t.Helper()
	b1, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b1, into); err != nil {
		t.Fatalf("%s: decode: %v", what, err)
	}
	b2, err := json.Marshal(into)
	if err != nil {
		t.Fatal(err)
	}
	var m1, m2 any
	json.Unmarshal(b1, &m1)
	json.Unmarshal(b2, &m2)
	if !reflect.DeepEqual(lowerKeys(m1), lowerKeys(m2)) {
		t.Errorf("%s: the client type does not carry the engine's JSON:\nengine: %s\nclient: %s", what, b1, b2)
	}
}

func lowerKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[strings.ToLower(k)] = lowerKeys(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = lowerKeys(x[i])
		}
	}
	return v
}

// appFixture is an application as the engine reports it: every field set.
type appFixture struct {
	spec    *argoapp.Application
	status  engine.AppStatus
	tree    []engine.TreeNode
	diffs   []engine.ResourceDiff
	history []engine.HistoryEntry
}

const (
	fxSHA1 = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fxSHA2 = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// fxTime is in the local zone: the tables print local times, so the golden files hold the
// same wall-clock times under any TZ.
var fxTime = time.Date(2025, 3, 14, 9, 26, 53, 0, time.Local)

func newAppFixture(t *testing.T) *appFixture {
	t.Helper()
	spec, err := argoapp.DecodeApplication([]byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
spec:
  project: default
  source:
    repoURL: https://git.example.com/org/apps.git
    path: guestbook
    targetRevision: main
  destination:
    server: https://kubernetes.default.svc
    namespace: demo
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true]
`))
	if err != nil {
		t.Fatal(err)
	}
	commit := &git.CommitInfo{SHA: fxSHA2, Author: "Ada", AuthorEmail: "ada@example.com", AuthorTime: fxTime, Committer: "Ada",
		CommitterEmail: "ada@example.com", CommitTime: fxTime, Message: "Scale the guestbook to 2\n\nMore traffic.", Parents: []string{fxSHA1}}
	healthy := health.Result{Status: health.Healthy}
	key := func(group, kind, name string) engine.ResourceKey {
		return engine.ResourceKey{Group: group, Kind: kind, Namespace: "demo", Name: name}
	}
	op := &engine.SyncResult{
		Revision: fxSHA2, Phase: engine.PhaseSucceeded, Message: "successfully synced (all tasks run)",
		Resources: []engine.ResourceResult{
			{ResourceKey: key("", "ConfigMap", "guestbook-config"), Version: "v1", Result: engine.ResultUnchanged, Wave: -1},
			{ResourceKey: key("apps", "Deployment", "guestbook"), Version: "v1", Result: engine.ResultConfigured, Wave: 0, Message: "deployment.apps/guestbook configured"},
		},
		Hooks: []engine.HookResult{{ResourceKey: key("batch", "Job", "migrate"), Version: "v1", Type: engine.HookPreSync, Wave: 0,
			Phase: engine.PhaseSucceeded, Message: "job completed", Deleted: true}},
		Prune: true, InitiatedBy: engine.InitiatedByUser, StartedAt: fxTime, FinishedAt: fxTime.Add(3 * time.Second), Temporary: true,
	}
	fx := &appFixture{spec: spec}
	fx.status = engine.AppStatus{
		Name: "guestbook", Project: "default", Sync: engine.Synced, Revision: fxSHA2, TargetRevision: "main", Commit: commit,
		SourceType: argoapp.SourceTypeDirectory, Health: health.Result{Status: health.Progressing, Message: "waiting for rollout"},
		Resources: []engine.ResourceStatus{
			{ResourceKey: key("", "ConfigMap", "guestbook-config"), Version: "v1", Status: engine.Synced, Health: &healthy,
				SyncWave: -1, Source: render.Location{File: "guestbook/config.yaml", Line: 1}},
			{ResourceKey: key("apps", "Deployment", "guestbook"), Version: "v1", Status: engine.Synced,
				Health: &health.Result{Status: health.Progressing, Message: "waiting for rollout"}, Source: render.Location{File: "guestbook/deploy.yaml", Line: 3}},
			{ResourceKey: key("", "Service", "old"), Version: "v1", Status: engine.OutOfSync, Health: &healthy, RequiresPruning: true, Message: "not in git"},
			{ResourceKey: key("batch", "Job", "migrate"), Version: "v1", Status: engine.Synced, Hook: true},
		},
		Conditions: []engine.Condition{{Type: engine.ConditionRepeatedResource, Message: "ConfigMap demo/guestbook-config is defined twice",
			Source: render.Location{File: "guestbook/config.yaml", Line: 9}, Since: fxTime}},
		Operation: op, AutoSyncDisabled: true, ReconciledAt: fxTime.Add(time.Minute),
	}
	pod := func(name string, h health.Result) *engine.TreeNode {
		return &engine.TreeNode{ResourceKey: key("", "Pod", name), Version: "v1", UID: "uid-" + name, Health: h, CreatedAt: fxTime, Images: []string{"nginx:1.27"}}
	}
	fx.tree = []engine.TreeNode{
		{ResourceKey: key("", "ConfigMap", "guestbook-config"), Version: "v1", UID: "uid-cm", Health: healthy, Sync: engine.Synced, CreatedAt: fxTime},
		{ResourceKey: key("apps", "Deployment", "guestbook"), Version: "v1", UID: "uid-deploy", Health: health.Result{Status: health.Progressing, Message: "waiting for rollout"},
			Sync: engine.Synced, CreatedAt: fxTime, Children: []*engine.TreeNode{
				{ResourceKey: key("apps", "ReplicaSet", "guestbook-5d9c"), Version: "v1", UID: "uid-rs1", Health: healthy, CreatedAt: fxTime, Children: []*engine.TreeNode{
					pod("guestbook-5d9c-a1", healthy), pod("guestbook-5d9c-b2", health.Result{Status: health.Progressing, Message: "ContainerCreating"}),
				}},
				{ResourceKey: key("apps", "ReplicaSet", "guestbook-77f0"), Version: "v1", UID: "uid-rs0", Health: healthy, CreatedAt: fxTime},
			}},
	}
	fx.diffs = []engine.ResourceDiff{
		{ResourceKey: key("", "ConfigMap", "guestbook-config"), Version: "v1", Status: engine.DiffSynced, Source: render.Location{File: "guestbook/config.yaml", Line: 1}},
		{ResourceKey: key("apps", "Deployment", "guestbook"), Version: "v1", Status: engine.DiffOutOfSync, Source: render.Location{File: "guestbook/deploy.yaml", Line: 3},
			Diff: "--- live\n+++ desired\n@@ -5 +5 @@\n-  replicas: 1\n+  replicas: 2\n"},
		{ResourceKey: key("", "Service", "old"), Version: "v1", Status: engine.DiffExtra, Diff: "--- live\n+++ desired\n@@ -1 +0,0 @@\n-kind: Service\n", Message: "pruned by a sync with prune"},
	}
	first := *commit
	first.SHA, first.Message, first.Parents = fxSHA1, "Add the guestbook", nil
	fx.history = []engine.HistoryEntry{
		{ID: 1, Revision: fxSHA1, Source: *spec.Spec.Source, Commit: &first, Phase: engine.PhaseSucceeded, Message: "successfully synced",
			Changed: op.Resources[:1], InitiatedBy: engine.InitiatedByAutomated, StartedAt: fxTime, FinishedAt: fxTime.Add(2 * time.Second), Duration: 2 * time.Second},
		{ID: 2, Revision: fxSHA2, Source: *spec.Spec.Source, Commit: commit, Phase: engine.PhaseFailed, Message: "one or more objects failed to apply",
			InitiatedBy: engine.InitiatedByUser, StartedAt: fxTime.Add(time.Hour), FinishedAt: fxTime.Add(time.Hour + time.Second), Duration: time.Second},
	}
	return fx
}

// application is the fixture as the runtime's API answers it.
func (fx *appFixture) application() host.Application {
	return host.Application{Name: "guestbook", File: "apps/guestbook.yaml", Spec: fx.spec, Status: fx.status}
}

// fakeProxy serves the app-proxy API of runtime "local" from the fixture, in the engine's
// JSON, and records what the CLI sent.
type fakeProxy struct {
	fx *appFixture

	mu        sync.Mutex
	diffs     []engine.ResourceDiff
	syncPhase engine.OperationPhase
	requests  []recorded
}

type recorded struct {
	method, path, query, contentType string
	body                             []byte
}

func (p *fakeProxy) last() recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[len(p.requests)-1]
}

func (p *fakeProxy) handler() http.Handler {
	const base = "/runtimes/local/app-proxy/api/v1/applications"
	mux := http.NewServeMux()
	appJSON := func() host.Application { return p.fx.application() }
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET "+base, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": []host.Application{appJSON()}})
	})
	mux.HandleFunc("POST "+base, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 201, appJSON())
	})
	mux.HandleFunc("GET "+base+"/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "guestbook" {
			reply(w, 404, map[string]any{"error": map[string]string{"code": "not_found", "message": "application " + r.PathValue("name") + " not found"}})
			return
		}
		reply(w, 200, appJSON())
	})
	mux.HandleFunc("DELETE "+base+"/guestbook", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("POST "+base+"/guestbook/refresh", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, appJSON()) })
	mux.HandleFunc("GET "+base+"/guestbook/tree", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": p.fx.tree})
	})
	mux.HandleFunc("GET "+base+"/guestbook/diff", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		reply(w, 200, map[string]any{"items": p.diffs})
	})
	mux.HandleFunc("POST "+base+"/guestbook/sync", func(w http.ResponseWriter, r *http.Request) {
		res := *p.fx.status.Operation
		p.mu.Lock()
		if p.syncPhase != "" {
			res.Phase, res.Message = p.syncPhase, "Deployment demo/guestbook: admission webhook denied the request"
		}
		p.mu.Unlock()
		reply(w, 200, res)
	})
	mux.HandleFunc("POST "+base+"/guestbook/terminate", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]bool{"terminated": true})
	})
	mux.HandleFunc("GET "+base+"/guestbook/history", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": p.fx.history})
	})
	mux.HandleFunc("POST "+base+"/guestbook/rollback", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, engine.RollbackResult{Result: p.fx.status.Operation, Entry: p.fx.history[0], AutoSyncDisabled: true})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		p.requests = append(p.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), body})
		p.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer test-token" {
			reply(w, 401, map[string]any{"error": map[string]string{"code": "unauthenticated", "message": "no credentials"}})
			return
		}
		mux.ServeHTTP(w, r) // other runtimes: a plain 404, like a server without these routes
	})
}

// runApp runs the freshet CLI in process against the fake proxy.
func runApp(t *testing.T, url, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(EnvServer, url)
	t.Setenv(EnvToken, "test-token")
	t.Setenv(EnvRuntime, "")
	t.Setenv("FRESHET_CLI_CONFIG", filepath.Join(t.TempDir(), "config.yaml"))
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestAppCommands(t *testing.T) {
	p := &fakeProxy{fx: newAppFixture(t)}
	srv := httptest.NewServer(p.handler())
	defer srv.Close()
	ok := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errs := runApp(t, srv.URL, "", args...)
		if code != 0 {
			t.Fatalf("freshet %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		return out
	}

	t.Run("list", func(t *testing.T) { golden(t, "app-list", ok(t, "app", "list")) })
	t.Run("get", func(t *testing.T) {
		out := ok(t, "app", "get", "guestbook")
		golden(t, "app-get", out)
		for _, want := range []string{
			"Deployment/guestbook ", "├─ ReplicaSet/guestbook-5d9c ", "│  ├─ Pod/guestbook-5d9c-a1 ", "│  └─ Pod/guestbook-5d9c-b2 ", "└─ ReplicaSet/guestbook-77f0 ",
			"automated (prune, self-heal), switched off by a rollback",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("app get lacks %q:\n%s", want, out)
			}
		}
		var ap client.Application
		if err := json.Unmarshal([]byte(ok(t, "app", "get", "guestbook", "-o", "json")), &ap); err != nil || ap.Name != "guestbook" || ap.Status.Commit.SHA != fxSHA2 {
			t.Errorf("app get -o json: %+v %v", ap, err)
		}
		if y := ok(t, "app", "get", "guestbook", "-o", "yaml"); !strings.Contains(y, "repoURL: https://git.example.com/org/apps.git") {
			t.Errorf("app get -o yaml:\n%s", y)
		}
	})
	t.Run("history", func(t *testing.T) { golden(t, "app-history", ok(t, "app", "history", "guestbook")) })

	t.Run("diff", func(t *testing.T) {
		p.mu.Lock()
		p.diffs = p.fx.diffs
		p.mu.Unlock()
		code, out, errs := runApp(t, srv.URL, "", "app", "diff", "guestbook")
		if code != 1 || !strings.Contains(errs, "2 of 3 resources differ from git") {
			t.Fatalf("diff with differences: exit %d, stderr %q", code, errs)
		}
		golden(t, "app-diff", out)
		p.mu.Lock()
		p.diffs = p.fx.diffs[:1]
		p.mu.Unlock()
		if code, out, errs := runApp(t, srv.URL, "", "app", "diff", "guestbook"); code != 0 || out != "" || errs != "" {
			t.Fatalf("diff without differences: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})

	t.Run("sync", func(t *testing.T) {
		out := ok(t, "app", "sync", "guestbook", "--prune", "--revision", "main", "--resource", "apps/Deployment/demo/guestbook", "--sync-option", "CreateNamespace=true")
		golden(t, "app-sync", out)
		// The runtime decodes the body strictly (unknown fields are errors).
		var req host.SyncRequest
		dec := json.NewDecoder(bytes.NewReader(p.last().body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || !reflect.DeepEqual(req, host.SyncRequest{
			Revision: "main", Prune: true, Resources: []string{"apps/Deployment/demo/guestbook"}, Options: []string{"CreateNamespace=true"}}) {
			t.Fatalf("sync request %s: %v", p.last().body, err)
		}
		p.mu.Lock()
		p.syncPhase = engine.PhaseFailed
		p.mu.Unlock()
		code, out, errs := runApp(t, srv.URL, "", "app", "sync", "guestbook")
		if code != 1 || !strings.Contains(out, "Phase:         Failed") ||
			!strings.Contains(errs, "sync of application guestbook ended Failed: Deployment demo/guestbook: admission webhook denied the request") {
			t.Fatalf("failed sync: exit %d\n%s\n%s", code, out, errs)
		}
	})

	t.Run("rollback", func(t *testing.T) {
		out := ok(t, "app", "rollback", "guestbook", "1", "--prune")
		if !strings.Contains(out, "Rolled application guestbook back to history entry 1 (revision 1111111).") ||
			!strings.Contains(out, "Automated sync of guestbook is now off") {
			t.Fatalf("rollback:\n%s", out)
		}
		if got := string(p.last().body); got != `{"id":1,"prune":true}` {
			t.Fatalf("rollback request %s", got)
		}
		if code, _, errs := runApp(t, srv.URL, "", "app", "rollback", "guestbook", "latest"); code != 2 || !strings.Contains(errs, `history ID "latest"`) {
			t.Fatalf("rollback latest: exit %d %s", code, errs)
		}
	})

	t.Run("create", func(t *testing.T) {
		out := ok(t, "app", "create", "guestbook", "--repo", "https://git.example.com/org/apps.git", "--path", "guestbook",
			"--dest-server", "https://kubernetes.default.svc", "--dest-namespace", "demo", "--sync-policy", "automated", "--auto-prune")
		req := p.last()
		if out != "Created application guestbook in runtime local.\n" || req.contentType != "application/yaml" || req.query != "" {
			t.Fatalf("create: %q %+v", out, req)
		}
		a, err := argoapp.DecodeApplication(req.body)
		if err != nil || a.Metadata.Name != "guestbook" || !a.Spec.SyncPolicy.Automated.Prune || a.Spec.Destination.Namespace != "demo" {
			t.Fatalf("created %s: %v", req.body, err)
		}
		// From standard input, as JSON, replacing.
		manifest := `{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "guestbook"}}`
		code, out, errs := runApp(t, srv.URL, manifest, "app", "create", "-f", "-", "--upsert")
		req = p.last()
		if code != 0 || out != "Saved application guestbook in runtime local.\n" || req.contentType != "application/json" || req.query != "upsert=true" || string(req.body) != manifest {
			t.Fatalf("create -f - --upsert: exit %d %q %q %+v", code, out, errs, req)
		}
		for _, args := range [][]string{
			{"app", "create", "-f", "-", "--repo", "https://x/y.git"},
			{"app", "create", "guestbook", "-f", "-"},
			{"app", "create", "--repo", "https://x/y.git"},
			{"app", "create", "guestbook", "--dest-server", "https://kubernetes.default.svc"},
		} {
			if code, _, errs := runApp(t, srv.URL, manifest, args...); code != 2 || !strings.Contains(errs, "Error: ") {
				t.Errorf("freshet %s: exit %d %s, want a usage error", strings.Join(args, " "), code, errs)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		if out := ok(t, "app", "delete", "guestbook", "--cascade=false"); !strings.Contains(out, "its resources stay in the cluster") || p.last().query != "cascade=false" {
			t.Fatalf("delete --cascade=false: %q %+v", out, p.last())
		}
		if out := ok(t, "app", "delete", "guestbook"); out != "Deleted application guestbook and its resources.\n" || p.last().query != "cascade=true" {
			t.Fatalf("delete: %q %+v", out, p.last())
		}
	})

	t.Run("refresh and terminate", func(t *testing.T) {
		if out := ok(t, "app", "refresh", "guestbook", "--hard"); !strings.Contains(out, "guestbook") || p.last().query != "hard=true" {
			t.Fatalf("refresh: %q %+v", out, p.last())
		}
		if out := ok(t, "app", "terminate-op", "guestbook"); out != "Terminated the running sync of application guestbook.\n" {
			t.Fatalf("terminate-op: %q", out)
		}
	})

	t.Run("wait", func(t *testing.T) {
		// Synced: done at once. Healthy: it stays Progressing, so the wait times out and says so.
		if out := ok(t, "app", "wait", "guestbook", "--sync"); !strings.Contains(out, "guestbook  default  Synced") {
			t.Fatalf("wait --sync:\n%s", out)
		}
		start := time.Now()
		code, _, errs := runApp(t, srv.URL, "", "app", "wait", "guestbook", "--timeout", "1500ms")
		want := "timed out after 1.5s waiting for application guestbook to be Synced and Healthy; last state: sync Synced, health Progressing (waiting for rollout)"
		if code != 1 || !strings.Contains(errs, want) || time.Since(start) > 10*time.Second {
			t.Fatalf("wait: exit %d after %s, stderr:\n%s\nwant %q", code, time.Since(start), errs, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		if code, _, errs := runApp(t, srv.URL, "", "app", "get", "nope"); code != 1 || errs != "Error: application nope not found\n" {
			t.Fatalf("get nope: exit %d %q", code, errs)
		}
		if code, _, errs := runApp(t, srv.URL, "", "app", "wait", "nope", "--runtime", "old"); code != 1 || !strings.Contains(errs, "runtime old does not serve the applications API") {
			t.Fatalf("runtime without the API: exit %d %q", code, errs)
		}
	})
}
