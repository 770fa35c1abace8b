// Package yamlx turns YAML into the JSON-compatible values Kubernetes tooling expects
// (map[string]any, []any, string, int64, float64, bool, nil), keeping line numbers for
// errors and refusing the inputs that make YAML dangerous: alias expansion is budgeted (no
// "billion laughs"), nesting depth is bounded, and a panic inside the YAML library becomes an
// error.
package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits on one conversion.
const (
	MaxDepth   = 100     // nesting of mappings and sequences
	MaxAliases = 10_000  // alias expansions, counted per node visited through an alias
	MaxNodes   = 1 << 22 // nodes visited in one document
)

// Error is a YAML problem at a line (1-based; 0 when unknown).
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Document is one YAML document of a stream.
type Document struct {
	Node *yaml.Node // the document's content node (not the DocumentNode wrapper); nil if empty
	Line int        // line of the first content
}

// SplitDocuments parses a multi-document YAML stream. Empty documents (only comments, or
// nothing between "---" separators) are dropped. A syntax error is a *Error with the line.
func SplitDocuments(data []byte) (docs []Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, &Error{Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, syntaxError(err)
		}
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			c := n.Content[0]
			if c.Kind == yaml.ScalarNode && c.Tag == "!!null" && c.Value == "" {
				continue
			}
			docs = append(docs, Document{Node: c, Line: c.Line})
		}
	}
}

var lineInMsg = strings.NewReplacer("yaml: ", "")

// syntaxError turns a yaml.v3 error ("yaml: line 3: mapping values are not allowed in this
// context") into a *Error with the line split out.
func syntaxError(err error) error {
	msg := lineInMsg.Replace(err.Error())
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if n, convErr := strconv.Atoi(num); convErr == nil {
				line, msg = n, tail
			}
		}
	}
	return &Error{Line: line, Msg: msg}
}

// Converter converts nodes to JSON-compatible values under the package limits.
type Converter struct {
	aliases int
	nodes   int
}

// ToValue converts one document's node.
func ToValue(n *yaml.Node) (any, error) {
	var c Converter
	return c.Value(n)
}

// Value converts n (and its children) to a JSON-compatible value.
func (c *Converter) Value(n *yaml.Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &Error{Line: n.Line, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	return c.value(n, 0)
}

func (c *Converter) value(n *yaml.Node, depth int) (any, error) {
	if n == nil {
		return nil, nil
	}
	c.nodes++
	if c.nodes > MaxNodes {
		return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("document too large (more than %d nodes)", MaxNodes)}
	}
	if depth > MaxDepth {
		return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		c.aliases++
		if c.aliases > MaxAliases {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("too many alias expansions (more than %d)", MaxAliases)}
		}
		return c.value(n.Alias, depth+1)
	case yaml.ScalarNode:
		return Scalar(n)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		pairs, err := c.Pairs(n)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(pairs))
		for _, p := range pairs {
			v, err := c.value(p.Value, depth+1)
			if err != nil {
				return nil, err
			}
			out[p.Key] = v
		}
		return out, nil
	}
	return nil, &Error{Line: n.Line, Msg: "unsupported YAML node"}
}

// Pair is one key of a mapping.
type Pair struct {
	Key     string
	KeyNode *yaml.Node
	Value   *yaml.Node
}

// Pairs returns a mapping's keys in order, with merge keys ("<<: *base") expanded (explicit
// keys win over merged ones). Keys must be scalars; a key given twice is an error naming both
// lines.
func (c *Converter) Pairs(n *yaml.Node) ([]Pair, error) {
	if n.Kind == yaml.AliasNode {
		c.aliases++
		if c.aliases > MaxAliases {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("too many alias expansions (more than %d)", MaxAliases)}
		}
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{Line: n.Line, Msg: "want a mapping"}
	}
	var explicit, merged []Pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return nil, &Error{Line: k.Line, Msg: "mapping keys must be strings"}
		}
		if k.Tag == "!!merge" {
			sources := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				sources = v.Content
			}
			for _, src := range sources {
				ps, err := c.Pairs(src)
				if err != nil {
					return nil, &Error{Line: k.Line, Msg: "merge key (<<) must refer to mappings"}
				}
				merged = append(merged, ps...)
			}
			continue
		}
		if first, dup := seen[k.Value]; dup {
			return nil, &Error{Line: k.Line, Msg: fmt.Sprintf("key %q is repeated (first at line %d)", k.Value, first)}
		}
		seen[k.Value] = k.Line
		explicit = append(explicit, Pair{Key: k.Value, KeyNode: k, Value: v})
	}
	if len(merged) == 0 {
		return explicit, nil
	}
	out := explicit
	for _, p := range merged {
		if _, ok := seen[p.Key]; !ok {
			seen[p.Key] = p.KeyNode.Line
			out = append(out, p)
		}
	}
	return out, nil
}

// Scalar converts a scalar node the way Kubernetes' YAML→JSON conversion does: null, bool,
// int64 (float64 when it does not fit), float64, and strings for everything else
// (timestamps and binary included).
func Scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("invalid boolean %q", n.Value)}
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var f float64
		if err := n.Decode(&f); err == nil {
			return f, nil
		}
		return n.Value, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("invalid number %q", n.Value)}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a JSON number", n.Value)}
		}
		return f, nil
	}
	return n.Value, nil
}
