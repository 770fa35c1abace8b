package pipeline

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/store"
)

// ContextGit is a git provider's API URL and token: git-clone steps name it (git: NAME) to
// clone owner/name with the token.
const ContextGit = "git"

// A git context is stored like the others, as a JSON object of strings: these keys, the token
// encrypted under the same AAD as a secret context's value.
const (
	gitProvider = "provider"
	gitURL      = "url"
	gitUsername = "username"
	gitToken    = "token"
)

// GitProvider is a git context's provider.
type GitProvider struct {
	Provider string // github, gitlab, gitea or bitbucket
	// URL is the provider's API base URL: https://api.github.com (GitHub Enterprise:
	// https://HOST/api/v3), https://gitlab.com, a Gitea server's URL,
	// https://api.bitbucket.org/2.0. Empty on input: the SaaS one (Gitea has none).
	URL string
	// Username is who git authenticates as over HTTPS; empty: the provider's convention for
	// tokens (x-access-token, oauth2, oauth2, x-token-auth). A Bitbucket app password needs
	// the Bitbucket username.
	Username string
	Token    string // MaskedValue when set and not decrypted
}

// defaultAPIURL is each provider's SaaS API.
var defaultAPIURL = map[string]string{providers.GitHub: "https://api.github.com", providers.GitLab: "https://gitlab.com", providers.Bitbucket: "https://api.bitbucket.org/2.0"}

// tokenUser is the user git sends with a token, by provider, when the context names none.
var tokenUser = map[string]string{providers.GitHub: "x-access-token", providers.GitLab: "oauth2", providers.Gitea: "oauth2", providers.Bitbucket: "x-token-auth"}

// sealGit checks a git context's provider and returns it as stored, the token encrypted. As
// with a registry, a token of MaskedValue keeps the stored one only while the provider and URL
// stay the same, so whoever may edit contexts but not read secrets cannot send the token
// elsewhere.
func (s *Service) sealGit(accountID, name string, g GitProvider, old *store.ConfigContext) (string, error) {
	if _, ok := tokenUser[g.Provider]; !ok {
		return "", errdefs.Invalid("git.provider", g.Provider, "is not a git provider: use github, gitlab, gitea or bitbucket")
	}
	if g.URL == "" {
		g.URL = defaultAPIURL[g.Provider]
		if g.URL == "" {
			return "", errdefs.Invalid("git.url", "", "is required for gitea: give the server's URL, e.g. https://gitea.example.com")
		}
	}
	g.URL = strings.TrimRight(g.URL, "/")
	if err := s.net.CheckProviderURL("git.url", g.URL); err != nil {
		return "", err
	}
	if u, _ := url.Parse(g.URL); u.RawQuery != "" || u.Fragment != "" {
		return "", errdefs.Invalid("git.url", g.URL, "has a query or fragment: give the API's base URL only")
	}
	if len(g.Username) > maxRegistryUsername {
		return "", errdefs.Invalid("git.username", g.Username, fmt.Sprintf("is longer than %d characters", maxRegistryUsername))
	}
	if strings.ContainsFunc(g.Username, func(c rune) bool { return c == ':' || unicode.IsControl(c) }) {
		return "", errdefs.Invalid("git.username", g.Username, "holds ':' or a control character, which HTTP basic authentication cannot carry")
	}
	if len(g.Token) > maxContextValueBytes {
		return "", errdefs.Invalid("git.token", "", fmt.Sprintf("is larger than %d KiB", maxContextValueBytes>>10))
	}
	if strings.ContainsFunc(g.Token, unicode.IsControl) {
		return "", errdefs.Invalid("git.token", "", "holds a control character (a trailing newline?): give the token alone")
	}
	stored := map[string]string{gitProvider: g.Provider, gitURL: g.URL}
	if g.Username != "" {
		stored[gitUsername] = g.Username
	}
	switch g.Token {
	case "":
		return "", errdefs.Invalid("git.token", "", "is required: give a token of the provider that may read the repositories (and write commit statuses)")
	case MaskedValue:
		was, err := storedValues(old)
		if err != nil {
			return "", err
		}
		if stored[gitToken], err = keepMasked("git.token", was[gitToken],
			boundTo{"git.provider", was[gitProvider], g.Provider}, boundTo{"git.url", was[gitURL], g.URL}); err != nil {
			return "", err
		}
	default:
		ct, err := s.keys.Encrypt([]byte(g.Token), contextAAD(accountID, name, gitToken))
		if err != nil {
			return "", err
		}
		stored[gitToken] = ct
	}
	return encodeJSON(stored), nil
}

// toGitProvider returns a git context's values as its provider.
func toGitProvider(values map[string]string) *GitProvider {
	return &GitProvider{Provider: values[gitProvider], URL: values[gitURL], Username: values[gitUsername], Token: values[gitToken]}
}

// CloneBase returns the URL that a repository's owner/name is appended to (with ".git") to
// clone it from the provider whose API is at apiURL: https://github.com for
// https://api.github.com, https://HOST for GitHub Enterprise's https://HOST/api/v3,
// https://bitbucket.org for https://api.bitbucket.org/2.0, and the URL itself for GitLab and
// Gitea (which serve git and the API from one base).
func CloneBase(provider, apiURL string) (string, error) {
	u, err := url.Parse(strings.TrimRight(apiURL, "/"))
	if err != nil || u.Host == "" {
		return "", errdefs.Invalid("git.url", apiURL, "is not an http(s) URL")
	}
	switch provider {
	case providers.GitHub:
		if strings.EqualFold(u.Host, "api.github.com") {
			u.Host, u.Path = "github.com", ""
		} else {
			u.Path = strings.TrimSuffix(u.Path, "/api/v3")
		}
	case providers.Bitbucket:
		if strings.EqualFold(u.Host, "api.bitbucket.org") {
			u.Host, u.Path = "bitbucket.org", ""
		} else {
			u.Path = strings.TrimSuffix(u.Path, "/2.0")
		}
	case providers.GitLab, providers.Gitea:
	default:
		return "", errdefs.Invalid("git.provider", provider, "is not a git provider: use github, gitlab, gitea or bitbucket")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// jobGit returns git context c, decrypted, as a job carries it.
func (s *Service) jobGit(c store.ConfigContext) (runnerv1.GitContext, error) {
	vals, err := s.contextValues(c)
	if err != nil {
		return runnerv1.GitContext{}, err
	}
	g := toGitProvider(vals)
	base, err := CloneBase(g.Provider, g.URL)
	if err != nil {
		return runnerv1.GitContext{}, fmt.Errorf("git context %s: %w", c.Name, err)
	}
	user := g.Username
	if user == "" {
		user = tokenUser[g.Provider]
	}
	return runnerv1.GitContext{Name: c.Name, Provider: g.Provider, CloneURL: base, Username: user, Token: g.Token}, nil
}

// netPolicy is the operator's policy, or an unrestricted one when the Service was built
// without.
func netPolicy(p *netpolicy.Policy) *netpolicy.Policy {
	if p == nil {
		return netpolicy.Unrestricted()
	}
	return p
}
