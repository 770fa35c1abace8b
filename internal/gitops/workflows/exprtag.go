package workflows

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/Masterminds/sprig/v3"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// Expression tags, Argo's "expression tag templates": {{=EXPR}} is replaced by EXPR evaluated
// with expr-lang over the variables of the tag's scope, nested at their dots
// (inputs.parameters['my-param'], steps.flip.outputs.result), plus Argo's functions: asInt,
// asFloat, toJson, jsonpath and a subset of sprig. Every value comes from the environment: no
// value is ever written into the expression's text, so an output holding "{{=…}}" or an
// operator stays data.

// Bounds of one expression: its length, its nodes and the text it gives. expr-lang has no
// loops but its builtins (map, filter, ranges) spend a memory budget; string concatenation and
// the size-taking functions are guarded here.
const (
	maxExprLen    = 4096
	maxExprNodes  = 2000
	maxExprResult = 256 << 10
	maxExprMemory = 100000
)

// exprFuncNames are the names Argo's environment gives functions.
var exprFuncNames = []string{"asInt", "asFloat", "toJson", "jsonpath", "sprig"}

// sprigAllowed is the sprig subset: pure string, list, dict, math, encoding, semver and date
// functions whose output is bounded by their input. Left out: env and expandenv (the
// controller's environment), random and crypto generators, repeat, indent and nindent
// (output sized by a number), until, untilStep and seq (lists sized by a number), and the
// network lookups.
var sprigAllowed = []string{
	// strings
	"trim", "trimAll", "trimPrefix", "trimSuffix", "upper", "lower", "title", "untitle", "substr",
	"trunc", "abbrev", "abbrevboth", "initials", "wrap", "wrapWith", "contains", "hasPrefix", "hasSuffix",
	"quote", "squote", "cat", "replace", "plural", "snakecase", "camelcase", "kebabcase", "swapcase",
	"shuffle", "toString", "toStrings", "nospace", "split", "splitList", "splitn", "join", "sortAlpha",
	"regexMatch", "mustRegexMatch", "regexFind", "mustRegexFind", "regexFindAll", "mustRegexFindAll",
	"regexReplaceAll", "mustRegexReplaceAll", "regexReplaceAllLiteral", "mustRegexReplaceAllLiteral",
	"regexSplit", "mustRegexSplit", "regexQuoteMeta",
	// defaults and logic
	"default", "empty", "coalesce", "all", "any", "compact", "mustCompact", "ternary", "fail",
	// encoding
	"b64enc", "b64dec", "b32enc", "b32dec", "toJson", "mustToJson", "toPrettyJson", "mustToPrettyJson",
	"toRawJson", "mustToRawJson", "fromJson", "mustFromJson", "sha1sum", "sha256sum", "sha512sum", "adler32sum",
	// numbers
	"atoi", "int", "int64", "float64", "toDecimal", "add", "add1", "sub", "mul", "div", "mod", "max",
	"min", "biggest", "floor", "ceil", "round", "addf", "add1f", "subf", "mulf", "divf", "maxf", "minf",
	// lists and dicts
	"list", "first", "mustFirst", "rest", "mustRest", "last", "mustLast", "initial", "mustInitial",
	"append", "mustAppend", "prepend", "mustPrepend", "concat", "reverse", "mustReverse", "uniq",
	"mustUniq", "without", "mustWithout", "has", "mustHas", "slice", "mustSlice", "chunk", "mustChunk",
	"dict", "get", "set", "unset", "hasKey", "pluck", "keys", "pick", "omit", "values", "dig",
	"merge", "mergeOverwrite", "deepCopy", "mustDeepCopy",
	// types
	"typeOf", "kindOf", "typeIs", "kindIs", "deepEqual",
	// semver, paths, dates
	"semver", "semverCompare", "base", "dir", "ext", "clean", "isAbs",
	"now", "date", "dateInZone", "dateModify", "mustDateModify", "ago", "duration", "durationRound",
	"unixEpoch", "toDate", "mustToDate", "htmlDate", "htmlDateInZone",
	"urlParse", "urlJoin", "urlquery",
}

var sprigFuncs = func() map[string]any {
	all := sprig.GenericFuncMap()
	m := make(map[string]any, len(sprigAllowed))
	for _, n := range sprigAllowed {
		if f, ok := all[n]; ok {
			m[n] = f
		}
	}
	return m
}()

// exprEnv is the environment of an expression over sc: its variables nested at their dots
// (a name that is also the prefix of longer names is a map of those) and Argo's functions.
func exprEnv(sc scope) map[string]any {
	env := fromExprEnv(sc)
	env["asInt"] = builtin.Int
	env["asFloat"] = builtin.Float
	env["toJson"] = toJSONCompact
	env["jsonpath"] = jsonPathFunc
	env["sprig"] = sprigFuncs
	return env
}

