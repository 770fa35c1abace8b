package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Commit states, as Freshet names them; each provider gets its own word.
const (
	StatePending = "pending" // the build is queued or running
	StateSuccess = "success"
	StateFailure = "failure" // the build failed
	StateError   = "error"   // the build could not run, or was terminated
)

// Status is a commit status to post.
type Status struct {
	State       string // StatePending, StateSuccess, StateFailure or StateError
	Context     string // what tells this status from other systems' (GitHub context, GitLab name, Bitbucket key and name)
	TargetURL   string // the build's page
	Description string // a short text; cut to 140 characters
}

var (
	shaRE      = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	repoPathRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$`)
)

// stateWord is each provider's word for each state: GitHub's and Gitea's statuses API,
// GitLab's commit status API, Bitbucket Cloud's build status API.
var stateWord = map[string]map[string]string{
	GitHub:    {StatePending: "pending", StateSuccess: "success", StateFailure: "failure", StateError: "error"},
	Gitea:     {StatePending: "pending", StateSuccess: "success", StateFailure: "failure", StateError: "error"},
	GitLab:    {StatePending: "running", StateSuccess: "success", StateFailure: "failed", StateError: "canceled"},
	Bitbucket: {StatePending: "INPROGRESS", StateSuccess: "SUCCESSFUL", StateFailure: "FAILED", StateError: "STOPPED"},
}

// PostStatus sets the status of commit sha of repository repo (owner/name; a GitLab
// group/subgroup/name) to st. Errors are those of ListRepos: ErrUnavailable for what may pass
// (an outage, a rate limit), ErrForbidden, ErrNotFound and ErrInvalid for what will not.
func (c *Client) PostStatus(ctx context.Context, repo, sha string, st Status) error {
	if !repoPathRE.MatchString(repo) || dotComponent(repo) {
		return errdefs.Invalid("repo", repo, "is not owner/name")
	}
	if !shaRE.MatchString(sha) {
		return errdefs.Invalid("sha", sha, "is not a full commit SHA (40 or 64 lower-case hex digits)")
	}
	word := stateWord[c.kind][st.State]
	if word == "" {
		return errdefs.Invalid("state", st.State, "is not pending, success, failure or error")
	}
	desc := st.Description
	if r := []rune(desc); len(r) > 140 {
		desc = string(r[:139]) + "…"
	}
	var path string
	var body any
	switch c.kind {
	case GitHub:
		path = "/repos/" + escapePath(repo) + "/statuses/" + sha
		body = map[string]string{"state": word, "target_url": st.TargetURL, "description": desc, "context": st.Context}
	case Gitea:
		path = "/api/v1/repos/" + escapePath(repo) + "/statuses/" + sha
		body = map[string]string{"state": word, "target_url": st.TargetURL, "description": desc, "context": st.Context}
	case GitLab:
		path = "/api/v4/projects/" + url.PathEscape(repo) + "/statuses/" + sha
		body = map[string]string{"state": word, "target_url": st.TargetURL, "description": desc, "name": st.Context}
	case Bitbucket:
		path = "/repositories/" + escapePath(repo) + "/commit/" + sha + "/statuses/build"
		body = map[string]string{"key": st.Context, "state": word, "url": st.TargetURL, "name": st.Context, "description": desc}
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	c.authorize(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.connError(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err := c.status(resp); err != nil {
		if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%w (the token needs to write commit statuses of %s)", err, repo)
		}
		return err
	}
	return nil
}

// dotComponent reports whether repo has a "." or ".." component.
func dotComponent(repo string) bool {
	for _, c := range strings.Split(repo, "/") {
		if strings.Trim(c, ".") == "" {
			return true
		}
	}
	return false
}

// escapePath escapes each component of an owner/name path.
func escapePath(repo string) string {
	parts := strings.Split(repo, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
