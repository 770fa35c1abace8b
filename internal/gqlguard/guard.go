// Package gqlguard bounds the work one GraphQL request may cause, so that no single request can
// stall a server. graph-gophers/graphql-go validates a query before it runs it, and its checks
// of overlapping fields are quadratic in the fields and fragments that share a selection set:
// `{ me { role role … } }` with 4,000 repeated fields took 29 s and 5 GB. A Guard therefore reads
// the query with its own small parser first — linear in the query's length, recursion bounded —
// and refuses it, before graphql-go sees it, when it passes a limit: fields, aliases, fragments,
// repeats of one field in one selection set, the comparisons overlap validation will make,
// depth, operations, directives, input values, and a cost that multiplies the fields under a
// list by the list's page size. A query within the limits then runs under a deadline.
//
// The control plane's GraphQL API (internal/api/graphql) and every runtime's app-proxy
// (internal/gitops/host) use it, each with its own Limits. It imports nothing of Freshet's but
// errdefs, so agent-side code may use it.
package gqlguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	gql "github.com/graph-gophers/graphql-go"
	"github.com/graph-gophers/graphql-go/ast"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Default limits, used for any Limits field left zero. They are sized so that the costliest
// query they allow answers in well under 100 ms on the control plane (docs/benchmarks.md,
// "GraphQL limits"), while the largest query a client of ours sends (the web UI's application
// list, about 30 fields) stays far inside every one of them.
const (
	// DefaultMaxLength bounds the query text: 64 KiB holds any hand-written or generated query.
	DefaultMaxLength = 64 << 10
	// DefaultMaxDepth bounds how deeply fields nest; our documented queries nest 5 levels.
	DefaultMaxDepth = 12
	// DefaultMaxFields bounds the field selections the validator visits: each fragment's
	// fields count again every time it is spread.
	DefaultMaxFields = 500
	// DefaultMaxAliases bounds aliases (response names other than the field's, counted once per
	// merged selection set): each alias of a field runs its resolver again.
	DefaultMaxAliases = 50
	// DefaultMaxRepeats bounds how often one response name may be selected in one selection set
	// (after fragments and same-named parent fields are merged): graphql-go compares such fields
	// pairwise, so this is the quadratic term of validation.
	DefaultMaxRepeats = 20
	// DefaultMaxComparisons bounds the comparisons graphql-go's overlap validation makes (a few
	// µs each), as the guard counts them: in every merged selection set, n·(n-1)/2 for n fields
	// of one response name, and (fields + fragments)²/2 when fragments are spread into it.
	DefaultMaxComparisons = 5000
	// DefaultMaxFragments bounds fragment spreads and inline fragments, each counted every time
	// it is expanded: graphql-go compares fragments of one selection set with each other and
	// with its fields, and a fragment that spreads two others doubles with every level.
	DefaultMaxFragments = 50
	// DefaultMaxOperations bounds the operations of one document (only one of them runs, but
	// every one is validated).
	DefaultMaxOperations = 10
	// DefaultMaxDirectives bounds @include/@skip and other directives in one document.
	DefaultMaxDirectives = 50
	// DefaultMaxInputValues bounds the input values of a request: arguments, list items,
	// object fields and variable definitions in the query, and every value in the variables.
	DefaultMaxInputValues = 1000
	// DefaultMaxInputDepth bounds how deeply lists and objects nest in one input value.
	DefaultMaxInputDepth = 10
	// DefaultMaxCost bounds a query's cost (see Limits.MaxCost): 1,000 users with 20 fields
	// each is within it.
	DefaultMaxCost = 25000
	// DefaultListLength is what a list without a page size is assumed to hold: labels,
	// conditions, a runtime's clusters hold a few; an application's resources may hold more.
	DefaultListLength = 10
	// DefaultPageArg is the argument that sets a paged field's page size (first: N).
	DefaultPageArg = "first"
	// DefaultPageSize and DefaultMaxPageSize are a page's size when first is not given and its
	// largest size: those of internal/paging, which every paged list of ours uses.
	DefaultPageSize    = 100
	DefaultMaxPageSize = 1000
	// DefaultTimeout is the deadline of a query's execution: the longest legitimate query is a
	// live resource tree read through a runtime's tunnel, which gives up after 15 s itself.
	DefaultTimeout = 20 * time.Second
)

