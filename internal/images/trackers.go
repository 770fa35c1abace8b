package images

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// Kinds of issue trackers.
const (
	TrackerJira   = "jira"
	TrackerGitHub = "github"
	TrackerGitLab = "gitlab"
)

// Kinds of issues.
const (
	IssueKindIssue       = "issue"
	IssueKindPullRequest = "pull-request"
)

// Default API URLs of the SaaS trackers.
const (
	DefaultGitHubURL = "https://api.github.com"
	DefaultGitLabURL = "https://gitlab.com"
)

const (
	trackerTimeout = 10 * time.Second
	maxAnswer      = 1 << 20
	maxTitle       = 500
	maxScope       = 50
	fetchBudget    = 5 * time.Second
)

var trackerNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Tracker is an issue-tracker integration of an account, without its token.
type Tracker struct {
	Name, Kind, URL, Username string
	Scope                     []string
	HasToken                  bool
	CreatedAt                 time.Time
}

// TrackerSpec creates a tracker.
type TrackerSpec struct {
	Name string
	Kind string // TrackerJira, TrackerGitHub, TrackerGitLab
	// URL is the API's base URL: the Jira site (https://acme.atlassian.net), GitHub's API
	// (DefaultGitHubURL when empty), GitLab (DefaultGitLabURL when empty).
	URL string
	// Username, with a Jira Cloud API token: basic authentication; without: the token is a
	// bearer token (Jira Data Center personal access tokens, GitHub, GitLab's PRIVATE-TOKEN).
	Username string
	Token    string
	// Scope is the Jira project keys (PROJ) or the repository path prefixes (acme, acme/web)
	// the tracker answers for; empty: every key of its kind.
	Scope []string
}

// CreateTracker adds an issue-tracker integration to p's account. Its URL must be one the
// operator's network policy lets tenants reach.
func (s *Service) CreateTracker(ctx context.Context, p rbac.Principal, t TrackerSpec) (_ Tracker, err error) {
	e := audit.Start(ctx, p, "issue-tracker.create", "issue-tracker", t.Name)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageContexts); err != nil {
		return Tracker{}, err
	}
	if !trackerNameRE.MatchString(t.Name) {
		return Tracker{}, errdefs.Invalid("name", t.Name, "is not a tracker name: 1 to 63 lower-case letters, digits and '-', starting with a letter or digit")
	}
	switch t.Kind {
	case TrackerJira:
		if t.URL == "" {
			return Tracker{}, errdefs.Invalid("url", "", "is required for a Jira tracker: the site's URL, e.g. https://acme.atlassian.net")
		}
	case TrackerGitHub:
		if t.URL == "" {
			t.URL = DefaultGitHubURL
		}
	case TrackerGitLab:
		if t.URL == "" {
			t.URL = DefaultGitLabURL
		}
	default:
		return Tracker{}, errdefs.Invalid("kind", t.Kind, "is not a tracker kind: use jira, github or gitlab")
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" {
		return Tracker{}, errdefs.Invalid("url", t.URL, "is not an http(s) URL without query or fragment")
	}
	if u.User != nil {
		return Tracker{}, errdefs.Invalid("url", "(redacted)", "must not carry credentials: give username and token")
	}
	if err := s.net.CheckServerURL("url", t.URL); err != nil {
		return Tracker{}, err
	}
	if len(t.Scope) > maxScope {
		return Tracker{}, errdefs.Invalid("scope", strconv.Itoa(len(t.Scope)), fmt.Sprintf("has more than %d entries", maxScope))
	}
	for i, sc := range t.Scope {
		ok := t.Kind == TrackerJira && validProject(sc) || t.Kind != TrackerJira && (validRepoPath(sc) || validRepoPath(sc+"/x"))
		if !ok {
			return Tracker{}, errdefs.Invalid(fmt.Sprintf("scope[%d]", i), sc, "is not a Jira project key (PROJ) or a repository path prefix (acme, acme/web) for the tracker's kind")
		}
	}
	if len(t.Username) > 200 || strings.ContainsFunc(t.Username, isControl) || strings.Contains(t.Username, ":") {
		return Tracker{}, errdefs.Invalid("username", t.Username, "is not a user name: at most 200 characters, no ':' or control characters")
	}
	if len(t.Token) > 4096 || strings.ContainsFunc(t.Token, isControl) {
		return Tracker{}, errdefs.Invalid("token", "(redacted)", "is not a token: at most 4096 characters, no control characters")
	}
	row := store.IssueTracker{ID: store.NewID(store.PrefixIssueTracker), AccountID: p.AccountID, Name: t.Name, Kind: t.Kind,
		URL: strings.TrimSuffix(t.URL, "/"), Username: t.Username, Scope: t.Scope, CreatedAt: s.now().UTC()}
	if t.Token != "" {
		if s.keys == nil {
			return Tracker{}, fmt.Errorf("issue tracker %s: no master key to encrypt its token", t.Name)
		}
		if row.Token, err = s.keys.Encrypt([]byte(t.Token), tokenAAD(p.AccountID, t.Name)); err != nil {
			return Tracker{}, fmt.Errorf("issue tracker %s: encrypt token: %w", t.Name, err)
		}
	}
	e.Detail("%s %s", t.Kind, row.URL)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateIssueTracker(ctx, row); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Tracker{}, fmt.Errorf("issue tracker %s: %w", t.Name, err)
	}
	return toTracker(row), nil
}

