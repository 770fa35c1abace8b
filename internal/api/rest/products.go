package rest

import (
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/products"
)

func toEnvironment(e products.Environment) client.Environment {
	out := client.Environment{Name: e.Name, Kind: e.Kind, Order: e.Order, Targets: make([]client.EnvironmentTarget, 0, len(e.Targets)),
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	for _, t := range e.Targets {
		out.Targets = append(out.Targets, client.EnvironmentTarget(t))
	}
	return out
}

func fromEnvironmentRequest(in client.EnvironmentRequest) products.Environment {
	e := products.Environment{Name: in.Name, Kind: in.Kind, Order: in.Order}
	for _, t := range in.Targets {
		e.Targets = append(e.Targets, products.Target(t))
	}
	return e
}

func (a *API) createEnvironment(w http.ResponseWriter, r *http.Request) error {
	var in client.EnvironmentRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	e, err := a.products.CreateEnvironment(r.Context(), principal(r), fromEnvironmentRequest(in))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toEnvironment(e))
	return nil
}

func (a *API) updateEnvironment(w http.ResponseWriter, r *http.Request) error {
	var in client.EnvironmentRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	in.Name = r.PathValue("name")
	e, err := a.products.UpdateEnvironment(r.Context(), principal(r), fromEnvironmentRequest(in))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toEnvironment(e))
	return nil
}

func (a *API) listEnvironments(w http.ResponseWriter, r *http.Request) error {
	es, err := a.products.ListEnvironments(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.Environment]{Items: make([]client.Environment, 0, len(es))}
	for _, e := range es {
		out.Items = append(out.Items, toEnvironment(e))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getEnvironment(w http.ResponseWriter, r *http.Request) error {
	e, err := a.products.GetEnvironment(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toEnvironment(e))
	return nil
}

func (a *API) deleteEnvironment(w http.ResponseWriter, r *http.Request) error {
	if err := a.products.DeleteEnvironment(r.Context(), principal(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func toProduct(p products.Product) client.Product {
	pats := p.Patterns
	if pats == nil {
		pats = []string{}
	}
	return client.Product{Name: p.Name, Patterns: pats, Defined: p.Defined, Applications: p.Applications, CreatedAt: p.CreatedAt}
}

func (a *API) createProduct(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateProductRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	p, err := a.products.CreateProduct(r.Context(), principal(r), products.Product{Name: in.Name, Patterns: in.Patterns})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toProduct(p))
	return nil
}

func (a *API) updateProduct(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateProductRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	p, err := a.products.UpdateProduct(r.Context(), principal(r), products.Product{Name: r.PathValue("name"), Patterns: in.Patterns})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toProduct(p))
	return nil
}

func (a *API) listProducts(w http.ResponseWriter, r *http.Request) error {
	ps, err := a.products.ListProducts(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.Product]{Items: make([]client.Product, 0, len(ps))}
	for _, p := range ps {
		out.Items = append(out.Items, toProduct(p))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) deleteProduct(w http.ResponseWriter, r *http.Request) error {
	if err := a.products.DeleteProduct(r.Context(), principal(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func toCommits(cs []images.Commit) []client.ImageCommit {
	out := make([]client.ImageCommit, 0, len(cs))
	for _, c := range cs {
		if ic := ToImageCommit(c); ic != nil {
			out = append(out, *ic)
		}
	}
	return out
}

func toProductApps(as []products.AppVersion) []client.ProductApplication {
	out := make([]client.ProductApplication, 0, len(as))
	for _, a := range as {
		pa := client.ProductApplication{Runtime: a.Runtime, Name: a.Name, Cluster: a.Cluster, Namespace: a.Namespace, Health: a.Health, Sync: a.Sync,
			Revision: a.Revision, Images: make([]client.ProductImage, 0, len(a.Images)), DeployedAt: a.DeployedAt}
		for _, im := range a.Images {
			pa.Images = append(pa.Images, client.ProductImage{Registry: im.Registry, Repository: im.Repository, Tags: im.Tags, Digest: im.Digest,
				Commits: toCommits(im.Commits), Issues: ToImageIssues(im.Issues)})
		}
		out = append(out, pa)
	}
	return out
}

func (a *API) getProduct(w http.ResponseWriter, r *http.Request) error {
	v, err := a.products.GetProduct(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		return err
	}
	out := client.ProductView{Product: toProduct(v.Product), Environments: make([]client.ProductEnvironment, 0, len(v.Environments)),
		Promotions: make([]client.ProductPromotion, 0, len(v.Promotions)), Unplaced: toProductApps(v.Unplaced)}
	for _, e := range v.Environments {
		out.Environments = append(out.Environments, client.ProductEnvironment{Environment: toEnvironment(e.Environment), Applications: toProductApps(e.Applications)})
	}
	for _, p := range v.Promotions {
		cp := client.ProductPromotion{From: p.From, To: p.To, FromRevisions: p.FromRevisions, ToRevisions: p.ToRevisions,
			Images: make([]client.ProductImageChange, 0, len(p.Images)), Commits: toCommits(p.Commits), Issues: ToImageIssues(p.Issues)}
		for _, c := range p.Images {
			cp.Images = append(cp.Images, client.ProductImageChange(c))
		}
		out.Promotions = append(out.Promotions, cp)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
