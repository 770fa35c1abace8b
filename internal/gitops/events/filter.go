package events

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/tidwall/gjson"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// exprProgram is a compiled expr-lang boolean expression over data: no functions of Freshet's
// are reachable, only the language's pure builtins.
type exprProgram struct{ p *vm.Program }

func (e *exprProgram) eval(env map[string]any) (bool, error) {
	out, err := expr.Run(e.p, env)
	if err != nil {
		return false, err
	}
	b, _ := out.(bool)
	return b, nil
}

// filters is a dependency's compiled filters.
type filters struct {
	op       string // between the kinds: and, or
	data     []dataFilter
	dataOp   string
	exprs    []exprFilter
	exprOp   string
	ctx      *EventContext
	timeFrom time.Duration
	timeTo   time.Duration
	hasTime  bool
}

type dataFilter struct {
	path, typ, comparator string
	res                   []*regexp.Regexp
	nums                  []float64
	bools                 []bool
}

type exprFilter struct {
	prog   *exprProgram
	fields []PayloadField
}

var comparators = map[string]bool{"": true, "=": true, "!=": true, ">": true, ">=": true, "<": true, "<=": true}

func compileFilters(f string, in *EventFilters) (*filters, error) {
	out := &filters{op: "and"}
	if in == nil {
		return out, nil
	}
	if in.Script != "" {
		return nil, errdefs.Invalid(f+".script", "", "is not supported: Freshet runs no scripts from a Sensor (use data or exprs filters)")
	}
	if err := checkLogical(f+".dataLogicalOperator", in.DataLogicalOperator); err != nil {
		return nil, err
	}
	if err := checkLogical(f+".exprLogicalOperator", in.ExprLogicalOperator); err != nil {
		return nil, err
	}
	out.dataOp, out.exprOp = orAnd(in.DataLogicalOperator), orAnd(in.ExprLogicalOperator)
	for i, d := range in.Data {
		df := fmt.Sprintf("%s.data[%d]", f, i)
		if d.Path == "" || len(d.Path) > 1000 {
			return nil, errdefs.Invalid(df+".path", d.Path, "is required: a path into the event's data, e.g. body.ref")
		}
		if d.Template != "" {
			return nil, errdefs.Invalid(df+".template", d.Template, "is not supported yet")
		}
		if !comparators[d.Comparator] {
			return nil, errdefs.Invalid(df+".comparator", d.Comparator, "is not a comparator: use =, !=, >, >=, < or <=")
		}
		if len(d.Value) == 0 {
			return nil, errdefs.Invalid(df+".value", "", "is required: at least one value to compare with")
		}
		c := dataFilter{path: d.Path, typ: d.Type, comparator: d.Comparator}
		switch d.Type {
		case "string":
			if d.Comparator != "" && d.Comparator != "=" && d.Comparator != "!=" {
				return nil, errdefs.Invalid(df+".comparator", d.Comparator, "does not compare strings: use = or !=")
			}
			for j, v := range d.Value {
				if len(v) > maxExprLen {
					return nil, errdefs.Invalid(fmt.Sprintf("%s.value[%d]", df, j), v, "is too long")
				}
				re, err := regexp.Compile(v)
				if err != nil {
					return nil, errdefs.Invalid(fmt.Sprintf("%s.value[%d]", df, j), v, "is not a regular expression: "+err.Error())
				}
				c.res = append(c.res, re)
			}
		case "number":
			for j, v := range d.Value {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, errdefs.Invalid(fmt.Sprintf("%s.value[%d]", df, j), v, "is not a number")
				}
				c.nums = append(c.nums, n)
			}
		case "bool":
			if d.Comparator != "" && d.Comparator != "=" && d.Comparator != "!=" {
				return nil, errdefs.Invalid(df+".comparator", d.Comparator, "does not compare booleans: use = or !=")
			}
			for j, v := range d.Value {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, errdefs.Invalid(fmt.Sprintf("%s.value[%d]", df, j), v, "is not true or false")
				}
				c.bools = append(c.bools, b)
			}
		default:
			return nil, errdefs.Invalid(df+".type", d.Type, "is not a type: use string, number or bool")
		}
		out.data = append(out.data, c)
	}
	for i, e := range in.Exprs {
		ef := fmt.Sprintf("%s.exprs[%d]", f, i)
		if len(e.Fields) == 0 {
			return nil, errdefs.Invalid(ef+".fields", "", "is required: the values of the event's data the expression reads ({name, path})")
		}
		for j, fl := range e.Fields {
			if !depNameRe.MatchString(fl.Name) {
				return nil, errdefs.Invalid(fmt.Sprintf("%s.fields[%d].name", ef, j), fl.Name, "is not a variable name: letters, digits and '_'")
			}
			if fl.Path == "" {
				return nil, errdefs.Invalid(fmt.Sprintf("%s.fields[%d].path", ef, j), "", "is required: a path into the event's data")
			}
		}
		if e.Expr == "" || len(e.Expr) > maxExprLen {
			return nil, errdefs.Invalid(ef+".expr", e.Expr, "is required: a boolean expression over the fields, at most 4096 characters")
		}
		p, err := expr.Compile(e.Expr, expr.AllowUndefinedVariables(), expr.AsBool())
		if err != nil {
			return nil, errdefs.Invalid(ef+".expr", e.Expr, "does not compile as a boolean expression: "+err.Error())
		}
		out.exprs = append(out.exprs, exprFilter{prog: &exprProgram{p}, fields: e.Fields})
	}
	if in.Time != nil {
		from, err := parseClock(in.Time.Start)
		if err != nil {
			return nil, errdefs.Invalid(f+".time.start", in.Time.Start, "is not a time of day: use HH:MM:SS (UTC)")
		}
		to, err := parseClock(in.Time.Stop)
		if err != nil {
			return nil, errdefs.Invalid(f+".time.stop", in.Time.Stop, "is not a time of day: use HH:MM:SS (UTC)")
		}
		out.timeFrom, out.timeTo, out.hasTime = from, to, true
	}
	out.ctx = in.Context
	return out, nil
}