func tokenAAD(accountID, name string) []byte { return secrets.AAD("issue-tracker", accountID, name) }

func toTracker(r store.IssueTracker) Tracker {
	sc := r.Scope
	if sc == nil {
		sc = []string{}
	}
	return Tracker{Name: r.Name, Kind: r.Kind, URL: r.URL, Username: r.Username, Scope: sc, HasToken: r.Token != "", CreatedAt: r.CreatedAt}
}

// ListTrackers returns p's account's issue trackers by name.
func (s *Service) ListTrackers(ctx context.Context, p rbac.Principal) ([]Tracker, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	rows, err := s.db.ListIssueTrackers(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	out := make([]Tracker, 0, len(rows))
	for _, r := range rows {
		out = append(out, toTracker(r))
	}
	return out, nil
}

// DeleteTracker removes p's account's tracker name. The issues it fetched stay as they are.
func (s *Service) DeleteTracker(ctx context.Context, p rbac.Principal, name string) (err error) {
	e := audit.Start(ctx, p, "issue-tracker.delete", "issue-tracker", name)
	defer func() { s.finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageContexts); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteIssueTracker(ctx, p.AccountID, name); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// trackerFor returns the first tracker (by name) that answers for key, or false.
func trackerFor(trackers []store.IssueTracker, k Key) (store.IssueTracker, bool) {
	for _, t := range trackers {
		switch {
		case k.Kind == KeyJira && t.Kind == TrackerJira:
			if len(t.Scope) == 0 || slices.Contains(t.Scope, k.Project) {
				return t, true
			}
		case k.Kind == KeyRepo && (t.Kind == TrackerGitHub || t.Kind == TrackerGitLab):
			if len(t.Scope) == 0 || slices.ContainsFunc(t.Scope, func(p string) bool { return k.Repo == p || strings.HasPrefix(k.Repo, p+"/") }) {
				return t, true
			}
		}
	}
	return store.IssueTracker{}, false
}

// issues returns the issues of keys as stored, fetching from the trackers those not stored,
// stale, or failed a while ago (at most maxFetches).
func (s *Service) issues(ctx context.Context, accountID string, keys []string) (map[string]Issue, error) {
	out := make(map[string]Issue, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	stored, err := s.db.Issues(ctx, accountID, keys)
	if err != nil {
		return nil, fmt.Errorf("issues: %w", err)
	}
	have := make(map[string]store.Issue, len(stored))
	for _, is := range stored {
		have[is.Key] = is
	}
	now := s.now()
	var trackers []store.IssueTracker
	loaded, fetches := false, 0
	// One request waits for trackers at most fetchBudget in all: a slow tracker delays a
	// listing by that much, not by maxFetches × trackerTimeout.
	budget, cancel := context.WithTimeout(ctx, fetchBudget)
	defer cancel()
	for _, key := range keys {
		st, ok := have[key]
		if ok {
			out[key] = toIssue(st)
			age := now.Sub(st.FetchedAt)
			if st.Error == "" && age < s.ttl || st.Error != "" && age < DefaultIssueRetry {
				continue
			}
		}
		k, err := ParseKey("issue", key)
		if err != nil || k.Kind == KeyNumber {
			out[key] = Issue{Key: key, Error: "no repository to look it up in: report the image with its repository URL"}
			continue
		}
		if !loaded {
			if trackers, err = s.db.ListIssueTrackers(ctx, accountID); err != nil {
				return nil, fmt.Errorf("issue trackers: %w", err)
			}
			loaded = true
		}
		t, found := trackerFor(trackers, k)
		if !found {
			if !ok {
				out[key] = Issue{Key: key, Error: "no issue tracker is configured for it"}
			}
			continue
		}
		if fetches >= maxFetches || budget.Err() != nil {
			if !ok {
				out[key] = Issue{Key: key, Tracker: t.Name, Error: "not fetched yet"}
			}
			continue
		}
		fetches++
		is := s.fetch(budget, t, k)
		is.AccountID, is.Key, is.Tracker, is.FetchedAt = accountID, key, t.Name, now
		if err := s.db.PutIssue(ctx, is); err != nil {
			return nil, fmt.Errorf("issue %s: %w", key, err)
		}
		if is.Error != "" && ok {
			st.Error, st.FetchedAt = is.Error, now
			is = st
		}
		out[key] = toIssue(is)
	}
	return out, nil
}

func toIssue(is store.Issue) Issue {
	return Issue{Key: is.Key, Tracker: is.Tracker, Kind: is.Kind, Title: is.Title, State: is.State, URL: is.URL, Error: is.Error}
}

// fetch asks tracker t for issue k. A failure is the returned issue's Error, in words that never
// hold anything the tracker sent.
func (s *Service) fetch(ctx context.Context, t store.IssueTracker, k Key) store.Issue {
	var token string
	if t.Token != "" {
		b, err := s.keys.Decrypt(t.Token, tokenAAD(t.AccountID, t.Name))
		if err != nil {
			return store.Issue{Error: "the tracker's token cannot be decrypted: set the tracker up again"}
		}
		token = string(b)
	}
	var reqURL string
	switch t.Kind {
	case TrackerJira:
		reqURL = t.URL + "/rest/api/2/issue/" + url.PathEscape(k.String()) + "?fields=summary,status"
	case TrackerGitHub:
		reqURL = t.URL + "/repos/" + k.Repo + "/issues/" + strconv.FormatInt(k.Number, 10)
	case TrackerGitLab:
		reqURL = t.URL + "/api/v4/projects/" + url.PathEscape(k.Repo) + "/issues/" + strconv.FormatInt(k.Number, 10)
	}
	ctx, cancel := context.WithTimeout(ctx, trackerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reqURL, nil)
	if err != nil {
		return store.Issue{Error: "the tracker's URL is not usable"}
	}
	req.Header.Set("Accept", "application/json")
	switch {
	case token == "":
	case t.Kind == TrackerGitLab:
		req.Header.Set("PRIVATE-TOKEN", token)
	case t.Kind == TrackerJira && t.Username != "":
		req.SetBasicAuth(t.Username, token)
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.net.HTTPClient(trackerTimeout).Do(req)
	if err != nil {
		why := netpolicy.Describe(err)
		if why == "" {
			why = "the request failed"
		}
		return store.Issue{Error: "tracker " + t.Name + " unreachable: " + why}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return store.Issue{Error: "tracker " + t.Name + " does not know it"}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return store.Issue{Error: fmt.Sprintf("tracker %s refused the token (HTTP %d)", t.Name, resp.StatusCode)}
	case resp.StatusCode/100 != 2:
		return store.Issue{Error: fmt.Sprintf("tracker %s answered HTTP %d", t.Name, resp.StatusCode)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil || len(body) > maxAnswer {
		return store.Issue{Error: "tracker " + t.Name + " sent no usable answer"}
	}
	is, ok := decodeIssue(t, k, body)
	if !ok {
		return store.Issue{Error: "tracker " + t.Name + " sent no usable answer"}
	}
	return is
}

// decodeIssue reads a tracker's answer for issue k: title, state, web URL and kind.
func decodeIssue(t store.IssueTracker, k Key, body []byte) (store.Issue, bool) {
	var is store.Issue
	switch t.Kind {
	case TrackerJira:
		var a struct {
			Key    string `json:"key"`
			Fields struct {
				Summary string `json:"summary"`
				Status  struct {
					Name string `json:"name"`
				} `json:"status"`
			} `json:"fields"`
		}
		if json.Unmarshal(body, &a) != nil || a.Fields.Summary == "" {
			return is, false
		}
		is = store.Issue{Kind: IssueKindIssue, Title: a.Fields.Summary, State: a.Fields.Status.Name, URL: t.URL + "/browse/" + url.PathEscape(k.String())}
	default:
		var a struct {
			Title       string          `json:"title"`
			State       string          `json:"state"`
			HTMLURL     string          `json:"html_url"`
			WebURL      string          `json:"web_url"`
			PullRequest json.RawMessage `json:"pull_request"`
		}
		if json.Unmarshal(body, &a) != nil || a.Title == "" {
			return is, false
		}
		is = store.Issue{Kind: IssueKindIssue, Title: a.Title, State: a.State, URL: a.HTMLURL}
		if t.Kind == TrackerGitLab {
			is.URL = a.WebURL
		}
		if len(a.PullRequest) > 0 && string(a.PullRequest) != "null" {
			is.Kind = IssueKindPullRequest
		}
	}
	if u, err := url.Parse(is.URL); err != nil || u.Scheme != "https" && u.Scheme != "http" {
		is.URL = ""
	}
	is.Title, is.State, is.URL = truncate(is.Title, maxTitle), truncate(is.State, 50), truncate(is.URL, 2048)
	return is, true
}
