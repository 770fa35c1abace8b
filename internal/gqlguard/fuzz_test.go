package gqlguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/internal/gqlguard"
)

// FuzzGraphQLGuard feeds arbitrary queries and variables through the guard and, when it lets
// them through, through graphql-go (Exec on the test schema): no panic; the check takes a
// bounded time and refuses only with a *LimitError or a *DocumentError; what it lets through
// validates and runs in a bounded time (generous bounds: the fuzzer runs beside other work); and
// a query graphql-go reads without a syntax error is not refused as one.
func FuzzGraphQLGuard(f *testing.F) {
	for _, q := range []string{
		"{ me { role } }",
		"query Q($n: Int = 3) { users(first: $n) { nodes { id email friends(first: 2) { nodes { id } } } pageInfo { hasNextPage } } }",
		"{ me { ...F ... on Me { a: role } } } fragment F on Me { role user { id } }",
		"mutation { touch(name: \"x\") }",
		`{ users(after: "a \"b\" \u00e9") { nodes { id } } }`,
		"{ users(after: \"\"\"block \"\" \\\"\"\" x\"\"\") { nodes { id } } }",
		"# comment\n{ items { name tags children { name } } __typename }",
		"{ __schema { types { name fields { name } } } }",
		"{ me { role role role } me { name } }",
		"query A { me { role } } query B { me { name } }",
		"{ me { ...A } } fragment A on Me { ...B } fragment B on Me { ...A }",
		"{ users(first: [[1], {a: $x}]) { nodes { id } } }",
		"{ slow }",
		"{ me { role @include(if: true) @skip(if: false) } }",
	} {
		f.Add(q, `{"n": 2}`)
	}
	f.Add("query($x: [String!]) { me { role } }", `{"x": ["a", ["b", {"c": [1, 2]}]]}`)
	g := newGuard(f, gqlguard.Limits{Timeout: 100 * time.Millisecond})
	f.Fuzz(func(t *testing.T, query, variables string) {
		// A request that hangs would stall the fuzzer, not fail it: crash instead, so that the
		// input is kept.
		watchdog := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("hung on %q, variables %q", query, variables)) })
		defer watchdog.Stop()
		var vars map[string]any
		_ = json.Unmarshal([]byte(variables), &vars)
		start := time.Now()
		_, err := g.Check(query, "", vars)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the check took %v", d)
		}
		var le *gqlguard.LimitError
		var de *gqlguard.DocumentError
		switch {
		case err == nil:
			start = time.Now()
			resp := g.Exec(context.Background(), query, "", vars)
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("a query the guard let through took %v: %q", d, query)
			}
			// graphql-go's own limits back the guard's up and are never reached first.
			for _, e := range resp.Errors {
				for _, backstop := range []string{"exceeds max depth", "Overlapping field validation aborted", "maximum allowed query length"} {
					if strings.Contains(e.Message, backstop) {
						t.Fatalf("the guard let through what graphql-go refused: %v: %q", e, query)
					}
				}
				if errors.Is(e.Err, gql.ErrTooManySelections) {
					t.Fatalf("the guard let through what graphql-go refused: %v: %q", e, query)
				}
			}
		case errors.As(err, &le):
		case errors.As(err, &de):
			if len(query) < 4096 && strings.HasPrefix(de.Message, "syntax error") && !goOnly(query, de) {
				// The guard reads the same tokens as graphql-go: a document graphql-go reads is
				// one the guard reads too (small ones only: graphql-go's validation is what
				// the guard protects it from), but for the Go syntax graphql-go's lexer also
				// takes, which no GraphQL client sends and the guard refuses.
				if libraryReads(g, query) {
					t.Fatalf("the guard found a syntax error (%v) where graphql-go found none: %q", err, query)
				}
			}
		default:
			t.Fatalf("refused with %T: %v", err, err)
		}
	})
}

// goOnly reports whether the guard's syntax error is at Go syntax that graphql-go's lexer
// (text/scanner) reads and GraphQL does not have: Go numbers (.5, 1., 0x1F, 1_000), character
// and raw string literals, Unicode identifiers.
func goOnly(query string, de *gqlguard.DocumentError) bool {
	if strings.Contains(de.Message, "number") {
		return true
	}
	if de.Pos < 0 || de.Pos >= len(query) {
		return false
	}
	c := query[de.Pos]
	return c >= 0x80 || c == '`' || c == '\'' || c == '.' || c == '_' || c >= '0' && c <= '9'
}

// libraryReads reports whether graphql-go parses query without a syntax error (or a panic: its
// parser panics on some descriptions, which the guard refuses for that reason).
func libraryReads(g *gqlguard.Guard, query string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	for _, e := range g.Schema().Validate(query) {
		if strings.Contains(e.Message, "syntax error") {
			return false
		}
	}
	return true
}
