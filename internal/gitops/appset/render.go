package appset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// ResourcesFinalizer on a generated Application deletes its resources with it (Argo CD adds
// it unless syncPolicy.preserveResourcesOnDeletion).
const ResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"

// Generated is one Application an ApplicationSet renders, and the generator element whose
// parameters rendered it.
type Generated struct {
	App    *app.Application
	Origin string
}

// Result is a render of an ApplicationSet: every application, or an error naming the
// generator element at fault (nothing is half-rendered).
type Result struct {
	Apps []Generated
	// Repos are the repositories the git generators read.
	Repos []string
}

// Render runs the generators and renders every application. It fails as a whole: the error
// names the generator element (generators[0].list.elements[2]) whose parameters render an
// invalid Application, or the generator that could not run.
func Render(ctx context.Context, set *ApplicationSet, src Sources) (*Result, error) {
	g := &generation{ctx: ctx, src: src, set: set, r: newRenderer(set.Spec.GoTemplate, set.Spec.GoTemplateOptions), repos: map[string]bool{}}
	defer g.release()
	sets, err := g.all()
	if err != nil {
		return nil, err
	}
	base, err := toJSONValue(struct {
		Metadata TemplateMeta        `json:"metadata"`
		Spec     app.ApplicationSpec `json:"spec"`
	}{set.Spec.Template.Metadata, set.Spec.Template.Spec})
	if err != nil {
		return nil, err
	}
	res := &Result{Repos: sortedKeys(g.repos)}
	seen := map[string]string{}
	for _, ps := range sets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a, err := g.renderApp(base, ps)
		if err != nil {
			return nil, &elementError{ps.origin, err}
		}
		if prev, dup := seen[a.Metadata.Name]; dup {
			return nil, &elementError{ps.origin, fmt.Errorf("renders application %q, as %s does: generated names must be unique", a.Metadata.Name, prev)}
		}
		seen[a.Metadata.Name] = ps.origin
		res.Apps = append(res.Apps, Generated{App: a, Origin: ps.origin})
	}
	return res, nil
}

func (g *generation) renderApp(base any, ps paramSet) (*app.Application, error) {
	tmpl := base
	if ps.tmpl != nil {
		tmpl = mergeOver(base, ps.tmpl)
	}
	params := ps.params
	if !g.r.goTemplate {
		params = flatten(params)
	}
	out, err := g.r.value(tmpl, params, "template")
	if err != nil {
		return nil, err
	}
	if p := g.set.Spec.TemplatePatch; p != "" {
		text, err := g.r.str(p, params)
		if err != nil {
			return nil, fmt.Errorf("templatePatch: %w", err)
		}
		var patch any
		if err := sigsyaml.Unmarshal([]byte(text), &patch); err != nil {
			return nil, fmt.Errorf("templatePatch renders invalid YAML: %w", err)
		}
		if _, ok := patch.(map[string]any); !ok && patch != nil {
			return nil, errors.New("templatePatch renders no mapping")
		}
		if patch != nil {
			out = mergePatch(out, patch)
		}
	}
	m, _ := out.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m["apiVersion"], m["kind"] = app.APIVersion, app.KindApp
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	a, err := app.DecodeApplication(data)
	if err != nil {
		return nil, fmt.Errorf("renders an invalid Application: %w", err)
	}
	preserve := g.set.Spec.SyncPolicy != nil && g.set.Spec.SyncPolicy.PreserveResourcesOnDeletion
	switch {
	case preserve:
		a.Metadata.Finalizers = slices.DeleteFunc(a.Metadata.Finalizers, func(f string) bool { return f == ResourcesFinalizer })
	case len(a.Metadata.Finalizers) == 0:
		a.Metadata.Finalizers = []string{ResourcesFinalizer}
	}
	return a, nil
}
