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

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gqlguard"
)

// testSchema has what the cost model distinguishes: plain fields, paged connections (first),
// lists without a page size, nested pages, a mutation and a resolver that waits for its context.
const testSchema = `
schema { query: Query mutation: Mutation }
type Query {
  me: Me!
  users(first: Int, after: String): UserConnection!
  items: [Item!]!
  slow: String!
}
type Mutation { touch(name: String!): Boolean! }
type Me { role: String! name: String! user: User! }
type UserConnection { nodes: [User!]! pageInfo: PageInfo! }
type PageInfo { endCursor: String hasNextPage: Boolean! }
type User { id: ID! email: String! friends(first: Int): UserConnection! }
type Item { name: String! tags: [String!]! children: [Item!]! }
`

type root struct{}

type me struct{}

func (me) Role() string { return "admin" }
func (me) Name() string { return "Ann" }
func (me) User() user   { return user{1} }

type user struct{ n int }

func (u user) ID() gql.ID                               { return gql.ID(fmt.Sprint(u.n)) }
func (u user) Email() string                            { return fmt.Sprintf("u%d@example.test", u.n) }
func (u user) Friends(args struct{ First *int32 }) conn { return users(args.First) }

type conn struct{ nodes []user }

func (c conn) Nodes() []user { return c.nodes }
func (c conn) PageInfo() pageInfo {
	return pageInfo{}
}

type pageInfo struct{}

func (pageInfo) EndCursor() *string { return nil }
func (pageInfo) HasNextPage() bool  { return false }

// users is a page of at most three users: the guard counts what a query may ask for, not what
// the data holds.
func users(first *int32) conn {
	n := 3
	if first != nil && int(*first) < n {
		n = int(*first)
	}
	c := conn{}
	for i := range n {
		c.nodes = append(c.nodes, user{i + 1})
	}
	return c
}

type item struct{ depth int }

func (i item) Name() string     { return "item" }
func (i item) Tags() []string   { return []string{"a", "b"} }
func (i item) Children() []item { return []item{{i.depth + 1}} }

func (*root) Me() me { return me{} }
func (*root) Users(args struct {
	First *int32
	After *string
}) conn {
	return users(args.First)
}
func (*root) Items() []item { return []item{{}, {}} }
func (*root) Slow(ctx context.Context) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}
func (*root) Touch(args struct{ Name string }) bool { return true }

