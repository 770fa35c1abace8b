package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// ShellVar is an environment variable that a script rewritten by InterpolateShell reads a
// ${{NAME}} value from.
type ShellVar struct {
	Name  string
	Value string
}

// ShellVarPrefix starts the name of every environment variable InterpolateShell introduces.
const ShellVarPrefix = "FRESHET_VAR_"

// shellIdent is a name the shell can expand as $NAME.
var shellIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ShellVarName returns the environment variable that carries ${{name}} into a step's shell:
// FRESHET_VAR_NAME when name is made of letters, digits and '_', else FRESHET_VAR_ followed
// by name with every other character made '_' and 8 hex digits of its SHA-256
// (steps.build.imageId → FRESHET_VAR_steps_build_imageId_1b2c3d4e), so that two names never
// share a variable.
func ShellVarName(name string) string {
	if shellIdent.MatchString("_" + name) {
		return ShellVarPrefix + name
	}
	sum := sha256.Sum256([]byte(name))
	clean := strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
	return ShellVarPrefix + clean + "_" + hex.EncodeToString(sum[:4])
}

// InterpolateShell rewrites shell commands so that no ${{NAME}} value is ever part of the
// script's text: each reference to a known variable becomes a reference to an environment
// variable (see ShellVarName), quoted for the place it stands in, so that the shell reads the
// value as data, one word, whatever it contains. The caller sets the returned variables in the
// step's environment. Unknown variables stay as written, as with Interpolate.
//
// How a reference is written depends on where it stands (V is its environment variable):
//
//	unquoted, ${x:-…} words      echo ${{X}}          →  echo "${V}"
//	inside "…"                    "v=${{X}}"           →  "v=${V}"
//	inside '…'                    'v=${{X}}'           →  'v='"${V}"''
//	inside $'…' (bash)            $'v=${{X}}\n'        →  $'v='"${V}"$'\n'
//	here-document                 <<EOF … ${{X}} …     →  <<EOF … ${V} …
//	quoted here-document          <<'EOF' … ${{X}} …   →  <<EOF with the body's \ $ ` escaped and ${V}
//	comment                       # ${{X}}             →  # ${V}
//
// bash evaluates some words as arithmetic or as variable names, and arithmetic on a value
// such as a[$(cmd)] runs cmd. Where a reference stands in such a place — $((…)), ((…)),
// $[…], let, an operand of [[ … -eq … ]] (and -ne, -lt, -le, -gt, -ge), an array index,
// ${x:offset:length}, a declare -i value — its value must be digits and arithmetic operators
// (or empty); where it names a variable (read NAME, printf -v NAME, [[ -v NAME ]],
// declare -n), a plain name. Otherwise the commands are refused with an error naming
// field[i].
//
// commands are the lines of one script (as executor.Step.Script joins them), lexed as a whole
// so that a quote or here-document may span several of them. The rewriting is a lexer, not a
// parser: where it misreads unusual syntax, a value may reach the shell unquoted (and be split
// into words) or be printed as ${V}, but it is still never parsed as code.
func InterpolateShell(field string, commands []string, vars func(name string) (string, bool)) ([]string, []ShellVar, error) {
	if vars == nil || !slices.ContainsFunc(commands, func(c string) bool { return strings.Contains(c, "${{") }) {
		return slices.Clone(commands), nil, nil
	}
	src := strings.Join(commands, "\n")
	l := &shLexer{src: src, limit: len(src), vars: vars}
	l.list(0, false)
	for l.pos < len(src) { // a stray closer at the top: skip it and go on
		l.pos++
		l.list(0, false)
	}

	// Checks and edits, then the commands back one by one.
	starts := make([]int, len(commands))
	off := 0
	for i, c := range commands {
		starts[i] = off
		off += len(c) + 1
	}
	item := func(pos int) int {
		i, found := slices.BinarySearch(starts, pos)
		if !found {
			i--
		}
		return i
	}
	var errs []error
	for _, e := range l.errs {
		i := item(max(e.pos, 0))
		errs = append(errs, errdefs.Invalid(fmt.Sprintf("%s[%d]", field, i), commands[i], e.msg))
	}
	var env []ShellVar
	seen := map[string]bool{}
	edits := slices.Clone(l.edits)
	for _, r := range l.refs {
		if msg := r.check(); msg != "" {
			i := item(r.start)
			errs = append(errs, errdefs.Invalid(fmt.Sprintf("%s[%d]", field, i), commands[i], msg))
		}
		edits = append(edits, shEdit{r.start, r.end, r.text})
		if !seen[r.env] {
			seen[r.env] = true
			env = append(env, ShellVar{Name: r.env, Value: r.value})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(edits, func(a, b shEdit) int { return a.start - b.start })
	out := make([]string, len(commands))
	k := 0
	for i, c := range commands {
		var b strings.Builder
		prev := starts[i]
		for ; k < len(edits) && edits[k].start < starts[i]+len(c)+1; k++ {
			b.WriteString(src[prev:edits[k].start])
			b.WriteString(edits[k].text)
			prev = edits[k].end
		}
		b.WriteString(src[prev : starts[i]+len(c)])
		out[i] = b.String()
	}
	return out, env, nil
}

// ShellScriptArg returns the index of the script in argv when argv runs a POSIX shell with
// -c (["sh", "-c", "script"], ["/bin/bash", "-euo", "pipefail", "-c", "script", …]), else -1.
func ShellScriptArg(argv []string) int {
	if len(argv) < 2 {
		return -1
	}
	switch path.Base(argv[0]) {
	case "sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "busybox":
	default:
		return -1
	}
	i := 1
	if path.Base(argv[0]) == "busybox" {
		if argv[1] != "sh" && argv[1] != "ash" {
			return -1
		}
		i = 2
	}
	withC := false
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			i++
			if withC && i < len(argv) {
				return i
			}
			return -1
		case len(a) > 1 && (a[0] == '-' || a[0] == '+') && a[1] != '-' && (a[len(a)-1] == 'o' || a[len(a)-1] == 'O'):
			if a[0] == '-' && strings.ContainsRune(a, 'c') {
				withC = true
			}
			i++ // -o NAME, -euo NAME: the option's name
		case strings.HasPrefix(a, "--"):
			// --login, --norc, …
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if a[0] == '-' && strings.ContainsRune(a, 'c') {
				withC = true
			}
		default:
			if withC {
				return i
			}
			return -1
		}
	}
	return -1
}

