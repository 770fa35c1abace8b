package graphql

import (
	"context"
	"errors"

	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/products"
)

func (r *resolver) Product(ctx context.Context, args struct{ Name string }) (*productViewResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	if r.products == nil {
		return nil, wrap(errdefs.ErrUnavailable)
	}
	v, err := r.products.GetProduct(ctx, p, args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	return &productViewResolver{v}, nil
}

type productViewResolver struct{ v products.View }

func (v productViewResolver) Name() string  { return v.v.Product.Name }
func (v productViewResolver) Defined() bool { return v.v.Product.Defined }
func (v productViewResolver) Patterns() []string {
	if v.v.Product.Patterns == nil {
		return []string{}
	}
	return v.v.Product.Patterns
}
func (v productViewResolver) Environments() []productEnvResolver {
	out := make([]productEnvResolver, len(v.v.Environments))
	for i, e := range v.v.Environments {
		out[i] = productEnvResolver{e}
	}
	return out
}
func (v productViewResolver) Promotions() []promotionResolver {
	out := make([]promotionResolver, len(v.v.Promotions))
	for i, p := range v.v.Promotions {
		out[i] = promotionResolver{p}
	}
	return out
}
func (v productViewResolver) Unplaced() []productAppResolver { return productApps(v.v.Unplaced) }

type productEnvResolver struct{ e products.EnvironmentView }

func (e productEnvResolver) Name() string                       { return e.e.Environment.Name }
func (e productEnvResolver) Kind() string                       { return e.e.Environment.Kind }
func (e productEnvResolver) Order() int32                       { return int32(e.e.Environment.Order) }
func (e productEnvResolver) Applications() []productAppResolver { return productApps(e.e.Applications) }

func productApps(as []products.AppVersion) []productAppResolver {
	out := make([]productAppResolver, len(as))
	for i, a := range as {
		out[i] = productAppResolver{a}
	}
	return out
}

type productAppResolver struct{ a products.AppVersion }

func (a productAppResolver) Runtime() string     { return a.a.Runtime }
func (a productAppResolver) Name() string        { return a.a.Name }
func (a productAppResolver) Cluster() string     { return a.a.Cluster }
func (a productAppResolver) Namespace() string   { return a.a.Namespace }
func (a productAppResolver) Health() string      { return a.a.Health }
func (a productAppResolver) Sync() string        { return a.a.Sync }
func (a productAppResolver) Revision() string    { return a.a.Revision }
func (a productAppResolver) DeployedAt() *string { return timeStr(a.a.DeployedAt) }
func (a productAppResolver) Images() []imageResolver {
	out := make([]imageResolver, len(a.a.Images))
	for i, im := range a.a.Images {
		out[i] = imageResolver{analytics.Image{Registry: im.Registry, Repository: im.Repository, Tags: im.Tags, Digest: im.Digest,
			Commits: im.Commits, Issues: im.Issues}}
	}
	return out
}

type promotionResolver struct{ p products.Promotion }

func (p promotionResolver) From() string            { return p.p.From }
func (p promotionResolver) To() string              { return p.p.To }
func (p promotionResolver) FromRevisions() []string { return p.p.FromRevisions }
func (p promotionResolver) ToRevisions() []string   { return p.p.ToRevisions }
func (p promotionResolver) Images() []imageChangeResolver {
	out := make([]imageChangeResolver, len(p.p.Images))
	for i, c := range p.p.Images {
		out[i] = imageChangeResolver{c}
	}
	return out
}
func (p promotionResolver) Commits() []imageCommitResolver {
	out := make([]imageCommitResolver, len(p.p.Commits))
	for i, c := range p.p.Commits {
		out[i] = imageCommitResolver{c}
	}
	return out
}
func (p promotionResolver) Issues() []imageIssueResolver {
	out := make([]imageIssueResolver, len(p.p.Issues))
	for i, is := range p.p.Issues {
		out[i] = imageIssueResolver{is}
	}
	return out
}

type imageChangeResolver struct{ c products.ImageChange }

func (c imageChangeResolver) Repository() string { return c.c.Repository }
func (c imageChangeResolver) From() string       { return c.c.From }
func (c imageChangeResolver) To() string         { return c.c.To }
