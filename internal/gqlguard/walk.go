package gqlguard

import (
	"fmt"
	"strings"
)

// The walk expands a parsed document the way graphql-go's validator and executor see it:
// fragments are spread in place (each time they are spread), and fields of one response name
// in one selection set are merged with their sub-selections, as they are when the query runs.
// It counts as it goes and stops at the first limit passed, so its work is bounded by the limits.

// inst is one field selection and the type it is selected on.
type inst struct {
	s   *selection
	typ string
}

type walker struct {
	g      *Guard
	doc    *document
	vars   map[string]any
	op     *operation // the operation walked; nil for a fragment no operation spreads
	spread map[string]bool
	m      *Measure
	cost   int64 // the walked operation's cost so far
}

func (w *walker) walk(m *Measure) error {
	w.m = m
	for _, op := range w.doc.ops {
		w.op, w.cost = op, 0
		var insts []inst
		frags := w.m.Fragments
		if err := w.flatten(op.sels, w.g.roots[op.kind], &insts); err != nil {
			return err
		}
		if err := w.visit(insts, w.m.Fragments-frags, 1, 1, 0); err != nil {
			return err
		}
		m.Cost = max(m.Cost, w.cost)
	}
	// The validator also reads the fragments no operation spreads.
	w.op = nil
	for _, f := range w.doc.order {
		if w.spread[f.name] {
			continue
		}
		var insts []inst
		frags := w.m.Fragments
		if err := w.flatten(f.sels, f.typeCond, &insts); err != nil {
			return err
		}
		if err := w.visit(insts, w.m.Fragments-frags, 1, 1, 0); err != nil {
			return err
		}
	}
	return nil
}

