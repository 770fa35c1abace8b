package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/proc"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	tunnelclient "github.com/freshet-dev/freshet/internal/tunnel/client"
)

// reportApps sends a report as the runtime whose token is token, over the runtime protocol.
func reportApps(t *testing.T, url, token string, req runtimev1.ReportRequest) {
	t.Helper()
	cl := connect.NewClient[runtimev1.ReportRequest, runtimev1.ReportResponse](http.DefaultClient, url+runtimev1.ProcedureReport, connect.WithCodec(runnerv1.Codec{}))
	r := connect.NewRequest(&req)
	r.Header().Set("Authorization", "Bearer "+token)
	if _, err := cl.CallUnary(context.Background(), r); err != nil {
		t.Fatalf("report: %v", err)
	}
}

// aReport is what account A's runtime reports in the isolation test: an application with
// names only A has, and a finished sync.
func aReport() runtimev1.ReportRequest {
	start := time.Unix(1700000000, 0).UTC()
	web := runtimev1.Application{Name: "a-shop-web", Project: "a-project-x", RepoURL: "https://git.example/acme/a-secret-repo.git",
		Path: "apps/shop", DestServer: "https://kubernetes.default.svc", DestNamespace: "shop", Sync: "Synced", Health: "Healthy",
		Labels: map[string]string{"a-team-label": "a-payments"}, Annotations: map[string]string{"codefresh.io/product": "a-annotated-product"}, ReconciledAt: start}
	return runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web},
		Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "a-shop-web",
			Sync: &runtimev1.SyncRecord{ID: 1, Revision: "abc", Phase: "Succeeded", InitiatedBy: "automated", StartedAt: start, FinishedAt: start.Add(time.Second)}}}}
}

type gqlApp struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Runtime      string `json:"runtime"`
	Project      string `json:"project"`
	HealthStatus string `json:"healthStatus"`
	History      struct {
		Nodes []struct {
			ID    int    `json:"id"`
			Phase string `json:"phase"`
		} `json:"nodes"`
	} `json:"history"`
}

// appsOf lists the applications c's account sees.
func appsOf(t *testing.T, c *client.Client) []gqlApp {
	t.Helper()
	var out struct {
		Applications struct{ Nodes []gqlApp } `json:"applications"`
	}
	// A page of 20: each history is a database read, and a page of 100 with every history is
	// more than one request may cost (docs/api.md, "Limits").
	if err := c.GraphQL(context.Background(), `{ applications(first: 20) { nodes { id name runtime project healthStatus history { nodes { id phase } } } } }`, nil, &out); err != nil {
		t.Fatal(err)
	}
	return out.Applications.Nodes
}

func githubSignature(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// fakeAppProxy stands in for a runtime's app-proxy behind a real tunnel: it serves a resource
// tree and records the notifications it gets.
type fakeAppProxy struct {
	mu       sync.Mutex
	notified []map[string]string
}

func (f *fakeAppProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/app-proxy/api/v1/applications/web/tree":
		io.WriteString(w, `{"items":[{"group":"apps","kind":"Deployment","namespace":"shop","name":"web","version":"v1","uid":"uid-1",
			"health":{"status":"Healthy"},"sync":"Synced","createdAt":"2026-01-02T03:04:05Z",
			"children":[{"kind":"Pod","namespace":"shop","name":"web-1","version":"v1","uid":"uid-2","health":{"status":"Healthy"},"images":["shop:1"],"createdAt":"2026-01-02T03:04:06Z"}]}]}`)
	case r.Method == "POST" && r.URL.Path == runtimes.NotifyPath:
		var n map[string]string
		json.NewDecoder(r.Body).Decode(&n)
		id, _ := tunnelclient.IdentityOf(r)
		n["role"], n["account"], n["user"] = id.Role, id.AccountID, id.UserID
		f.mu.Lock()
		f.notified = append(f.notified, n)
		f.mu.Unlock()
		io.WriteString(w, `{"refreshed":1}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no such thing here"}}`)
	}
}

