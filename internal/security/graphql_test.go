package security_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api"
	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/graphql"
	"github.com/freshet-dev/freshet/internal/gqlguard"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// The GraphQL attacks of issue #11, item 4: one request that stalls the control plane. Each is
// sent by account A's member to a real server, whose answer must be a refusal that names the
// limit — quickly, before graphql-go validates anything. Then the costliest queries the limits
// still allow run against real data (1,000 applications) and must not stall it.

// stallAfter is how long an answer may take before the attack counts as a stall. The issue's
// requests took 28 s to over 3 minutes; a refusal takes a few milliseconds.
const stallAfter = 2 * time.Second * min(raceSlowdown, 5)

// graphQLAttack is one abusive request and the limit that must refuse it.
type graphQLAttack struct {
	name  string
	query string
	vars  map[string]any
	limit string // the limit its refusal names ("" for a refusal that names a fragment cycle)
}

func graphQLAttacks() []graphQLAttack {
	rep := func(s string, n int) string { return strings.Repeat(s, n) }
	aliases := func(n int, sel string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "a%d: %s ", i, sel)
		}
		return b.String()
	}
	bomb := func(levels int) string {
		var b strings.Builder
		b.WriteString("{ me { ...f0 } }\n")
		for i := range levels {
			fmt.Fprintf(&b, "fragment f%d on Me { ...f%d ...f%d }\n", i, i+1, i+1)
		}
		fmt.Fprintf(&b, "fragment f%d on Me { role }\n", levels)
		return b.String()
	}
	distinctFragments := func(n int) string {
		var b strings.Builder
		b.WriteString("{ me { ")
		for i := range n {
			fmt.Fprintf(&b, "...f%d ", i)
		}
		b.WriteString("} }\n")
		for i := range n {
			fmt.Fprintf(&b, "fragment f%d on Me { role }\n", i)
		}
		return b.String()
	}
	ops := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "query q%d { me { role } }\n", i)
		}
		return b.String()
	}
	bigVars := make([]any, 50000)
	for i := range bigVars {
		bigVars[i] = "team=payments"
	}
	var deepVar any = "x"
	for range 5000 {
		deepVar = []any{deepVar}
	}
	const appFields = "id name runtime project healthStatus syncStatus labels { key value } resources { kind name status }"
	return []graphQLAttack{
		{name: "4,000 repeated fields", query: "{ me { " + rep("role ", 4000) + "} }", limit: "fields"},
		{name: "10,000 repeated fields", query: "{ me { " + rep("role ", 10000) + "} }", limit: "fields"},
		{name: "400 repeated fields (within the field limit)", query: "{ me { " + rep("role ", 400) + "} }", limit: "repeats"},
		{name: "repeats merged through same-named parents", query: "{ " + rep("me { role role role } ", 100) + "}", limit: "repeats"},
		{name: "1,000 aliases of a list field", query: "{ " + aliases(1000, "users(first: 1000) { nodes { id email role } }") + "}", limit: "fields"},
		{name: "51 aliases of a list field", query: "{ " + aliases(51, "users { nodes { id } }") + "}", limit: "aliases"},
		{name: "aliases of the application list", query: "{ " + aliases(20, "applications(first: 1000) { nodes { "+appFields+" } }") + "}", limit: "cost"},
		{name: "nested pages", query: "{ applications(first: 1000) { nodes { history(first: 1000) { nodes { id changed { kind name } } } } } }", limit: "cost"},
		{name: "a page size in a variable", query: "query($n: Int) { applications(first: $n) { nodes { " + appFields + " history(first: $n) { nodes { id } } } } }", vars: map[string]any{"n": 1000}, limit: "cost"},
		{name: "deep nesting", query: rep("{ me ", 5000) + rep("}", 5000), limit: "depth"},
		{name: "nested inline fragments", query: "{ me { " + rep("... { ", 5000) + "role" + rep(" }", 5000) + " } }", limit: "fragments"},
		{name: "a deeply nested variable type", query: "query($x: " + rep("[", 5000) + "String" + rep("]", 5000) + ") { me { role } }", limit: "nesting"},
		{name: "deep fields", query: "{ applications { nodes { tree { " + rep("children { ", 12) + "name" + rep(" }", 12) + " } } } }", limit: "depth"},
		{name: "fragment bomb", query: bomb(40), limit: "fragments"},
		{name: "fragment cycle", query: "{ me { ...a } } fragment a on Me { ...b } fragment b on Me { user { id } ...a }"},
		{name: "1,000 distinct fragments", query: distinctFragments(1000), limit: "fragments"},
		{name: "1,000 inline fragments", query: "{ me { " + rep("... on Me { role } ", 1000) + "} }", limit: "fragments"},
		{name: "4,000 operations", query: ops(4000), limit: "length"},
		{name: "100 operations", query: ops(100), limit: "operations"},
		{name: "4,000 directives", query: "{ me { role " + rep("@include(if: true) ", 4000) + "} }", limit: "length"},
		{name: "1,000 directives", query: "{ me { role " + rep("@skip(if: false) ", 1000) + "} }", limit: "directives"},
		{name: "huge variable object", query: "query($l: [String!]) { applications(filter: {labels: $l}) { nodes { id } } }", vars: map[string]any{"l": bigVars}, limit: "input values"},
		{name: "deep variable", query: "query($l: [String!]) { applications(filter: {labels: $l}) { nodes { id } } }", vars: map[string]any{"l": deepVar}, limit: "input depth"},
		{name: "huge literal list", query: "{ applications(filter: {labels: [" + rep(`"a=b" `, 5000) + "]}) { nodes { id } } }", limit: "input values"},
		{name: "introspection: nested type lists", query: "{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }", limit: "cost"},
		{name: "introspection: 1,000 aliases of the schema", query: "{ " + aliases(60, "__schema { types { name } }") + "}", limit: "aliases"},
		{name: "introspection: deep ofType", query: "{ __schema { types { " + rep("ofType { ", 20) + "name" + rep(" }", 20) + " } } }", limit: "depth"},
	}
}

