package appset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gobwas/glob"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/git"
)

// Limits on what generators yield.
const (
	// MaxParamSets bounds the parameter sets (and so applications) of one ApplicationSet.
	MaxParamSets = 10000
	// maxParamFileBytes bounds one file the git files generator reads.
	maxParamFileBytes = 1 << 20
)

// Cluster is a cluster the runtime has registered, for the clusters generator.
type Cluster struct {
	Name        string
	Server      string
	Labels      map[string]string
	Annotations map[string]string
	// InCluster marks the runtime's own cluster, which Argo CD yields only to a generator
	// without a selector.
	InCluster bool
}

// Sources is what generators read: repositories and the runtime's clusters.
type Sources struct {
	// Checkout returns a snapshot of repoURL at revision ("" is HEAD).
	Checkout func(ctx context.Context, repoURL, revision string) (*git.Snapshot, error)
	// Clusters lists the registered clusters.
	Clusters func() []Cluster
}

// paramSet is one generated set of parameters and the generator element it comes from.
type paramSet struct {
	params map[string]any
	origin string
	tmpl   any // the generator's template (JSON), merged over the ApplicationSet's
}

// generation runs one ApplicationSet's generators.
type generation struct {
	ctx   context.Context
	src   Sources
	set   *ApplicationSet
	r     *renderer
	snaps []*git.Snapshot
	// repos are the repositories read (for push notifications).
	repos map[string]bool
}

func (g *generation) release() {
	for _, s := range g.snaps {
		s.Release()
	}
}

// elementError is a problem with one generator element.
type elementError struct {
	origin string
	err    error
}

func (e *elementError) Error() string { return e.origin + ": " + e.err.Error() }
func (e *elementError) Unwrap() error { return e.err }

func (g *generation) all() ([]paramSet, error) {
	var out []paramSet
	for i := range g.set.Spec.Generators {
		sets, err := g.generate(&g.set.Spec.Generators[i], fmt.Sprintf("generators[%d]", i), nil)
		if err != nil {
			return nil, err
		}
		out = append(out, sets...)
		if len(out) > MaxParamSets {
			return nil, fmt.Errorf("generators yield more than %d parameter sets", MaxParamSets)
		}
	}
	return out, nil
}

// generate runs one generator. parent holds a matrix's first parameter set when the
// generator is its second (its strings are templated with it first).
func (g *generation) generate(gen *Generator, p string, parent map[string]any) ([]paramSet, error) {
	if parent != nil {
		var err error
		if gen, err = g.interpolate(gen, parent, p); err != nil {
			return nil, err
		}
	}
	var (
		sets []paramSet
		err  error
		tmpl *Template
	)
	switch {
	case gen.List != nil:
		sets, err = g.list(gen.List, p+".list")
		tmpl = gen.List.Template
	case gen.Clusters != nil:
		sets, err = g.clusters(gen.Clusters, p+".clusters")
		tmpl = gen.Clusters.Template
	case gen.Git != nil:
		sets, err = g.git(gen.Git, p+".git")
		tmpl = gen.Git.Template
	case gen.Matrix != nil:
		sets, err = g.matrix(gen.Matrix, p+".matrix")
		tmpl = gen.Matrix.Template
	case gen.Merge != nil:
		sets, err = g.merge(gen.Merge, p+".merge")
		tmpl = gen.Merge.Template
	default:
		return nil, &elementError{p, errors.New("no supported generator")}
	}
	if err != nil {
		return nil, err
	}
	if tmpl != nil {
		tv, err := toJSONValue(tmpl)
		if err != nil {
			return nil, err
		}
		for i := range sets {
			sets[i].tmpl = mergeOver(sets[i].tmpl, tv)
		}
	}
	if !g.r.goTemplate {
		// The legacy form's parameters are flat: "values.kafka", "path[0]".
		for i := range sets {
			sets[i].params = flatten(sets[i].params)
		}
	}
	if gen.Selector != nil {
		kept := sets[:0]
		for _, s := range sets {
			if matches(gen.Selector, flatStrings(s.params)) {
				kept = append(kept, s)
			}
		}
		sets = kept
	}
	if len(sets) > MaxParamSets {
		return nil, &elementError{p, fmt.Errorf("yields more than %d parameter sets", MaxParamSets)}
	}
	return sets, nil
}