// Limits bound one request. A zero field takes its Default… constant.
type Limits struct {
	MaxLength      int // bytes of query text
	MaxDepth       int // levels of nested fields
	MaxFields      int // field selections, fragments' fields counted each time they are spread
	MaxAliases     int // response names that are aliases, in every merged selection set
	MaxRepeats     int // selections of one response name in one (merged) selection set
	MaxComparisons int // field comparisons of overlap validation, as the guard estimates them
	MaxFragments   int // fragment spreads and inline fragments, counted each time expanded
	MaxOperations  int // operations in the document
	MaxDirectives  int // directives in the document
	MaxInputValues int // input values in the query and in the variables
	MaxInputDepth  int // nesting of lists and objects in one input value

	// MaxCost bounds the cost of the costliest operation: every field costs its weight (1
	// unless Weights says otherwise) times the number of times it resolves, which is the
	// product of the lengths of the lists around it; every object resolved costs its type's
	// weight (0 unless Weights says otherwise). A list's length is the page size asked for
	// (PageArg, of the list field itself or of the paged field whose direct child the list
	// is, as in users(first: 50) { nodes { … } }), else what Lengths says, else ListLength.
	MaxCost    int
	ListLength int // a list's assumed length when it takes no page size and Lengths does not know it
	// Lengths, when set, tells how long the list a field ("Type.field") returns is, when the
	// server knows (0: it does not); it is asked during Check.
	Lengths  func(field string) int
	PageArg  string // the page-size argument of paged fields
	PageSize int    // a page's size when PageArg is not given
	MaxPage  int    // the largest page size (a larger one counts as this)
	// Weights are the costs of what does I/O: "Type.field" → the cost of one resolution of the
	// field ("Type.*": of every field of Type); "Type" → the cost of each object of the type
	// resolved (reading and decoding it).
	Weights map[string]int

	Timeout         time.Duration // deadline of a query's (or subscription's) execution
	MutationTimeout time.Duration // deadline of a mutation's execution; zero: Timeout
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxLength, DefaultMaxLength)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxFields, DefaultMaxFields)
	def(&l.MaxAliases, DefaultMaxAliases)
	def(&l.MaxRepeats, DefaultMaxRepeats)
	def(&l.MaxComparisons, DefaultMaxComparisons)
	def(&l.MaxFragments, DefaultMaxFragments)
	def(&l.MaxOperations, DefaultMaxOperations)
	def(&l.MaxDirectives, DefaultMaxDirectives)
	def(&l.MaxInputValues, DefaultMaxInputValues)
	def(&l.MaxInputDepth, DefaultMaxInputDepth)
	def(&l.MaxCost, DefaultMaxCost)
	def(&l.ListLength, DefaultListLength)
	def(&l.PageSize, DefaultPageSize)
	def(&l.MaxPage, DefaultMaxPageSize)
	if l.PageArg == "" {
		l.PageArg = DefaultPageArg
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MutationTimeout <= 0 {
		l.MutationTimeout = l.Timeout
	}
	l.Weights = maps.Clone(l.Weights)
	return l
}

// libraryOptions are graphql-go's own limits, set to back the guard's up: its depth and length
// checks, and caps on the pairs its overlap validation examines (four times the guard's
// estimate, which is an upper bound) and on the selections its executor expands. A query the
// guard lets through does not reach them.
func (l Limits) libraryOptions() []gql.SchemaOpt {
	return []gql.SchemaOpt{
		gql.MaxDepth(l.MaxDepth),
		gql.MaxQueryLength(l.MaxLength),
		gql.OverlapValidationLimit(4 * l.MaxComparisons),
		gql.MaxSelections(10 * (l.MaxFields + l.MaxFragments)),
	}
}

