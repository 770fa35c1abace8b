package gqlguard

import (
	"fmt"
	"strconv"
	"strings"
)

// The guard's parser reads an executable GraphQL document (operations and fragments) into the
// little it needs to count: selections with their aliases, names, type conditions and page-size
// arguments; operations with their variables' defaults; fragments. It is a loop over a lexer with
// recursion bounded by maxNesting, and it stops at the first limit the text alone exceeds, so its
// work is linear in the query's length whatever the query holds.

// maxNesting bounds how deeply braces, brackets and parentheses may nest in a query: the parser
// recurses once per level. It is well above MaxDepth and MaxInputDepth, which refuse real queries
// first; it only keeps a text of inline fragments inside inline fragments from recursing 64 KiB deep.
const maxNesting = 64

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokPunct
	tokName
	tokInt
	tokFloat
	tokString
)

type token struct {
	kind tokKind
	text string // the punctuator, name or number; a string's raw text
	pos  int    // byte offset in the query
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of query"
	case tokString:
		return "string"
	}
	return strconv.Quote(t.text)
}

// selKind is what a selection is.
type selKind uint8

const (
	selField selKind = iota
	selSpread
	selInline
)

// selection is one field, fragment spread or inline fragment.
type selection struct {
	kind     selKind
	alias    string // fields: the alias, or ""
	name     string // fields: the field; spreads: the fragment
	typeCond string // inline fragments: the type condition, or ""
	page     *value // fields: the page-size argument's value, when given
	sels     []*selection
	pos      int
}

func (s *selection) key() string {
	if s.alias != "" {
		return s.alias
	}
	return s.name
}

// value is what the guard keeps of an input value: an integer or a variable, which is all a page
// size can be.
type value struct {
	isInt  bool
	n      int64
	isVar  bool
	varRef string
}

type operation struct {
	kind     string // query, mutation or subscription
	name     string
	defaults map[string]*value // variables' default values
	sels     []*selection
	pos      int
}

type fragment struct {
	name     string
	typeCond string
	sels     []*selection
	pos      int
}

type document struct {
	ops   []*operation
	frags map[string]*fragment // by name; the first of a name (the validator refuses others)
	order []*fragment          // frags in the order they are defined
	// counts of the text, before fragments are expanded
	fields, inputValues, directives, spreads int
}

type parser struct {
	src     string
	off     int // next byte to lex
	tok     token
	nesting int
	doc     *document
	lim     *Limits
	pageArg string
	err     error
}

// bail stops the parse; parse recovers it.
type bail struct{}

func (p *parser) fail(err error) {
	if p.err == nil {
		p.err = err
	}
	panic(bail{})
}

func (p *parser) syntax(pos int, format string, args ...any) {
	p.fail(&DocumentError{Message: "syntax error: " + fmt.Sprintf(format, args...), Pos: pos})
}

func (p *parser) unexpected(expecting string) {
	p.syntax(p.tok.pos, "unexpected %s, expecting %s", p.tok, expecting)
}

// parse reads query. It returns a *DocumentError or a *LimitError.
func parse(query string, lim *Limits, pageArg string) (doc *document, err error) {
	p := &parser{src: query, doc: &document{frags: map[string]*fragment{}}, lim: lim, pageArg: pageArg}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bail); !ok {
				panic(r)
			}
			doc, err = nil, p.err
		}
	}()
	p.next()
	if p.tok.kind == tokEOF {
		p.fail(&DocumentError{Message: "holds no operation: send at least one, like { me { role } }", Pos: 0})
	}
	for p.tok.kind != tokEOF {
		p.definition()
	}
	return p.doc, nil
}

// ----- lexer -----

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }

// next lexes the next token into p.tok.
func (p *parser) next() {
	s := p.src
	i := p.off
	// Ignored tokens: white space, line terminators, commas, comments, the byte order mark.
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
		case strings.HasPrefix(s[i:], "//"):
			// graphql-go's lexer (text/scanner in its Go mode) skips Go comments too: the
			// guard must skip what graphql-go skips.
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				p.syntax(i, "the comment is not terminated")
			}
			i += 2 + end + 2
		case strings.HasPrefix(s[i:], "\uFEFF"):
			i += len("\uFEFF")
		default:
			goto lex
		}
	}
	p.off, p.tok = i, token{kind: tokEOF, pos: i}
	return
lex:
	start := i
	c := s[i]
	switch {
	case c == '.':
		// graphql-go reads "..." as three "." tokens, which may have ignored tokens between
		// them; a "." before a digit is a Go number, which GraphQL does not have.
		if i+1 < len(s) && isDigit(s[i+1]) {
			p.syntax(i, "a number needs digits before its decimal point")
		}
		p.off, p.tok = i+1, token{kind: tokPunct, text: ".", pos: start}
	case strings.IndexByte("!$&():=@[]{|}-", c) >= 0:
		p.off, p.tok = i+1, token{kind: tokPunct, text: s[i : i+1], pos: start}
	case isNameStart(c):
		for i < len(s) && isNameByte(s[i]) {
			i++
		}
		p.off, p.tok = i, token{kind: tokName, text: s[start:i], pos: start}
	case isDigit(c):
		kind := tokInt
		d := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i < len(s) && s[i] == '.' {
			kind = tokFloat
			i++
			d = i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if i == d {
				p.syntax(start, "a number needs digits after its decimal point")
			}
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			kind = tokFloat
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '-') {
				i++
			}
			d = i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if i == d {
				p.syntax(start, "a number needs digits in its exponent")
			}
		}
		if i < len(s) && (isNameStart(s[i]) || s[i] == '.') {
			p.syntax(i, "unexpected %q after a number", s[i])
		}
		p.off, p.tok = i, token{kind: kind, text: s[start:i], pos: start}
	case c == '"':
		if strings.HasPrefix(s[i:], `"""`) {
			// A block string ends at the first """: graphql-go's lexer knows no \""" escape, and
			// the guard must see the same tokens as graphql-go.
			end := strings.Index(s[i+3:], `"""`)
			if end < 0 {
				p.syntax(start, "the block string is not terminated")
			}
			i += 3 + end + 3
		} else {
			i++
			for {
				if i >= len(s) || s[i] == '\n' || s[i] == '\r' {
					p.syntax(start, "the string is not terminated")
				}
				if s[i] == '\\' {
					i += 2
					continue
				}
				if s[i] == '"' {
					i++
					break
				}
				i++
			}
		}
		p.off, p.tok = i, token{kind: tokString, text: s[start:i], pos: start}
	default:
		p.syntax(start, "unexpected character %q", c)
	}
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tokPunct && p.tok.text == s }

func (p *parser) expectPunct(s string) {
	if !p.isPunct(s) {
		p.unexpected(strconv.Quote(s))
	}
	p.next()
}

func (p *parser) name() string {
	if p.tok.kind != tokName {
		p.unexpected("Name")
	}
	n := p.tok.text
	p.next()
	return n
}

func (p *parser) enter(pos int) {
	p.nesting++
	if p.nesting > maxNesting {
		p.fail(limitAt(pos, "query", "nesting", "levels", p.nesting, maxNesting, "of braces, brackets and parentheses are too many"))
	}
}

func (p *parser) leave() { p.nesting-- }

// ----- grammar -----