func orAnd(s string) string {
	if s == "or" {
		return "or"
	}
	return "and"
}

func parseClock(s string) (time.Duration, error) {
	t, err := time.Parse(time.TimeOnly, s)
	if err != nil {
		return 0, err
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second, nil
}

// match reports whether ev passes the filters, and if not, why.
func (fs *filters) match(ev *Event) (bool, string) {
	var results []bool
	var why []string
	add := func(ok bool, reason string) {
		results = append(results, ok)
		if !ok {
			why = append(why, reason)
		}
	}
	if fs.hasTime {
		add(fs.matchTime(ev.Context.Time.Time), "time filter")
	}
	if fs.ctx != nil {
		c := fs.ctx
		ok := (c.Type == "" || c.Type == ev.Context.Type) && (c.Subject == "" || c.Subject == ev.Context.Subject) &&
			(c.Source == "" || c.Source == ev.Context.Source) && (c.DataContentType == "" || c.DataContentType == ev.Context.DataContentType)
		add(ok, "context filter")
	}
	if len(fs.data) > 0 {
		var rs []bool
		for _, d := range fs.data {
			rs = append(rs, d.match(ev.Data))
		}
		add(combine(fs.dataOp, rs), "data filter")
	}
	if len(fs.exprs) > 0 {
		var rs []bool
		for _, e := range fs.exprs {
			env := map[string]any{}
			for _, fl := range e.fields {
				r := gjson.GetBytes(ev.Data, fl.Path)
				env[fl.Name] = r.Value()
			}
			ok, err := e.prog.eval(env)
			rs = append(rs, ok && err == nil)
		}
		add(combine(fs.exprOp, rs), "expr filter")
	}
	if len(results) == 0 {
		return true, ""
	}
	if combine(fs.op, results) {
		return true, ""
	}
	return false, strings.Join(why, ", ") + " did not pass"
}

func combine(op string, rs []bool) bool {
	if op == "or" {
		for _, r := range rs {
			if r {
				return true
			}
		}
		return false
	}
	for _, r := range rs {
		if !r {
			return false
		}
	}
	return true
}

func (fs *filters) matchTime(t time.Time) bool {
	t = t.UTC()
	d := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second
	if fs.timeFrom <= fs.timeTo {
		return d >= fs.timeFrom && d < fs.timeTo
	}
	return d >= fs.timeFrom || d < fs.timeTo // spans midnight
}

// match: a path that is absent fails; an array passes if one of its elements does.
func (d *dataFilter) match(data json.RawMessage) bool {
	r := gjson.GetBytes(data, d.path)
	if !r.Exists() {
		return false
	}
	if r.IsArray() {
		for _, el := range r.Array() {
			if d.matchOne(el) {
				return true
			}
		}
		return false
	}
	return d.matchOne(r)
}

func (d *dataFilter) matchOne(r gjson.Result) bool {
	neg := d.comparator == "!="
	switch d.typ {
	case "string":
		s := r.String()
		any := false
		for _, re := range d.res {
			if re.MatchString(s) {
				any = true
				break
			}
		}
		return any != neg
	case "bool":
		if r.Type != gjson.True && r.Type != gjson.False {
			b, err := strconv.ParseBool(r.String())
			if err != nil {
				return false
			}
			return containsBool(d.bools, b) != neg
		}
		return containsBool(d.bools, r.Bool()) != neg
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(r.String()), 64)
		if err != nil {
			return false
		}
		for _, v := range d.nums {
			var ok bool
			switch d.comparator {
			case "", "=":
				ok = n == v
			case "!=":
				ok = n != v
			case ">":
				ok = n > v
			case ">=":
				ok = n >= v
			case "<":
				ok = n < v
			case "<=":
				ok = n <= v
			}
			if ok {
				return true
			}
		}
	}
	return false
}

