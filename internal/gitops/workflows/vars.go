package workflows

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// varAt matches a simple {{name}} reference where a tag starts. Values are inserted as data,
// never parsed again: a value holding "{{…}}" stays as it is.
var varAt = regexp.MustCompile(`^\{\{\s*([^{}]*?)\s*\}\}`)

// tag is one {{…}} of a string: a simple tag's name, or "=" and an expression tag's body.
type tag struct {
	start, end int
	name       string
}

// findTags lists the tags of s, left to right, as Argo's template parser does: "{{=" opens an
// expression tag that the first "}}" after it closes (so its body may hold braces, as in
// `filter(xs, {# > 1})`); anything else is a simple tag.
func findTags(s string) []tag {
	var out []tag
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			break
		}
		j += i
		if strings.HasPrefix(s[j:], "{{=") {
			if k := strings.Index(s[j+3:], "}}"); k >= 0 {
				end := j + 3 + k + 2
				out = append(out, tag{j, end, "=" + s[j+3:j+3+k]})
				i = end
				continue
			}
		}
		if m := varAt.FindStringSubmatchIndex(s[j:]); m != nil {
			out = append(out, tag{j, j + m[1], s[j+m[2] : j+m[3]]})
			i = j + m[1]
			continue
		}
		i = j + 1
	}
	return out
}

// scope is the variables visible where a template or a step is expanded.
type scope map[string]string

// subst substitutes the tags of s that scope resolves. It returns the simple tags it did not
// know whose prefix is one of strict, and the first expression tag that failed (both are
// errors where they are used). An expression tag naming a variable not known yet, outside
// strict, is kept for a later pass.
func (sc scope) subst(s string, strict []string) (string, []string, error) {
	tags := findTags(s)
	if len(tags) == 0 {
		return s, nil, nil
	}
	var missing []string
	var exprErr *tagError
	var b strings.Builder
	last := 0
	for _, t := range tags {
		b.WriteString(s[last:t.start])
		last = t.end
		if body, ok := strings.CutPrefix(t.name, "="); ok {
			v, keep, err := expandTag(body, sc, strict)
			switch {
			case err != nil:
				if exprErr == nil {
					exprErr = &tagError{name: "=" + strings.TrimSpace(body), err: err}
				}
				b.WriteString(s[t.start:t.end])
			case keep:
				b.WriteString(s[t.start:t.end])
			default:
				b.WriteString(v)
			}
			continue
		}
		if v, ok := sc[t.name]; ok {
			b.WriteString(v)
			continue
		}
		if isStrict(t.name, strict) {
			missing = append(missing, t.name)
		}
		b.WriteString(s[t.start:t.end])
	}
	b.WriteString(s[last:])
	if exprErr != nil {
		return b.String(), missing, exprErr
	}
	return b.String(), missing, nil
}

// tagError is an expression tag that failed.
type tagError struct {
	name string // "=" and the expression
	err  error
}

func (e *tagError) Error() string { return fmt.Sprintf("{{%s}}: %v", e.name, e.err) }

// isStrict reports whether a variable that is not known is an error: its prefix is in strict.
// workflow.outputs.* is strict only when strict names it: a steps or DAG template's later
// steps may still make them.
func isStrict(name string, strict []string) bool {
	if strings.HasPrefix(name, "workflow.outputs.") && !slices.Contains(strict, "workflow.outputs") {
		return false
	}
	for _, p := range strict {
		if name == p || strings.HasPrefix(name, p+".") {
			return true
		}
	}
	return false
}

// replace substitutes the references in s that scope knows, and returns the names it did not
// know whose prefix is one of strict (each is an error where it is used); an expression tag
// that fails is one of them.
func (sc scope) replace(s string, strict []string) (string, []string) {
	out, missing, err := sc.subst(s, strict)
	if err != nil {
		missing = append([]string{err.(*tagError).name}, missing...)
	}
	return out, missing
}

// expand substitutes the references in s that scope knows; an unresolved simple tag with a
// strict prefix or a failed expression tag is the error, prefixed with what.
func (sc scope) expand(what, s string, strict []string) (string, error) {
	out, missing, err := sc.subst(s, strict)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %v", what, err)
	case len(missing) > 0:
		return "", fmt.Errorf("%s: failed to resolve {{%s}}", what, missing[0])
	}
	return out, nil
}

// walkStrings calls fn on each string in a JSON-decoded value, with its field path, and
// replaces it with fn's result.
func walkStrings(v any, path string, fn func(path, s string) (string, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return fn(path, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			nv, err := walkStrings(x[k], p, fn)
			if err != nil {
				return nil, err
			}
			x[k] = nv
		}
		return x, nil
	case []any:
		for i := range x {
			nv, err := walkStrings(x[i], fmt.Sprintf("%s[%d]", path, i), fn)
			if err != nil {
				return nil, err
			}
			x[i] = nv
		}
		return x, nil
	}
	return v, nil
}

// substitute replaces the references scope knows in every string of *v (a struct that
// round-trips through JSON). A reference left unresolved whose prefix is in strict is an error
// naming its field (under path).
func substitute[T any](v *T, path string, sc scope, strict []string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	tree, err = walkStrings(tree, path, func(p, s string) (string, error) {
		if !strings.Contains(s, "{{") {
			return s, nil
		}
		return sc.expand(p, s, strict)
	})
	if err != nil {
		return err
	}
	b, err = json.Marshal(tree)
	if err != nil {
		return err
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("%s: after substitution: %w", path, err)
	}
	*v = out
	return nil
}

// refs calls fn for every {{reference}} in the strings of v (any JSON-encodable value), with
// the field path (under path) it is in.
func refs(v any, path string, fn func(path, name string) error) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	_, err = walkStrings(tree, path, func(p, s string) (string, error) {
		for _, t := range findTags(s) {
			if err := fn(p, t.name); err != nil {
				return "", err
			}
		}
		return s, nil
	})
	return err
}