func (f *fakeAppProxy) notifications() []map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]string(nil), f.notified...)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// graphQLRaw runs a query and returns data and errors as they came (client.GraphQL drops the
// data of a partial answer).
func graphQLRaw(t *testing.T, url, token, query string) (map[string]any, []any) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	st, out, _ := call(t, "POST", url+"/api/graphql", token, body)
	if st != 200 {
		t.Fatalf("graphql: %d %v", st, out)
	}
	data, _ := out["data"].(map[string]any)
	errs, _ := out["errors"].([]any)
	return data, errs
}

func TestApplicationsEndToEnd(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	admin := adminToken(t, s)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	me, _ := s.Admin.Me(ctx)
	acct := me.Account.ID

	// Deployments reach the bus.
	deployments := make(chan bus.Message[runtimes.SyncFinished], 10)
	sub, err := bus.Subscribe(ctx, s.Bus(), "test-deployments", "freshet.*.gitops.sync-finished", func(_ context.Context, m bus.Message[runtimes.SyncFinished]) error {
		deployments <- m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	start := time.Unix(1700000000, 0).UTC()
	web := runtimev1.Application{Name: "web", Project: "shop", RepoURL: "https://git.example/acme/deploy.git", Path: "apps/web",
		DestName: "prod", DestServer: "https://prod.example:6443", DestNamespace: "shop", Sync: "Synced", Health: "Healthy",
		Labels: map[string]string{"team": "shop", "tier": "front"}, AutoSync: true, SelfHeal: true, SourceType: "Kustomize", Revision: "abc",
		Commit:       &runtimev1.Commit{SHA: "abc", Author: "Ann", Message: "bump web", Time: start},
		Conditions:   []runtimev1.AppCondition{{Type: "SpecWarning", Message: "version ignored", File: "apps/web.yaml", Line: 12, Since: start}},
		Resources:    []runtimev1.AppResource{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Status: "Synced", Health: "Healthy"}},
		ReconciledAt: start}
	api := runtimev1.Application{Name: "api", Project: "shop", RepoURL: "https://git.example/acme/deploy.git", Path: "apps/api",
		DestServer: "https://kubernetes.default.svc", DestNamespace: "api", Sync: "OutOfSync", Health: "Degraded", HealthMessage: "crash loop",
		Labels: map[string]string{"team": "core"}}
	reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web, api}})
	for i := int64(1); i <= 3; i++ {
		reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "web",
			Sync: &runtimev1.SyncRecord{ID: i, Revision: fmt.Sprint("rev", i), Phase: "Succeeded", InitiatedBy: "automated",
				Commit: &runtimev1.Commit{Author: "Ann"}, StartedAt: start.Add(time.Duration(i) * time.Minute), FinishedAt: start.Add(time.Duration(i)*time.Minute + time.Second)}}}})
	}
	for i := int64(1); i <= 3; i++ {
		select {
		case m := <-deployments:
			if m.Subject != "freshet."+acct+".gitops.sync-finished" || m.Data.Application != "web" || m.Data.Runtime != "edge" || m.Data.SyncID != i ||
				m.Data.DestName != "prod" || m.Data.Commit == nil || m.Data.Commit.Author != "Ann" {
				t.Fatalf("deployment %d = %s %+v", i, m.Subject, m.Data)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("deployment %d not published", i)
		}
	}

	// Listing and filtering.
	for _, c := range []struct{ filter, want string }{
		{`{}`, "web api"},
		{`{runtime: "edge", labels: ["team=shop", "tier=front"]}`, "web"},
		{`{cluster: "prod"}`, "web"},
		{`{cluster: "https://kubernetes.default.svc", health: "Degraded", sync: "OutOfSync", project: "shop"}`, "api"},
		{`{search: "APPS/A"}`, "api"},
		{`{runtime: "nope"}`, ""},
	} {
		var out struct {
			Applications struct{ Nodes []gqlApp }
		}
		if err := s.Admin.GraphQL(ctx, `{ applications(filter: `+c.filter+`) { nodes { name } } }`, nil, &out); err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		var got []string
		for _, n := range out.Applications.Nodes {
			got = append(got, n.Name)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("filter %s: %v, want %s", c.filter, got, c.want)
		}
	}
	var bad client.GraphQLErrors
	if err := s.Admin.GraphQL(ctx, `{ applications(filter: {labels: ["team"]}) { nodes { name } } }`, nil, nil); !asGraphQL(err, &bad) ||
		bad[0].Extensions["field"] != "filter.labels[0]" || bad[0].Extensions["code"] != "invalid_argument" {
		t.Fatalf("bad selector: %v", err)
	}
	var page struct {
		Applications struct {
			Nodes    []gqlApp
			PageInfo struct {
				EndCursor   string
				HasNextPage bool
			}
		}
	}
	if err := s.Admin.GraphQL(ctx, `{ applications(first: 1) { nodes { name } pageInfo { endCursor hasNextPage } } }`, nil, &page); err != nil || !page.Applications.PageInfo.HasNextPage {
		t.Fatalf("page 1: %+v, %v", page, err)
	}
	if err := s.Admin.GraphQL(ctx, `{ applications(first: 1, after: "`+page.Applications.PageInfo.EndCursor+`") { nodes { name } pageInfo { endCursor hasNextPage } } }`, nil, &page); err != nil ||
		len(page.Applications.Nodes) != 1 || page.Applications.Nodes[0].Name != "api" {
		t.Fatalf("page 2: %+v, %v", page, err)
	}

	// One application, while the runtime is not connected: everything but the tree resolves,
	// and the tree's error says why.
	const appQuery = `{ application(runtime: "edge", name: "web") { id name runtime runtimeId project labels { key value } repoUrl path
		targetRevision destination { server name namespace } sourceType autoSync prune selfHeal autoSyncDisabled syncStatus healthStatus
		healthMessage revision commit { sha author message time } conditions { type message file line since }
		resources { group version kind namespace name status health requiresPruning } reconciledAt updatedAt
		history(first: 2) { nodes { id revision phase commit { author } } pageInfo { endCursor hasNextPage } }
		tree { kind name uid health { status } images children { kind name images } } } }`
	data, errs := graphQLRaw(t, s.URL, admin, appQuery)
	got, _ := data["application"].(map[string]any)
	if got == nil || got["name"] != "web" || got["runtime"] != "edge" || got["runtimeId"] != reg.ID || got["tree"] != nil || got["sourceType"] != "Kustomize" {
		t.Fatalf("application while disconnected: %v (errors %v)", data, errs)
	}
	if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), "edge is disconnected") || !strings.Contains(fmt.Sprint(errs[0]), "tree") {
		t.Fatalf("tree error: %v", errs)
	}
	hist := got["history"].(map[string]any)
	nodes := hist["nodes"].([]any)
	if len(nodes) != 2 || nodes[0].(map[string]any)["id"] != float64(3) || hist["pageInfo"].(map[string]any)["hasNextPage"] != true {
		t.Fatalf("history: %v", hist)
	}
	if c := got["conditions"].([]any)[0].(map[string]any); c["line"] != float64(12) || c["file"] != "apps/web.yaml" {
		t.Fatalf("conditions: %v", got["conditions"])
	}

	// Connected (a real tunnel to a stand-in app-proxy): the live tree, asked as the caller.
	proxy := &fakeAppProxy{}
	cl, err := tunnelclient.Dial(ctx, tunnelclient.Options{ServerURL: s.URL, Token: reg.Token, RuntimeName: "edge", Handler: proxy,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	waitUntil(t, "the tunnel", func() bool { return cl.State().Connected > 0 })
	var one struct {
		Application struct {
			Tree []struct {
				Kind, UID string
				Health    struct{ Status string }
				Children  []struct {
					Kind   string
					Images []string
				}
			}
		}
	}
	if err := s.Admin.GraphQL(ctx, appQuery, nil, &one); err != nil {
		t.Fatal(err)
	}
	if tr := one.Application.Tree; len(tr) != 1 || tr[0].UID != "uid-1" || tr[0].Children[0].Images[0] != "shop:1" {
		t.Fatalf("tree = %+v", tr)
	}
	// The runtime's error about an application it does not have.
	reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.AppChanged, App: "ghost", Application: &runtimev1.Application{Name: "ghost"}}}})
	_, errs = graphQLRaw(t, s.URL, admin, `{ application(runtime: "edge", name: "ghost") { name tree { uid } } }`)
	if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), "no such thing here") {
		t.Fatalf("the runtime's 404: %v", errs)
	}

	// Push webhooks reach the runtime: the account's GitOps webhook, and CI triggers' too.
	st, hook, _ := call(t, "POST", s.URL+"/api/v1/gitops/webhook", admin, []byte(`{}`))
	secret, _ := hook["secret"].(string)
	urls, _ := hook["urls"].(map[string]any)
	if st != 200 || len(secret) < 32 || urls["github"] != s.URL+"/api/v1/webhooks/gitops/github/"+acct {
		t.Fatalf("set the GitOps webhook: %d %v", st, hook)
	}
	push := []byte(`{"ref":"refs/heads/main","before":"` + strings.Repeat("0", 40) + `","after":"` + strings.Repeat("b", 40) + `",
		"repository":{"full_name":"acme/deploy","clone_url":"https://git.example/acme/deploy.git"},"sender":{"login":"ann"}}`)
	st, out, _ := call(t, "POST", urls["github"].(string), "", push, "X-GitHub-Event", "push", "X-GitHub-Delivery", "g-1", "X-Hub-Signature-256", githubSignature(push, secret))
	if st != 202 {
		t.Fatalf("GitOps delivery: %d %v", st, out)
	}
	waitUntil(t, "the notification", func() bool { return len(proxy.notifications()) == 1 })
	if n := proxy.notifications()[0]; n["repoURL"] != "https://git.example/acme/deploy.git" || n["revision"] != "main" || n["role"] != "member" || n["account"] != acct || n["user"] != "" {
		t.Fatalf("notified %v", n)
	}
	if st, _, _ := call(t, "POST", urls["github"].(string), "", push, "X-GitHub-Event", "push", "X-GitHub-Delivery", "g-2", "X-Hub-Signature-256", githubSignature(push, "wrong-wrong-wrong")); st != 401 {
		t.Fatalf("forged delivery: %d", st)
	}
	pl, err := s.Admin.CreateProject(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: pl.Name, Name: "ci", Spec: isolationSpec})
	if err != nil {
		t.Fatal(err)
	}
	trg, err := s.Admin.CreateTrigger(ctx, pipe.ID, client.TriggerRequest{Type: "git", Provider: "github", Git: &client.GitTrigger{Repo: "acme/other", Events: []string{"push.heads"}}})
	if err != nil {
		t.Fatal(err)
	}
	tag := []byte(strings.Replace(string(push), "refs/heads/main", "refs/tags/v2", 1))
	st, out, _ = call(t, "POST", s.URL+"/api/v1/webhooks/github/"+trg.ID, "", tag, "X-GitHub-Event", "push", "X-GitHub-Delivery", "t-1", "X-Hub-Signature-256", githubSignature(tag, trg.Secret))
	if st >= 300 {
		t.Fatalf("trigger delivery: %d %v", st, out)
	}
	waitUntil(t, "the trigger's notification", func() bool { return len(proxy.notifications()) == 2 })
	if n := proxy.notifications()[1]; n["revision"] != "v2" {
		t.Fatalf("notified %v", n)
	}

	// Deregistering the runtime forgets its applications.
	if err := s.Admin.DeleteRuntime(ctx, "edge"); err != nil {
		t.Fatal(err)
	}
	if apps := appsOf(t, s.Admin); len(apps) != 0 {
		t.Fatalf("applications of a deregistered runtime: %+v", apps)
	}
}

