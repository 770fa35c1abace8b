package workflows

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// varRe matches a {{name}} reference. Values are inserted as data, never parsed again: a value
// holding "{{…}}" stays as it is.
var varRe = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// scope is the variables visible where a template or a step is expanded.
type scope map[string]string

// replace substitutes the references in s that scope knows, and returns the names it did not
// know whose prefix is one of strict (each is an error where it is used).
func (sc scope) replace(s string, strict []string) (string, []string) {
	var missing []string
	out := varRe.ReplaceAllStringFunc(s, func(m string) string {
		name := varRe.FindStringSubmatch(m)[1]
		if v, ok := sc[name]; ok {
			return v
		}
		for _, p := range strict {
			if name == p || strings.HasPrefix(name, p+".") {
				missing = append(missing, name)
				break
			}
		}
		return m
	})
	return out, missing
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
		out, missing := sc.replace(s, strict)
		if len(missing) > 0 {
			return "", fmt.Errorf("%s: failed to resolve {{%s}}", p, missing[0])
		}
		return out, nil
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
		for _, m := range varRe.FindAllStringSubmatch(s, -1) {
			if err := fn(p, m[1]); err != nil {
				return "", err
			}
		}
		return s, nil
	})
	return err
}