// askGraphQL sends query as c and returns the answer's errors (GraphQL's, or the API's for a
// refused body) and how long it took.
func askGraphQL(c *client.Client, query string, vars map[string]any) (client.GraphQLErrors, *client.Error, time.Duration, error) {
	start := time.Now()
	err := c.GraphQL(context.Background(), query, vars, nil)
	d := time.Since(start)
	var gerrs client.GraphQLErrors
	var aerr *client.Error
	switch {
	case err == nil:
		return nil, nil, d, nil
	case errors.As(err, &gerrs):
		return gerrs, nil, d, nil
	case errors.As(err, &aerr):
		return nil, aerr, d, nil
	}
	return nil, nil, d, err
}

func TestGraphQLRequestsThatStallTheServer(t *testing.T) {
	tn := startTenants(t, servertest.Config{})
	seedApplications(t, tn)
	tries, got := 0, 0
	var worst time.Duration
	for _, a := range graphQLAttacks() {
		gerrs, aerr, d, err := askGraphQL(tn.aMember, a.query, a.vars)
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		tries++
		worst = max(worst, d)
		refused := false
		var msg string
		switch {
		case aerr != nil:
			msg = aerr.Message
			refused = aerr.Code == "too_large" || aerr.Code == "invalid_argument"
		case len(gerrs) == 1:
			e := gerrs[0]
			msg = e.Message
			field, _ := e.Extensions["field"].(string)
			refused = e.Extensions["code"] == "invalid_argument" && (field == "query" || field == "variables") &&
				(a.limit == "" && strings.Contains(msg, "spreads itself") || a.limit != "" && strings.Contains(msg, "the "+a.limit+" limit is"))
		}
		if !refused || d > stallAfter {
			got++
			t.Errorf("%s: answered in %v with %v %v, want a refusal naming %q", a.name, d, gerrs, aerr, a.limit)
		}
		t.Logf("%-48s %8v  %s", a.name, d.Round(time.Microsecond), msg)
	}
	attack(t, "graphql: one request stalls the control plane", tries, got, worst)
}

// The server answers other requests while abusive ones arrive: four clients send the issue's
// worst request in a loop while a fifth asks a normal query.
func TestGraphQLAbuseDoesNotStarveOthers(t *testing.T) {
	tn := startTenants(t, servertest.Config{})
	q := "{ me { " + strings.Repeat("role ", 10000) + "} }"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 4)
	for range 4 {
		go func() {
			n := 0
			for ctx.Err() == nil {
				_, _, _, _ = askGraphQL(tn.bAdmin, q, nil)
				n++
			}
			done <- n
		}()
	}
	var worst time.Duration
	tries, got := 0, 0
	for range 20 {
		tries++
		gerrs, aerr, d, err := askGraphQL(tn.aMember, "{ me { role user { email } } }", nil)
		if err != nil || gerrs != nil || aerr != nil || d > stallAfter {
			got++
			t.Errorf("a normal query under abuse: %v %v %v in %v", err, gerrs, aerr, d)
		}
		worst = max(worst, d)
	}
	cancel()
	abusive := 0
	for range 4 {
		abusive += <-done
	}
	t.Logf("%d abusive requests meanwhile; the normal query's worst answer: %v", abusive, worst)
	attack(t, "graphql: abuse starves other requests", tries, got, worst)
}

