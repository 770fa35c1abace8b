// Package diff compares what a server-side apply would make of an object with the live object:
// normalization (fields the server or controllers own and nobody writes in git), Argo CD's
// ignoreDifferences (JSON pointers), a stable hash, and a unified diff text for
// `freshet app diff`.
//
// The engine asks the API server for the would-be object with a server-side apply dry-run, so
// defaulting, admission and field ownership are the server's own: comparing the dry-run result
// with the live object after Normalize reports exactly what a sync would change, without
// defaulted fields raising noise.
package diff

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// metadataNoise are metadata fields the server maintains.
var metadataNoise = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink", "deletionGracePeriodSeconds"}

// Normalize returns a copy of obj without the fields the server maintains (status, managed
// fields, resource version, generation, uid, creation time), ready to compare or print.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := &unstructured.Unstructured{Object: make(map[string]any, len(obj.Object))}
	for k, v := range obj.Object {
		if k == "status" {
			continue
		}
		if k == "metadata" {
			if m, ok := v.(map[string]any); ok {
				md := make(map[string]any, len(m))
				for mk, mv := range m {
					md[mk] = mv
				}
				for _, f := range metadataNoise {
					delete(md, f)
				}
				v = md
			}
		}
		out.Object[k] = v
	}
	// Deep-copy what is kept, so pointer removal cannot touch the caller's object.
	return out.DeepCopy()
}

// Matches reports whether an ignoreDifferences entry applies to an object. Group and kind
// may be "*"; an empty name or namespace matches any.
func Matches(r app.ResourceIgnoreDifferences, group, kind, namespace, name string) bool {
	match := func(pattern, s string) bool {
		if pattern == "" || pattern == "*" {
			return true
		}
		ok, err := path.Match(pattern, s)
		return err == nil && ok
	}
	return (r.Group == "*" || r.Group == group || (r.Group != "" && match(r.Group, group))) &&
		match(r.Kind, kind) && (r.Name == "" || match(r.Name, name)) &&
		(r.Namespace == "" || match(r.Namespace, namespace))
}

// Pointers returns the JSON pointers of every rule that matches the object.
func Pointers(rules []app.ResourceIgnoreDifferences, group, kind, namespace, name string) []string {
	var out []string
	for _, r := range rules {
		if Matches(r, group, kind, namespace, name) {
			out = append(out, r.JSONPointers...)
		}
	}
	return out
}

// RemovePointers deletes the fields at the JSON pointers (RFC 6901: "/spec/replicas",
// "/spec/template/spec/containers/0/image", "~1" for "/", "~0" for "~") from obj in place.
// Pointers that name nothing are ignored.
func RemovePointers(obj map[string]any, pointers []string) {
	for _, p := range pointers {
		tokens, err := parsePointer(p)
		if err != nil || len(tokens) == 0 {
			continue
		}
		removeAt(obj, tokens)
	}
}

// Get returns the value at a JSON pointer.
func Get(obj map[string]any, pointer string) (any, bool) {
	tokens, err := parsePointer(pointer)
	if err != nil {
		return nil, false
	}
	var cur any = obj
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Set puts value at a JSON pointer, creating maps on the way; it fails on a missing list
// index.
func Set(obj map[string]any, pointer string, value any) bool {
	tokens, err := parsePointer(pointer)
	if err != nil || len(tokens) == 0 {
		return false
	}
	var cur any = obj
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[t] = value
				return true
			}
			next, ok := c[t]
			if !ok {
				next = map[string]any{}
				c[t] = next
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(c) {
				return false
			}
			if last {
				c[idx] = value
				return true
			}
			cur = c[idx]
		default:
			return false
		}
	}
	return false
}

// ValidPointer checks the syntax of a JSON pointer.
func ValidPointer(p string) error {
	_, err := parsePointer(p)
	return err
}

func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("JSON pointer %q must start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func removeAt(cur any, tokens []string) {
	t := tokens[0]
	switch c := cur.(type) {
	case map[string]any:
		if len(tokens) == 1 {
			delete(c, t)
			return
		}
		if next, ok := c[t]; ok {
			removeAt(next, tokens[1:])
		}
	case []any:
		i, err := strconv.Atoi(t)
		if err != nil || i < 0 || i >= len(c) {
			return
		}
		if len(tokens) == 1 {
			// Lists cannot shrink in place; blank the element so both sides compare equal.
			c[i] = nil
			return
		}
		removeAt(c[i], tokens[1:])
	}
}

// Equal compares two normalized objects.
func Equal(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(a.Object, b.Object)
}

// Hash is a stable hash of an object's content (map keys sorted, as encoding/json does).
func Hash(obj map[string]any) uint64 {
	data, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	sum := sha256.Sum256(data)
	return binary.BigEndian.Uint64(sum[:8])
}

// YAML renders an object for a diff.
func YAML(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		return fmt.Sprintf("# cannot render: %v\n", err)
	}
	return string(data)
}

// Unified returns a unified diff (3 lines of context) from live to desired, with headers naming
// the resource; "" when they are equal. A nil live object is a creation, a nil desired a
// deletion.
func Unified(name string, live, desired *unstructured.Unstructured) string {
	a, b := YAML(live), YAML(desired)
	if a == b {
		return ""
	}
	return UnifiedText("live/"+name, "desired/"+name, a, b)
}
