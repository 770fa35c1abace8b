package health

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

// Keys of Argo CD's argocd-cm ConfigMap that hold health customizations.
const (
	// KeyCustomizations is the older form: a YAML map from "group/Kind" (or "Kind" for the
	// core group) to {health.lua, health.lua.useOpenLibs, ...}.
	KeyCustomizations = "resource.customizations"
	// KeyHealthPrefix is the newer form: resource.customizations.health.<group>_<kind> (or
	// .<kind> for the core group), the script as the value. Group and kind may hold * as a
	// wildcard.
	KeyHealthPrefix = "resource.customizations.health."
	// KeyUseOpenLibsPrefix: resource.customizations.useOpenLibs.<group_kind>: "true" opens
	// the whole Lua library in Argo CD; Freshet always runs scripts sandboxed.
	KeyUseOpenLibsPrefix = "resource.customizations.useOpenLibs."
)

// Bounds on what ParseCustomizations accepts.
const (
	maxCustomizations = 1000
	maxScriptBytes    = 256 << 10
)

// Customizations are Lua health checks by group and kind, as Argo CD's argocd-cm holds them.
// The zero value and nil hold none.
type Customizations struct {
	exact    map[string]*LuaScript // "group/Kind"; "" group for the core group
	wildcard []wildcardScript      // patterns in key order
	keys     []string              // the argocd-cm keys, for display
}

type wildcardScript struct {
	group, kind string // path.Match patterns
	script      *LuaScript
}

// Len is the number of checks.
func (c *Customizations) Len() int {
	if c == nil {
		return 0
	}
	return len(c.exact) + len(c.wildcard)
}

// Keys lists where the checks came from (argocd-cm keys), sorted.
func (c *Customizations) Keys() []string {
	if c == nil {
		return nil
	}
	return append([]string(nil), c.keys...)
}

// Lookup returns the script for a group and kind: an exact entry first, else the first
// wildcard entry (in key order) that matches, as Argo CD prefers exact matches.
func (c *Customizations) Lookup(group, kind string) *LuaScript {
	if c == nil {
		return nil
	}
	if s := c.exact[group+"/"+kind]; s != nil {
		return s
	}
	for _, w := range c.wildcard {
		if g, _ := path.Match(w.group, group); !g {
			continue
		}
		if k, _ := path.Match(w.kind, kind); k {
			return w.script
		}
	}
	return nil
}

// Assess runs the object's script; ok is false when no script covers its kind.
func (c *Customizations) Assess(obj *unstructured.Unstructured) (Result, bool) {
	gvk := obj.GroupVersionKind()
	s := c.Lookup(gvk.Group, gvk.Kind)
	if s == nil {
		return Result{}, false
	}
	return s.Assess(obj), true
}

// ParseCustomizations reads the health checks of an argocd-cm ConfigMap's data: keys
// resource.customizations.health.<group_kind> and the older resource.customizations YAML.
// Other keys are ignored. An entry that does not parse (a bad key, YAML that does not decode,
// a script that does not compile) is left out and returned as a problem naming the key; the
// others are kept. useOpenLibs is reported as a problem too: scripts always run sandboxed.
func ParseCustomizations(data map[string]string) (*Customizations, []error) {
	c := &Customizations{exact: map[string]*LuaScript{}}
	var problems []error
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	add := func(key, group, kind, src string) {
		if c.Len() >= maxCustomizations {
			problems = append(problems, errdefs.Invalid("argocd-cm "+key, "", fmt.Sprintf("more than %d health customizations; left out", maxCustomizations)))
			return
		}
		if len(src) > maxScriptBytes {
			problems = append(problems, errdefs.Invalid("argocd-cm "+key, "", fmt.Sprintf("script larger than %d bytes", maxScriptBytes)))
			return
		}
		if strings.TrimSpace(src) == "" {
			problems = append(problems, errdefs.Invalid("argocd-cm "+key, "", "script is empty"))
			return
		}
		s, err := CompileLua(key, src)
		if err != nil {
			problems = append(problems, errdefs.Invalid("argocd-cm "+key, "", "does not compile: "+err.Error()))
			return
		}
		if strings.Contains(group, "*") || strings.Contains(kind, "*") {
			for i, w := range c.wildcard {
				if w.group == group && w.kind == kind {
					c.wildcard[i].script = s // the newer key form (read last) wins
					c.keys = append(c.keys, key)
					return
				}
			}
			c.wildcard = append(c.wildcard, wildcardScript{group: group, kind: kind, script: s})
		} else {
			c.exact[group+"/"+kind] = s
		}
		c.keys = append(c.keys, key)
	}
	// The older YAML form first, so the newer per-key form wins for the same kind.
	if raw, ok := data[KeyCustomizations]; ok {
		entries, errs := parseLegacy(raw)
		problems = append(problems, errs...)
		for _, e := range entries {
			if e.useOpenLibs {
				problems = append(problems, errdefs.Invalid("argocd-cm "+KeyCustomizations+"."+e.groupKind+".health.lua.useOpenLibs", "true",
					"is not honoured: health scripts always run sandboxed (no os, io or loaders)"))
			}
			group, kind, err := splitGroupKind(e.groupKind, "/")
			if err != nil {
				problems = append(problems, errdefs.Invalid("argocd-cm "+KeyCustomizations, e.groupKind, err.Error()))
				continue
			}
			add(KeyCustomizations+"."+e.groupKind, group, kind, e.script)
		}
	}
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, KeyHealthPrefix):
			group, kind, err := splitGroupKind(strings.TrimPrefix(k, KeyHealthPrefix), "_")
			if err != nil {
				problems = append(problems, errdefs.Invalid("argocd-cm key", k, err.Error()))
				continue
			}
			add(k, group, kind, data[k])
		case strings.HasPrefix(k, KeyUseOpenLibsPrefix):
			if strings.EqualFold(strings.TrimSpace(data[k]), "true") {
				problems = append(problems, errdefs.Invalid("argocd-cm "+k, data[k],
					"is not honoured: health scripts always run sandboxed (no os, io or loaders)"))
			}
		}
	}
	sort.Strings(c.keys)
	return c, problems
}