func newGuard(t testing.TB, l gqlguard.Limits) *gqlguard.Guard {
	t.Helper()
	g, err := gqlguard.New(testSchema, &root{}, l, gql.UseFieldResolvers())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCheckRefusesWhatPassesALimit(t *testing.T) {
	bomb := func(levels int) string {
		var b strings.Builder
		b.WriteString("{ me { ...f0 } }\n")
		for i := range levels {
			fmt.Fprintf(&b, "fragment f%d on Me { ...f%d ...f%d }\n", i, i+1, i+1)
		}
		fmt.Fprintf(&b, "fragment f%d on Me { role }\n", levels)
		return b.String()
	}
	nested := func(levels int) string { return strings.Repeat("[", levels) + strings.Repeat("]", levels) }
	deepVar := func(levels int) any {
		var v any = "x"
		for range levels {
			v = []any{v}
		}
		return v
	}
	manyVars := make([]any, 1001)
	for i := range manyVars {
		manyVars[i] = "x"
	}
	for _, tc := range []struct {
		name   string
		lim    gqlguard.Limits
		query  string
		vars   map[string]any
		limit  string // "" for a *DocumentError
		value  int64
		field  string
		inText string // part of the message
	}{
		{name: "length", lim: gqlguard.Limits{MaxLength: 20}, query: "{ me { role name user { id } } }", limit: "length", value: 32, field: "query"},
		{name: "repeated field (issue #11: role ×4000)", query: "{ me { " + strings.Repeat("role ", 21) + "} }", limit: "repeats", value: 21, field: "query", inText: `of "role"`},
		{name: "repeats merge through same-named parents", query: "{ " + strings.Repeat("me { role role } ", 11) + "}", limit: "repeats", value: 22, field: "query"},
		{name: "repeats merge through fragments", query: "{ me { role ...R ...R ...R } } fragment R on Me { role role role role role role role }", limit: "repeats", value: 22, field: "query"},
		{name: "fields in the text", query: "{ me { " + strings.Repeat("role ", 501) + "} }", limit: "fields", value: 501, field: "query"},
		{name: "fields expanded from fragments", lim: gqlguard.Limits{MaxFields: 10}, query: "{ me { ...F } users { nodes { ...U ...U } } } fragment F on Me { role name } fragment U on User { id email a: id b: email }", limit: "fields", value: 11, field: "query"},
		{name: "aliases of a list field (issue #11)", query: "{ " + aliases(51, "users { nodes { id } }") + " }", limit: "aliases", value: 51, field: "query"},
		{name: "comparisons of fragments side by side", lim: gqlguard.Limits{MaxComparisons: 20},
			query: "{ me { ...A ...B ...C } } fragment A on Me { role name } fragment B on Me { role name } fragment C on Me { role name }", limit: "comparisons", value: 3 + 3 + 9*9/2, field: "query"},
		{name: "comparisons of fragments that expand to nothing", lim: gqlguard.Limits{MaxComparisons: 1},
			query: "{ ...A ...A ...A }", limit: "comparisons", value: 4, field: "query"},
		{name: "depth", lim: gqlguard.Limits{MaxDepth: 3}, query: "{ me { user { friends { nodes { id } } } } }", limit: "depth", value: 4, field: "query"},
		{name: "depth through fragments", lim: gqlguard.Limits{MaxDepth: 3}, query: "{ me { user { ...F } } } fragment F on User { friends { nodes { id } } }", limit: "depth", value: 4, field: "query"},
		{name: "fragment bomb", query: bomb(30), limit: "fragments", value: 51, field: "query"},
		{name: "inline fragments", query: "{ me { " + strings.Repeat("... on Me { role } ", 51) + "} }", limit: "fragments", value: 51, field: "query"},
		{name: "fragment cycle", query: "{ me { ...A } } fragment A on Me { ...B } fragment B on Me { ...A }", inText: `fragment "A" spreads itself (A → B → A)`, field: "query"},
		{name: "fragment cycle through a field", query: "{ me { user { ...U } } } fragment U on User { friends { nodes { ...U } } }", inText: `fragment "U" spreads itself`, field: "query"},
		{name: "operations", query: strings.Repeat("query { me { role } } ", 11), limit: "operations", value: 11, field: "query"},
		{name: "directives", query: "{ me { role " + strings.Repeat("@include(if: true) ", 51) + "} }", limit: "directives", value: 51, field: "query"},
		{name: "input values in the query", query: "{ users(first: [" + strings.Repeat("1 ", 1001) + "]) { nodes { id } } }", limit: "input values", value: 1001, field: "query"},
		{name: "input depth in the query", query: "{ users(first: " + nested(11) + ") { nodes { id } } }", limit: "input depth", value: 11, field: "query"},
		{name: "input values in the variables", query: "query($x: [String!]) { me { role } }", vars: map[string]any{"x": manyVars}, limit: "input values", value: 1001, field: "variables"},
		{name: "input depth in the variables", query: "query($x: String) { me { role } }", vars: map[string]any{"x": deepVar(11)}, limit: "input depth", value: 11, field: "variables"},
		{name: "cost of nested pages", query: "{ users(first: 1000) { nodes { friends(first: 100) { nodes { id } } } } }", limit: "cost", field: "query"},
		{name: "cost of a page size in a variable", query: "query($n: Int) { users(first: $n) { nodes { id email friends { nodes { id email } } } } }", vars: map[string]any{"n": 1000.0}, limit: "cost", field: "query"},
		{name: "cost of a page size's default", query: "query($n: Int = 1000) { users(first: $n) { nodes { id email friends { nodes { id email } } } } }", limit: "cost", field: "query"},
		{name: "cost of lists without a page size", query: "{ items { children { children { children { name tags } } } } }", lim: gqlguard.Limits{MaxCost: 1000}, limit: "cost", field: "query"},
		// graphql-go ends a block string at the first """, escaped or not: the guard must count
		// the fields that follow as fields, not as the rest of a string.
		{name: "block string ends where graphql-go ends it", query: `{ users(after: """x \""") { nodes { ` + strings.Repeat("id ", 21) + `} } } #""") { nodes { id } } }`,
			limit: "repeats", value: 21, field: "query"},
		// graphql-go skips Go comments: the guard counts what is outside them, and only that.
		{name: "fields after a Go comment", query: "{ me { /* role */ " + strings.Repeat("name ", 21) + "} } // role", limit: "repeats", value: 21, field: "query"},
		{name: "an unterminated Go comment", query: "{ me { role } } /* ", inText: "the comment is not terminated", field: "query"},
		// graphql-go's parser panics on a description strconv.Unquote cannot read.
		{name: "a description graphql-go cannot read", query: `"\700" query { me { role } }`, inText: "has an escape graphql-go cannot read", field: "query"},
		{name: "syntax", query: "{ me { role }", inText: `query: syntax error: unexpected end of query, expecting Name`, field: "query"},
		{name: "unterminated string", query: `{ users(after: "abc) { nodes { id } } }`, inText: "the string is not terminated", field: "query"},
		{name: "empty", query: "  # nothing\n", inText: "query: holds no operation", field: "query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuard(t, tc.lim)
			start := time.Now()
			_, err := g.Check(tc.query, "", tc.vars)
			if err == nil {
				t.Fatal("accepted")
			}
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("the check took %v", d)
			}
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("%v is not an invalid-argument error", err)
			}
			var le *gqlguard.LimitError
			var de *gqlguard.DocumentError
			switch {
			case tc.limit != "":
				if !errors.As(err, &le) || le.Limit != tc.limit || (tc.value != 0 && le.Value != tc.value) || le.Field != tc.field {
					t.Fatalf("error %#v (%v), want limit %q value %d field %q", err, err, tc.limit, tc.value, tc.field)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf(`"%d %s"`, le.Value, le.Unit)) || !strings.Contains(err.Error(), fmt.Sprintf("the %s limit is %d", le.Limit, le.Max)) {
					t.Errorf("message %q does not name the limit and the value", err)
				}
			default:
				if !errors.As(err, &de) {
					t.Fatalf("error %#v (%v), want a DocumentError", err, err)
				}
			}
			if !strings.Contains(err.Error(), tc.inText) {
				t.Errorf("message %q does not say %q", err, tc.inText)
			}
		})
	}
}

