package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// Git Sources (docs/appproxy.md) are api/appproxyv1's.
type (
	// GitSource is a directory of Applications in a repository that a runtime loads
	// (app-of-apps); it lives in the runtime's installation repository as git-sources/<name>.yaml.
	GitSource         = appproxyv1.GitSource
	GitSourceMetadata = appproxyv1.GitSourceMetadata
	GitSourceSpec     = appproxyv1.GitSourceSpec
	// ProviderRepo is a repository a git provider lists.
	ProviderRepo = appproxyv1.ProviderRepo
)

// NewGitSource returns a Git Source with its kind set.
func NewGitSource(name string, spec GitSourceSpec) GitSource {
	return appproxyv1.NewGitSource(name, spec)
}

func gitSourcesPath(runtime string) string {
	return proxyPath(runtime) + "git-sources"
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
	err := c.doWith(ctx, http.MethodGet, proxyPath(runtime)+"git/repositories", q, http.Header{appproxyv1.GitTokenHeader: {token}}, nil, &out)
	return out, err
}
