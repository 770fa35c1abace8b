package spec

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits that keep parsing bounded whatever the input.
const (
	// MaxDocumentSize is the largest pipeline accepted.
	MaxDocumentSize = 1 << 20
	// maxVisits bounds the YAML nodes the compiler visits, counting each expansion of an
	// alias: a few kilobytes of nested aliases can otherwise stand for billions of nodes.
	maxVisits = 100_000
	// maxAliasChain bounds an alias pointing at an alias pointing at …
	maxAliasChain = 32
	// maxMergeDepth bounds merge keys (<<) inside merged mappings.
	maxMergeDepth = 8
	// MaxNesting bounds parallel steps inside parallel steps.
	MaxNesting = 4
	// MaxSteps bounds the steps of a pipeline (nested steps and hook steps included).
	MaxSteps = 1000
	// maxIssues bounds the problems reported for one document.
	maxIssues = 100
)

// kv is one entry of a mapping after merge keys are applied.
type kv struct {
	key  *yaml.Node // the key as written (for its line)
	name string
	val  *yaml.Node // dereferenced
}

// kindName describes a node's kind for messages.
func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return "a value"
	}
	return "an unexpected node"
}

// isNull reports whether n is absent or an explicit null.
func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// visit charges one node against the budget.
func (c *compiler) visit(n *yaml.Node) bool {
	if c.halted {
		return false
	}
	c.visits++
	if c.visits > maxVisits {
		c.issue(n, "", "", fmt.Sprintf("the document expands to more than %d YAML nodes (aliases repeat what they point at): simplify it", maxVisits), SeverityError)
		c.halted = true
		return false
	}
	return true
}

// deref follows aliases. The result carries the position of the first alias, so that
// messages about a value point where it is used; the content is the anchor's. An alias that
// cannot be followed (over budget) yields an empty value, never nil.
func (c *compiler) deref(n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.AliasNode {
		return n
	}
	at := n
	empty := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: at.Line, Column: at.Column}
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i >= maxAliasChain {
			c.issue(at, "", "", "alias chain is too long", SeverityError)
			return empty
		}
		if !c.visit(n) {
			return empty
		}
		n = n.Alias
	}
	if n == nil {
		return empty
	}
	cp := *n
	cp.Line, cp.Column = at.Line, at.Column
	return &cp
}

// entries returns the entries of mapping n in written order, with merge keys (<<) applied:
// merged entries take the place of the merge key, and keys written in n win over merged ones.
// Duplicate keys are reported.
func (c *compiler) entries(n *yaml.Node, path string) []kv {
	return c.entriesDepth(n, path, 0)
}

func (c *compiler) entriesDepth(n *yaml.Node, path string, depth int) []kv {
	if n == nil || n.Kind != yaml.MappingNode || !c.visit(n) {
		return nil
	}
	// Dereference each key once: deref returns a fresh copy for an alias.
	keys := make([]*yaml.Node, len(n.Content)/2)
	explicit := map[string]*yaml.Node{}
	for i := range keys {
		k := c.deref(n.Content[2*i])
		keys[i] = k
		if k == nil || isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			c.issue(k, path, "", fmt.Sprintf("has a key that is %s: keys must be plain names", kindName(k)), SeverityError)
			continue
		}
		if first, dup := explicit[k.Value]; dup {
			c.issue(k, join(path, k.Value), "", fmt.Sprintf("is given twice (first at line %d)", first.Line), SeverityError)
			continue
		}
		explicit[k.Value] = k
	}
	var out []kv
	seen := map[string]bool{}
	for i, k := range keys {
		if k == nil || c.halted {
			continue
		}
		if isMergeKey(k) {
			if depth >= maxMergeDepth {
				c.issue(k, path, "", "merge keys (<<) are nested too deeply", SeverityError)
				continue
			}
			for _, m := range c.mergeSources(c.deref(n.Content[2*i+1]), path) {
				for _, e := range c.entriesDepth(m, path, depth+1) {
					if explicit[e.name] != nil || seen[e.name] {
						continue
					}
					seen[e.name] = true
					out = append(out, e)
				}
			}
			continue
		}
		if k.Kind != yaml.ScalarNode || explicit[k.Value] != k || seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		out = append(out, kv{key: k, name: k.Value, val: c.deref(n.Content[2*i+1])})
	}
	return out
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0))
}

// mergeSources returns the mappings a merge key's value names: a mapping or a list of them.
func (c *compiler) mergeSources(v *yaml.Node, path string) []*yaml.Node {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, item := range v.Content {
			item = c.deref(item)
			if item == nil || item.Kind != yaml.MappingNode {
				c.issue(v, path, "", "merge key (<<) must name mappings: write <<: *anchor or <<: [*a, *b]", SeverityError)
				return out
			}
			out = append(out, item)
		}
		return out
	}
	c.issue(v, path, "", "merge key (<<) must name a mapping: write <<: *anchor", SeverityError)
	return nil
}

// join appends a key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// wrongKind reports that v is not what path needs ("a mapping of step names to steps").
func (c *compiler) wrongKind(v *yaml.Node, path, want string) {
	switch {
	case v == nil || isNull(v):
		c.issue(v, path, "", "is empty: it must be "+want, SeverityError)
	case v.Kind == yaml.ScalarNode:
		c.issue(v, path, v.Value, "is not "+want, SeverityError)
	default:
		c.issue(v, path, "", "is "+kindName(v)+": it must be "+want, SeverityError)
	}
}