func aliases(n int, sel string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: %s ", i, sel)
	}
	return b.String()
}

func TestCheckMeasures(t *testing.T) {
	g := newGuard(t, gqlguard.Limits{Weights: map[string]int{"Query.users": 10}})
	for _, tc := range []struct {
		query string
		vars  map[string]any
		want  gqlguard.Measure
	}{
		// users 10 (its weight) + nodes 1 + id and email 10 each + pageInfo 1 + hasNextPage 1
		{query: "{ users(first: 10) { nodes { id email } pageInfo { hasNextPage } } }",
			want: gqlguard.Measure{Depth: 3, Fields: 6, Repeats: 1, Operations: 1, InputValues: 1, Cost: 33, Kind: "query"}},
		// without first, a page holds 100
		{query: "{ users { nodes { id } } }",
			want: gqlguard.Measure{Depth: 3, Fields: 3, Repeats: 1, Operations: 1, Cost: 111, Kind: "query"}},
		// first from a variable; friends' page nested in users' page: 5 · 7 ids
		{query: "query Q($n: Int, $m: Int = 7) { users(first: $n) { nodes { friends(first: $m) { nodes { id } } } } }", vars: map[string]any{"n": 5.0},
			want: gqlguard.Measure{Depth: 5, Fields: 5, Repeats: 1, Operations: 1, InputValues: 6, Cost: 10 + 1 + 5 + 5 + 35, Kind: "query"}},
		// a list without a page size holds 10; tags is a list of scalars: 10 resolutions of it
		{query: "{ items { name tags } }",
			want: gqlguard.Measure{Depth: 2, Fields: 3, Repeats: 1, Operations: 1, Cost: 21, Kind: "query"}},
		// merged fields resolve once; fragments count as fragments, their fields as fields
		{query: "{ me { role ...M ... on Me { a: role } } me { name } } fragment M on Me { role name }",
			want: gqlguard.Measure{Depth: 2, Fields: 7, Aliases: 1, Repeats: 2, Comparisons: 1 + 1 + 1 + 7*7/2, Fragments: 2, Operations: 1, Cost: 4, Kind: "query"}},
		{query: "mutation { touch(name: \"x\") }",
			want: gqlguard.Measure{Depth: 1, Fields: 1, Repeats: 1, Operations: 1, InputValues: 1, Cost: 1, Kind: "mutation"}},
		// introspection of the isolation test
		{query: "{ __schema { queryType { fields { name } } mutationType { fields { name } } } }",
			want: gqlguard.Measure{Depth: 4, Fields: 7, Repeats: 1, Operations: 1, Cost: 1 + 1 + 1 + 10 + 1 + 1 + 10, Kind: "query"}},
	} {
		m, err := g.Check(tc.query, "", tc.vars)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		tc.want.Length = len(tc.query)
		if m != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.query, m, tc.want)
		}
	}
}

