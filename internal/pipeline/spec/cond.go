package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Expr is one named condition expression, compiled.
//
// The language is expr-lang (https://expr-lang.org) with the Codefresh condition functions
// and none of expr-lang's own built-ins:
//
//   - ${{NAME}} inside a string literal ('${{CF_BRANCH}}' == 'main') is the variable's value
//     as a string; outside one (${{COUNT}} > 3) it is a number or boolean when the value looks
//     like one, else a string. An unknown variable stays the literal text ${{NAME}}, as in
//     Codefresh. Values are never spliced into the source, so a value with quotes in it
//     cannot change the expression.
//   - steps.NAME.result (or steps["my-step"].result) is the step's Result; workflow.result
//     is the build's (running, success, failure, terminated, pending-approval).
//   - Functions: String, Number, Boolean, round, floor, upper, lower, trim, trimLeft,
//     trimRight, replace, substring, length, includes, indexOf, match, Variable, Member.
//   - Operators: + - * / % ! && || == != < <= > >= (=== and !== are read as == and !=),
//     plus expr-lang's contains, startsWith, endsWith, matches, in and ?:.
//   - The result is true when it is true, a non-empty string, a non-zero number; false when
//     false, "", 0 or null.
type Expr struct {
	Name   string `json:"name"`
	Source string `json:"expression"`

	prog      *vm.Program
	steps     []string // step names the expression reads
	vars      []string // variables the expression reads with ${{NAME}}
	line, col int      // position in the YAML, for messages found after compiling
}

// maxExprNodes bounds the size of one expression.
const maxExprNodes = 2000

// CompileExpr compiles a condition expression. The error says what is wrong, without the
// field path (the caller adds it).
func CompileExpr(name, source string) (*Expr, error) {
	src, vars := rewriteExpr(source)
	col := &stepRefCollector{}
	opts := append(exprOptions(), expr.Env(protoEnv), expr.Patch(col))
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("is not a valid expression: %s", exprErrText(err, src != source))
	}
	e := &Expr{Name: name, Source: source, prog: prog, vars: vars}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			e.steps = append(e.steps, s)
		}
	}
	for _, s := range col.steps {
		add(s)
	}
	for _, v := range vars {
		if s, ok := stepOfVar(v); ok {
			add(s)
		}
	}
	return e, nil
}

// Steps returns the names of the steps the expression reads (steps.NAME…).
func (e *Expr) Steps() []string { return append([]string(nil), e.steps...) }

