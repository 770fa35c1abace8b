package graphql

import (
	"context"
	"errors"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/hub"
)

func (r *resolver) HubTemplates(ctx context.Context, args struct{ Search, Category *string }) ([]hubTemplateResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	if r.hub == nil {
		return nil, wrap(errdefs.ErrUnavailable)
	}
	var f hub.Filter
	if args.Search != nil {
		f.Search = *args.Search
	}
	if args.Category != nil {
		f.Category = *args.Category
	}
	cat, err := r.hub.List(ctx, p, f)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]hubTemplateResolver, len(cat.Templates))
	for i, t := range cat.Templates {
		out[i] = hubTemplateResolver{t}
	}
	return out, nil
}

func (r *resolver) HubTemplate(ctx context.Context, args struct {
	Name    string
	Version *string
}) (*hubVersionResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	if r.hub == nil {
		return nil, wrap(errdefs.ErrUnavailable)
	}
	v := ""
	if args.Version != nil {
		v = *args.Version
	}
	t, ver, err := r.hub.Get(ctx, p, args.Name, v)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	return &hubVersionResolver{t: t, v: ver}, nil
}

func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func versionNames(t hub.Template) []string {
	out := make([]string, len(t.Versions))
	for i, v := range t.Versions {
		out[i] = v.Version
	}
	return out
}

type hubTemplateResolver struct{ t hub.Template }

func (h hubTemplateResolver) Name() string          { return h.t.Name }
func (h hubTemplateResolver) Description() string   { return h.t.Description }
func (h hubTemplateResolver) Categories() []string  { return strs(h.t.Categories) }
func (h hubTemplateResolver) Tags() []string        { return strs(h.t.Tags) }
func (h hubTemplateResolver) Source() string        { return h.t.Source }
func (h hubTemplateResolver) LatestVersion() string { return h.t.Latest().Version }
func (h hubTemplateResolver) Versions() []string    { return versionNames(h.t) }

type hubVersionResolver struct {
	t hub.Template
	v hub.Version
}

func (h hubVersionResolver) Name() string         { return h.t.Name }
func (h hubVersionResolver) Version() string      { return h.v.Version }
func (h hubVersionResolver) Versions() []string   { return versionNames(h.t) }
func (h hubVersionResolver) Description() string  { return h.v.Description }
func (h hubVersionResolver) Source() string       { return h.t.Source }
func (h hubVersionResolver) Categories() []string { return strs(h.v.Categories) }
func (h hubVersionResolver) Entrypoint() string   { return h.v.Entrypoint }
func (h hubVersionResolver) Readme() string       { return h.v.README }
func (h hubVersionResolver) Manifest() string     { return h.v.Manifest }
func (h hubVersionResolver) Parameters() []hubParamResolver {
	out := make([]hubParamResolver, len(h.v.Parameters))
	for i, p := range h.v.Parameters {
		out[i] = hubParamResolver{p}
	}
	return out
}

type hubParamResolver struct{ p hub.Parameter }

func (h hubParamResolver) Name() string        { return h.p.Name }
func (h hubParamResolver) Description() string { return h.p.Description }
func (h hubParamResolver) Default() string     { return h.p.Default }
func (h hubParamResolver) Required() bool      { return h.p.Required }
func (h hubParamResolver) Enum() []string      { return strs(h.p.Enum) }
