package rest

import (
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/hub"
)

func toHubParams(ps []hub.Parameter) []client.HubParameter {
	out := make([]client.HubParameter, 0, len(ps))
	for _, p := range ps {
		enum := p.Enum
		if enum == nil {
			enum = []string{}
		}
		out = append(out, client.HubParameter{Name: p.Name, Description: p.Description, Default: p.Default, Required: p.Required, Enum: enum})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func toHubTemplate(t hub.Template) client.HubTemplate {
	out := client.HubTemplate{Name: t.Name, Description: t.Description, Categories: nonNil(t.Categories), Tags: nonNil(t.Tags), Source: t.Source,
		LatestVersion: t.Latest().Version, Versions: make([]string, 0, len(t.Versions))}
	for _, v := range t.Versions {
		out.Versions = append(out.Versions, v.Version)
	}
	return out
}

func toHubDetail(t hub.Template, v hub.Version) client.HubTemplateDetail {
	out := client.HubTemplateDetail{HubTemplate: toHubTemplate(t), Version: v.Version, License: v.License, Owner: v.Owner, Entrypoint: v.Entrypoint,
		Parameters: toHubParams(v.Parameters), Templates: make([]client.HubEntry, 0, len(v.Templates)), README: v.README, Manifest: v.Manifest, File: v.File}
	// The detail describes the version asked for, not only the newest.
	out.Description, out.Categories, out.Tags = v.Description, nonNil(v.Categories), nonNil(v.Tags)
	for _, e := range v.Templates {
		out.Templates = append(out.Templates, client.HubEntry{Name: e.Name, Description: e.Description, Inputs: toHubParams(e.Inputs), Outputs: toHubParams(e.Outputs)})
	}
	return out
}

func toHubSource(s hub.SourceStatus) client.HubSource {
	return client.HubSource{Name: s.Name, URL: s.URL, Revision: s.Revision, Path: s.Path, CreatedAt: s.CreatedAt, Commit: s.Commit,
		Templates: s.Templates, Errors: nonNil(s.Errors)}
}

func (a *API) listHubTemplates(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	cat, err := a.hub.List(r.Context(), principal(r), hub.Filter{Search: q.Get("search"), Category: q.Get("category")})
	if err != nil {
		return err
	}
	out := client.HubCatalogue{Items: make([]client.HubTemplate, 0, len(cat.Templates)), Sources: make([]client.HubSource, 0, len(cat.Sources))}
	for _, t := range cat.Templates {
		out.Items = append(out.Items, toHubTemplate(t))
	}
	for _, s := range cat.Sources {
		out.Sources = append(out.Sources, toHubSource(s))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getHubTemplate(w http.ResponseWriter, r *http.Request) error {
	t, v, err := a.hub.Get(r.Context(), principal(r), r.PathValue("name"), r.URL.Query().Get("version"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toHubDetail(t, v))
	return nil
}

func (a *API) useHubTemplate(w http.ResponseWriter, r *http.Request) error {
	var in client.HubUseRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	res, err := a.hub.Use(r.Context(), principal(r), hub.UseRequest{Template: r.PathValue("name"), Version: in.Version, Runtime: in.Runtime,
		GitSource: in.GitSource, Name: in.Name, Dir: in.Dir, Namespace: in.Namespace, Upsert: in.Upsert})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, client.HubUseResult{Template: res.Template, Version: res.Version, Source: res.Source, Runtime: res.Runtime,
		GitSource: res.GitSource, Name: res.Name, RepoURL: res.RepoURL, Branch: res.Branch, File: res.File, Commit: res.Commit,
		Application: res.Application, ApplicationCreated: res.ApplicationCreated, Namespace: res.Namespace})
	return nil
}

func (a *API) listHubSources(w http.ResponseWriter, r *http.Request) error {
	ss, err := a.hub.ListSources(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.HubSource]{Items: make([]client.HubSource, 0, len(ss))}
	for _, s := range ss {
		out.Items = append(out.Items, toHubSource(s))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) addHubSource(w http.ResponseWriter, r *http.Request) error {
	var in client.HubSourceRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	s, err := a.hub.AddSource(r.Context(), principal(r), hub.Source{Name: in.Name, URL: in.URL, Revision: in.Revision, Path: in.Path})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toHubSource(s))
	return nil
}

func (a *API) deleteHubSource(w http.ResponseWriter, r *http.Request) error {
	if err := a.hub.DeleteSource(r.Context(), principal(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