// seedApplications gives account A a runtime with 1,000 applications (labels, conditions,
// resources), 300 of them with three finished syncs: real rows for the lists to multiply.
func seedApplications(t *testing.T, tn *tenants) {
	t.Helper()
	ctx := context.Background()
	reg, err := tn.aAdmin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 0).UTC()
	var apps []runtimev1.Application
	for i := range 1000 {
		a := runtimev1.Application{Name: fmt.Sprintf("app-%04d", i), Project: "shop", RepoURL: "https://git.example/acme/deploy.git",
			Path: fmt.Sprintf("apps/%d", i), DestServer: "https://kubernetes.default.svc", DestNamespace: "shop", Sync: "Synced", Health: "Healthy",
			Labels:   map[string]string{"team": "payments", "tier": "api", "index": fmt.Sprint(i)},
			Revision: "abc", Commit: &runtimev1.Commit{SHA: "abc", Author: "Ann", Message: "bump", Time: start}, ReconciledAt: start,
			Conditions: []runtimev1.AppCondition{{Type: "SpecWarning", Message: "version ignored", File: "apps/web.yaml", Line: 12, Since: start},
				{Type: "SyncError", Message: "one resource failed", Since: start}}}
		for j := range 5 {
			a.Resources = append(a.Resources, runtimev1.AppResource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop",
				Name: fmt.Sprintf("web-%d", j), Status: "Synced", Health: "Healthy"})
		}
		apps = append(apps, a)
	}
	report(t, tn.s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: apps})
	var evs []runtimev1.AppEvent
	for i := range 300 {
		for s := int64(1); s <= 3; s++ {
			evs = append(evs, runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: fmt.Sprintf("app-%04d", i),
				Sync: &runtimev1.SyncRecord{ID: s, Revision: fmt.Sprint("rev", s), Phase: "Succeeded", InitiatedBy: "automated",
					Changed:   []runtimev1.ResourceChange{{Kind: "Deployment", Namespace: "shop", Name: "web-0", Result: "configured"}},
					StartedAt: start.Add(time.Duration(s) * time.Minute), FinishedAt: start.Add(time.Duration(s)*time.Minute + time.Second)}})
		}
	}
	report(t, tn.s.URL, reg.Token, runtimev1.ReportRequest{Events: evs})
}

// report sends a report as the runtime whose token is token, over the runtime protocol.
func report(t *testing.T, url, token string, req runtimev1.ReportRequest) {
	t.Helper()
	cl := connect.NewClient[runtimev1.ReportRequest, runtimev1.ReportResponse](http.DefaultClient, url+runtimev1.ProcedureReport, connect.WithCodec(runnerv1.Codec{}))
	r := connect.NewRequest(&req)
	r.Header().Set("Authorization", "Bearer "+token)
	if _, err := cl.CallUnary(context.Background(), r); err != nil {
		t.Fatalf("report: %v", err)
	}
}

