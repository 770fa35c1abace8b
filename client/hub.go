package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// HubParameter is a parameter of a hub template: a workflow argument, or a template's input
// or output.
type HubParameter struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Default     string   `json:"default"`
	Required    bool     `json:"required"`
	Enum        []string `json:"enum"`
}

// HubEntry is one of a hub template's templates (what a templateRef names).
type HubEntry struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Inputs      []HubParameter `json:"inputs"`
	Outputs     []HubParameter `json:"outputs"`
}

// HubTemplate is a catalogue entry as the list answers it: what its newest version says.
type HubTemplate struct {
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	Categories    []string `json:"categories"`
	Tags          []string `json:"tags"`
	Source        string   `json:"source"` // "builtin" or the name of the account's hub source
	LatestVersion string   `json:"latestVersion"`
	Versions      []string `json:"versions"` // newest first
}

// HubTemplateDetail is one version of a hub template: its README (Markdown, shown as text:
// raw HTML in it is not rendered), parameters, templates and manifest.
type HubTemplateDetail struct {
	HubTemplate
	Version    string         `json:"version"`
	License    string         `json:"license"`
	Owner      string         `json:"owner"`
	Entrypoint string         `json:"entrypoint"`
	Parameters []HubParameter `json:"parameters"`
	Templates  []HubEntry     `json:"templates"`
	README     string         `json:"readme"`
	Manifest   string         `json:"manifest"`
	File       string         `json:"file"`
}

// HubSource is a git repository an account's admin added to the catalogue, with what its
// last read found.
type HubSource struct {
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Revision  string    `json:"revision"`
	Path      string    `json:"path"`
	CreatedAt time.Time `json:"createdAt"`
	Commit    string    `json:"commit"`
	Templates int       `json:"templates"`
	Errors    []string  `json:"errors"`
}

// HubCatalogue is GET /api/v1/hub/templates: the templates and the state of the sources.
type HubCatalogue struct {
	Items   []HubTemplate `json:"items"`
	Sources []HubSource   `json:"sources"`
}

// HubSourceRequest adds a hub source.
type HubSourceRequest struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Revision string `json:"revision,omitempty"`
	Path     string `json:"path,omitempty"`
}

// HubUseRequest commits a hub template to a Git Source of a runtime.
type HubUseRequest struct {
	Version   string `json:"version,omitempty"`
	Runtime   string `json:"runtime"`
	GitSource string `json:"gitSource"`
	// Name renames the WorkflowTemplate (default: the hub template's name).
	Name string `json:"name,omitempty"`
	// Dir is the directory of the Git Source's repository (default workflow-templates).
	Dir string `json:"dir,omitempty"`
	// Namespace is where it is deployed (default: the Git Source's destination namespace).
	Namespace string `json:"namespace,omitempty"`
	Upsert    bool   `json:"upsert,omitempty"`
}

// HubUseResult is what "use this template" committed.
type HubUseResult struct {
	Template           string `json:"template"`
	Version            string `json:"version"`
	Source             string `json:"source"`
	Runtime            string `json:"runtime"`
	GitSource          string `json:"gitSource"`
	Name               string `json:"name"`
	RepoURL            string `json:"repoURL"`
	Branch             string `json:"branch"`
	File               string `json:"file"`
	Commit             string `json:"commit"`
	Application        string `json:"application"`
	ApplicationCreated bool   `json:"applicationCreated"`
	Namespace          string `json:"namespace"`
}

// HubFilter narrows ListHubTemplates.
type HubFilter struct {
	Search, Category string
}

// ListHubTemplates lists the account's template catalogue.
func (c *Client) ListHubTemplates(ctx context.Context, f HubFilter) (HubCatalogue, error) {
	q := url.Values{}
	if f.Search != "" {
		q.Set("search", f.Search)
	}
	if f.Category != "" {
		q.Set("category", f.Category)
	}
	var out HubCatalogue
	err := c.do(ctx, http.MethodGet, "/api/v1/hub/templates", q, nil, &out)
	return out, err
}

// GetHubTemplate reads one version of a hub template ("": the newest).
func (c *Client) GetHubTemplate(ctx context.Context, name, version string) (HubTemplateDetail, error) {
	q := url.Values{}
	if version != "" {
		q.Set("version", version)
	}
	var out HubTemplateDetail
	err := c.do(ctx, http.MethodGet, "/api/v1/hub/templates/"+url.PathEscape(name), q, nil, &out)
	return out, err
}

// UseHubTemplate commits a hub template to a Git Source of a runtime.
func (c *Client) UseHubTemplate(ctx context.Context, name string, r HubUseRequest) (HubUseResult, error) {
	var out HubUseResult
	err := c.do(ctx, http.MethodPost, "/api/v1/hub/templates/"+url.PathEscape(name)+"/use", nil, r, &out)
	return out, err
}

// ListHubSources lists the account's hub sources.
func (c *Client) ListHubSources(ctx context.Context) (List[HubSource], error) {
	var out List[HubSource]
	err := c.do(ctx, http.MethodGet, "/api/v1/hub/sources", nil, nil, &out)
	return out, err
}

// AddHubSource adds a git repository to the account's catalogue (admins).
func (c *Client) AddHubSource(ctx context.Context, r HubSourceRequest) (HubSource, error) {
	var out HubSource
	err := c.do(ctx, http.MethodPost, "/api/v1/hub/sources", nil, r, &out)
	return out, err
}

// DeleteHubSource removes a hub source (admins).
func (c *Client) DeleteHubSource(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/hub/sources/"+url.PathEscape(name), nil, nil, nil)
}
