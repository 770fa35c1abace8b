// Package providers lists git repositories through the APIs of GitHub, GitLab and Gitea, so a
// runtime can offer the repositories a user may pick for a Git Source or an application, and
// posts commit statuses to GitHub, GitLab, Gitea and Bitbucket (statuses.go). The
// user's token is used for the call and never kept, and never leaves the API's origin (no
// redirect or next page to another host is followed). Errors say what happened — a status,
// a refused connection — never what the server's body said: a base URL comes from the caller
// and may point at a service that must not be read through this one.
package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Providers.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Gitea  = "gitea"
	// Bitbucket (Cloud) takes commit statuses only: ListRepos refuses it.
	Bitbucket = "bitbucket"
)

// Limits.
const (
	MaxPages = 20   // pages fetched per listing
	MaxRepos = 2000 // repositories returned per listing
	pageSize = 100
)

// Repo is one repository.
type Repo struct {
	Name          string    `json:"name"`
	FullName      string    `json:"fullName"`
	CloneURL      string    `json:"cloneUrl"`
	SSHURL        string    `json:"sshUrl,omitempty"`
	DefaultBranch string    `json:"defaultBranch,omitempty"`
	Private       bool      `json:"private"`
	UpdatedAt     time.Time `json:"updatedAt,omitzero"`
}

// Client lists repositories of one provider.
type Client struct {
	kind  string
	base  string
	token string
	user  string // Bitbucket app passwords' user (WithUsername)
	hc    *http.Client
}

// DefaultTimeout bounds one listing call when New gets no client.
const DefaultTimeout = 30 * time.Second

// New returns a client for provider kind at baseURL (empty: github.com's or gitlab.com's
// API; Gitea needs its URL), authenticated with token, calling through hc (nil: a plain client
// with DefaultTimeout; a runtime passes one whose connections its network policy checks).
// Redirects are followed only within baseURL's origin.
func New(kind, baseURL, token string, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	own := *hc
	hc = &own
	switch kind {
	case GitHub:
		if baseURL == "" {
			baseURL = "https://api.github.com"
		}
	case GitLab:
		if baseURL == "" {
			baseURL = "https://gitlab.com"
		}
	case Gitea:
		if baseURL == "" {
			return nil, errdefs.Invalid("baseURL", "", "is required for Gitea (the server's URL, e.g. https://gitea.example.com)")
		}
	case Bitbucket:
		if baseURL == "" {
			baseURL = "https://api.bitbucket.org/2.0"
		}
	default:
		return nil, errdefs.Invalid("provider", kind, "is not one of github, gitlab, gitea, bitbucket")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errdefs.Invalid("baseURL", baseURL, "is not an http(s) URL")
	}
	if token == "" {
		return nil, errdefs.Invalid("token", "", "is required: a personal access token of the provider")
	}
	base := strings.TrimRight(baseURL, "/")
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		// The token is in our own headers (PRIVATE-TOKEN, Authorization): net/http would carry
		// the custom ones to any host.
		if len(via) >= 5 || !sameOrigin(req.URL.String(), base) {
			return fmt.Errorf("%s API redirected to another host: %w", kind, errdefs.ErrUnavailable)
		}
		return nil
	}
	return &Client{kind: kind, base: base, token: token, hc: hc}, nil
}

// WithUsername makes a Bitbucket client authenticate with HTTP basic authentication as user,
// the token being an app password; without it a Bitbucket token is a bearer access token.
// Other providers ignore it.
func (c *Client) WithUsername(user string) *Client {
	c.user = user
	return c
}

// ListRepos lists the repositories of owner (an organisation, group or user), or with owner ""
// those the token's user can access, most recently updated first as the provider orders them.
func (c *Client) ListRepos(ctx context.Context, owner string) ([]Repo, error) {
	var paths []string // tried in order: an organisation, then a user of that name
	switch c.kind {
	case Bitbucket:
		return nil, errdefs.Invalid("provider", c.kind, "cannot list repositories: use github, gitlab or gitea")
	case GitHub:
		if owner == "" {
			paths = []string{"/user/repos?sort=updated&per_page=" + strconv.Itoa(pageSize)}
		} else {
			o := url.PathEscape(owner)
			paths = []string{"/orgs/" + o + "/repos?sort=updated&per_page=" + strconv.Itoa(pageSize), "/users/" + o + "/repos?sort=updated&per_page=" + strconv.Itoa(pageSize)}
		}
	case GitLab:
		q := "?order_by=last_activity_at&per_page=" + strconv.Itoa(pageSize)
		if owner == "" {
			paths = []string{"/api/v4/projects" + q + "&membership=true"}
		} else {
			o := url.PathEscape(owner)
			paths = []string{"/api/v4/groups/" + o + "/projects" + q + "&include_subgroups=true", "/api/v4/users/" + o + "/projects" + q}
		}
	case Gitea:
		q := "?limit=50"
		if owner == "" {
			paths = []string{"/api/v1/user/repos" + q}
		} else {
			o := url.PathEscape(owner)
			paths = []string{"/api/v1/orgs/" + o + "/repos" + q, "/api/v1/users/" + o + "/repos" + q}
		}
	}
	var lastErr error
	for _, p := range paths {
		repos, err := c.list(ctx, c.base+p)
		if errors.Is(err, errdefs.ErrNotFound) {
			lastErr = err
			continue
		}
		return repos, err
	}
	return nil, fmt.Errorf("%s: no organisation, group or user %q: %w", c.kind, owner, errors.Unwrap(lastErr))
}