// Guard runs GraphQL requests against one schema within Limits.
type Guard struct {
	schema      *gql.Schema
	lim         Limits
	types       map[string]map[string]fieldInfo // type → field → what the cost model needs
	typeWeights map[string]int                  // type → the cost of each object of it resolved
	roots       map[string]string               // operation kind → root type
}

// fieldInfo is what the guard knows of a field of the schema.
type fieldInfo struct {
	typ    string // the named type it returns
	lists  int    // how many list levels wrap it
	paged  bool   // it takes the page-size argument
	weight int
}

// New parses schemaText with resolver (as graphql.ParseSchema does, with opts) and returns a
// Guard that runs requests against it within l. The schema also gets graphql-go's own depth,
// length, overlap and selection limits, derived from l.
func New(schemaText string, resolver any, l Limits, opts ...gql.SchemaOpt) (*Guard, error) {
	l = l.withDefaults()
	s, err := gql.ParseSchema(schemaText, resolver, append(l.libraryOptions(), opts...)...)
	if err != nil {
		return nil, err
	}
	g := &Guard{schema: s, lim: l, types: map[string]map[string]fieldInfo{}, typeWeights: map[string]int{}, roots: map[string]string{}}
	as := s.AST()
	for kind, t := range as.RootOperationTypes {
		g.roots[kind] = t.TypeName()
	}
	for name, t := range as.Types {
		var fields ast.FieldsDefinition
		switch t := t.(type) {
		case *ast.ObjectTypeDefinition:
			fields = t.Fields
		case *ast.InterfaceTypeDefinition:
			fields = t.Fields
		default:
			continue
		}
		m := make(map[string]fieldInfo, len(fields))
		for _, f := range fields {
			fi := fieldInfo{weight: 1, paged: f.Arguments.Get(l.PageArg) != nil}
			fi.typ, fi.lists = unwrap(f.Type)
			m[f.Name] = fi
		}
		g.types[name] = m
	}
	for key, w := range l.Weights {
		if _, isType := g.types[key]; isType && w >= 0 {
			g.typeWeights[key] = w
			continue
		}
		typ, field, ok := cutType(key)
		fields := []string{field}
		if field == "*" {
			fields = slices.Collect(maps.Keys(g.types[typ]))
		}
		for _, f := range fields {
			fi, found := g.types[typ][f]
			if !ok || !found || w < 1 {
				return nil, errdefs.Invalid("weights", key, "must name an object type of the schema, or a field as Type.field (Type.* for all of them) with a weight of at least 1")
			}
			fi.weight = w
			g.types[typ][f] = fi
		}
		if len(fields) == 0 {
			return nil, errdefs.Invalid("weights", key, "names no field of the schema")
		}
	}
	return g, nil
}

// MustNew is New that panics on an error, for schemas compiled into the binary.
func MustNew(schemaText string, resolver any, l Limits, opts ...gql.SchemaOpt) *Guard {
	g, err := New(schemaText, resolver, l, opts...)
	if err != nil {
		panic(err)
	}
	return g
}

func cutType(key string) (typ, field string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '.' {
			return key[:i], key[i+1:], i > 0 && i < len(key)-1
		}
	}
	return "", "", false
}

func unwrap(t ast.Type) (name string, lists int) {
	for {
		switch x := t.(type) {
		case *ast.NonNull:
			t = x.OfType
		case *ast.List:
			lists++
			t = x.OfType
		case interface{ TypeName() string }:
			return x.TypeName(), lists
		default:
			return "", lists
		}
	}
}

// Limits returns the guard's limits, defaults filled in.
func (g *Guard) Limits() Limits { return g.lim }

// Schema is the schema the guard runs requests against.
func (g *Guard) Schema() *gql.Schema { return g.schema }

// Measure is what a request asks for, as the guard counts it.
type Measure struct {
	Length, Depth, Fields, Aliases, Repeats, Comparisons, Fragments, Operations, Directives, InputValues int
	Cost                                                                                                 int64
	// Kind is the kind of operation that runs: query, mutation or subscription ("" when the
	// document names none that operationName selects).
	Kind string
}