// The real runtime (freshet runtime's agent with its GitOps engine) reports an application from
// its installation repository, and its app-proxy answers for the tree through the tunnel.
func TestRealRuntimeReportsApplications(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	gitDo := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.test", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.test")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	bare := filepath.Join(work, "install.git")
	gitDo(work, "init", "--bare", "-b", "main", bare)
	src := filepath.Join(work, "src")
	gitDo(work, "clone", bare, src)
	for name, content := range map[string]string{
		"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n",
		"apps/web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  labels:\n    team: shop\nspec:\n  project: default\n" +
			"  source:\n    repoURL: file://" + bare + "\n    path: manifests\n    targetRevision: main\n" +
			"  destination:\n    server: https://kubernetes.default.svc\n    namespace: web\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitDo(src, "add", ".")
	gitDo(src, "commit", "-m", "web")
	gitDo(src, "push", "origin", "main")

	var logs proc.Buffer
	a, err := agent.New(agent.Options{Server: s.URL, Token: reg.Token, AccessMode: "tunnel", Version: "test", DataDir: t.TempDir(),
		InstallRepo: git.Repo{URL: "file://" + bare}, NoInCluster: true}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx) }()
	defer func() { cancel(); <-done }()

	var apps []gqlApp
	waitUntil(t, "the runtime's report", func() bool { apps = appsOf(t, s.Admin); return len(apps) == 1 })
	if apps[0].Name != "web" || apps[0].Runtime != "edge" || apps[0].Project != "default" {
		t.Fatalf("reported %+v", apps)
	}
	var labelled struct{ Applications struct{ Nodes []gqlApp } }
	if err := s.Admin.GraphQL(ctx, `{ applications(filter: {labels: ["team=shop"]}) { nodes { name } } }`, nil, &labelled); err != nil || len(labelled.Applications.Nodes) != 1 {
		t.Fatalf("by label: %+v, %v", labelled, err)
	}
	// No cluster here: the app-proxy answers the tree with an error, which is the tree's.
	data, errs := graphQLRaw(t, s.URL, adminToken(t, s), `{ application(runtime: "edge", name: "web") { name tree { uid } } }`)
	if app, _ := data["application"].(map[string]any); app == nil || app["name"] != "web" || app["tree"] != nil || len(errs) != 1 {
		t.Fatalf("tree without a cluster: %v %v", data, errs)
	}
	if strings.Contains(logs.String(), "reporting applications failed") {
		t.Fatalf("the runtime's reports failed:\n%s", logs.String())
	}

	tok := adminToken(t, s)
	// Changes made through the app-proxy are audited in the runtime's account; reads are not.
	for _, m := range []string{"GET", "POST"} {
		path := "/runtimes/edge/app-proxy/api/v1/applications/web"
		if m == "POST" {
			path += "/refresh"
		}
		req, _ := http.NewRequest(m, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	evs, err := s.Admin.ListAudit(ctx, client.AuditFilter{Action: "runtime.app-proxy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 || !strings.Contains(evs.Items[0].Detail, "POST /app-proxy/api/v1/applications/web/refresh") || evs.Items[0].ResourceID != reg.ID {
		t.Errorf("audit of app-proxy changes: %+v", evs.Items)
	}

	// The app-proxy's GraphQL endpoint (docs/appproxy.md) answers through the control plane's
	// /runtimes/{runtime}/app-proxy/… route, as its REST API does.
	{
		req, _ := http.NewRequest("POST", s.URL+"/runtimes/edge/app-proxy/api/graphql", strings.NewReader(`{"query": "{ applications { name } }"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"web"`) {
			t.Fatalf("app-proxy GraphQL through the control plane: %d %s", resp.StatusCode, body)
		}
	}
}