func (p *parser) definition() {
	if p.tok.kind == tokString {
		// graphql-go takes a description before an operation or a fragment.
		p.description()
		if p.isPunct("{") {
			p.syntax(p.tok.pos, "a description needs the full form of an operation: query { … }")
		}
	}
	if p.isPunct("{") {
		p.addOperation(&operation{kind: "query", pos: p.tok.pos})
		return
	}
	if p.tok.kind != tokName {
		p.unexpected(`"query", "mutation", "subscription", "fragment" or "{"`)
	}
	switch p.tok.text {
	case "query", "mutation", "subscription":
		op := &operation{kind: p.tok.text, pos: p.tok.pos}
		p.next()
		if p.tok.kind == tokName {
			op.name = p.name()
		}
		if p.isPunct("(") {
			p.variableDefinitions(op)
		}
		p.directives()
		p.addOperation(op)
	case "fragment":
		f := &fragment{pos: p.tok.pos}
		p.next()
		f.name = p.name()
		if p.tok.kind != tokName || p.tok.text != "on" {
			p.unexpected(`"on"`)
		}
		p.next()
		f.typeCond = p.name()
		p.directives()
		f.sels = p.selectionSet(1)
		if _, dup := p.doc.frags[f.name]; !dup {
			p.doc.frags[f.name] = f
			p.doc.order = append(p.doc.order, f)
		}
	default:
		p.unexpected(`"query", "mutation", "subscription", "fragment" or "{"`)
	}
}

func (p *parser) addOperation(op *operation) {
	p.doc.ops = append(p.doc.ops, op)
	if n := len(p.doc.ops); n > p.lim.MaxOperations {
		p.fail(limitAt(op.pos, "query", "operations", "operations", n, p.lim.MaxOperations, "are too many in one document"))
	}
	op.sels = p.selectionSet(1)
}

func (p *parser) variableDefinitions(op *operation) {
	p.enter(p.tok.pos)
	p.expectPunct("(")
	for !p.isPunct(")") {
		p.countInput(p.tok.pos)
		p.description()
		p.expectPunct("$")
		p.description()
		name := p.name()
		p.expectPunct(":")
		p.typeRef()
		if p.isPunct("=") {
			p.next()
			v := p.value(0)
			if op.defaults == nil {
				op.defaults = map[string]*value{}
			}
			op.defaults[name] = v
		}
		p.directives()
	}
	p.next()
	p.leave()
}

// description skips a string where graphql-go takes one as a description. graphql-go reads a
// description with strconv.Unquote and panics where that fails (an escape such as \700 that its
// lexer lets through): such a description is refused.
func (p *parser) description() {
	if p.tok.kind != tokString {
		return
	}
	if t := p.tok.text; !strings.HasPrefix(t, `"""`) {
		if _, err := strconv.Unquote(t); err != nil {
			p.syntax(p.tok.pos, "the description %s has an escape graphql-go cannot read", t)
		}
	}
	p.next()
}

func (p *parser) typeRef() {
	if p.isPunct("[") {
		p.enter(p.tok.pos)
		p.next()
		p.typeRef()
		p.expectPunct("]")
		p.leave()
	} else {
		p.name()
	}
	if p.isPunct("!") {
		p.next()
	}
}

func (p *parser) directives() {
	for p.isPunct("@") {
		p.doc.directives++
		if p.doc.directives > p.lim.MaxDirectives {
			p.fail(limitAt(p.tok.pos, "query", "directives", "directives", p.doc.directives, p.lim.MaxDirectives, "are too many"))
		}
		p.next()
		p.name()
		if p.isPunct("(") {
			p.arguments(nil)
		}
	}
}

// arguments reads an argument list; it stores the page-size argument's value in *page.
func (p *parser) arguments(page **value) {
	p.enter(p.tok.pos)
	p.next() // (
	for !p.isPunct(")") {
		name := p.name()
		p.expectPunct(":")
		v := p.value(0)
		if page != nil && name == p.pageArg {
			*page = v
		}
		p.directives() // graphql-go takes directives on arguments
	}
	p.next()
	p.leave()
}

func (p *parser) countInput(pos int) {
	p.doc.inputValues++
	if p.doc.inputValues > p.lim.MaxInputValues {
		p.fail(limitAt(pos, "query", "input values", "input values", p.doc.inputValues, p.lim.MaxInputValues,
			"are too many: arguments, list items, object fields and variable definitions count"))
	}
}

