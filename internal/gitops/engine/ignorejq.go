package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/diff"
)

// Bounds on one jq path expression evaluated against one object (Argo CD's default timeout
// for ignoreDifferences jq is 1s as well).
const (
	jqTimeout  = time.Second
	jqMaxPaths = 10000
	// jqCacheMax bounds the compiled-expression cache; it is emptied when full.
	jqCacheMax = 4096
)

// jqProg is one compiled jqPathExpressions entry.
type jqProg struct {
	field string // spec.ignoreDifferences[i].jqPathExpressions[j], for errors
	expr  string
	code  *gojq.Code
}

// ignoreSet is an application's ignoreDifferences with its jq expressions compiled.
type ignoreSet struct {
	rules []app.ResourceIgnoreDifferences
	jq    [][]jqProg // per rule
	conds []Condition
}

// objIgnores is what of an ignoreSet applies to one object beyond JSON pointers.
type objIgnores struct {
	jq       []jqProg
	managers []string
	sig      string // identifies the expressions and managers, for the comparison cache
}

var jqCache = struct {
	sync.Mutex
	m map[string]*gojq.Code
}{m: map[string]*gojq.Code{}}

// compileJQPath compiles a jqPathExpressions entry as path(EXPR): its outputs are the paths
// the expression selects, deleted from both sides before comparing (Argo CD deletes with
// del(EXPR), which is delpaths([path(EXPR)])). The environment is hidden from $ENV and env.
func compileJQPath(expr string) (*gojq.Code, error) {
	jqCache.Lock()
	c, ok := jqCache.m[expr]
	jqCache.Unlock()
	if ok {
		return c, nil
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, err
	}
	// Wrap the parsed query (not the text): the expression cannot close the path( call.
	wrapped := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "path", Args: []*gojq.Query{q}}}}
	c, err = gojq.Compile(wrapped, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, err
	}
	jqCache.Lock()
	if len(jqCache.m) >= jqCacheMax {
		clear(jqCache.m)
	}
	jqCache.m[expr] = c
	jqCache.Unlock()
	return c, nil
}

// compileIgnores compiles an application's ignoreDifferences; bad expressions and pointers
// become InvalidSpecError conditions and are left out.
func compileIgnores(rules []app.ResourceIgnoreDifferences) *ignoreSet {
	ig := &ignoreSet{rules: rules, jq: make([][]jqProg, len(rules))}
	for i, r := range rules {
		for j, p := range r.JSONPointers {
			if err := diff.ValidPointer(p); err != nil {
				ig.conds = append(ig.conds, Condition{Type: ConditionInvalidSpec, Message: fmt.Sprintf("spec.ignoreDifferences[%d].jsonPointers[%d]: %v", i, j, err)})
			}
		}
		for j, expr := range r.JQPathExpressions {
			field := fmt.Sprintf("spec.ignoreDifferences[%d].jqPathExpressions[%d]", i, j)
			code, err := compileJQPath(expr)
			if err != nil {
				ig.conds = append(ig.conds, Condition{Type: ConditionInvalidSpec, Message: fmt.Sprintf(
					"%s %q is not a valid jq expression: %v; it is ignored", field, expr, err)})
				continue
			}
			ig.jq[i] = append(ig.jq[i], jqProg{field: field, expr: expr, code: code})
		}
	}
	return ig
}

// pointers returns the JSON pointers of the rules matching an object.
func (ig *ignoreSet) pointers(group, kind, namespace, name string) []string {
	return diff.Pointers(ig.rules, group, kind, namespace, name)
}

// forObject returns the jq expressions and managers of the rules matching an object.
func (ig *ignoreSet) forObject(group, kind, namespace, name string) objIgnores {
	var oi objIgnores
	var sig strings.Builder
	for i, r := range ig.rules {
		if !diff.Matches(r, group, kind, namespace, name) {
			continue
		}
		for _, p := range ig.jq[i] {
			oi.jq = append(oi.jq, p)
			sig.WriteString("jq\x00" + p.expr + "\x00")
		}
		for _, m := range r.ManagedFieldsManagers {
			oi.managers = append(oi.managers, m)
			sig.WriteString("mf\x00" + m + "\x00")
		}
	}
	oi.sig = sig.String()
	return oi
}

func (oi objIgnores) empty() bool { return len(oi.jq) == 0 && len(oi.managers) == 0 }