// Every object resolved costs its type's weight: here 3 for each of 10 users and for me's user;
// Type.* weighs every field of a type.
func TestCheckWeighsObjects(t *testing.T) {
	g := newGuard(t, gqlguard.Limits{Weights: map[string]int{"Query.users": 10, "User": 3, "Mutation.*": 7}})
	m, err := g.Check("{ users(first: 10) { nodes { id } } me { user { id } } }", "", nil)
	if want := int64(10 + 1 + 10 + 10*3 + 1 + 1 + 1*3 + 1); err != nil || m.Cost != want {
		t.Errorf("cost %d, %v; want %d", m.Cost, err, want)
	}
	if m, err := g.Check(`mutation { a: touch(name: "a") b: touch(name: "b") }`, "", nil); err != nil || m.Cost != 14 {
		t.Errorf("mutations cost %d, %v; want 14", m.Cost, err)
	}
}

// A list whose length the server knows costs that many times what it holds.
func TestCheckAsksForListLengths(t *testing.T) {
	var asked []string
	g := newGuard(t, gqlguard.Limits{Lengths: func(f string) int {
		asked = append(asked, f)
		if f == "Query.items" {
			return 1000
		}
		return 0
	}})
	m, err := g.Check("{ items { name children { name } } }", "", nil)
	if want := int64(1 + 1000 + 1000 + 1000*10); err != nil || m.Cost != want || fmt.Sprint(asked) != "[Query.items Item.children]" {
		t.Errorf("cost %d, %v, asked %v; want %d", m.Cost, err, asked, want)
	}
}

// Whatever the guard accepts, graphql-go reads the same way: valid documents of every lexical
// form pass both, and the guard's answer for invalid ones is an error too.
func TestParserAgreesWithGraphQLGo(t *testing.T) {
	g := newGuard(t, gqlguard.Limits{})
	valid := []string{
		"{ me { role } }",
		"query { me { role } }",
		"query Q($n: Int = 3, $a: String) { users(first: $n, after: $a) { nodes { id, email } } }",
		"# comment\n{ me { role # trailing\n name } }",
		"// a Go comment\n{ me { /* and another */ role } }",
		"\uFEFF{ me { role } }",
		`{ users(after: "a \"quoted\" \\ \u00e9 string") { nodes { id } } }`,
		`{ users(after: """block "string" with "" and
lines""") { nodes { id } } }`,
		"{ users(first: -0) { nodes { id } } }",
		"mutation M { touch(name: \"x\") }",
		"{ me { ...F } } fragment F on Me { role }",
		"{ me { ... { role } ... on Me @skip(if: false) { name } } }",
		"query A { me { role } } query B { me { name } }",
		"{ items { tags __typename } __typename }",
		"{ users(first: 2) { nodes { friends(first: 1) { pageInfo { hasNextPage endCursor } } } } }",
		// graphql-go's own leniencies, which the guard shares
		`"a description" query Q("of n" $n: Int) { users(first: $n) { nodes { id } } }`,
		"{ me { . . . on Me { role } } }",
		"{ users(first: - 3) { nodes { id } } }",
	}
	for _, q := range valid {
		op := ""
		if strings.HasPrefix(q, "query A") {
			op = "A"
		}
		if _, err := g.Check(q, op, nil); err != nil {
			t.Errorf("guard refused %q: %v", q, err)
		}
		if errs := g.Schema().Validate(q); len(errs) > 0 {
			t.Errorf("graphql-go refused %q: %v", q, errs)
		}
	}
	invalid := []string{
		"{ me { role }", "{ me { role } } }", "{ }", "query", "{ me(: 1) { role } }",
		"{ users(first: 1.) { nodes { id } } }", "{ users(first: 1e) { nodes { id } } }", "{ users(first: 0x1) { nodes { id } } }",
		"{ me { role } } type Foo { x: Int }", "{ me { ..role } }", `{ users(after: "abc`, "{ me { role } } %",
		"query($x: ) { me { role } }", "{ me @ { role } }",
	}
	for _, q := range invalid {
		if _, err := g.Check(q, "", nil); err == nil {
			t.Errorf("guard accepted %q", q)
		}
		if errs := g.Schema().Validate(q); len(errs) == 0 {
			t.Errorf("graphql-go accepted %q", q)
		}
	}
}