// Check measures a request and returns an error when it exceeds a limit (a *LimitError) or is
// not a GraphQL document the guard can read and expand (a *DocumentError). Its work is linear in the length
// of the query and of the variables, and bounded by the limits.
func (g *Guard) Check(query, operationName string, variables map[string]any) (Measure, error) {
	m := Measure{Length: len(query)}
	if len(query) > g.lim.MaxLength {
		return m, limitAt(-1, "query", "length", "bytes", len(query), g.lim.MaxLength, "are too many")
	}
	n, err := countInputs(variables, g.lim.MaxInputValues, g.lim.MaxInputDepth)
	m.InputValues = n
	if err != nil {
		return m, err
	}
	doc, err := parse(query, &g.lim, g.lim.PageArg)
	if err != nil {
		return m, err
	}
	m.Operations = len(doc.ops)
	m.Directives = doc.directives
	m.InputValues += doc.inputValues
	if m.InputValues > g.lim.MaxInputValues {
		return m, limitAt(-1, "variables", "input values", "input values", m.InputValues, g.lim.MaxInputValues,
			"are too many: arguments, list items, object fields and variable definitions in the query and every value in the variables count")
	}
	if err := fragmentCycles(doc); err != nil {
		return m, err
	}
	w := &walker{g: g, doc: doc, vars: variables, spread: map[string]bool{}}
	err = w.walk(&m)
	m.Kind = selectedKind(doc, operationName)
	return m, err
}

func selectedKind(doc *document, name string) string {
	if name == "" && len(doc.ops) == 1 {
		return doc.ops[0].kind
	}
	for _, op := range doc.ops {
		if name != "" && op.name == name {
			return op.kind
		}
	}
	return ""
}

// Exec checks the request and, when it is within the limits, runs it (graphql.Schema.Exec)
// under the deadline of its kind of operation. A refused request answers one error whose
// extensions carry the API's error code ("invalid_argument") and field ("query" or
// "variables"); one stopped at its deadline answers one error with code "unavailable".
func (g *Guard) Exec(ctx context.Context, query, operationName string, variables map[string]any) *gql.Response {
	m, err := g.Check(query, operationName, variables)
	if err != nil {
		return &gql.Response{Errors: []*gqlerrors.QueryError{queryError(query, err)}}
	}
	timeout := g.lim.Timeout
	if m.Kind == "mutation" {
		timeout = g.lim.MutationTimeout
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := g.exec(ectx, query, operationName, variables)
	if err != nil {
		return &gql.Response{Errors: []*gqlerrors.QueryError{{Message: errdefs.InternalMessage, Extensions: map[string]any{"code": "internal"}}}}
	}
	if errors.Is(ectx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return &gql.Response{Errors: []*gqlerrors.QueryError{{
			Message:    fmt.Sprintf("query: stopped at its %s deadline: ask for less in one request", timeout),
			Extensions: map[string]any{"code": errdefs.Code(errdefs.ErrUnavailable)},
		}}}
	}
	return resp
}

// exec is schema.Exec that turns a panic of graphql-go's (its parser has some) into an error.
func (g *Guard) exec(ctx context.Context, query, operationName string, variables map[string]any) (resp *gql.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("graphql-go panicked: %v", r)
		}
	}()
	return g.schema.Exec(ctx, query, operationName, variables), nil
}

// LimitError is a request over one of the limits. It unwraps to errdefs.ErrInvalid.
type LimitError struct {
	Field  string // query or variables
	Limit  string // the limit passed: length, fields, aliases, repeats, comparisons, fragments, depth, cost, …
	Unit   string // what Value counts: bytes, fields, selections, levels, cost units, …
	Value  int64  // how many the request has (at least: counting stops past the limit)
	Max    int64
	Reason string // what is too many, and how the guard counts it
	Pos    int    // byte offset in the query where the limit was passed; -1: none
}