// interpolate templates a generator's strings with a matrix's first parameter set.
func (g *generation) interpolate(gen *Generator, params map[string]any, p string) (*Generator, error) {
	v, err := toJSONValue(gen)
	if err != nil {
		return nil, err
	}
	if !g.r.goTemplate {
		params = flatten(params)
	}
	out, err := g.r.value(v, params, "")
	if err != nil {
		return nil, &elementError{p, err}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var ng Generator
	if err := json.Unmarshal(data, &ng); err != nil {
		return nil, &elementError{p, fmt.Errorf("after templating: %w", err)}
	}
	return &ng, nil
}

func (g *generation) list(l *ListGenerator, p string) ([]paramSet, error) {
	elems := l.Elements
	if l.ElementsYaml != "" {
		if err := sigsyaml.Unmarshal([]byte(l.ElementsYaml), &elems); err != nil {
			return nil, &elementError{p + ".elementsYaml", fmt.Errorf("is not a YAML list: %w", err)}
		}
	}
	var out []paramSet
	for i, e := range elems {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, &elementError{fmt.Sprintf("%s.elements[%d]", p, i), fmt.Errorf("want a mapping of parameters, got %v", e)}
		}
		params, err := normalizeJSON(m)
		if err != nil {
			return nil, err
		}
		out = append(out, paramSet{params: params, origin: fmt.Sprintf("%s.elements[%d]", p, i)})
	}
	return out, nil
}

// normalizeJSON turns decoded YAML (int64 and all) into JSON values.
func normalizeJSON(m map[string]any) (map[string]any, error) {
	v, err := toJSONValue(m)
	if err != nil {
		return nil, err
	}
	out, _ := v.(map[string]any)
	return out, nil
}

func (g *generation) clusters(c *ClusterGenerator, p string) ([]paramSet, error) {
	var all []Cluster
	if g.src.Clusters != nil {
		all = g.src.Clusters()
	}
	empty := len(c.Selector.MatchLabels) == 0 && len(c.Selector.MatchExpressions) == 0
	var out []paramSet
	for _, cl := range all {
		if cl.InCluster && !empty {
			continue
		}
		if !matches(&c.Selector, cl.Labels) {
			continue
		}
		labels, annotations := map[string]any{}, map[string]any{}
		for k, v := range cl.Labels {
			labels[k] = v
		}
		for k, v := range cl.Annotations {
			annotations[k] = v
		}
		params := map[string]any{"name": cl.Name, "nameNormalized": normalize(cl.Name), "server": cl.Server, "project": "",
			"metadata": map[string]any{"labels": labels, "annotations": annotations}}
		origin := fmt.Sprintf("%s (cluster %q)", p, cl.Name)
		if err := g.values(params, c.Values, origin); err != nil {
			return nil, err
		}
		out = append(out, paramSet{params: params, origin: origin})
	}
	return out, nil
}

