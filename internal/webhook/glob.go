package webhook

import (
	"fmt"
	"path"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Limits on modifiedFilesGlob. Codefresh's UI takes 150 characters; brace expansion is bounded
// in patterns and in bytes copied, so that no value expands into millions of patterns or takes
// quadratic time (deeply nested braces).
const (
	maxGlobLen          = 4096
	maxGlobAlternatives = 1024
	maxGlobExpandBytes  = 1 << 20
)

// expandBudget is what brace expansion may still spend.
type expandBudget struct {
	patterns int
	bytes    int
}

// globSet is a compiled modifiedFilesGlob. A changed file counts when it matches an include
// pattern (or there are none) and no exclude (!) pattern; the trigger fires when a file counts.
type globSet struct {
	include, exclude [][]string // patterns split into path segments; "**" is a whole segment
}

// compileGlobs compiles a modifiedFilesGlob: comma-separated patterns (commas inside {} and []
// belong to the pattern). Per pattern: a leading ! excludes; {a,b} alternatives; a leading / or
// ./ is the repository root (patterns are always rooted); a trailing / means everything under
// the directory; // means any number of directories (Codefresh's dir//file); ** as a path
// segment matches zero or more directories; *, ? and [...] match within one segment. It returns
// nil for an empty value.
func compileGlobs(v string) (*globSet, error) {
	const field = "modifiedFilesGlob"
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if len(v) > maxGlobLen {
		return nil, errdefs.Invalid(field, v, fmt.Sprintf("is longer than %d characters", maxGlobLen))
	}
	items, err := splitTopLevel(v)
	if err != nil {
		return nil, errdefs.Invalid(field, v, err.Error())
	}
	set := &globSet{}
	budget := expandBudget{patterns: maxGlobAlternatives, bytes: maxGlobExpandBytes}
	for _, item := range items {
		item = strings.TrimSpace(item)
		neg := false
		for strings.HasPrefix(item, "!") {
			neg, item = !neg, strings.TrimSpace(item[1:])
		}
		if item == "" {
			continue
		}
		alts, err := expandBraces(item, &budget)
		if err != nil {
			return nil, errdefs.Invalid(field, v, err.Error())
		}
		for _, alt := range alts {
			segs, err := globSegments(alt)
			if err != nil {
				return nil, errdefs.Invalid(field, v, err.Error())
			}
			if neg {
				set.exclude = append(set.exclude, segs)
			} else {
				set.include = append(set.include, segs)
			}
		}
	}
	if len(set.include) == 0 && len(set.exclude) == 0 {
		return nil, errdefs.Invalid(field, v, "has no patterns: use comma-separated globs such as src/**, docs/*.md")
	}
	return set, nil
}

// splitTopLevel splits v at commas outside braces and brackets.
func splitTopLevel(v string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	inClass := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return nil, fmt.Errorf("has a } without a matching { at byte %d", i)
			}
			depth--
		case c == ',' && depth == 0:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("has a { without a matching }")
	}
	return append(out, v[start:]), nil
}

// expandBraces expands the {a,b} alternatives of s, charging each result and each copied byte
// to budget.
func expandBraces(s string, budget *expandBudget) ([]string, error) {
	budget.bytes -= len(s)
	if budget.bytes < 0 {
		return nil, fmt.Errorf("is too complex: its braces expand to more than %d bytes", maxGlobExpandBytes)
	}
	open, end := -1, -1
	depth := 0
	var commas []int
	inClass := false
scan:
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '{':
			if depth == 0 {
				open = i
			}
			depth++
		case c == ',' && depth == 1:
			commas = append(commas, i)
		case c == '}':
			depth--
			if depth == 0 {
				end = i
				break scan
			}
			if depth < 0 {
				return nil, fmt.Errorf("has a } without a matching {")
			}
		}
	}
	if open < 0 {
		budget.patterns--
		if budget.patterns < 0 {
			return nil, fmt.Errorf("expands to more than %d patterns", maxGlobAlternatives)
		}
		return []string{s}, nil
	}
	if end < 0 {
		return nil, fmt.Errorf("has a { without a matching }")
	}
	prefix, suffix := s[:open], s[end+1:]
	var out []string
	from := open + 1
	for _, c := range append(commas, end) {
		more, err := expandBraces(prefix+s[from:c]+suffix, budget)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
		from = c + 1
	}
	return out, nil
}

// globSegments normalizes one pattern and splits it into segments.
func globSegments(p string) ([]string, error) {
	orig := p
	p = strings.TrimSpace(p)
	for {
		switch {
		case strings.HasPrefix(p, "./"):
			p = p[2:]
			continue
		case strings.HasPrefix(p, "/"):
			p = p[1:]
			continue
		}
		break
	}
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/**/")
	}
	if strings.HasSuffix(p, "/") {
		p += "**"
	}
	if p == "" {
		return nil, fmt.Errorf("pattern %q matches no file: use ** for every file", orig)
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s == "." {
			continue
		}
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("pattern %q is malformed (an unclosed [ or a trailing \\)", orig)
			}
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("pattern %q matches no file: use ** for every file", orig)
	}
	return segs, nil
}

// matchAny reports whether one of files counts (see globSet).
func (g *globSet) matchAny(files []string) bool {
	if g == nil {
		return true
	}
	for _, f := range files {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "./"), "/")
		segs := strings.Split(f, "/")
		if g.excluded(segs) {
			continue
		}
		if len(g.include) == 0 {
			return true
		}
		for _, p := range g.include {
			if matchSegments(p, segs) {
				return true
			}
		}
	}
	return false
}

func (g *globSet) excluded(segs []string) bool {
	for _, p := range g.exclude {
		if matchSegments(p, segs) {
			return true
		}
	}
	return false
}

// matchSegments matches path segments against pattern segments in O(len(p)·len(f)). A "**"
// matches zero or more segments, except that a trailing "**" after other segments (dir/**)
// needs at least one, so that dir/ matches what is under dir and not a file named dir.
func matchSegments(p, f []string) bool {
	n, m := len(p), len(f)
	next := make([]bool, m+1) // row i+1 of the table: p[i+1:] matches f[j:]
	cur := make([]bool, m+1)
	next[m] = true
	for i := n - 1; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			switch {
			case p[i] == "**" && i == n-1 && n > 1:
				cur[j] = j < m
			case p[i] == "**":
				cur[j] = next[j] || (j < m && cur[j+1])
			default:
				ok := false
				if j < m {
					ok, _ = path.Match(p[i], f[j])
				}
				cur[j] = ok && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}