// allowedWorst are the costliest queries the control plane's limits allow, one per way of
// spending them: the widest page of applications, the most scans of all applications, the most
// reads by key, the most histories, the most validation work (fragments and repeated fields at
// their limits) and the deepest introspection.
func allowedWorst(t *testing.T, g *gqlguard.Guard) []graphQLAttack {
	lim := g.Limits()
	aliased := func(n int, sel string) string {
		var b strings.Builder
		b.WriteString("{ ")
		for i := range n {
			fmt.Fprintf(&b, "a%d: %s ", i, sel)
		}
		b.WriteString("}")
		return b.String()
	}
	const appAll = `id runtime runtimeId name project labels { key value } repoUrl path targetRevision destination { server name namespace }
	  sourceType autoSync prune selfHeal autoSyncDisabled syncStatus healthStatus healthMessage revision commit { sha author message time }
	  conditions { type message file line since } resources { group version kind namespace name status health healthMessage requiresPruning }
	  operation { id revision phase } reconciledAt updatedAt`
	widest := func(n int) string {
		return fmt.Sprintf("{ applications(first: %d) { nodes { %s } pageInfo { endCursor hasNextPage } } }", n, appAll)
	}
	scans := func(n int) string {
		return aliased(n, `applicationCounts(filter: {search: "no such app"}) { total health { status count } }`)
	}
	reads := func(n int) string {
		return aliased(n, `application(runtime: "edge", name: "app-0001") { name history(first: 1) { nodes { id phase } } }`)
	}
	histories := func(n int) string {
		return fmt.Sprintf("{ applications(first: %d) { nodes { name history(first: 1) { nodes { id phase changed { kind name } } } } } }", n)
	}
	// The most validation: the fields of one application, each response name selected
	// MaxRepeats times (graphql-go compares them pairwise), or fragments side by side (compared
	// with each other, expanded), as many as the comparisons allow.
	keys := strings.Fields("id runtime runtimeId name project repoUrl path targetRevision sourceType autoSync prune selfHeal autoSyncDisabled syncStatus healthStatus healthMessage revision reconciledAt updatedAt")
	for i := range lim.MaxAliases {
		keys = append(keys, fmt.Sprintf("x%d: name", i))
	}
	repeats := func(n int) string {
		var b strings.Builder
		b.WriteString(`{ application(runtime: "edge", name: "app-0001") { `)
		for i := range min(n, len(keys)) {
			b.WriteString(strings.Repeat(keys[i]+" ", lim.MaxRepeats))
		}
		b.WriteString("} }")
		return b.String()
	}
	fragments := func(n int) string {
		var b strings.Builder
		b.WriteString(`{ application(runtime: "edge", name: "app-0001") { `)
		for i := range n {
			fmt.Fprintf(&b, "...f%d ", i)
		}
		b.WriteString("} }\n")
		for i := range n {
			fmt.Fprintf(&b, "fragment f%d on Application { %s }\n", i, strings.Join(keys[i%10:i%10+9], " "))
		}
		return b.String()
	}
	intro := `{ __schema { types { name kind fields { name args { name type { name kind ofType { name kind ofType { name kind ofType { name } } } } }
	  type { name kind ofType { name kind ofType { name kind ofType { name kind } } } } } inputFields { name type { name } } enumValues { name } } } }`
	n, sc, r, h := largest(t, g, widest), largest(t, g, scans), largest(t, g, reads), largest(t, g, histories)
	rp, fr := largest(t, g, repeats), largest(t, g, fragments)
	return []graphQLAttack{
		{name: fmt.Sprintf("the widest page: %d applications, every field", n), query: widest(n)},
		{name: fmt.Sprintf("the most scans: %d filtered counts", sc), query: scans(sc)},
		{name: fmt.Sprintf("the most reads: %d applications with history", r), query: reads(r)},
		{name: fmt.Sprintf("the most histories: %d", h), query: histories(h)},
		{name: fmt.Sprintf("the most validation: %d fields %d times each", rp, lim.MaxRepeats), query: repeats(rp)},
		{name: fmt.Sprintf("the most validation: %d fragments side by side", fr), query: fragments(fr)},
		{name: "the deepest introspection", query: intro},
	}
}

// largest is the largest n in [1, 1000] for which query(n) is within g's limits.
func largest(t *testing.T, g *gqlguard.Guard, query func(int) string) int {
	t.Helper()
	lo, hi := 1, 1000
	if _, err := g.Check(query(lo), "", nil); err != nil {
		t.Fatalf("not even 1 is allowed: %v", err)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, err := g.Check(query(mid), "", nil); err == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// The costliest queries the limits allow answer, on 1,000 applications, without stalling the
// server: the median of seven tries each must stay under stallAfter, as for the attacks. The
// medians are logged — they are the figures docs/benchmarks.md reports (goal 100 ms), measured
// there on a quiet machine, not asserted here, where the machine's load decides them.
func TestGraphQLWorstAllowedQueryIsQuick(t *testing.T) {
	tn := startTenants(t, servertest.Config{})
	seedApplications(t, tn)
	g, err := gqlguard.New(api.GraphQLSchema, nil, graphql.Limits())
	if err != nil {
		t.Fatal(err)
	}
	const tries = 7
	bound := stallAfter
	var worstMedian, worst time.Duration
	for _, q := range allowedWorst(t, g) {
		m, err := g.Check(q.query, "", nil)
		if err != nil {
			t.Fatalf("%s is not allowed: %v", q.name, err)
		}
		var ds []time.Duration
		size := 0
		for range tries {
			var out map[string]any
			start := time.Now()
			err := tn.aMember.GraphQL(context.Background(), q.query, nil, &out)
			ds = append(ds, time.Since(start))
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			size = len(fmt.Sprint(out))
		}
		slices.Sort(ds)
		med := ds[tries/2]
		worstMedian, worst = max(worstMedian, med), max(worst, ds[tries-1])
		t.Logf("%-52s median %5.1f ms, slowest %5.1f ms; cost %d, fields %d, comparisons %d, answer %d KiB",
			q.name, ms(med), ms(ds[tries-1]), m.Cost, m.Fields, m.Comparisons, size>>10)
		if med > bound {
			t.Errorf("%s: median %v, want at most %v", q.name, med, bound)
		}
	}
	t.Logf("GraphQL limits: the worst query allowed answers in %.1f ms (median of %d), %.1f ms at worst", ms(worstMedian), tries, ms(worst))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