// Where a reference stands, for how it is written.
type shQuote int

const (
	qNone    shQuote = iota // unquoted, or a ${x:-word} word
	qDouble                 // "…"
	qSingle                 // '…'
	qDollar                 // $'…'
	qHeredoc                // a here-document body (quoted ones are made unquoted)
	qArith                  // $((…)) and the like: no quotes
	qComment                // a comment: nothing is expanded
)

// What bash does with the word a reference is in, for what its value may be.
type shUse int

const (
	useData  shUse = iota // any value
	useArith              // evaluated as arithmetic
	useName               // read as a variable name
)

type shRef struct {
	start, end int
	name, env  string
	value      string
	text       string // what replaces the reference
	use        shUse
}

// arithSafe are values bash can evaluate as arithmetic without looking up a variable (and so
// without evaluating an array index, where a[$(cmd)] would run cmd).
var arithSafe = regexp.MustCompile(`^[0-9\s+\-*/%()<>=!&|^~?:,]*$`)

func (r *shRef) check() string {
	switch r.use {
	case useArith:
		if !arithSafe.MatchString(r.value) {
			return fmt.Sprintf("${{%s}} stands where bash evaluates it as arithmetic ($((…)), ((…)), let, [[ … -eq … ]], an array index, ${x:offset}), and its value (%d bytes) is not a number: only digits, blanks and arithmetic operators are allowed there; use \"${{%s}}\" as a string, or check it first (case $%s in *[!0-9]*) exit 1;; esac)",
				r.name, len(r.value), r.name, ShellVarName(r.name))
		}
	case useName:
		if !shellIdent.MatchString(r.value) {
			return fmt.Sprintf("${{%s}} stands where bash reads a variable name (read, printf -v, [[ -v … ]], declare -n), and its value (%d bytes) is not a name: letters, digits and '_', not starting with a digit",
				r.name, len(r.value))
		}
	}
	return ""
}