var linkNext = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// list follows a listing's pages (Link rel="next", or GitLab's X-Next-Page).
func (c *Client) list(ctx context.Context, first string) ([]Repo, error) {
	var out []Repo
	next := first
	for page := 0; next != "" && page < MaxPages && len(out) < MaxRepos; page++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, err
		}
		c.authorize(req)
		req.Header.Set("Accept", "application/json")
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, c.connError(err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return nil, c.connError(err)
		}
		if err := c.status(resp); err != nil {
			return nil, err
		}
		repos, err := c.decode(body)
		if err != nil {
			return nil, fmt.Errorf("%s API at %s answered something that is not a repository list (%d bytes): %w", c.kind, c.base, len(body), errdefs.ErrUnavailable)
		}
		out = append(out, repos...)
		next = ""
		if m := linkNext.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			next = m[1]
		} else if np := resp.Header.Get("X-Next-Page"); np != "" && c.kind == GitLab {
			u, _ := url.Parse(req.URL.String())
			q := u.Query()
			q.Set("page", np)
			u.RawQuery = q.Encode()
			next = u.String()
		}
		if next != "" && !sameOrigin(next, c.base) {
			return nil, fmt.Errorf("%s API: the next page is on another host; not followed (the token stays with %s)", c.kind, c.base)
		}
	}
	if len(out) > MaxRepos {
		out = out[:MaxRepos]
	}
	return out, nil
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

func (c *Client) authorize(req *http.Request) {
	switch c.kind {
	case GitHub:
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	case GitLab:
		req.Header.Set("PRIVATE-TOKEN", c.token)
	case Gitea:
		req.Header.Set("Authorization", "token "+c.token)
	case Bitbucket:
		if c.user != "" {
			req.SetBasicAuth(c.user, c.token)
		} else {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
	}
}

// connError describes a failed call: a connection the runtime's network policy refused is the
// caller's bad baseURL; anything else is described without what the server sent.
func (c *Client) connError(err error) error {
	var refused *netpolicy.Error
	if errors.As(err, &refused) {
		return errdefs.Invalid("baseURL", c.base, refused.Error())
	}
	if errors.Is(err, errdefs.ErrUnavailable) { // our own redirect refusal
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	detail := netpolicy.Describe(err)
	if detail == "" {
		detail = "the connection failed"
	}
	return fmt.Errorf("%s API at %s: %s: %w", c.kind, c.base, detail, errdefs.ErrUnavailable)
}

// status turns an error answer into an error that says what to do. The body is not quoted: the
// status and the documented rate-limit headers say enough.
func (c *Client) status(resp *http.Response) error {
	if resp.StatusCode < 300 {
		return nil
	}
	code := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s refused the token (%s): check it and its expiry: %w", c.kind, code, errdefs.ErrForbidden)
	case resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("RateLimit-Remaining") == "0"):
		return fmt.Errorf("%s rate limit reached (resets at %s): %w", c.kind, resetTime(resp), errdefs.ErrUnavailable)
	case resp.StatusCode == http.StatusTooManyRequests:
		after := "a while"
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			after = (time.Duration(n) * time.Second).String()
		}
		return fmt.Errorf("%s rate limit reached (retry after %s): %w", c.kind, after, errdefs.ErrUnavailable)
	case resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: the token may not list these repositories (%s): %w", c.kind, code, errdefs.ErrForbidden)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s: %s: %w", c.kind, code, errdefs.ErrNotFound)
	case resp.StatusCode >= 500:
		return fmt.Errorf("%s API answered %s: %w", c.kind, code, errdefs.ErrUnavailable)
	}
	return fmt.Errorf("%s API answered %s", c.kind, code)
}

func resetTime(resp *http.Response) string {
	for _, h := range []string{"X-RateLimit-Reset", "RateLimit-Reset"} {
		if v, err := strconv.ParseInt(resp.Header.Get(h), 10, 64); err == nil {
			return time.Unix(v, 0).UTC().Format(time.RFC3339)
		}
	}
	return "an unknown time"
}

// decode reads one page in the provider's documented format.
func (c *Client) decode(body []byte) ([]Repo, error) {
	switch c.kind {
	case GitLab:
		var ps []struct {
			Path          string    `json:"path"`
			PathNS        string    `json:"path_with_namespace"`
			HTTPURL       string    `json:"http_url_to_repo"`
			SSHURL        string    `json:"ssh_url_to_repo"`
			DefaultBranch string    `json:"default_branch"`
			Visibility    string    `json:"visibility"`
			LastActivity  time.Time `json:"last_activity_at"`
		}
		if err := json.Unmarshal(body, &ps); err != nil {
			return nil, err
		}
		out := make([]Repo, 0, len(ps))
		for _, p := range ps {
			out = append(out, Repo{Name: p.Path, FullName: p.PathNS, CloneURL: p.HTTPURL, SSHURL: p.SSHURL, DefaultBranch: p.DefaultBranch,
				Private: p.Visibility != "public", UpdatedAt: p.LastActivity})
		}
		return out, nil
	default: // GitHub and Gitea share these field names
		var rs []struct {
			Name          string    `json:"name"`
			FullName      string    `json:"full_name"`
			CloneURL      string    `json:"clone_url"`
			SSHURL        string    `json:"ssh_url"`
			DefaultBranch string    `json:"default_branch"`
			Private       bool      `json:"private"`
			UpdatedAt     time.Time `json:"updated_at"`
		}
		if err := json.Unmarshal(body, &rs); err != nil {
			return nil, err
		}
		out := make([]Repo, 0, len(rs))
		for _, r := range rs {
			out = append(out, Repo{Name: r.Name, FullName: r.FullName, CloneURL: r.CloneURL, SSHURL: r.SSHURL, DefaultBranch: r.DefaultBranch,
				Private: r.Private, UpdatedAt: r.UpdatedAt})
		}
		return out, nil
	}
}