// splitGroupKind splits "group<sep>Kind" or "Kind" (the core group) as Argo CD does.
func splitGroupKind(s, sep string) (group, kind string, err error) {
	parts := strings.Split(s, sep)
	switch {
	case len(parts) == 1 && parts[0] != "":
		group, kind = "", parts[0]
	case len(parts) == 2 && parts[1] != "":
		group, kind = parts[0], parts[1]
	default:
		return "", "", fmt.Errorf("want <group>%s<kind>, or <kind> for the core group", sep)
	}
	for _, p := range []string{group, kind} {
		if strings.ContainsAny(p, " \t\n/") {
			return "", "", fmt.Errorf("%q is not a group or kind", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return "", "", fmt.Errorf("%q is not a valid pattern: %v", p, err)
		}
	}
	return group, kind, nil
}

type legacyEntry struct {
	groupKind   string
	script      string
	useOpenLibs bool
}

// parseLegacy reads the resource.customizations YAML map.
func parseLegacy(raw string) ([]legacyEntry, []error) {
	docs, err := yamlx.SplitDocuments([]byte(raw))
	if err != nil {
		return nil, []error{errdefs.Invalid("argocd-cm "+KeyCustomizations, "", "is not YAML: "+err.Error())}
	}
	var out []legacyEntry
	var problems []error
	for _, d := range docs {
		v, err := yamlx.ToValue(d.Node)
		if err != nil {
			problems = append(problems, errdefs.Invalid("argocd-cm "+KeyCustomizations, "", err.Error()))
			continue
		}
		if v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			problems = append(problems, errdefs.Invalid("argocd-cm "+KeyCustomizations, "", "want a map of group/Kind to customizations"))
			continue
		}
		gks := make([]string, 0, len(m))
		for gk := range m {
			gks = append(gks, gk)
		}
		sort.Strings(gks)
		for _, gk := range gks {
			entry, ok := m[gk].(map[string]any)
			if !ok {
				problems = append(problems, errdefs.Invalid("argocd-cm "+KeyCustomizations+"."+gk, "", "want a map (health.lua, ignoreDifferences, actions, ...)"))
				continue
			}
			sv, has := entry["health.lua"]
			if !has {
				continue
			}
			script, ok := sv.(string)
			if !ok {
				problems = append(problems, errdefs.Invalid("argocd-cm "+KeyCustomizations+"."+gk+".health.lua", fmt.Sprint(sv), "want a string (the script)"))
				continue
			}
			e := legacyEntry{groupKind: gk, script: script}
			switch u := entry["health.lua.useOpenLibs"].(type) {
			case bool:
				e.useOpenLibs = u
			case string:
				e.useOpenLibs = strings.EqualFold(u, "true")
			}
			out = append(out, e)
		}
	}
	return out, problems
}