// remove deletes from the normalized predicted and live objects (in place) what the jq
// expressions select in each and the fields the named managers own in the live object
// (managed is the live object's metadata.managedFields). An expression that fails on an
// object (a type error, as `.spec.x[]` where x is absent) removes nothing from it, as in
// Argo CD; a timeout or too many paths is an error naming the expression.
func (oi objIgnores) remove(ctx context.Context, predicted, live *unstructured.Unstructured, managed []metav1.ManagedFieldsEntry) error {
	for _, obj := range []*unstructured.Unstructured{predicted, live} {
		if obj == nil || len(oi.jq) == 0 {
			continue
		}
		out, err := removeJQ(ctx, obj.Object, oi.jq)
		if err != nil {
			return err
		}
		obj.Object = out
	}
	if len(oi.managers) > 0 && live != nil {
		for _, mf := range managed {
			if !containsString(oi.managers, mf.Manager) || mf.FieldsV1 == nil {
				continue
			}
			set := &fieldpath.Set{}
			if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
				continue // not ours to judge: the server wrote it
			}
			// Leaves only: a map or list item the manager created (".") stays on both sides,
			// so other managers' fields in it are still compared.
			set.Leaves().Iterate(func(p fieldpath.Path) {
				if predicted != nil {
					predicted.Object, _ = removeFieldPath(predicted.Object, p).(map[string]any)
				}
				live.Object, _ = removeFieldPath(live.Object, p).(map[string]any)
			})
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errJQBound reports an expression that ran out of time or selected too many paths.
var errJQBound = errors.New("jq bound")

// removeJQ returns obj without the paths the programs select.
func removeJQ(ctx context.Context, obj map[string]any, progs []jqProg) (map[string]any, error) {
	var cur any = toJQ(obj)
	for _, p := range progs {
		paths, err := jqPaths(ctx, p, cur)
		if err != nil {
			return nil, err
		}
		cur = deletePaths(cur, paths)
	}
	out, _ := fromJQ(cur).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// jqPaths runs one program against v, bounded in time and output.
func jqPaths(ctx context.Context, p jqProg, v any) ([][]any, error) {
	ctx, cancel := context.WithTimeout(ctx, jqTimeout)
	defer cancel()
	it := p.code.RunWithContext(ctx, v)
	var paths [][]any
	for {
		out, ok := it.Next()
		if !ok {
			return paths, nil
		}
		if err, isErr := out.(error); isErr {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return nil, fmt.Errorf("%s: %w: evaluation took longer than %v", p.field, errJQBound, jqTimeout)
				}
				return nil, err
			}
			return nil, nil // selects nothing in this object (Argo CD skips it too)
		}
		path, ok := out.([]any)
		if !ok {
			continue
		}
		if len(paths) >= jqMaxPaths {
			return nil, fmt.Errorf("%s: %w: selects more than %d paths", p.field, errJQBound, jqMaxPaths)
		}
		paths = append(paths, path)
	}
}

// deletePaths deletes paths as jq's delpaths does: the longest and highest-index paths first,
// so deleting one list element does not move another that is still to be deleted.
func deletePaths(v any, paths [][]any) any {
	sort.SliceStable(paths, func(i, j int) bool { return comparePath(paths[i], paths[j]) > 0 })
	for _, p := range paths {
		v = deletePath(v, p)
	}
	return v
}

// comparePath orders paths as jq orders arrays: element by element (numbers before strings),
// a prefix before the longer path.
func comparePath(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ai, aInt := a[i].(int)
		bi, bInt := b[i].(int)
		switch {
		case aInt && bInt:
			if ai != bi {
				return ai - bi
			}
		case aInt:
			return -1
		case bInt:
			return 1
		default:
			as, _ := a[i].(string)
			bs, _ := b[i].(string)
			if c := strings.Compare(as, bs); c != 0 {
				return c
			}
		}
	}
	return len(a) - len(b)
}

func deletePath(v any, p []any) any {
	if len(p) == 0 {
		return nil // del(.) deletes everything
	}
	switch c := v.(type) {
	case map[string]any:
		k, ok := p[0].(string)
		if !ok {
			return v
		}
		if len(p) == 1 {
			delete(c, k)
			return c
		}
		if next, ok := c[k]; ok {
			c[k] = deletePath(next, p[1:])
		}
		return c
	case []any:
		i, ok := p[0].(int)
		if !ok {
			return v // slices ({start, end}) are not deleted
		}
		if i < 0 {
			i += len(c)
		}
		if i < 0 || i >= len(c) {
			return v
		}
		if len(p) == 1 {
			return append(c[:i:i], c[i+1:]...)
		}
		c[i] = deletePath(c[i], p[1:])
		return c
	}
	return v
}