// values adds a generator's values, templated with the parameters so far.
func (g *generation) values(params map[string]any, values map[string]string, origin string) error {
	if len(values) == 0 {
		return nil
	}
	in := params
	if !g.r.goTemplate {
		in = flatten(params)
	}
	out := map[string]any{}
	for _, k := range sortedKeys(values) {
		v, err := g.r.str(values[k], in)
		if err != nil {
			return &elementError{origin, fmt.Errorf("values[%q]: %w", k, err)}
		}
		out[k] = v
	}
	params["values"] = out
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (g *generation) git(gg *GitGenerator, p string) ([]paramSet, error) {
	if g.src.Checkout == nil {
		return nil, &elementError{p, errors.New("no repositories available")}
	}
	snap, err := g.src.Checkout(g.ctx, gg.RepoURL, gg.Revision)
	if err != nil {
		return nil, &elementError{p + ".repoURL", err}
	}
	g.snaps = append(g.snaps, snap)
	g.repos[gg.RepoURL] = true
	if len(gg.Directories) > 0 {
		return g.gitDirectories(gg, snap.Dir, p)
	}
	return g.gitFiles(gg, snap.Dir, p)
}

// walk lists a checkout's directories or files (slash paths relative to root), without .git
// and without following symlinks.
func walk(root string, dirs bool) []string {
	var out []string
	_ = filepath.WalkDir(root, func(fp string, d fs.DirEntry, err error) error {
		if err != nil || fp == root {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if d.IsDir() == dirs {
			rel, _ := filepath.Rel(root, fp)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func (g *generation) gitDirectories(gg *GitGenerator, root, p string) ([]paramSet, error) {
	var out []paramSet
	for _, dir := range walk(root, true) {
		// Included by any include pattern, unless an exclude pattern matches, as in Argo CD.
		included := false
		for _, e := range gg.Directories {
			if ok, _ := path.Match(e.Path, dir); ok {
				if e.Exclude {
					included = false
					break
				}
				included = true
			}
		}
		if !included {
			continue
		}
		params := map[string]any{}
		setPathParams(params, gg.PathParamPrefix, dir, "", g.r.goTemplate)
		origin := fmt.Sprintf("%s.directories (directory %q)", p, dir)
		if err := g.values(params, gg.Values, origin); err != nil {
			return nil, err
		}
		out = append(out, paramSet{params: params, origin: origin})
		if len(out) > MaxParamSets {
			return nil, &elementError{p, fmt.Errorf("yields more than %d parameter sets", MaxParamSets)}
		}
	}
	return out, nil
}

func (g *generation) gitFiles(gg *GitGenerator, root, p string) ([]paramSet, error) {
	type pat struct {
		g       glob.Glob
		exclude bool
	}
	var pats []pat
	for i, e := range gg.Files {
		gl, err := glob.Compile(e.Path, '/')
		if err != nil {
			return nil, &elementError{fmt.Sprintf("%s.files[%d].path", p, i), err}
		}
		pats = append(pats, pat{gl, e.Exclude})
	}
	var out []paramSet
	for _, f := range walk(root, false) {
		included := false
		for _, pt := range pats {
			if pt.g.Match(f) {
				if pt.exclude {
					included = false
					break
				}
				included = true
			}
		}
		if !included {
			continue
		}
		origin := fmt.Sprintf("%s.files (file %q)", p, f)
		docs, err := readParamFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, &elementError{origin, err}
		}
		for i, doc := range docs {
			params := doc
			if !g.r.goTemplate {
				params = flatten(doc)
			}
			setPathParams(params, gg.PathParamPrefix, path.Dir(f), path.Base(f), g.r.goTemplate)
			o := origin
			if len(docs) > 1 {
				o = fmt.Sprintf("%s[%d]", origin, i)
			}
			if err := g.values(params, gg.Values, o); err != nil {
				return nil, err
			}
			out = append(out, paramSet{params: params, origin: o})
		}
		if len(out) > MaxParamSets {
			return nil, &elementError{p, fmt.Errorf("yields more than %d parameter sets", MaxParamSets)}
		}
	}
	return out, nil
}

// readParamFile reads a JSON or YAML file of parameters: one object, or a list of objects.
func readParamFile(name string) ([]map[string]any, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxParamFileBytes {
		return nil, fmt.Errorf("is %d bytes; the limit is %d", fi.Size(), maxParamFileBytes)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var v any
	if err := sigsyaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("is not JSON or YAML: %w", err)
	}
	switch x := v.(type) {
	case map[string]any:
		return []map[string]any{x}, nil
	case []any:
		var out []map[string]any
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("element %d is not an object", i)
			}
			out = append(out, m)
		}
		return out, nil
	case nil:
		return []map[string]any{{}}, nil
	}
	return nil, errors.New("holds neither an object nor a list of objects")
}

// setPathParams adds Argo CD's path parameters for a directory (file "") or a file in dir.
func setPathParams(params map[string]any, prefix, dir, file string, goTemplate bool) {
	if dir == "." {
		dir = ""
	}
	segments := []any{}
	if dir != "" {
		for _, s := range strings.Split(dir, "/") {
			segments = append(segments, s)
		}
	}
	base := path.Base(dir)
	if dir == "" {
		base = ""
	}
	if goTemplate {
		pm := map[string]any{"path": dir, "basename": base, "basenameNormalized": normalize(base), "segments": segments}
		if file != "" {
			pm["filename"], pm["filenameNormalized"] = file, normalize(file)
		}
		if prefix != "" {
			params[prefix] = map[string]any{"path": pm}
		} else {
			params["path"] = pm
		}
		return
	}
	key := "path"
	if prefix != "" {
		key = prefix + ".path"
	}
	params[key] = dir
	params[key+".basename"] = base
	params[key+".basenameNormalized"] = normalize(base)
	if file != "" {
		params[key+".filename"] = file
		params[key+".filenameNormalized"] = normalize(file)
	}
	for i, s := range segments {
		params[key+"["+strconv.Itoa(i)+"]"] = s
	}
}

// flatten turns nested parameters into Argo CD's legacy dotted keys (lists by index).
func flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 && prefix != "" {
				out[prefix] = "{}"
			}
			for k, e := range x {
				walk(joinPath(prefix, k), e)
			}
		case []any:
			if len(x) == 0 && prefix != "" {
				out[prefix] = "[]"
			}
			for i, e := range x {
				walk(prefix+"."+strconv.Itoa(i), e)
			}
		default:
			out[prefix] = scalarString(v)
		}
	}
	walk("", m)
	return out
}

// flatStrings is a parameter set as flat strings, for selectors.
func flatStrings(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range flatten(m) {
		out[k] = scalarString(v)
	}
	return out
}