func containsBool(bs []bool, b bool) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// conditions is a parsed trigger condition: dependency names joined with &&, || and !, in
// parentheses. It is parsed here and never evaluated as code.
type conditions struct {
	op   byte // 'n' name, '!' not, '&' and, '|' or
	name string
	l, r *conditions
}

const maxConditionDepth = 50

func parseConditions(s string) (*conditions, error) {
	if len(s) > maxExprLen {
		return nil, fmt.Errorf("is longer than %d characters", maxExprLen)
	}
	p := &condParser{s: s}
	c, err := p.or(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("has %q where the expression should end (use dependency names, &&, ||, ! and parentheses)", p.s[p.i:])
	}
	return c, nil
}

type condParser struct {
	s string
	i int
}

func (p *condParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *condParser) or(depth int) (*conditions, error) {
	if depth > maxConditionDepth {
		return nil, fmt.Errorf("nests deeper than %d", maxConditionDepth)
	}
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for {
		p.space()
		if !strings.HasPrefix(p.s[p.i:], "||") {
			return l, nil
		}
		p.i += 2
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = &conditions{op: '|', l: l, r: r}
	}
}

func (p *condParser) and(depth int) (*conditions, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for {
		p.space()
		if !strings.HasPrefix(p.s[p.i:], "&&") {
			return l, nil
		}
		p.i += 2
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = &conditions{op: '&', l: l, r: r}
	}
}

func (p *condParser) unary(depth int) (*conditions, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("ends where a dependency name is expected")
	}
	switch p.s[p.i] {
	case '!':
		p.i++
		c, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &conditions{op: '!', l: c}, nil
	case '(':
		p.i++
		c, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, fmt.Errorf("has an unclosed parenthesis")
		}
		p.i++
		return c, nil
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return nil, fmt.Errorf("has %q where a dependency name is expected", p.s[p.i:min(p.i+10, len(p.s))])
	}
	return &conditions{op: 'n', name: p.s[start:p.i]}, nil
}

func (c *conditions) names() []string {
	if c == nil {
		return nil
	}
	if c.op == 'n' {
		return []string{c.name}
	}
	return append(c.l.names(), c.r.names()...)
}

func (c *conditions) eval(have map[string]bool) bool {
	switch c.op {
	case 'n':
		return have[c.name]
	case '!':
		return !c.l.eval(have)
	case '&':
		return c.l.eval(have) && c.r.eval(have)
	case '|':
		return c.l.eval(have) || c.r.eval(have)
	}
	return false
}