type shEdit struct {
	start, end int
	text       string
}

type shErr struct {
	pos int
	msg string
}

// shWord is a word of a simple command, as far as classifying references needs: its text with
// quotes removed (approximately) and the references in it.
type shWord struct {
	text strings.Builder
	refs []*shRef
	lit  bool // the text is all literal (no expansion), so it may be a keyword or operator
}

type heredoc struct {
	wordStart, wordEnd int
	delim              string
	quoted, strip      bool
}

// shLexer finds the references in a script and how each is to be written.
type shLexer struct {
	src      string
	pos      int
	limit    int
	vars     func(string) (string, bool)
	refs     []*shRef
	edits    []shEdit
	errs     []shErr
	heredocs []heredoc
	arith    int             // > 0 inside arithmetic (and what is nested in it)
	word     *shWord         // the word being read, nil between words
	assoc    map[string]bool // names declared associative arrays (declare -A): their indexes are strings
	nest     int             // how deep $( ${ $(( … are nested
}

// maxShellNesting bounds how deeply substitutions, expansions and arithmetic may nest.
const maxShellNesting = 200

// enter goes one level deeper, or gives up on the rest of the text when that is too deep.
func (l *shLexer) enter() bool {
	if l.nest >= maxShellNesting {
		if !slices.ContainsFunc(l.errs, func(e shErr) bool { return e.pos < 0 }) {
			l.errs = append(l.errs, shErr{-1, fmt.Sprintf("substitutions, expansions and arithmetic are nested more than %d deep", maxShellNesting)})
		}
		l.pos = l.limit
		return false
	}
	l.nest++
	return true
}

// adv moves pos n bytes on, not past limit.
func (l *shLexer) adv(n int) { l.pos = min(l.pos+n, l.limit) }

func (l *shLexer) peek(k int) byte {
	if l.pos+k < l.limit {
		return l.src[l.pos+k]
	}
	return 0
}

func (l *shLexer) addText(s string) {
	if l.word != nil {
		l.word.text.WriteString(s)
	}
}

func (l *shLexer) addByte(c byte) {
	if l.word != nil {
		l.word.text.WriteByte(c)
	}
}

// varRefAt matches a ${{NAME}} reference at the start of a string.
var varRefAt = regexp.MustCompile(`^` + varRef.String())

// ref reads a ${{NAME}} reference at pos, if there is one, and returns whether it did.
func (l *shLexer) ref(q shQuote) bool {
	if !strings.HasPrefix(l.src[l.pos:l.limit], "${{") {
		return false
	}
	loc := varRefAt.FindStringSubmatchIndex(l.src[l.pos:l.limit])
	if loc == nil {
		return false
	}
	name := l.src[l.pos+loc[2] : l.pos+loc[3]]
	start := l.pos
	l.pos += loc[1]
	v, ok := l.vars(name)
	if !ok {
		l.addText(l.src[start:l.pos])
		return true
	}
	env := ShellVarName(name)
	r := &shRef{start: start, end: l.pos, name: name, env: env, value: v}
	if l.arith > 0 {
		q = qArith
		r.use = useArith
	}
	switch q {
	case qNone:
		r.text = `"${` + env + `}"`
	case qSingle:
		r.text = `'"${` + env + `}"'`
	case qDollar:
		r.text = `'"${` + env + `}"$'`
	default: // qDouble, qHeredoc, qArith, qComment
		r.text = "${" + env + "}"
	}
	l.refs = append(l.refs, r)
	if l.word != nil {
		l.word.refs = append(l.word.refs, r)
		l.word.lit = false
	}
	return true
}