// matches reports whether labels satisfy a selector.
func matches(s *LabelSelector, labels map[string]string) bool {
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return matchesRequirements(s.MatchExpressions, labels)
}

func matchesRequirements(reqs []Requirement, labels map[string]string) bool {
	for _, r := range reqs {
		v, ok := labels[r.Key]
		switch r.Operator {
		case "In":
			if !ok || !contains(r.Values, v) {
				return false
			}
		case "NotIn":
			if ok && contains(r.Values, v) {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func (g *generation) matrix(c *CombineGenerator, p string) ([]paramSet, error) {
	first, err := g.generate(&c.Generators[0], p+".generators[0]", nil)
	if err != nil {
		return nil, err
	}
	var out []paramSet
	for _, a := range first {
		second, err := g.generate(&c.Generators[1], p+".generators[1]", a.params)
		if err != nil {
			return nil, err
		}
		for _, b := range second {
			params, err := g.combine(a.params, b.params)
			if err != nil {
				return nil, &elementError{a.origin + " × " + b.origin, err}
			}
			out = append(out, paramSet{params: params, origin: a.origin + " × " + b.origin, tmpl: mergeOver(a.tmpl, b.tmpl)})
			if len(out) > MaxParamSets {
				return nil, &elementError{p, fmt.Errorf("yields more than %d parameter sets", MaxParamSets)}
			}
		}
	}
	return out, nil
}

// combine joins two parameter sets: Go templates deep-merge (the second wins), the legacy
// form refuses a key both set to different values, as Argo CD does.
func (g *generation) combine(a, b map[string]any) (map[string]any, error) {
	if g.r.goTemplate {
		m, _ := mergeDeep(a, b).(map[string]any)
		return m, nil
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if prev, ok := out[k]; ok && scalarString(prev) != scalarString(v) {
			return nil, fmt.Errorf("both generators set parameter %q (%q and %q)", k, scalarString(prev), scalarString(v))
		}
		out[k] = v
	}
	return out, nil
}

// mergeDeep merges over into base (maps recursively; over wins otherwise).
func mergeDeep(base, over any) any {
	om, ok := over.(map[string]any)
	bm, ok2 := base.(map[string]any)
	if !ok || !ok2 {
		return over
	}
	out := make(map[string]any, len(bm)+len(om))
	for k, v := range bm {
		out[k] = v
	}
	for k, v := range om {
		if prev, ok := out[k]; ok {
			out[k] = mergeDeep(prev, v)
		} else {
			out[k] = v
		}
	}
	return out
}

func (g *generation) merge(c *CombineGenerator, p string) ([]paramSet, error) {
	var base []paramSet
	for i := range c.Generators {
		gp := fmt.Sprintf("%s.generators[%d]", p, i)
		sets, err := g.generate(&c.Generators[i], gp, nil)
		if err != nil {
			return nil, err
		}
		byKey := map[string]int{}
		for j, s := range sets {
			k := g.mergeKey(c.MergeKeys, s.params)
			if prev, dup := byKey[k]; dup {
				return nil, &elementError{s.origin, fmt.Errorf("has the same merge keys %s as %s; merge keys must be unique in each generator", k, sets[prev].origin)}
			}
			byKey[k] = j
		}
		if i == 0 {
			base = sets
			continue
		}
		for bi, b := range base {
			j, ok := byKey[g.mergeKey(c.MergeKeys, b.params)]
			if !ok {
				continue
			}
			s := sets[j]
			if g.r.goTemplate {
				base[bi].params, _ = mergeDeep(b.params, s.params).(map[string]any)
			} else {
				m := make(map[string]any, len(b.params)+len(s.params))
				for k, v := range b.params {
					m[k] = v
				}
				for k, v := range s.params {
					m[k] = v
				}
				base[bi].params = m
			}
			base[bi].origin = b.origin + " + " + s.origin
			base[bi].tmpl = mergeOver(b.tmpl, s.tmpl)
		}
	}
	return base, nil
}

// mergeKey is the JSON of a set's merge-key values (a key may be a dotted path into nested
// Go-template parameters).
func (g *generation) mergeKey(keys []string, params map[string]any) string {
	vals := make([]any, len(keys))
	for i, k := range keys {
		v, ok := params[k]
		if !ok && g.r.goTemplate {
			v = lookup(params, k)
		}
		vals[i] = v
	}
	b, _ := json.Marshal(vals)
	return string(b)
}

func lookup(m map[string]any, dotted string) any {
	var cur any = m
	for _, part := range strings.Split(dotted, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[part]
	}
	return cur
}