// UnmarshalJSON decodes and compiles an expression.
func (e *Expr) UnmarshalJSON(b []byte) error {
	var raw struct {
		Name   string `json:"name"`
		Source string `json:"expression"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	c, err := CompileExpr(raw.Name, raw.Source)
	if err != nil {
		return errdefs.Invalid("condition."+raw.Name, raw.Source, err.Error())
	}
	*e = *c
	return nil
}

// Eval evaluates the expression against ctx.
func (e *Expr) Eval(ctx EvalContext) (bool, error) {
	prog, steps := e.prog, e.steps
	if prog == nil { // built by hand rather than by Parse or UnmarshalJSON
		c, err := CompileExpr(e.Name, e.Source)
		if err != nil {
			return false, err
		}
		prog, steps = c.prog, c.steps
	}
	out, err := expr.Run(prog, runEnv(ctx, steps))
	if err != nil {
		return false, fmt.Errorf("%s", firstLine(err.Error()))
	}
	return truthy(out), nil
}

// stepOfVar returns NAME for a ${{steps.NAME.member}} reference.
func stepOfVar(v string) (string, bool) {
	rest, ok := strings.CutPrefix(v, "steps.")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, ".")
	return name, ok && name != ""
}

type stepRefCollector struct{ steps []string }

func (c *stepRefCollector) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "steps" {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok {
		c.steps = append(c.steps, s.Value)
	}
}

// Names of the functions the rewriting introduces.
const (
	fnVar = "__cfvar" // ${{NAME}} inside a string literal: the value as a string
	fnRaw = "__cfraw" // ${{NAME}} outside: a number, boolean or string
)

// protoEnv is the compile-time shape of the environment runEnv builds.
var protoEnv = map[string]any{
	"steps":    map[string]any{},
	"workflow": map[string]any{},
	fnVar:      func(string) string { return "" },
	fnRaw:      func(string) any { return nil },
	"Variable": func(string) any { return nil },
	"Member":   func(string, string) any { return nil },
}

func runEnv(ctx EvalContext, refs []string) map[string]any {
	steps := make(map[string]any, len(ctx.Steps)+len(refs))
	for name, r := range ctx.Steps {
		steps[name] = map[string]any{"result": string(r)}
	}
	for _, name := range refs {
		if _, ok := steps[name]; !ok {
			steps[name] = map[string]any{"result": string(ResultPending)}
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := ctx.Variables[name]; ok {
			return v, true
		}
		if name == "CF_BRANCH" && ctx.Branch != "" {
			return ctx.Branch, true
		}
		if name == "workflow.result" {
			return string(ctx.workflow()), true
		}
		if s, ok := stepOfVar(name); ok && strings.HasSuffix(name, ".result") && name == "steps."+s+".result" {
			return string(ctx.stepResult(s)), true
		}
		return "", false
	}
	return map[string]any{
		"steps":    steps,
		"workflow": map[string]any{"result": string(ctx.workflow())},
		fnVar: func(name string) string {
			if v, ok := lookup(name); ok {
				return v
			}
			return "${{" + name + "}}"
		},
		fnRaw: func(name string) any {
			v, ok := lookup(name)
			if !ok {
				return "${{" + name + "}}"
			}
			return rawValue(v)
		},
		"Variable": func(name string) any {
			if v, ok := lookup(name); ok {
				return v
			}
			return nil
		},
		"Member": func(name, member string) any {
			if v, ok := lookup(name + "." + member); ok {
				return v
			}
			if member == "result" {
				if _, ok := ctx.Steps[name]; ok {
					return string(ctx.stepResult(name))
				}
			}
			return nil
		},
	}
}

// rawValue types a variable spliced outside quotes: a number or boolean when it reads as one.
func rawValue(v string) any {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return v
}

// rewriteExpr turns Codefresh condition syntax into expr-lang without splicing values:
// ${{NAME}} becomes a call that fetches the value at run time, === and !== become == and !=.
// It returns the variables referenced.
func rewriteExpr(src string) (string, []string) {
	if !strings.Contains(src, "${{") && !strings.Contains(src, "==") {
		return src, nil
	}
	var b strings.Builder
	var vars []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			end := literalEnd(src, i)
			if end < 0 { // unterminated: leave it to the compiler to report
				b.WriteString(src[i:])
				return b.String(), vars
			}
			lit, vs := rewriteLiteral(src[i : end+1])
			b.WriteString(lit)
			vars = append(vars, vs...)
			i = end + 1
		case c == '$' && strings.HasPrefix(src[i:], "${{"):
			if loc := varRef.FindStringSubmatchIndex(src[i:]); loc != nil && loc[0] == 0 {
				name := src[i+loc[2] : i+loc[3]]
				vars = append(vars, name)
				fmt.Fprintf(&b, "%s(%q)", fnRaw, name)
				i += loc[1]
				continue
			}
			b.WriteByte(c)
			i++
		case (c == '=' || c == '!') && strings.HasPrefix(src[i+1:], "=="):
			b.WriteByte(c)
			b.WriteByte('=')
			i += 3
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), vars
}

// literalEnd returns the index of the quote closing the string literal that starts at i, or
// -1. Single- and double-quoted literals have backslash escapes; backquoted ones do not.
func literalEnd(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j
		}
	}
	return -1
}

// rewriteLiteral rewrites one string literal (with its quotes) that may contain ${{NAME}}
// into a concatenation: 'v-${{X}}' → ('v-' + __cfvar("X")).
func rewriteLiteral(lit string) (string, []string) {
	q, body := lit[:1], lit[1:len(lit)-1]
	locs := varRef.FindAllStringSubmatchIndex(body, -1)
	if len(locs) == 0 {
		return lit, nil
	}
	var parts, vars []string
	prev := 0
	for _, loc := range locs {
		seg := body[prev:loc[0]]
		if q != "`" && trailingBackslashes(seg)%2 == 1 {
			return lit, nil // "\${{X}}": an escape we do not take apart
		}
		if seg != "" {
			parts = append(parts, q+seg+q)
		}
		name := body[loc[2]:loc[3]]
		vars = append(vars, name)
		parts = append(parts, fmt.Sprintf("%s(%q)", fnVar, name))
		prev = loc[1]
	}
	if rest := body[prev:]; rest != "" {
		parts = append(parts, q+rest+q)
	}
	return "(" + strings.Join(parts, " + ") + ")", vars
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

var exprPos = regexp.MustCompile(` \(\d+:\d+\)$`)