func toJSONCompact(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if len(b) > maxExprResult {
		return "", fmt.Errorf("toJson: the JSON is longer than %d bytes", maxExprResult)
	}
	return string(b), nil
}

// jsonPathFunc is Argo's jsonpath(json, path): the value at path ("$.a.b[0]", "$..name") in a
// JSON text; one result is itself, several are a list.
func jsonPathFunc(doc, path string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return nil, fmt.Errorf("jsonpath: the first argument is not JSON: %v", err)
	}
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "{") {
		p = "{" + p + "}"
	}
	jp := jsonpath.New("jsonpath")
	if err := jp.Parse(p); err != nil {
		return nil, fmt.Errorf("jsonpath: %q: %v", path, err)
	}
	res, err := jp.FindResults(v)
	if err != nil {
		return nil, fmt.Errorf("jsonpath: %q: %v", path, err)
	}
	var out []any
	for _, r := range res {
		for _, x := range r {
			if x.IsValid() && x.CanInterface() {
				out = append(out, x.Interface())
			} else {
				out = append(out, nil)
			}
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// guardedAdd is expr's + with the text it makes bounded: concatenation in a reduce could
// otherwise double a string each step.
func guardedAdd(a, b any) (any, error) {
	if s, ok := a.(string); ok {
		if t, ok := b.(string); ok {
			if len(s)+len(t) > maxExprResult {
				return nil, fmt.Errorf("a string grows beyond %d bytes", maxExprResult)
			}
			return s + t, nil
		}
	}
	if x, ok := a.([]any); ok {
		if y, ok := b.([]any); ok && len(x)+len(y) > maxExprMemory {
			return nil, fmt.Errorf("a list grows beyond %d items", maxExprMemory)
		}
	}
	return addValues(a, b)
}

// addValues is expr-lang's + for the other operand types.
func addValues(a, b any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return runtime.Add(a, b), nil
}

// guardPlus turns every a + b into __add(a, b).
type guardPlus struct{}

func (guardPlus) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok && b.Operator == "+" {
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "__add"}, Arguments: []ast.Node{b.Left, b.Right}})
	}
}

// guardedReplace is expr's replace with its output bounded (an empty old inserts new between
// every character).
func guardedReplace(s, old, repl string) (string, error) {
	n := strings.Count(s, old)
	if len(s)+n*(len(repl)-len(old)) > maxExprResult {
		return "", fmt.Errorf("replace: the result is longer than %d bytes", maxExprResult)
	}
	return strings.ReplaceAll(s, old, repl), nil
}

func exprOptions(env map[string]any) []expr.Option {
	return []expr.Option{
		expr.Env(env),
		expr.MaxNodes(maxExprNodes),
		expr.DisableBuiltin("repeat"),
		expr.Function("__add", func(p ...any) (any, error) { return guardedAdd(p[0], p[1]) }),
		expr.Function("replace", func(p ...any) (any, error) {
			s, ok1 := p[0].(string)
			o, ok2 := p[1].(string)
			r, ok3 := p[2].(string)
			if !ok1 || !ok2 || !ok3 {
				return nil, fmt.Errorf("replace takes three strings")
			}
			return guardedReplace(s, o, r)
		}, new(func(string, string, string) string)),
		expr.Patch(guardPlus{}),
	}
}

// evalExpr evaluates an expression over sc. A nil result is an error, as in Argo.
func evalExpr(s string, sc scope) (any, error) {
	if len(s) > maxExprLen {
		return nil, fmt.Errorf("is longer than %d characters", maxExprLen)
	}
	env := exprEnv(sc)
	prg, err := expr.Compile(s, exprOptions(env)...)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", oneLine(err))
	}
	machine := vm.VM{MemoryBudget: maxExprMemory}
	out, err := machine.Run(prg, env)
	if err != nil {
		return nil, fmt.Errorf("does not evaluate: %v", oneLine(err))
	}
	if out == nil {
		return nil, fmt.Errorf("evaluates to nil")
	}
	return out, nil
}

// exprString renders an expression's value as Argo inserts it: a string as itself, anything
// else as its JSON.
func exprString(v any) (string, error) {
	var s string
	if str, ok := v.(string); ok {
		s = str
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("gives a %T, which has no JSON form", v)
		}
		s = string(b)
	}
	if len(s) > maxExprResult {
		return "", fmt.Errorf("gives %d bytes, more than %d", len(s), maxExprResult)
	}
	return s, nil
}