// list reads commands up to term: 0 (the end), ')' (of $( or <( ), '`', or '}' and ']' (of a
// ${x:-word} and an associative array's index, which are read as words too). With sqLit a
// single quote is an ordinary character (as in "${x:-it's}"). It leaves pos after the
// terminator.
func (l *shLexer) list(term byte, sqLit bool) {
	if !l.enter() {
		return
	}
	defer func() { l.nest-- }()
	saved := l.word
	l.word = nil
	var words []*shWord
	var dbl bool // inside [[ … ]]
	depth := 0   // ( … ) subshells and array assignments
	endWord := func() {
		if l.word == nil {
			return
		}
		w := l.word
		l.word = nil
		words = append(words, w)
		if w.lit && len(words) == 1 && w.text.String() == "[[" {
			dbl = true
		}
		if dbl && w.lit && w.text.String() == "]]" {
			dbl = false
			l.classify(words)
			words = nil
		}
	}
	endCmd := func() {
		endWord()
		if !dbl {
			l.classify(words)
			words = nil
		}
	}
	startWord := func() {
		if l.word == nil {
			l.word = &shWord{lit: true}
		}
	}
	defer func() {
		endWord()
		l.classify(words)
		l.word = saved
	}()
	for l.pos < l.limit {
		c := l.src[l.pos]
		if term != 0 && c == term && (term != ')' || depth == 0) && (term != '}' || depth == 0) {
			l.pos++
			return
		}
		switch c {
		case ' ', '\t':
			endWord()
			l.pos++
		case '\n':
			endCmd()
			l.pos++
			l.readHeredocs()
		case ';', '&', '|':
			if dbl && (c == '&' || c == '|') && l.peek(1) == c {
				endWord()
				l.adv(2)
				continue
			}
			if c == '&' && l.peek(1) == '>' { // &> redirection
				endWord()
				l.adv(2)
				continue
			}
			endCmd()
			l.pos++
		case '<', '>':
			endWord()
			if c == '<' && l.peek(1) == '<' {
				if l.peek(2) == '<' { // <<< here-string: an ordinary word follows
					l.adv(3)
					continue
				}
				l.adv(2)
				l.heredocOp()
				continue
			}
			if l.peek(1) == '(' { // process substitution
				l.adv(2)
				l.list(')', false)
				continue
			}
			l.pos++
		case '(':
			if l.word == nil && len(words) == 0 && l.peek(1) == '(' { // (( arithmetic ))
				l.adv(2)
				l.arithmetic(')')
				continue
			}
			if l.word == nil && len(words) == 1 && words[0].lit && words[0].text.String() == "for" && l.peek(1) == '(' {
				l.adv(2)
				l.arithmetic(')')
				continue
			}
			endWord()
			depth++
			l.pos++
		case ')':
			endCmd()
			if depth > 0 {
				depth--
			}
			l.pos++
		case '{':
			if term == '}' {
				depth++
			}
			startWord()
			l.addByte('{')
			l.pos++
		case '}':
			if term == '}' && depth > 0 {
				depth--
			}
			startWord()
			l.addByte('}')
			l.pos++
		case '#':
			if l.word == nil && term != '}' && term != ']' {
				l.comment()
				continue
			}
			l.addByte('#')
			l.pos++
		case '\\':
			startWord()
			if l.pos+1 < l.limit {
				l.addText(l.src[l.pos+1 : l.pos+2])
			}
			l.word.lit = false
			l.adv(2)
		case '\'':
			startWord()
			if sqLit {
				l.addByte(c)
				l.pos++
				continue
			}
			l.single(1, qSingle)
		case '"':
			startWord()
			l.double()
		case '`':
			startWord()
			l.word.lit = false
			l.pos++
			l.list('`', false)
		case '$':
			startWord()
			l.dollar(qNone)
		case '[':
			// name[index]=value: the index is arithmetic.
			if w := l.word; w != nil && w.lit && shellIdent.MatchString(w.text.String()) && !l.assoc[w.text.String()] && assignPosition(words) {
				l.addByte('[')
				l.pos++
				l.arithmetic(']')
				continue
			}
			startWord()
			l.addByte('[')
			l.pos++
		default:
			startWord()
			l.addByte(c)
			l.pos++
		}
	}
}

// assignPosition reports whether a word after words can be an assignment (all before it are).
func assignPosition(words []*shWord) bool {
	for _, w := range words {
		if !strings.Contains(w.text.String(), "=") {
			return false
		}
	}
	return true
}