// exprErrText is the first line of an expr-lang error, without the position when the source
// was rewritten (positions would then point into the rewritten text).
func exprErrText(err error, rewritten bool) string {
	s := firstLine(err.Error())
	if rewritten {
		s = exprPos.ReplaceAllString(s, "")
	}
	if name, ok := strings.CutPrefix(s, "unknown name "); ok {
		name = exprPos.ReplaceAllString(name, "")
		s += fmt.Sprintf(" (write a variable as '${{%s}}' or Variable('%s'), a step's result as steps.NAME.result)", name, name)
	}
	for _, internal := range []string{fnVar, fnRaw} {
		s = strings.ReplaceAll(s, internal, "${{…}}")
	}
	return cutText(s, 300)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// truthy applies the Codefresh truth rules to an expression's value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	if f, ok := toFloat(v); ok {
		return f != 0 && !math.IsNaN(f)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Array:
		return rv.Len() > 0
	}
	return true
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	return 0, false
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	if f, ok := toFloat(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func argString(name string, i int, v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("%s: argument %d must be a string, not %s", name, i+1, typeName(v))
}

func argNumber(name string, i int, v any) (float64, error) {
	if f, ok := toFloat(v); ok {
		return f, nil
	}
	return 0, fmt.Errorf("%s: argument %d must be a number, not %s", name, i+1, typeName(v))
}

func typeName(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

type strFn func(string) string

func exprOptions() []expr.Option {
	str1 := func(name string, f strFn) expr.Option {
		return expr.Function(name, func(p ...any) (any, error) {
			s, err := argString(name, 0, p[0])
			if err != nil {
				return nil, err
			}
			return f(s), nil
		}, new(func(any) string))
	}
	num1 := func(name string, f func(float64) float64) expr.Option {
		return expr.Function(name, func(p ...any) (any, error) {
			x, err := argNumber(name, 0, p[0])
			if err != nil {
				return nil, err
			}
			return f(x), nil
		}, new(func(any) float64))
	}
	return []expr.Option{
		expr.DisableAllBuiltins(),
		expr.MaxNodes(maxExprNodes),
		expr.Function("String", func(p ...any) (any, error) { return toString(p[0]), nil }, new(func(any) string)),
		expr.Function("Number", func(p ...any) (any, error) {
			switch x := p[0].(type) {
			case string:
				f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
				if err != nil {
					return nil, fmt.Errorf("Number(%q) is invalid", shorten(x))
				}
				return f, nil
			case bool:
				if x {
					return 1.0, nil
				}
				return 0.0, nil
			}
			return argNumber("Number", 0, p[0])
		}, new(func(any) float64)),
		expr.Function("Boolean", func(p ...any) (any, error) { return truthy(p[0]), nil }, new(func(any) bool)),
		num1("round", func(x float64) float64 { return math.Floor(x + 0.5) }),
		num1("floor", math.Floor),
		str1("upper", strings.ToUpper),
		str1("lower", strings.ToLower),
		str1("trim", strings.TrimSpace),
		str1("trimLeft", func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) }),
		str1("trimRight", func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }),
		expr.Function("length", func(p ...any) (any, error) {
			s, err := argString("length", 0, p[0])
			if err != nil {
				return nil, err
			}
			return utf8.RuneCountInString(s), nil
		}, new(func(any) int)),
		expr.Function("replace", func(p ...any) (any, error) {
			var s [3]string
			for i := range s {
				v, err := argString("replace", i, p[i])
				if err != nil {
					return nil, err
				}
				s[i] = v
			}
			return strings.ReplaceAll(s[0], s[1], s[2]), nil
		}, new(func(any, any, any) string)),
		expr.Function("includes", func(p ...any) (any, error) {
			s, err := argString("includes", 0, p[0])
			if err != nil {
				return nil, err
			}
			sub, err := argString("includes", 1, p[1])
			if err != nil {
				return nil, err
			}
			return strings.Contains(s, sub), nil
		}, new(func(any, any) bool)),
		expr.Function("indexOf", func(p ...any) (any, error) {
			s, err := argString("indexOf", 0, p[0])
			if err != nil {
				return nil, err
			}
			sub, err := argString("indexOf", 1, p[1])
			if err != nil {
				return nil, err
			}
			i := strings.Index(s, sub)
			if i < 0 {
				return -1, nil
			}
			return utf8.RuneCountInString(s[:i]), nil
		}, new(func(any, any) int)),
		expr.Function("substring", substring, new(func(any, any) string), new(func(any, any, any) string)),
		expr.Function("match", match, new(func(any, any) bool), new(func(any, any, any) bool)),
	}
}

// substring(s, start[, end]) with JavaScript's rules: indexes are clamped to the string, and
// swapped when start > end. Indexes count characters.
func substring(p ...any) (any, error) {
	s, err := argString("substring", 0, p[0])
	if err != nil {
		return nil, err
	}
	r := []rune(s)
	idx := func(i int, def int) (int, error) {
		if i >= len(p) {
			return def, nil
		}
		f, err := argNumber("substring", i, p[i])
		if err != nil {
			return 0, err
		}
		if math.IsNaN(f) {
			return 0, nil
		}
		return int(min(max(f, 0), float64(len(r)))), nil
	}
	start, err := idx(1, 0)
	if err != nil {
		return nil, err
	}
	end, err := idx(2, len(r))
	if err != nil {
		return nil, err
	}
	if start > end {
		start, end = end, start
	}
	return string(r[start:end]), nil
}

// maxMatchPattern bounds a regular expression given to match().
const maxMatchPattern = 4096

// match(s, re[, ignoreCase]) reports whether the RE2 regular expression re matches in s.
func match(p ...any) (any, error) {
	s, err := argString("match", 0, p[0])
	if err != nil {
		return nil, err
	}
	pat, err := argString("match", 1, p[1])
	if err != nil {
		return nil, err
	}
	if len(pat) > maxMatchPattern {
		return nil, fmt.Errorf("match: the regular expression is longer than %d bytes", maxMatchPattern)
	}
	if len(p) > 2 {
		ic, ok := p[2].(bool)
		if !ok {
			return nil, fmt.Errorf("match: argument 3 (ignore case) must be true or false, not %s", typeName(p[2]))
		}
		if ic {
			pat = "(?i)" + pat
		}
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("match: %q is not a valid regular expression (RE2 syntax): %s", shorten(pat), reErrText(err))
	}
	return re.MatchString(s), nil
}