// mapping checks that v is a mapping; want describes it ("a mapping of maxAttempts, delay…").
func (c *compiler) mapping(v *yaml.Node, path, want string) bool {
	if v != nil && v.Kind == yaml.MappingNode {
		return true
	}
	c.wrongKind(v, path, want)
	return false
}

// str returns a scalar as a string; null is "". It reports a non-scalar, and warns about
// ${{ that do not form a valid reference.
func (c *compiler) str(v *yaml.Node, path string) (string, bool) {
	if v == nil || !c.visit(v) {
		return "", false
	}
	if v.Kind != yaml.ScalarNode {
		c.wrongKind(v, path, "a string")
		return "", false
	}
	if v.Tag == "!!null" {
		return "", true
	}
	c.checkRefs(v, path, v.Value)
	return v.Value, true
}

// checkRefs warns about ${{ that does not start a valid reference, and about CF_ names that
// are not built-in variables.
func (c *compiler) checkRefs(v *yaml.Node, path, s string) {
	if !strings.Contains(s, "${{") {
		return
	}
	refs := References(s)
	if strings.Count(s, "${{") > len(refs) {
		c.issue(v, path, shorten(s), "has a ${{ that is not a variable reference and is left as written: write ${{NAME}} (letters, digits, _ - and ., no spaces)", SeverityWarning)
	}
	for _, r := range refs {
		if strings.HasPrefix(r, "CF_") && !IsBuiltin(r) {
			hint := ""
			names := make([]string, len(builtins))
			for i, b := range builtins {
				names[i] = b.Name
			}
			if s := closest(r, names); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", s)
			}
			c.issue(v, path, r, "is not a built-in variable"+hint+"; it stays as written unless the build defines it", SeverityWarning)
		}
	}
}

// text is str for fields whose Codefresh schema type is string: a plain scalar that YAML reads
// as a number, a boolean or a date (image: 123, tag: 1.0, revision: 2024-01-01) is refused, as
// Codefresh's validator refuses it, with the quoted form to write instead. Quoted scalars and
// null pass.
func (c *compiler) text(v *yaml.Node, path string) (string, bool) {
	if v != nil && v.Kind == yaml.ScalarNode && v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		if what := nonString(v.Tag); what != "" {
			if !c.visit(v) {
				return "", false
			}
			c.issue(v, path, v.Value, fmt.Sprintf("is %s, not a string: quote it ('%s'); Codefresh requires a string here", what, v.Value), SeverityError)
			return "", false
		}
	}
	return c.str(v, path)
}

// nonString names what YAML makes of a plain scalar with tag, or "" for a string.
func nonString(tag string) string {
	switch tag {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!timestamp":
		return "a date"
	}
	return ""
}

// strList reads a list of strings; a single string is a list of one when single is true.
func (c *compiler) strList(v *yaml.Node, path string, single bool) ([]string, bool) {
	return c.list(v, path, single, c.str)
}

// textList is strList whose items must be strings in YAML too (see text).
func (c *compiler) textList(v *yaml.Node, path string, single bool) ([]string, bool) {
	return c.list(v, path, single, c.text)
}

func (c *compiler) list(v *yaml.Node, path string, single bool, str func(*yaml.Node, string) (string, bool)) ([]string, bool) {
	if v == nil {
		return nil, false
	}
	if v.Kind == yaml.ScalarNode && single {
		s, ok := str(v, path)
		if !ok || v.Tag == "!!null" {
			return nil, ok
		}
		return []string{s}, true
	}
	if v.Kind != yaml.SequenceNode {
		want := "a list of strings"
		if single {
			want = "a string or a list of strings"
		}
		c.wrongKind(v, path, want)
		return nil, false
	}
	out := make([]string, 0, len(v.Content))
	ok := true
	for i, item := range v.Content {
		item = c.deref(item)
		if item == nil || c.halted {
			return out, false
		}
		if item.Kind != yaml.ScalarNode {
			c.wrongKind(item, index(path, i), "a string")
			ok = false
			continue
		}
		s, sok := str(item, index(path, i))
		if !sok {
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

// boolean reads true or false (also the strings "true" and "false").
func (c *compiler) boolean(v *yaml.Node, path string) (bool, bool) {
	if v == nil || !c.visit(v) {
		return false, false
	}
	if v.Kind == yaml.ScalarNode {
		switch v.Value {
		case "true", "True", "TRUE":
			return true, true
		case "false", "False", "FALSE":
			return false, true
		}
	}
	c.issue(v, path, scalarText(v), "is not a boolean: use true or false", SeverityError)
	return false, false
}

// integer reads a whole number.
func (c *compiler) integer(v *yaml.Node, path string) (int, bool) {
	if v == nil || !c.visit(v) {
		return 0, false
	}
	if v.Kind == yaml.ScalarNode {
		if n, err := strconv.Atoi(strings.TrimSpace(v.Value)); err == nil {
			return n, true
		}
	}
	c.issue(v, path, scalarText(v), "is not a whole number", SeverityError)
	return 0, false
}

// number reads a number.
func (c *compiler) number(v *yaml.Node, path string) (float64, bool) {
	if v == nil || !c.visit(v) {
		return 0, false
	}
	if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64); err == nil && f == f {
			return f, true
		}
	}
	c.issue(v, path, scalarText(v), "is not a number", SeverityError)
	return 0, false
}

// scalarText is a scalar's text for a message, or "" for other nodes.
func scalarText(v *yaml.Node) string {
	if v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
		return v.Value
	}
	return ""
}
