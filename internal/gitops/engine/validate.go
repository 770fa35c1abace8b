package engine

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// maxUnknownFieldRounds bounds the retries of a Validate=false apply that drops fields.
const maxUnknownFieldRounds = 8

// unknownField matches the API server's refusal of a server-side apply with a field its schema
// does not declare (".spec.bogus: field not declared in schema"). fieldValidation=Ignore does
// not cover this check of server-side apply, so Validate=false drops such fields itself.
var unknownField = regexp.MustCompile(`(\.[^\s:]*): field not declared in schema`)

// applyIgnoringUnknown is the server-side apply of Validate=false: fields the schema does not
// declare are dropped (as kubectl apply --validate=false and Argo CD's Validate=false let the
// API server drop them) and the apply retried, bounded.
func applyIgnoringUnknown(ctx context.Context, ri dynamic.ResourceInterface, name string, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	force := true
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: &force, FieldValidation: metav1.FieldValidationIgnore}
	if dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	cur := obj
	for round := 0; ; round++ {
		data, err := cur.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out, err := ri.Patch(ctx, name, types.ApplyPatchType, data, po)
		if err == nil || round >= maxUnknownFieldRounds {
			return out, err
		}
		ms := unknownField.FindAllStringSubmatch(err.Error(), -1)
		if len(ms) == 0 {
			return nil, err
		}
		next := cur.DeepCopy()
		for _, m := range ms {
			if !removeSchemaPath(next.Object, m[1]) {
				return nil, err
			}
		}
		cur = next
	}
}

// removeSchemaPath deletes what a structured-merge-diff path names (".spec.a",
// ".spec.containers[name=\"web\"].bogus", ".items[0].x") from obj; false when it cannot be
// followed.
func removeSchemaPath(obj map[string]any, path string) bool {
	elems, ok := splitSchemaPath(path)
	if !ok || len(elems) == 0 {
		return false
	}
	var cur any = obj
	for i, el := range elems {
		last := i == len(elems)-1
		switch {
		case el.field != "":
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if last {
				if _, has := m[el.field]; !has {
					return false
				}
				delete(m, el.field)
				return true
			}
			cur = m[el.field]
		default:
			l, ok := cur.([]any)
			if !ok || last {
				return false
			}
			found := false
			for idx, item := range l {
				if el.index >= 0 && idx == el.index || el.index < 0 && itemHasKeys(item, el.keys) {
					cur, found = item, true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return false
}

type schemaPathElem struct {
	field string
	index int               // -1 unless [N]
	keys  map[string]string // [k="v",...]
}

func splitSchemaPath(p string) ([]schemaPathElem, bool) {
	var out []schemaPathElem
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			if end == 0 {
				return nil, false
			}
			out = append(out, schemaPathElem{field: p[:end], index: -1})
			p = p[end:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, false
			}
			inner := p[1:end]
			p = p[end+1:]
			if n, err := strconv.Atoi(inner); err == nil {
				out = append(out, schemaPathElem{index: n})
				continue
			}
			keys := map[string]string{}
			for _, kv := range strings.Split(inner, ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return nil, false
				}
				var s string
				if json.Unmarshal([]byte(v), &s) != nil {
					s = v // numbers, booleans
				}
				keys[k] = s
			}
			out = append(out, schemaPathElem{index: -1, keys: keys})
		default:
			return nil, false
		}
	}
	return out, true
}

func itemHasKeys(item any, keys map[string]string) bool {
	m, ok := item.(map[string]any)
	if !ok || len(keys) == 0 {
		return false
	}
	for k, want := range keys {
		v, has := m[k]
		if !has {
			return false
		}
		if s, ok := v.(string); ok {
			if s != want {
				return false
			}
		} else if b, _ := json.Marshal(v); string(b) != want {
			return false
		}
	}
	return true
}