// flatten appends the fields of sels, selected on typ, with fragments expanded in place.
func (w *walker) flatten(sels []*selection, typ string, out *[]inst) error {
	for _, s := range sels {
		switch s.kind {
		case selField:
			*out = append(*out, inst{s, typ})
		case selInline, selSpread:
			w.m.Fragments++
			if w.m.Fragments > w.g.lim.MaxFragments {
				return limitAt(s.pos, "query", "fragments", "fragments", w.m.Fragments, w.g.lim.MaxFragments,
					"are too many: fragment spreads and inline fragments count each time they are expanded")
			}
			if s.kind == selInline {
				t := typ
				if s.typeCond != "" {
					t = s.typeCond
				}
				if err := w.flatten(s.sels, t, out); err != nil {
					return err
				}
				continue
			}
			f := w.doc.frags[s.name]
			if f == nil {
				continue // the validator reports it
			}
			w.spread[f.name] = true
			if err := w.flatten(f.sels, f.typeCond, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// visit counts the merged selection set insts, into which frags fragments were expanded, whose
// fields are at depth and resolve mult times each; page is the page size of the paged field
// insts belong to (0: none).
func (w *walker) visit(insts []inst, frags int, depth int, mult, page int64) error {
	lim := &w.g.lim
	var keys []string
	groups := map[string][]inst{}
	for _, in := range insts {
		k := in.s.key()
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], in)
	}
	for _, k := range keys {
		if grp := groups[k]; len(grp) > lim.MaxRepeats {
			return limitAt(grp[lim.MaxRepeats].s.pos, "query", "repeats", "selections", len(grp), lim.MaxRepeats,
				fmt.Sprintf("of %q in one selection set are too many (fields of one name merge, with those of fragments and of same-named parents)", k))
		}
	}
	// graphql-go's overlap validation compares the fields of one response name pairwise, and
	// every fragment with the fields beside it and with the other fragments, expanded.
	cmp := 0
	for _, k := range keys {
		n := len(groups[k])
		cmp += n * (n - 1) / 2
	}
	if frags > 0 {
		n := len(insts) + frags
		cmp += n * n / 2
	}
	w.m.Comparisons += cmp
	if w.m.Comparisons > lim.MaxComparisons {
		pos := -1
		if len(insts) > 0 {
			pos = insts[0].s.pos
		}
		return limitAt(pos, "query", "comparisons", "comparisons", w.m.Comparisons, lim.MaxComparisons,
			"of fields are too many: the fields of one name in one selection set are compared pairwise, and every fragment with the fields and fragments beside it")
	}
	for _, k := range keys {
		grp := groups[k]
		w.m.Fields += len(grp)
		if w.m.Fields > lim.MaxFields {
			return limitAt(grp[0].s.pos, "query", "fields", "fields", w.m.Fields, lim.MaxFields,
				"are too many: a fragment's fields count each time it is spread")
		}
		if first := grp[0]; k != first.s.name {
			// An alias: fields of one response name merge and run once, fields under different
			// aliases run once each.
			w.m.Aliases++
			if w.m.Aliases > lim.MaxAliases {
				return limitAt(first.s.pos, "query", "aliases", "aliases", w.m.Aliases, lim.MaxAliases,
					"are too many: each alias runs its field again")
			}
		}
		w.m.Repeats = max(w.m.Repeats, len(grp))
		w.m.Depth = max(w.m.Depth, depth)
		if depth > lim.MaxDepth {
			return limitAt(grp[0].s.pos, "query", "depth", "levels", depth, lim.MaxDepth, "of nested fields are too many")
		}
		first := grp[0]
		fi := w.g.field(first.typ, first.s.name)
		if err := w.addCost(mult, fi.weight, first.s.pos); err != nil {
			return err
		}
		var children []inst
		frags := w.m.Fragments
		for _, in := range grp {
			if err := w.flatten(in.s.sels, fi.typ, &children); err != nil {
				return err
			}
		}
		if len(children) == 0 {
			continue
		}
		childMult, childPage := mult, int64(0)
		size := int64(0)
		if fi.paged {
			size = int64(lim.PageSize)
			for i, in := range grp {
				var defaults map[string]*value
				if w.op != nil {
					defaults = w.op.defaults
				}
				if n, ok := pageSize(in.s.page, w.vars, defaults); ok {
					n = min(max(n, 1), int64(lim.MaxPage))
					if i == 0 || n > size {
						size = n
					}
				}
			}
		}
		for l := 0; l < fi.lists; l++ {
			factor := int64(lim.ListLength)
			switch {
			case l == 0 && fi.paged:
				factor = size
			case l == 0 && page > 0:
				factor = page
			case l == 0 && lim.Lengths != nil:
				if n := lim.Lengths(first.typ + "." + first.s.name); n > 0 {
					factor = int64(n)
				}
			}
			childMult = satMul(childMult, factor)
		}
		if fi.lists == 0 && fi.paged {
			childPage = size
		}
		// Each object the field resolves to costs its type's weight (reading and decoding it).
		if err := w.addCost(childMult, w.g.typeWeights[fi.typ], first.s.pos); err != nil {
			return err
		}
		if err := w.visit(children, w.m.Fragments-frags, depth+1, childMult, childPage); err != nil {
			return err
		}
	}
	return nil
}

// addCost adds n resolutions of weight to the walked operation's cost.
func (w *walker) addCost(n int64, weight int, pos int) error {
	if w.op == nil || weight == 0 {
		return nil
	}
	lim := &w.g.lim
	w.cost = satAdd(w.cost, satMul(n, int64(weight)))
	if w.cost > int64(lim.MaxCost) {
		return &LimitError{Field: "query", Limit: "cost", Unit: "cost units", Value: w.cost, Max: int64(lim.MaxCost), Pos: pos,
			Reason: fmt.Sprintf("are too many: a field costs 1 each time it resolves (more if it reads storage or a runtime), and a list multiplies what it holds "+
				"by its page size (first, default %d) or else by %d: ask for smaller pages or fewer fields", lim.PageSize, lim.ListLength)}
	}
	return nil
}

// field is what the guard knows of typ.name; unknown fields (which validation refuses) cost 1.
func (g *Guard) field(typ, name string) fieldInfo {
	if strings.HasPrefix(name, "__") {
		switch name {
		case "__schema":
			return fieldInfo{typ: "__Schema", weight: 1}
		case "__type":
			return fieldInfo{typ: "__Type", weight: 1}
		}
		return fieldInfo{weight: 1}
	}
	if fi, ok := g.types[typ][name]; ok {
		return fi
	}
	return fieldInfo{weight: 1}
}

// costCap is where cost arithmetic saturates: far above any limit, far below overflow.
const costCap = 1 << 50

func satAdd(a, b int64) int64 { return min(a+b, costCap) }

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > costCap/b {
		return costCap
	}
	return a * b
}

// fragmentCycles refuses a fragment that spreads itself, directly or through others: expanding
// it would never end.
func fragmentCycles(doc *document) error {
	const (
		unseen = iota
		open
		done
	)
	state := make(map[string]int, len(doc.frags))
	var visit func(f *fragment, path []string) error
	visit = func(f *fragment, path []string) error {
		state[f.name] = open
		path = append(path, f.name)
		var err error
		eachSpread(f.sels, func(s *selection) bool {
			g := doc.frags[s.name]
			if g == nil {
				return true
			}
			switch state[g.name] {
			case open:
				for i, n := range path {
					if n == g.name {
						path = path[i:]
						break
					}
				}
				err = &DocumentError{Pos: s.pos,
					Message: fmt.Sprintf("fragment %q spreads itself (%s → %s): a fragment may not", g.name, strings.Join(path, " → "), g.name)}
				return false
			case unseen:
				err = visit(g, path)
				return err == nil
			}
			return true
		})
		state[f.name] = done
		return err
	}
	for _, f := range doc.order {
		if state[f.name] == unseen {
			if err := visit(f, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachSpread calls fn for every fragment spread in sels, at any depth, until fn returns false.
func eachSpread(sels []*selection, fn func(*selection) bool) bool {
	for _, s := range sels {
		if s.kind == selSpread {
			if !fn(s) {
				return false
			}
			continue
		}
		if !eachSpread(s.sels, fn) {
			return false
		}
	}
	return true
}