func TestExecAnswersARefusalAsTheAPIDoes(t *testing.T) {
	g := newGuard(t, gqlguard.Limits{})
	q := "{ me {\n " + strings.Repeat("role ", 21) + "} }"
	resp := g.Exec(context.Background(), q, "", nil)
	out, _ := json.Marshal(resp)
	var got struct {
		Data   any `json:"data"`
		Errors []struct {
			Message    string
			Locations  []struct{ Line, Column int }
			Extensions map[string]any
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Data != nil || len(got.Errors) != 1 {
		t.Fatalf("answer %s", out)
	}
	e := got.Errors[0]
	if e.Extensions["code"] != "invalid_argument" || e.Extensions["field"] != "query" ||
		e.Message != `query: "21 selections" of "role" in one selection set are too many (fields of one name merge, with those of fragments and of same-named parents): the repeats limit is 20` {
		t.Errorf("error %+v", e)
	}
	// The 21st role is where the limit was passed: line 2, column 2 + 20·5.
	if len(e.Locations) != 1 || e.Locations[0].Line != 2 || e.Locations[0].Column != 102 {
		t.Errorf("locations %+v", e.Locations)
	}
	// Within the limits, it runs.
	resp = g.Exec(context.Background(), "{ me { role } users(first: 2) { nodes { id } } }", "", nil)
	if len(resp.Errors) > 0 || string(resp.Data) != `{"me":{"role":"admin"},"users":{"nodes":[{"id":"1"},{"id":"2"}]}}` {
		t.Errorf("answer %s %v", resp.Data, resp.Errors)
	}
}

func TestExecStopsAtTheDeadline(t *testing.T) {
	g := newGuard(t, gqlguard.Limits{Timeout: 50 * time.Millisecond, MutationTimeout: time.Minute})
	start := time.Now()
	resp := g.Exec(context.Background(), "{ slow }", "", nil)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if len(resp.Errors) != 1 || resp.Errors[0].Extensions["code"] != "unavailable" || !strings.Contains(resp.Errors[0].Message, "stopped at its 50ms deadline") {
		t.Errorf("answer %s %+v", resp.Data, resp.Errors)
	}
	// A request its caller cancels is not reported as past the deadline.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp = g.Exec(ctx, "{ slow }", "", nil)
	for _, e := range resp.Errors {
		if e.Extensions["code"] == "unavailable" {
			t.Errorf("a cancelled request answered %+v", e)
		}
	}
}

func TestNewRefusesAWeightOfNoField(t *testing.T) {
	for _, w := range []map[string]int{{"Query.nope": 5}, {"users": 5}, {"Query.users": 0}, {"Nope": 1}, {"User": -1}, {"Nope.*": 3}} {
		if _, err := gqlguard.New(testSchema, &root{}, gqlguard.Limits{Weights: w}); err == nil || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("weights %v: %v", w, err)
		}
	}
}