func limitAt(pos int, field, limit, unit string, value, max int, reason string) *LimitError {
	return &LimitError{Field: field, Limit: limit, Unit: unit, Value: int64(value), Max: int64(max), Reason: reason, Pos: pos}
}

// Error reads like `query: "501 fields" are too many: the fields limit is 500`.
func (e *LimitError) Error() string {
	return (&errdefs.FieldError{Field: e.Field, Value: strconv.FormatInt(e.Value, 10) + " " + e.Unit,
		Reason: e.Reason + ": the " + e.Limit + " limit is " + strconv.FormatInt(e.Max, 10)}).Error()
}

// Unwrap makes a LimitError an errdefs invalid-argument error.
func (e *LimitError) Unwrap() error { return errdefs.ErrInvalid }

// DocumentError is a query the guard cannot read (a syntax error) or expand (a fragment that
// spreads itself). It unwraps to errdefs.ErrInvalid.
type DocumentError struct {
	Message string
	Pos     int // byte offset in the query
}

func (e *DocumentError) Error() string { return "query: " + e.Message }

// Unwrap makes a DocumentError an errdefs invalid-argument error.
func (e *DocumentError) Unwrap() error { return errdefs.ErrInvalid }

// queryError is err as a GraphQL error, with the API's code and field in its extensions and the
// place in the query it concerns.
func queryError(query string, err error) *gqlerrors.QueryError {
	qe := &gqlerrors.QueryError{Message: err.Error(), Extensions: map[string]any{"code": errdefs.Code(err)}}
	pos := -1
	var le *LimitError
	var de *DocumentError
	switch {
	case errors.As(err, &le):
		qe.Extensions["field"] = le.Field
		pos = le.Pos
	case errors.As(err, &de):
		qe.Extensions["field"] = "query"
		pos = de.Pos
	}
	if pos >= 0 && pos <= len(query) {
		line, col := location(query, pos)
		qe.Locations = []gqlerrors.Location{{Line: line, Column: col}}
	}
	return qe
}

// countInputs counts the values in variables, without recursion, stopping past max.
func countInputs(variables map[string]any, max, maxDepth int) (int, error) {
	type item struct {
		v     any
		depth int
	}
	var stack []item
	for _, v := range variables {
		stack = append(stack, item{v, 0})
	}
	n := 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		if n > max {
			return n, limitAt(-1, "variables", "input values", "input values", n, max,
				"are too many: every value in the variables counts, and so do the query's arguments")
		}
		switch v := it.v.(type) {
		case map[string]any:
			if it.depth+1 > maxDepth {
				return n, limitAt(-1, "variables", "input depth", "levels", it.depth+1, maxDepth, "of lists and objects in one value are too many")
			}
			for _, x := range v {
				stack = append(stack, item{x, it.depth + 1})
			}
		case []any:
			if it.depth+1 > maxDepth {
				return n, limitAt(-1, "variables", "input depth", "levels", it.depth+1, maxDepth, "of lists and objects in one value are too many")
			}
			for _, x := range v {
				stack = append(stack, item{x, it.depth + 1})
			}
		}
	}
	return n, nil
}

// pageSize reads a page-size value: a literal, a variable or the variable's default.
func pageSize(v *value, vars map[string]any, defaults map[string]*value) (int64, bool) {
	if v == nil {
		return 0, false
	}
	if v.isInt {
		return v.n, true
	}
	if !v.isVar {
		return 0, false
	}
	if x, ok := vars[v.varRef]; ok {
		switch n := x.(type) {
		case float64:
			if n > 1<<53 {
				n = 1 << 53
			}
			return int64(n), true
		case int:
			return int64(n), true
		case int32:
			return int64(n), true
		case int64:
			return n, true
		case json.Number:
			if i, err := n.Int64(); err == nil {
				return i, true
			}
		}
		return 0, false
	}
	if d := defaults[v.varRef]; d != nil && d.isInt {
		return d.n, true
	}
	return 0, false
}
