package webhook

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// maxRegexLen bounds branch regular expressions; real ones are a few dozen characters.
const maxRegexLen = 4096

// regexMatcher is a Codefresh branch regular expression compiled for Go. Codefresh evaluates
// them as JavaScript regexes with test(), so a match anywhere in the name counts. Go's RE2 has no
// lookaround; the two idioms Codefresh documents for exclusion are recognised and evaluated
// without it:
//
//	^((?!X).)*$   the name contains no match of X
//	^(?!X)REST    X does not match at the start and REST does (e.g. ^(?!feature).*)
type regexMatcher struct {
	source string         // as configured
	re     *regexp.Regexp // nil: matches everything (empty regex)
	notAny *regexp.Regexp // ^((?!X).)*$: X must not match at any position before the end
	notAt0 *regexp.Regexp // ^(?!X): X must not match at the start
}

func (m *regexMatcher) match(s string) bool {
	if m == nil {
		return true
	}
	if m.notAny != nil {
		loc := m.notAny.FindStringIndex(s)
		return loc == nil || loc[0] >= len(s)
	}
	if m.notAt0 != nil && m.notAt0.MatchString(s) {
		return false
	}
	return m.re == nil || m.re.MatchString(s)
}

// compileRegex compiles a Codefresh regex, bare or in the /body/flags form (flags g, i, m, s, u,
// y; i, m and s take effect). An empty value matches everything (nil matcher).
func compileRegex(field, v string) (*regexMatcher, error) {
	return compileRegexHint(field, v, "")
}

func compileRegexHint(field, v, hint string) (*regexMatcher, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > maxRegexLen {
		return nil, errdefs.Invalid(field, v, fmt.Sprintf("is longer than %d characters", maxRegexLen))
	}
	body, prefix := v, ""
	if len(v) >= 2 && v[0] == '/' {
		if i := strings.LastIndex(v, "/"); i > 0 {
			if flags, ok := jsFlags(v[i+1:]); ok {
				body, prefix = v[1:i], flags
			}
		}
	}
	m := &regexMatcher{source: v}
	re, err := regexp.Compile(prefix + body)
	if err == nil {
		m.re = re
		return m, nil
	}
	if ok := m.compileLookahead(prefix, body); ok {
		return m, nil
	}
	reason := fmt.Sprintf("is not a valid regular expression (%v): Freshet uses RE2 syntax, which has no backreferences and allows lookahead only as ^((?!X).)*$ or ^(?!X)…", unwrapRegexpError(err))
	if hint != "" {
		reason += "; " + hint
	}
	return nil, errdefs.Invalid(field, v, reason)
}

// jsFlags turns JavaScript regex flags into a Go flag group ("" when none take effect).
func jsFlags(s string) (string, bool) {
	var goFlags string
	for _, c := range s {
		switch c {
		case 'g', 'u', 'y':
		case 'i', 'm', 's':
			if !strings.ContainsRune(goFlags, c) {
				goFlags += string(c)
			}
		default:
			return "", false
		}
	}
	if goFlags == "" {
		return "", true
	}
	return "(?" + goFlags + ")", true
}

func unwrapRegexpError(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// compileLookahead recognises ^((?!X).)*$, ^(?!X)REST and ^((?!X))REST in body.
func (m *regexMatcher) compileLookahead(prefix, body string) bool {
	rest, ok := strings.CutPrefix(body, "^")
	if !ok {
		return false
	}
	var x, tail string
	var anyPos bool
	switch {
	case strings.HasPrefix(rest, "((?!"):
		end := closingParen(rest, 1)
		if end < 0 {
			return false
		}
		x = rest[4:end]
		switch after := rest[end+1:]; {
		case after == ".)*$":
			anyPos = true
		case strings.HasPrefix(after, ")"):
			tail = after[1:]
		default:
			return false
		}
	case strings.HasPrefix(rest, "(?!"):
		end := closingParen(rest, 0)
		if end < 0 {
			return false
		}
		x, tail = rest[3:end], rest[end+1:]
	default:
		return false
	}
	xre, err := regexp.Compile(prefix + "(?:" + x + ")")
	if err != nil {
		return false
	}
	if anyPos {
		m.notAny = xre
		return true
	}
	at0, err := regexp.Compile(prefix + "^(?:" + x + ")")
	if err != nil {
		return false
	}
	tre, err := regexp.Compile(prefix + "^(?:" + tail + ")")
	if err != nil {
		return false
	}
	m.notAt0, m.re = at0, tre
	return true
}

// closingParen returns the index of the parenthesis closing the one at s[open], skipping
// escapes and character classes, or -1.
func closingParen(s string, open int) int {
	depth := 0
	inClass := false
	for i := open; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(s) && s[i+1] == '^' {
				i++
			}
			if i+1 < len(s) && s[i+1] == ']' {
				i++ // a leading ] is literal
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// branchFilter is a trigger's branchRegex read according to branchRegexInput.
type branchFilter struct {
	input string        // regex, multiselect or multiselect-exclude
	re    *regexMatcher // regex mode
	names []string      // multiselect modes
}

func compileBranchFilter(v, input string) (branchFilter, error) {
	switch input {
	case "", BranchInputRegex:
		re, err := compileRegexHint("branchRegex", v, "to leave branches out, use branchRegexInput: multiselect-exclude with a list of names")
		return branchFilter{input: BranchInputRegex, re: re}, err
	case BranchInputMultiselect, BranchInputMultiselectExclude:
		if strings.HasPrefix(strings.TrimSpace(v), "/") {
			return branchFilter{}, errdefs.Invalid("branchRegex", v, fmt.Sprintf("is a regular expression, but branchRegexInput %s takes a comma-separated list of branch names (or set branchRegexInput: regex)", input))
		}
		var names []string
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return branchFilter{}, errdefs.Invalid("branchRegex", v, fmt.Sprintf("lists no branch names: branchRegexInput %s takes a comma-separated list such as main, release", input))
		}
		return branchFilter{input: input, names: names}, nil
	}
	return branchFilter{}, errdefs.Invalid("branchRegexInput", input, "is not valid: use regex, multiselect or multiselect-exclude")
}

func (f branchFilter) match(name string) bool {
	switch f.input {
	case BranchInputMultiselect:
		return slices.Contains(f.names, name)
	case BranchInputMultiselectExclude:
		return !slices.Contains(f.names, name)
	}
	return f.re.match(name)
}

// describe renders the filter for a non-match reason.
func (f branchFilter) describe() string {
	if f.input == BranchInputRegex {
		if f.re == nil {
			return `""`
		}
		return fmt.Sprintf("%q", f.re.source)
	}
	return fmt.Sprintf("(%s) %q", f.input, strings.Join(f.names, ", "))
}
