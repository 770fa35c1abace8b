package workflows

import (
	"fmt"
	"strings"
)

// A depends expression (a DAG task's `depends`): task names, optionally with a result
// (A.Succeeded, A.Failed, A.Errored, A.Skipped, A.Omitted, A.Daemoned, A.AnySucceeded,
// A.AllFailed), combined with &&, || and !, grouped with parentheses. It is parsed here, by a
// small recursive-descent parser, never evaluated as code.
type depExpr interface {
	eval(res func(task, result string) bool) bool
	tasks(add func(string))
}

type depAnd struct{ l, r depExpr }
type depOr struct{ l, r depExpr }
type depNot struct{ x depExpr }
type depRef struct{ task, result string }

func (e depAnd) eval(f func(string, string) bool) bool { return e.l.eval(f) && e.r.eval(f) }
func (e depOr) eval(f func(string, string) bool) bool  { return e.l.eval(f) || e.r.eval(f) }
func (e depNot) eval(f func(string, string) bool) bool { return !e.x.eval(f) }
func (e depRef) eval(f func(string, string) bool) bool {
	if e.result == "" {
		// A bare task name: it succeeded, was skipped or is a daemon (as in Argo).
		return f(e.task, "Succeeded") || f(e.task, "Skipped") || f(e.task, "Daemoned")
	}
	return f(e.task, e.result)
}
func (e depAnd) tasks(add func(string)) { e.l.tasks(add); e.r.tasks(add) }
func (e depOr) tasks(add func(string))  { e.l.tasks(add); e.r.tasks(add) }
func (e depNot) tasks(add func(string)) { e.x.tasks(add) }
func (e depRef) tasks(add func(string)) { add(e.task) }

// depResults are the results a task reference may name.
var depResults = map[string]bool{"Succeeded": true, "Failed": true, "Errored": true, "Skipped": true,
	"Omitted": true, "Daemoned": true, "AnySucceeded": true, "AllFailed": true}

// maxDependsLen bounds a depends expression (and so the parser's recursion).
const maxDependsLen = 4096

type depParser struct {
	s   string
	pos int
}

// parseDepends parses a depends expression.
func parseDepends(s string) (depExpr, error) {
	if len(s) > maxDependsLen {
		return nil, fmt.Errorf("is longer than %d characters", maxDependsLen)
	}
	p := &depParser{s: s}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, fmt.Errorf("has %q at offset %d where && or || was expected", p.rest(), p.pos)
	}
	return e, nil
}

func (p *depParser) rest() string {
	r := p.s[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (p *depParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

func (p *depParser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *depParser) or(depth int) (depExpr, error) {
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.eat("||") {
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = depOr{l, r}
	}
	return l, nil
}

func (p *depParser) and(depth int) (depExpr, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.eat("&&") {
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = depAnd{l, r}
	}
	return l, nil
}

func (p *depParser) unary(depth int) (depExpr, error) {
	if depth > 100 {
		return nil, fmt.Errorf("nests deeper than 100")
	}
	if p.eat("!") {
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return depNot{x}, nil
	}
	if p.eat("(") {
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, fmt.Errorf("misses a ) at offset %d", p.pos)
		}
		return x, nil
	}
	p.space()
	start := p.pos
	for p.pos < len(p.s) && isNameByte(p.s[p.pos]) {
		p.pos++
	}
	if start == p.pos {
		if p.pos >= len(p.s) {
			return nil, fmt.Errorf("ends where a task name was expected")
		}
		return nil, fmt.Errorf("has %q at offset %d where a task name was expected", p.rest(), p.pos)
	}
	ref := depRef{task: p.s[start:p.pos]}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		rs := p.pos
		for p.pos < len(p.s) && isNameByte(p.s[p.pos]) {
			p.pos++
		}
		ref.result = p.s[rs:p.pos]
		if !depResults[ref.result] {
			return nil, fmt.Errorf("names the result %q of task %q (valid: Succeeded, Failed, Errored, Skipped, Omitted, Daemoned, AnySucceeded, AllFailed)", ref.result, ref.task)
		}
	}
	return ref, nil
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// dependsOf returns the task names a depends expression or a dependencies list names, in
// order of first mention.
func dependsOf(e depExpr) []string {
	var out []string
	seen := map[string]bool{}
	e.tasks(func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	})
	return out
}

// dependenciesExpr turns a dependencies list into the depends expression Argo makes of it:
// each dependency succeeded, was skipped or is a daemon (or, with continueOn, failed/errored).
func dependenciesExpr(deps []string, continueOn func(string) *ContinueOn) depExpr {
	var e depExpr
	for _, d := range deps {
		var x depExpr = depRef{task: d}
		if c := continueOn(d); c != nil {
			if c.Failed {
				x = depOr{x, depRef{task: d, result: "Failed"}}
			}
			if c.Error {
				x = depOr{x, depRef{task: d, result: "Errored"}}
			}
		}
		if e == nil {
			e = x
		} else {
			e = depAnd{e, x}
		}
	}
	return e
}