// comment reads a comment to the end of its line (not the newline).
func (l *shLexer) comment() {
	for l.pos < l.limit && l.src[l.pos] != '\n' {
		if l.src[l.pos] == '$' && l.ref(qComment) {
			continue
		}
		l.pos++
	}
}

// single reads '…' (skip is the length of the opening, 1 or 2 for $'); in $'…' a backslash
// escapes the next character.
func (l *shLexer) single(skip int, q shQuote) {
	if l.word != nil {
		l.word.lit = false
	}
	start := l.pos
	l.pos += skip
	for l.pos < l.limit {
		switch c := l.src[l.pos]; {
		case c == '\'':
			l.addText(l.src[start+skip : l.pos])
			l.pos++
			return
		case c == '\\' && q == qDollar:
			l.adv(2)
		case c == '$' && l.ref(q):
		default:
			l.pos++
		}
	}
	l.pos = min(l.pos, l.limit)
}

// double reads "…".
func (l *shLexer) double() {
	l.pos++
	for l.pos < l.limit {
		switch c := l.src[l.pos]; c {
		case '"':
			l.pos++
			return
		case '\\':
			l.adv(2)
		case '$':
			l.dollar(qDouble)
		case '`':
			l.pos++
			l.list('`', false)
		default:
			l.addByte(c)
			l.pos++
		}
	}
	l.pos = min(l.pos, l.limit)
}

// dollar reads what starts with $ at pos, standing in q.
func (l *shLexer) dollar(q shQuote) {
	if l.ref(q) {
		return
	}
	if l.word != nil {
		l.word.lit = false
	}
	switch l.peek(1) {
	case '(':
		if l.peek(2) == '(' {
			l.adv(3)
			l.arithmetic(')')
			return
		}
		l.adv(2)
		l.list(')', false)
	case '[':
		l.adv(2)
		l.arithmetic(']')
	case '{':
		l.adv(2)
		l.param(q)
	case '\'':
		if q == qNone {
			l.pos++
			l.single(1, qDollar)
			return
		}
		l.pos++
	case '"':
		if q == qNone {
			l.pos++
			l.double()
			return
		}
		l.pos++
	default:
		l.pos++
	}
}

// param reads a ${…} expansion after its ${.
func (l *shLexer) param(q shQuote) {
	if !l.enter() {
		return
	}
	defer func() { l.nest-- }()
	if c := l.peek(0); c == '#' || c == '!' {
		l.pos++
	}
	nameStart := l.pos
	for l.pos < l.limit {
		c := l.src[l.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			l.pos++
			continue
		}
		break
	}
	name := l.src[nameStart:l.pos]
	if name == "" && l.pos < l.limit && strings.IndexByte("@*#?$!-", l.src[l.pos]) >= 0 {
		l.pos++ // a special parameter: ${@…}, ${#…}
	}
	if l.peek(0) == '[' {
		l.pos++
		if l.assoc[name] {
			l.list(']', false)
		} else {
			l.arithmetic(']')
		}
	}
	switch l.peek(0) {
	case '}':
		l.pos++
		return
	case ':':
		if strings.IndexByte("-=?+", l.peek(1)) < 0 { // ${x:offset:length}
			l.pos++
			l.arithmetic('}')
			return
		}
	}
	// The rest is a word (a default, pattern or replacement) up to the closing }: read like
	// commands, so quotes nest; a reference there is quoted, which keeps it literal. Inside
	// "…", a single quote in a ${x:-word} word is an ordinary character (in a pattern it
	// still quotes).
	op := l.peek(0)
	if op == ':' {
		op = l.peek(1)
	}
	word := l.word
	l.list('}', q == qDouble && strings.IndexByte("-=?+", op) >= 0)
	l.word = word
}