// toJQ copies an unstructured value into the types gojq accepts (int, not int64).
func toJQ(v any) any {
	switch c := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, x := range c {
			m[k] = toJQ(x)
		}
		return m
	case []any:
		s := make([]any, len(c))
		for i, x := range c {
			s[i] = toJQ(x)
		}
		return s
	case int64:
		return int(c)
	case int32:
		return int(c)
	case float32:
		return float64(c)
	}
	return v
}

// fromJQ turns gojq's ints back into the int64 unstructured objects hold.
func fromJQ(v any) any {
	switch c := v.(type) {
	case map[string]any:
		for k, x := range c {
			c[k] = fromJQ(x)
		}
	case []any:
		for i, x := range c {
			c[i] = fromJQ(x)
		}
	case int:
		return int64(c)
	}
	return v
}

// removeFieldPath deletes what a managed-fields path names (a field, a list item by key,
// value or index) from v, returning the new v.
func removeFieldPath(v any, p fieldpath.Path) any {
	if len(p) == 0 {
		return v
	}
	pe := p[0]
	switch c := v.(type) {
	case map[string]any:
		if pe.FieldName == nil {
			return v
		}
		next, ok := c[*pe.FieldName]
		if !ok {
			return v
		}
		if len(p) == 1 {
			delete(c, *pe.FieldName)
		} else {
			c[*pe.FieldName] = removeFieldPath(next, p[1:])
		}
		return c
	case []any:
		for i, item := range c {
			if !itemMatches(pe, i, item) {
				continue
			}
			if len(p) == 1 {
				return append(c[:i:i], c[i+1:]...)
			}
			c[i] = removeFieldPath(item, p[1:])
			return c
		}
	}
	return v
}

func itemMatches(pe fieldpath.PathElement, i int, item any) bool {
	switch {
	case pe.Index != nil:
		return *pe.Index == i
	case pe.Value != nil:
		return value.Equals(value.NewValueInterface(item), *pe.Value)
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			x, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(x), f.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// respect returns the object a sync with RespectIgnoreDifferences=true applies: what the jq
// expressions select takes its live value (a path selected in the desired object only is
// dropped from it), and the fields the named managers own in the live object (managed) are
// left out, so the server-side apply leaves them to their managers. desired is not changed.
func (oi objIgnores) respect(ctx context.Context, desired, live map[string]any, managed []metav1.ManagedFieldsEntry) (map[string]any, error) {
	if len(oi.jq) == 0 && len(oi.managers) == 0 || live == nil {
		return desired, nil
	}
	cur := toJQ(desired)
	lv := toJQ(live)
	for _, p := range oi.jq {
		livePaths, err := jqPaths(ctx, p, lv)
		if err != nil {
			return nil, err
		}
		desiredPaths, err := jqPaths(ctx, p, cur)
		if err != nil {
			return nil, err
		}
		inLive := map[string]bool{}
		for _, lp := range livePaths {
			inLive[fmt.Sprint(lp)] = true
		}
		var drop [][]any
		for _, dp := range desiredPaths {
			if !inLive[fmt.Sprint(dp)] {
				drop = append(drop, dp)
			}
		}
		cur = deletePaths(cur, drop)
		for _, lp := range livePaths {
			if v, ok := getPath(lv, lp); ok {
				cur = setPath(cur, lp, v)
			}
		}
	}
	out, _ := fromJQ(cur).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for _, mf := range managed {
		if !containsString(oi.managers, mf.Manager) || mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			continue
		}
		set.Leaves().Iterate(func(p fieldpath.Path) {
			out, _ = removeFieldPath(out, p).(map[string]any)
		})
	}
	return out, nil
}

// getPath reads a jq path (string keys, int indexes) in a jq value.
func getPath(v any, path []any) (any, bool) {
	for _, k := range path {
		switch key := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[key]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || key < 0 || key >= len(l) {
				return nil, false
			}
			v = l[key]
		default:
			return nil, false
		}
	}
	return v, true
}

// setPath sets a jq path in a jq value, creating maps on the way; a list index past the end
// of the list is left unset. It returns the new value.
func setPath(v any, path []any, val any) any {
	if len(path) == 0 {
		return val
	}
	switch key := path[0].(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				return v
			}
			m = map[string]any{}
		}
		m[key] = setPath(m[key], path[1:], val)
		return m
	case int:
		l, ok := v.([]any)
		if !ok || key < 0 || key >= len(l) {
			return v
		}
		l[key] = setPath(l[key], path[1:], val)
		return l
	}
	return v
}