// oneLine keeps the first line of an expr-lang error (the rest draws the position).
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// exprPaths are the variables an expression names, each as its dotted path (a['b-c'].d is
// a.b-c.d), longest paths only; guarded reports those under a ?? or ?. (they may be absent).
// let names are left out.
func exprPaths(s string) (paths []string, guarded map[string]bool, err error) {
	tree, err := parser.Parse(s)
	if err != nil {
		return nil, nil, err
	}
	v := &pathVisitor{guarded: map[string]bool{}, lets: map[string]bool{}}
	ast.Walk(&tree.Node, v)
	for _, p := range v.paths {
		longer := slices.ContainsFunc(v.paths, func(q string) bool { return strings.HasPrefix(q, p+".") })
		root, _, _ := strings.Cut(p, ".")
		if !longer && !v.lets[root] && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths, v.guarded, nil
}

type pathVisitor struct {
	paths   []string
	guarded map[string]bool
	lets    map[string]bool
}

func (v *pathVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.VariableDeclaratorNode:
		v.lets[n.Name] = true
	case *ast.IdentifierNode:
		v.paths = append(v.paths, n.Value)
	case *ast.MemberNode:
		if p, ok := memberPath(n); ok {
			v.paths = append(v.paths, p)
			if n.Optional {
				v.guarded[p] = true
			}
		}
	case *ast.BinaryNode:
		if n.Operator == "??" {
			ast.Walk(&n.Left, &markGuard{v: v})
		}
	}
}

type markGuard struct{ v *pathVisitor }

func (m *markGuard) Visit(node *ast.Node) {
	if n, ok := (*node).(*ast.MemberNode); ok {
		if p, ok := memberPath(n); ok {
			m.v.guarded[p] = true
		}
	}
}

// memberPath is a.b['c'].d as "a.b.c.d"; false when a part is computed.
func memberPath(n *ast.MemberNode) (string, bool) {
	var parts []string
	cur := n
	for {
		prop, ok := cur.Property.(*ast.StringNode)
		if !ok {
			return "", false
		}
		parts = append(parts, prop.Value)
		switch x := cur.Node.(type) {
		case *ast.IdentifierNode:
			parts = append(parts, x.Value)
			slices.Reverse(parts)
			return strings.Join(parts, "."), true
		case *ast.MemberNode:
			cur = x
		default:
			return "", false
		}
	}
}

// hasPath reports whether env holds the dotted path, map by map.
func hasPath(env map[string]any, path string) bool {
	var cur any = env
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			rv := reflect.ValueOf(cur)
			return rv.Kind() == reflect.Func // a method of a function value is not a path
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// expandTag evaluates the expression tag body e (after "=") over sc. It reports keep when the
// tag must stay as it is for a later pass: it names a variable sc does not have yet whose
// prefix is not in strict. A variable that is missing with a strict prefix, or an expression
// that fails with every variable present, is an error (unless strict is empty: then the tag
// is kept).
func expandTag(e string, sc scope, strict []string) (out string, keep bool, err error) {
	e = strings.TrimSpace(e)
	if len(e) > maxExprLen {
		return "", false, fmt.Errorf("is longer than %d characters", maxExprLen)
	}
	paths, guarded, perr := exprPaths(e)
	if perr != nil {
		return "", false, fmt.Errorf("does not parse: %v", oneLine(perr))
	}
	env := exprEnv(sc)
	missing := false
	for _, p := range paths {
		if hasPath(env, p) || guarded[p] {
			continue
		}
		if root, _, _ := strings.Cut(p, "."); slices.Contains(exprFuncNames, root) {
			return "", false, fmt.Errorf("%s is not a function Freshet provides (see docs/runtimes.md for the sprig subset)", p)
		}
		if isStrict(p, strict) {
			return "", false, fmt.Errorf("%s is not defined here", p)
		}
		missing = true
	}
	if missing {
		return "", true, nil
	}
	v, err := evalExpr(e, sc)
	if err == nil {
		out, err = exprString(v)
	}
	if err != nil {
		if len(strict) == 0 {
			return "", true, nil
		}
		return "", false, err
	}
	return out, false, nil
}

// checkExprTag checks an expression tag's body as lint does: it parses, it is not too long,
// and the variables it names are visible (check is the simple tags' check).
func checkExprTag(e string, check func(name string) error) error {
	e = strings.TrimSpace(e)
	if e == "" {
		return fmt.Errorf("is an empty expression")
	}
	if len(e) > maxExprLen {
		return fmt.Errorf("is longer than %d characters", maxExprLen)
	}
	paths, _, err := exprPaths(e)
	if err != nil {
		return fmt.Errorf("does not parse as an expression: %v", oneLine(err))
	}
	env := exprEnv(scope{})
	for _, p := range paths {
		root, _, _ := strings.Cut(p, ".")
		if slices.Contains(exprFuncNames, root) {
			if !hasPath(env, p) {
				return fmt.Errorf("names %s, which is not a function Freshet provides (see docs/runtimes.md for the sprig subset)", p)
			}
			continue
		}
		if !slices.Contains(exprRoots, root) {
			continue // a closure's or builtin's name; expr-lang reports the rest when it runs
		}
		if err := check(p); err != nil {
			return err
		}
	}
	return nil
}

// exprRoots are the first names of Argo's variables.
var exprRoots = []string{"inputs", "outputs", "steps", "tasks", "item", "workflow", "pod", "node", "retries", "lastRetry"}