// value reads a value inside depth lists and objects of its argument or default.
func (p *parser) value(depth int) *value {
	p.countInput(p.tok.pos)
	t := p.tok
	if p.isPunct("-") {
		// graphql-go reads a minus and then any literal.
		p.next()
		switch p.tok.kind {
		case tokInt, tokFloat, tokString, tokName:
		default:
			p.unexpected("a literal after -")
		}
		p.next()
		return &value{} // a negative page size counts as 1 anyway
	}
	switch t.kind {
	case tokInt:
		p.next()
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return &value{} // too large for a page size; validation refuses it as an Int
		}
		return &value{isInt: true, n: n}
	case tokFloat, tokString, tokName:
		p.next()
		return &value{}
	case tokPunct:
		switch t.text {
		case "$":
			p.next()
			return &value{isVar: true, varRef: p.name()}
		case "[":
			p.inputDepth(t.pos, depth+1)
			p.enter(t.pos)
			p.next()
			for !p.isPunct("]") {
				p.value(depth + 1)
			}
			p.next()
			p.leave()
			return &value{}
		case "{":
			p.inputDepth(t.pos, depth+1)
			p.enter(t.pos)
			p.next()
			for !p.isPunct("}") {
				p.name()
				p.expectPunct(":")
				p.value(depth + 1)
			}
			p.next()
			p.leave()
			return &value{}
		}
	}
	p.unexpected("a value")
	return nil
}

func (p *parser) inputDepth(pos, depth int) {
	if depth > p.lim.MaxInputDepth {
		p.fail(limitAt(pos, "query", "input depth", "levels", depth, p.lim.MaxInputDepth, "of lists and objects in one value are too many"))
	}
}

// selectionSet reads { selection+ }; depth is the depth of the fields it holds.
func (p *parser) selectionSet(depth int) []*selection {
	if !p.isPunct("{") {
		p.unexpected(`"{"`)
	}
	p.enter(p.tok.pos)
	p.next()
	var sels []*selection
	for {
		sels = append(sels, p.selection(depth))
		if p.isPunct("}") {
			break
		}
	}
	p.next()
	p.leave()
	return sels
}

func (p *parser) selection(depth int) *selection {
	pos := p.tok.pos
	if p.isPunct(".") {
		for range 2 {
			p.next()
			if !p.isPunct(".") {
				p.unexpected(`"..."`)
			}
		}
		p.doc.spreads++
		if p.doc.spreads > p.lim.MaxFragments {
			p.fail(limitAt(pos, "query", "fragments", "fragments", p.doc.spreads, p.lim.MaxFragments, "are too many: fragment spreads and inline fragments count"))
		}
		p.next()
		if p.tok.kind == tokName && p.tok.text != "on" {
			s := &selection{kind: selSpread, name: p.name(), pos: pos}
			p.directives()
			return s
		}
		s := &selection{kind: selInline, pos: pos}
		if p.tok.kind == tokName { // on
			p.next()
			s.typeCond = p.name()
		}
		p.directives()
		s.sels = p.selectionSet(depth)
		return s
	}
	p.doc.fields++
	if p.doc.fields > p.lim.MaxFields {
		p.fail(limitAt(pos, "query", "fields", "fields", p.doc.fields, p.lim.MaxFields, "are too many"))
	}
	if depth > p.lim.MaxDepth {
		p.fail(limitAt(pos, "query", "depth", "levels", depth, p.lim.MaxDepth, "of nested fields are too many"))
	}
	s := &selection{kind: selField, pos: pos, name: p.name()}
	if p.isPunct(":") {
		p.next()
		s.alias, s.name = s.name, p.name()
	}
	if p.isPunct("(") {
		p.arguments(&s.page)
	}
	p.directives()
	if p.isPunct("{") {
		s.sels = p.selectionSet(depth + 1)
	}
	return s
}

// location turns a byte offset into a 1-based line and column (in runes).
func location(src string, pos int) (line, col int) {
	line, col = 1, 1
	for i, r := range src {
		if i >= pos {
			break
		}
		switch {
		case r == '\n':
			line, col = line+1, 1
		case r == '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				continue
			}
			line, col = line+1, 1
		default:
			col++
		}
	}
	return line, col
}
