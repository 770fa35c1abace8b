package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// GitSource is a directory of Applications in a repository that a runtime loads
// (app-of-apps); it lives in the runtime's installation repository as git-sources/<name>.yaml.
type GitSource struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   GitSourceMetadata `json:"metadata"`
	Spec       GitSourceSpec     `json:"spec"`
}

// GitSourceMetadata names a Git Source.
type GitSourceMetadata struct {
	Name string `json:"name"`
}

// GitSourceSpec says where a Git Source's applications are.
type GitSourceSpec struct {
	RepoURL        string         `json:"repoURL"`
	Path           string         `json:"path,omitempty"`
	TargetRevision string         `json:"targetRevision,omitempty"`
	Include        string         `json:"include,omitempty"`
	Exclude        string         `json:"exclude,omitempty"`
	Destination    AppDestination `json:"destination,omitzero"`
}

// NewGitSource returns a Git Source with its kind set.
func NewGitSource(name string, spec GitSourceSpec) GitSource {
	return GitSource{APIVersion: "freshet.dev/v1", Kind: "GitSource", Metadata: GitSourceMetadata{Name: name}, Spec: spec}
}

func gitSourcesPath(runtime string) string {
	return "/runtimes/" + url.PathEscape(runtime) + "/app-proxy/api/v1/git-sources"
}

// ListGitSources lists a runtime's Git Sources.
func (c *Client) ListGitSources(ctx context.Context, runtime string) (List[GitSource], error) {
	var out List[GitSource]
	err := c.do(ctx, http.MethodGet, gitSourcesPath(runtime), nil, nil, &out)
	return out, err
}

// GetGitSource returns one Git Source.
func (c *Client) GetGitSource(ctx context.Context, runtime, name string) (GitSource, error) {
	var out GitSource
	err := c.do(ctx, http.MethodGet, gitSourcesPath(runtime)+"/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// PutGitSource creates a Git Source (a commit to the installation repository), or replaces it
// with upsert.
func (c *Client) PutGitSource(ctx context.Context, runtime string, g GitSource, upsert bool) (GitSource, error) {
	var out GitSource
	q := url.Values{}
	if upsert {
		q.Set("upsert", "true")
	}
	err := c.do(ctx, http.MethodPost, gitSourcesPath(runtime), q, g, &out)
	return out, err
}

// DeleteGitSource removes a Git Source; its applications go with it.
func (c *Client) DeleteGitSource(ctx context.Context, runtime, name string) error {
	return c.do(ctx, http.MethodDelete, gitSourcesPath(runtime)+"/"+url.PathEscape(name), nil, nil, nil)
}

// ProviderRepo is a repository a git provider lists.
type ProviderRepo struct {
	Name          string    `json:"name"`
	FullName      string    `json:"fullName"`
	CloneURL      string    `json:"cloneUrl"`
	SSHURL        string    `json:"sshUrl,omitempty"`
	DefaultBranch string    `json:"defaultBranch,omitempty"`
	Private       bool      `json:"private"`
	UpdatedAt     time.Time `json:"updatedAt,omitzero"`
}

// ListProviderRepos asks a runtime to list repositories through a git provider's API
// (github, gitlab or gitea; baseURL for self-hosted ones), with token used for that call only.
func (c *Client) ListProviderRepos(ctx context.Context, runtime, provider, baseURL, owner, token string) (List[ProviderRepo], error) {
	var out List[ProviderRepo]
	q := url.Values{"provider": {provider}}
	if baseURL != "" {
		q.Set("baseURL", baseURL)
	}
	if owner != "" {
		q.Set("owner", owner)
	}
	err := c.doWith(ctx, http.MethodGet, "/runtimes/"+url.PathEscape(runtime)+"/app-proxy/api/v1/git/repositories", q, http.Header{"X-Git-Token": {token}}, nil, &out)
	return out, err
}
