package security_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// The app-proxy's GraphQL API gets the same protection from the same guard (internal/gqlguard):
// a real runtime (an in-process agent with 50 applications in its installation repository, no
// cluster) connects to the control plane through its tunnel, and account A's member sends the
// attacks to POST /runtimes/edge/app-proxy/api/graphql, as the web UI reaches the app-proxy.

const appProxyApps = 50

// appProxy is a runtime of account A reachable through the control plane.
type appProxy struct {
	url, token string
}

func startAppProxy(t *testing.T, tn *tenants) *appProxy {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	reg, err := tn.aAdmin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
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
	files := map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n"}
	for i := range appProxyApps {
		files[fmt.Sprintf("apps/app-%03d.yaml", i)] = fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: app-%03d\n"+
			"  labels: {team: shop}\nspec:\n  project: default\n  source:\n    repoURL: file://%s\n    path: manifests\n    targetRevision: main\n"+
			"  destination:\n    server: https://kubernetes.default.svc\n    namespace: app-%03d\n", i, bare, i)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitDo(src, "add", ".")
	gitDo(src, "commit", "-m", "apps")
	gitDo(src, "push", "origin", "main")
	a, err := agent.New(agent.Options{Server: tn.s.URL, Token: reg.Token, AccessMode: "tunnel", Version: "test", DataDir: t.TempDir(),
		InstallRepo: git.Repo{URL: "file://" + bare}, NoInCluster: true}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	key, err := tn.aMember.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "app-proxy attacks"})
	if err != nil {
		t.Fatal(err)
	}
	p := &appProxy{url: tn.s.URL + "/runtimes/edge/app-proxy/api/graphql", token: key.Token}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var out struct{ Applications []struct{ Name string } }
		errs, _, err := p.ask("{ applications { name } }", nil, &out)
		if err == nil && len(errs) == 0 && len(out.Applications) == appProxyApps {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runtime's app-proxy does not list %d applications: %v %v %+v", appProxyApps, err, errs, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ask posts a GraphQL request and returns the answer's errors, decoding its data into out.
func (p *appProxy) ask(query string, vars map[string]any, out any) ([]client.GraphQLError, time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return nil, d, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, d, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var ans struct {
		Data   json.RawMessage       `json:"data"`
		Errors []client.GraphQLError `json:"errors"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, d, fmt.Errorf("answer %q: %w", b, err)
	}
	if out != nil && len(ans.Data) > 0 && string(ans.Data) != "null" {
		if err := json.Unmarshal(ans.Data, out); err != nil {
			return nil, d, err
		}
	}
	return ans.Errors, d, nil
}

// refusal is the limit a refused answer names, or "" when errs is not one refusal.
func refusal(errs []client.GraphQLError) string {
	if len(errs) != 1 || errs[0].Extensions["code"] != "invalid_argument" {
		return ""
	}
	msg := errs[0].Message
	if strings.Contains(msg, "spreads itself") {
		return "cycle"
	}
	if i := strings.Index(msg, ": the "); i >= 0 {
		if j := strings.Index(msg[i:], " limit is "); j >= 0 {
			return msg[i+len(": the ") : i+j]
		}
	}
	return ""
}

func appProxyAttacks() []graphQLAttack {
	rep := func(s string, n int) string { return strings.Repeat(s, n) }
	aliases := func(n int, sel string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "a%d: %s ", i, sel)
		}
		return b.String()
	}
	var bomb strings.Builder
	bomb.WriteString(`{ application(name: "app-001") { ...f0 } }` + "\n")
	for i := range 40 {
		fmt.Fprintf(&bomb, "fragment f%d on Application { ...f%d ...f%d }\n", i, i+1, i+1)
	}
	bomb.WriteString("fragment f40 on Application { name }\n")
	resources := make([]any, 30000)
	for i := range resources {
		resources[i] = "apps/Deployment/shop/web"
	}
	return []graphQLAttack{
		{name: "4,000 repeated fields", query: "{ applications { " + rep("name ", 4000) + "} }", limit: "fields"},
		{name: "10,000 repeated fields", query: "{ applications { " + rep("name ", 6000) + "} }", limit: "fields"},
		{name: "400 repeated fields", query: "{ applications { " + rep("name ", 400) + "} }", limit: "repeats"},
		{name: "1,000 aliases of a list field", query: "{ " + aliases(1000, "applications { name }") + "}", limit: "fields"},
		{name: "51 aliases of a list field", query: "{ " + aliases(51, "applications { name }") + "}", limit: "aliases"},
		{name: "live trees and diffs of every application", query: "{ applications { name tree diff } }", limit: "cost"},
		{name: "every application's spec and status, twice", query: "{ " + aliases(2, "applications { name spec status history }") + "}", limit: "cost"},
		{name: "eleven mutations", query: "mutation { " + aliases(11, `terminateSync(name: "app-001")`) + "}", limit: "cost"},
		{name: "deep nesting", query: rep("{ applications ", 1000) + rep("}", 1000), limit: "depth"},
		{name: "fragment bomb", query: bomb.String(), limit: "fragments"},
		{name: "fragment cycle", query: `{ application(name: "app-001") { ...a } } fragment a on Application { ...b } fragment b on Application { ...a }`, limit: "cycle"},
		{name: "1,000 inline fragments", query: "{ applications { " + rep("... on Application { name } ", 1000) + "} }", limit: "fragments"},
		{name: "many operations", query: rep("query { clusters { name } } ", 100), limit: "operations"},
		{name: "huge variable object", query: `mutation($r: [String!]) { syncApplication(name: "app-001", resources: $r) }`, vars: map[string]any{"r": resources}, limit: "input values"},
		{name: "introspection: 60 aliases of the schema", query: "{ " + aliases(60, "__schema { types { name } }") + "}", limit: "aliases"},
		{name: "introspection: nested type lists", query: "{ __schema { types { fields { type { fields { type { fields { type { name } } } } } } } } }", limit: "depth"},
	}
}

func TestAppProxyGraphQLRequestsThatStallTheRuntime(t *testing.T) {
	tn := startTenants(t, servertest.Config{})
	p := startAppProxy(t, tn)
	tries, got := 0, 0
	var worst time.Duration
	for _, a := range appProxyAttacks() {
		errs, d, err := p.ask(a.query, a.vars, nil)
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		tries++
		worst = max(worst, d)
		if l := refusal(errs); l != a.limit || d > stallAfter {
			got++
			t.Errorf("%s: answered in %v with %v, want a refusal naming the %s limit", a.name, d, errs, a.limit)
		} else {
			t.Logf("%-44s %8v  %s", a.name, d.Round(time.Microsecond), errs[0].Message)
		}
	}
	attack(t, "graphql: one request stalls a runtime's app-proxy", tries, got, worst)
}

// The costliest queries the app-proxy's limits allow answer without stalling it (the median of
// seven, through the control plane and the tunnel, under stallAfter as for the attacks; the
// medians are logged for docs/benchmarks.md, goal 100 ms, not asserted). The largest allowed
// size of each is found by asking the app-proxy itself.
func TestAppProxyGraphQLWorstAllowedQueryIsQuick(t *testing.T) {
	tn := startTenants(t, servertest.Config{})
	p := startAppProxy(t, tn)
	allowed := func(q string) bool {
		errs, _, err := p.ask(q, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return refusal(errs) == ""
	}
	largest := func(query func(int) string) int {
		lo, hi := 1, 100
		if !allowed(query(lo)) {
			t.Fatalf("not even one is allowed: %s", query(lo))
		}
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if allowed(query(mid)) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return lo
	}
	aliased := func(sel string) func(int) string {
		return func(n int) string {
			var b strings.Builder
			b.WriteString("{ ")
			for i := range n {
				fmt.Fprintf(&b, "a%d: %s ", i, sel)
			}
			b.WriteString("}")
			return b.String()
		}
	}
	const all = "name project file gitSource repoUrl path targetRevision destination { server name namespace } syncStatus healthStatus healthMessage revision conditions { type message } spec status history"
	widest := aliased("applications { " + all + " }")
	live := func(n int) string {
		var b strings.Builder
		b.WriteString("{ ")
		for i := range n {
			fmt.Fprintf(&b, `a%d: application(name: "app-%03d") { name tree diff } `, i, i%appProxyApps)
		}
		b.WriteString("}")
		return b.String()
	}
	refresh := func(n int) string {
		var b strings.Builder
		b.WriteString("mutation { ")
		for i := range n {
			fmt.Fprintf(&b, `a%d: refreshApplication(name: "app-%03d") { name } `, i, i)
		}
		b.WriteString("}")
		return b.String()
	}
	keys := strings.Fields("name project file gitSource repoUrl path targetRevision syncStatus healthStatus healthMessage revision spec status history")
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("x%d: name", i))
	}
	repeats := func(n int) string {
		var b strings.Builder
		b.WriteString(`{ application(name: "app-001") { `)
		for i := range min(n, len(keys)) {
			b.WriteString(strings.Repeat(keys[i]+" ", 20))
		}
		b.WriteString("} }")
		return b.String()
	}
	candidates := []struct {
		name  string
		query func(int) string
	}{
		{"the widest answer: every application, every field, n times", widest},
		{"the most live reads: n applications' trees and diffs", live},
		{"the most mutations: n refreshes", refresh},
		{"the most validation: n fields 20 times each", repeats},
	}
	const tries = 7
	bound := stallAfter
	var worstMedian time.Duration
	for _, c := range candidates {
		n := largest(c.query)
		q := c.query(n)
		var ds []time.Duration
		for range tries {
			errs, d, err := p.ask(q, nil, nil)
			if err != nil || refusal(errs) != "" {
				t.Fatalf("%s: %v %v", c.name, err, errs)
			}
			ds = append(ds, d)
		}
		slices.Sort(ds)
		med := ds[tries/2]
		worstMedian = max(worstMedian, med)
		t.Logf("%-66s n=%-3d median %5.1f ms, slowest %5.1f ms", c.name, n, ms(med), ms(ds[tries-1]))
		if med > bound {
			t.Errorf("%s (n=%d): median %v, want at most %v", c.name, n, med, bound)
		}
	}
	t.Logf("app-proxy GraphQL limits: the worst query allowed answers in %.1f ms (median of %d)", ms(worstMedian), tries)
}