// arithmetic reads arithmetic up to closer: ')' for $((…)) and ((…)) (which end in "))"),
// ']' for $[…] and indexes, '}' for ${x:offset}. Everything nested in it counts as arithmetic.
func (l *shLexer) arithmetic(closer byte) {
	if l.word != nil {
		l.word.lit = false
	}
	if !l.enter() {
		return
	}
	l.arith++
	defer func() { l.arith--; l.nest-- }()
	depth := 0
	for l.pos < l.limit {
		c := l.src[l.pos]
		switch {
		case c == '(' || c == '[' && closer == ']':
			depth++
			l.pos++
		case c == closer && depth == 0:
			l.pos++
			if closer == ')' && l.peek(0) == ')' {
				l.pos++
			}
			return
		case c == ')' || c == ']' && closer == ']':
			depth = max(depth-1, 0)
			l.pos++
		case c == '$':
			l.dollar(qArith)
		case c == '"':
			l.double()
		case c == '\'':
			l.single(1, qSingle)
		case c == '`':
			l.pos++
			l.list('`', false)
		case c == '\\':
			l.adv(2)
		default:
			l.pos++
		}
	}
	l.pos = min(l.pos, l.limit)
}

// heredocDelimSafe are delimiters that can be written unquoted as they are.
var heredocDelimSafe = regexp.MustCompile(`^[A-Za-z0-9_.,:+@%^=/-]+$`)

// heredocOp reads the word after << (or <<-), the here-document's delimiter; its body is read
// at the end of the line.
func (l *shLexer) heredocOp() {
	h := heredoc{}
	if l.peek(0) == '-' {
		h.strip = true
		l.pos++
	}
	for l.pos < l.limit && (l.src[l.pos] == ' ' || l.src[l.pos] == '\t') {
		l.pos++
	}
	h.wordStart = l.pos
	var d strings.Builder
	for l.pos < l.limit {
		c := l.src[l.pos]
		if strings.IndexByte(" \t\n;&|<>()", c) >= 0 {
			break
		}
		switch c {
		case '\'', '"':
			h.quoted = true
			end := strings.IndexByte(l.src[l.pos+1:l.limit], c)
			if end < 0 {
				end = l.limit - l.pos - 1
			}
			d.WriteString(l.src[l.pos+1 : l.pos+1+end])
			l.adv(end + 2)
		case '\\':
			h.quoted = true
			if l.pos+1 < l.limit {
				d.WriteByte(l.src[l.pos+1])
			}
			l.adv(2)
		default:
			d.WriteByte(c)
			l.pos++
		}
	}
	l.pos = min(l.pos, l.limit)
	h.wordEnd = l.pos
	h.delim = d.String()
	if refs := References(l.src[h.wordStart:h.wordEnd]); len(refs) > 0 {
		l.errs = append(l.errs, shErr{h.wordStart, fmt.Sprintf("a here-document delimiter cannot be a variable (${{%s}}): write it as text, like EOF", refs[0])})
	}
	l.heredocs = append(l.heredocs, h)
}

// readHeredocs reads the bodies of the here-documents begun on the line that just ended.
func (l *shLexer) readHeredocs() {
	pending := l.heredocs
	l.heredocs = nil
	for _, h := range pending {
		bodyStart := l.pos
		bodyEnd := l.limit
		for l.pos < l.limit {
			eol := strings.IndexByte(l.src[l.pos:l.limit], '\n')
			next := l.limit
			if eol >= 0 {
				eol += l.pos
				next = eol + 1
			} else {
				eol = l.limit
			}
			line := l.src[l.pos:eol]
			if h.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				bodyEnd = l.pos
				l.pos = next
				break
			}
			l.pos = next
		}
		l.heredocBody(h, bodyStart, bodyEnd)
	}
}

