package graphql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/graphql"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/gqlguard"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// uiPage is the largest page the web UI asks for (web/src/pages/Applications.tsx, PAGE).
const uiPage = 500

// The limits refuse no query our clients send: every query of the web UI (read from its
// sources, with its largest page) and every example of docs/api.md.
func TestLimitsAllowWhatOurClientsSend(t *testing.T) {
	g, err := gqlguard.New(api.GraphQLSchema, nil, graphql.Limits())
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	literal := regexp.MustCompile("(?s)`((?:query|mutation)[ ({][^`]*)`")
	root := filepath.Join("..", "..", "..")
	err = filepath.WalkDir(filepath.Join(root, "web", "src"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, ".test.") || !(strings.HasSuffix(path, ".ts") || strings.HasSuffix(path, ".tsx")) {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(m[1], "{") && !strings.Contains(m[1], "${") {
				queries = append(queries, m[1])
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 5 {
		t.Fatalf("found %d queries in web/src: the pattern no longer finds them", len(queries))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```graphql\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		queries = append(queries, m[1])
	}
	vars := map[string]any{"first": float64(uiPage), "admin": true}
	for _, q := range queries {
		m, err := g.Check(q, "", vars)
		if err != nil {
			t.Errorf("refused: %v\n%s", err, q)
			continue
		}
		t.Logf("cost %5d of %d, fields %3d: %.60q", m.Cost, graphql.MaxCost, m.Fields, q)
	}
}

// newHandler is the control plane's GraphQL handler on real services and SQLite, with the
// principal of the first account's admin.
func newHandler(t testing.TB) (*graphql.Handler, rbac.Principal) {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	a := audit.NewLog(db, nil)
	id := identity.New(identity.Deps{Store: db, Audit: a})
	if _, err := id.Bootstrap(ctx, "first", "admin@first.test", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	login, err := id.Login(ctx, "admin@first.test", "correct-horse-battery", "")
	if err != nil {
		t.Fatal(err)
	}
	h, err := graphql.New(id, a, runtimes.New(runtimes.Deps{Store: db, Audit: a, Keys: secrets.Generate()}), analytics.New(analytics.Deps{Store: db}), nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, login.Principal
}

// FuzzGraphQL sends arbitrary queries and variables to the control plane's GraphQL handler: no
// panic, no internal error, a JSON answer, and no request that takes long — the guard refuses
// what would (generous bounds: the fuzzer runs beside other work).
func FuzzGraphQL(f *testing.F) {
	for _, q := range []string{
		"{ me { role user { email } accounts { name role } } }",
		"query Q($n: Int) { users(first: $n) { nodes { id email } pageInfo { endCursor hasNextPage } } }",
		`{ auditEvents(filter: {action: "user.*", since: "24h"}, first: 5) { nodes { time actor action } } }`,
		`{ applications(filter: {labels: ["team=x"]}, first: 10) { nodes { name history(first: 2) { nodes { id } } } } applicationCounts { total } }`,
		"{ me { ...F } } fragment F on Me { role ...G } fragment G on Me { user { id } }",
		"{ me { ... on Me { role } a: role b: role } __typename }",
		"{ __schema { queryType { fields { name args { name } } } } }",
		"{ me { " + strings.Repeat("role ", 30) + "} }",
		"query A { me { role } } query B { account { name } }",
		`{ users(after: """block""") { nodes { id } } }`,
		"{ me { role } ",
		"fragment F on Me { ...F } { me { ...F } }",
	} {
		f.Add(q, `{"n": 3}`)
	}
	f.Add("query($l: [String!]) { applications(filter: {labels: $l}) { nodes { id } } }", `{"l": ["a=b", "c=d"]}`)
	f.Add("query($x: Int = 5) { users(first: $x) { nodes { id } } }", `{"x": [[[[1]]]]}`)
	h, p := newHandler(f)
	f.Fuzz(func(t *testing.T, query, variables string) {
		// A request that hangs would stall the fuzzer, not fail it: crash instead, so that the
		// input is kept.
		watchdog := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("hung on %q, variables %q", query, variables)) })
		defer watchdog.Stop()
		body := map[string]any{"query": query}
		if json.Valid([]byte(variables)) && strings.HasPrefix(strings.TrimSpace(variables), "{") {
			body["variables"] = json.RawMessage(variables)
		}
		b, err := json.Marshal(body)
		if err != nil {
			t.Skip() // not valid UTF-8: no client can send it as JSON
		}
		req := httptest.NewRequest(http.MethodPost, "/api/graphql", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(httpx.WithPrincipal(req.Context(), p))
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v: %q %s", d, query, variables)
		}
		if rec.Code >= 500 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var ans map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
			t.Fatalf("answer is not JSON: %v: %s", err, rec.Body)
		}
		if errs, _ := ans["errors"].([]any); len(errs) > 0 {
			for _, e := range errs {
				if strings.Contains(e.(map[string]any)["message"].(string), "panic") {
					t.Fatalf("a resolver panicked: %v", e)
				}
			}
		}
	})
}