// heredocBody reads a here-document's body, src[start:end].
func (l *shLexer) heredocBody(h heredoc, start, end int) {
	savedPos, savedLimit, savedWord := l.pos, l.limit, l.word
	defer func() { l.pos, l.limit, l.word = savedPos, savedLimit, savedWord }()
	l.pos, l.limit, l.word = start, end, nil
	if h.quoted {
		// Nothing in the body is expanded. A reference must be, so the document becomes an
		// unquoted one whose text is escaped: \, $ and ` mean themselves again.
		known := false
		for _, name := range References(l.src[start:end]) {
			if _, ok := l.vars(name); ok {
				known = true
				break
			}
		}
		if !known {
			return
		}
		if !heredocDelimSafe.MatchString(h.delim) {
			l.errs = append(l.errs, shErr{h.wordStart, fmt.Sprintf("the here-document delimiter %q holds characters that cannot be written unquoted, and its body has a ${{…}} reference: use a delimiter of letters and digits, like EOF", h.delim)})
			return
		}
		l.edits = append(l.edits, shEdit{h.wordStart, h.wordEnd, h.delim})
		for l.pos < l.limit {
			c := l.src[l.pos]
			if n, at := len(l.refs), l.pos; c == '$' && l.ref(qHeredoc) {
				if len(l.refs) == n { // an unknown variable stays as written
					l.edits = append(l.edits, shEdit{at, at, `\`})
				}
				continue
			}
			if c == '\\' || c == '$' || c == '`' {
				l.edits = append(l.edits, shEdit{l.pos, l.pos, `\`})
			}
			l.pos++
		}
		return
	}
	for l.pos < l.limit {
		switch l.src[l.pos] {
		case '\\':
			l.adv(2)
		case '$':
			l.dollar(qHeredoc)
		case '`':
			l.pos++
			l.list('`', false)
		default:
			l.pos++
		}
	}
}

// Operators of [[ … ]] whose operands bash evaluates as arithmetic.
var arithOps = map[string]bool{"-eq": true, "-ne": true, "-lt": true, "-le": true, "-gt": true, "-ge": true}

// classify marks the references of a simple command that stand where bash evaluates a word as
// arithmetic or as a variable name, and notes associative arrays.
func (l *shLexer) classify(words []*shWord) {
	mark := func(w *shWord, u shUse) {
		for _, r := range w.refs {
			if r.use == useData {
				r.use = u
			}
		}
	}
	text := func(i int) string {
		if i < 0 || i >= len(words) || !words[i].lit {
			return ""
		}
		return words[i].text.String()
	}
	// Skip assignments and the prefixes that run the next word as the command.
	i := 0
	for i < len(words) && (assignWord(words[i]) || text(i) == "builtin" || text(i) == "command") {
		i++
	}
	if i >= len(words) {
		return
	}
	args := words[i+1:]
	switch cmd := text(i); cmd {
	case "let":
		for _, w := range args {
			mark(w, useArith)
		}
	case "[[", "[", "test":
		for j := range args {
			op := text(i + 1 + j)
			if arithOps[op] && cmd == "[[" {
				if j > 0 {
					mark(args[j-1], useArith)
				}
				if j+1 < len(args) {
					mark(args[j+1], useArith)
				}
			}
			if op == "-v" && j+1 < len(args) {
				mark(args[j+1], useName)
			}
		}
	case "read":
		for j, w := range args {
			prev := text(i + j)
			if strings.HasPrefix(text(i+1+j), "-") || j > 0 && len(prev) == 2 && prev[0] == '-' && strings.Contains("dinNptu", prev[1:]) {
				continue
			}
			mark(w, useName)
		}
	case "printf":
		for j := range args {
			if text(i+1+j) == "-v" && j+1 < len(args) {
				mark(args[j+1], useName)
			}
		}
	case "declare", "typeset", "local", "readonly", "export":
		use, assoc := useData, false
		for j, w := range args {
			if o := text(i + 1 + j); strings.HasPrefix(o, "-") {
				assoc = assoc || strings.Contains(o, "A")
				if strings.Contains(o, "n") {
					use = useName
				} else if strings.Contains(o, "i") && use == useData {
					use = useArith
				}
				continue
			}
			if use != useData {
				mark(w, use)
			}
			if assoc {
				if l.assoc == nil {
					l.assoc = map[string]bool{}
				}
				name, _, _ := strings.Cut(w.text.String(), "=")
				l.assoc[name] = true
			}
		}
	}
}

// assignWord reports whether w looks like NAME=… or NAME[…]=….
func assignWord(w *shWord) bool {
	s := w.text.String()
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	name := strings.TrimSuffix(s[:eq], "+")
	if b := strings.IndexByte(name, '['); b > 0 {
		name = name[:b]
	}
	return shellIdent.MatchString(name)
}
