package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// ImageCommit is the commit an image was built from.
type ImageCommit struct {
	SHA     string     `json:"sha,omitempty"`
	Branch  string     `json:"branch,omitempty"`
	RepoURL string     `json:"repoUrl,omitempty"`
	Message string     `json:"message,omitempty"`
	Author  string     `json:"author,omitempty"`
	Time    *time.Time `json:"time,omitempty"`
}

// ImageIssue is an issue or pull request a commit names, with what its tracker answered.
type ImageIssue struct {
	Key     string `json:"key"`
	Tracker string `json:"tracker,omitempty"`
	Kind    string `json:"kind,omitempty"` // issue, pull-request
	Title   string `json:"title,omitempty"`
	State   string `json:"state,omitempty"`
	URL     string `json:"url,omitempty"`
	// Error says why there is no title: no tracker for the key, or what went wrong asking it.
	Error string `json:"error,omitempty"`
}

// ReportedImage is an image reported by a CI build or through the API, with its commit and issues.
type ReportedImage struct {
	ID         string       `json:"id"`
	Registry   string       `json:"registry,omitempty"`
	Repository string       `json:"repository"`
	Digest     string       `json:"digest"`
	Tags       []string     `json:"tags"`
	BuildID    string       `json:"buildId,omitempty"`
	Commit     *ImageCommit `json:"commit,omitempty"`
	Issues     []ImageIssue `json:"issues"`
	ReportedBy string       `json:"reportedBy,omitempty"`
	CreatedAt  time.Time    `json:"createdAt"`
	UpdatedAt  time.Time    `json:"updatedAt"`
}

// ReportImageRequest reports an image (Codefresh's report-image is the model).
type ReportImageRequest struct {
	// Image is the reference, [registry/]repository[:tag][@digest].
	Image string `json:"image"`
	// Digest is the manifest digest, sha256:…; required unless Image carries it.
	Digest string   `json:"digest,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	// Commit is the git commit SHA the image was built from.
	Commit  string `json:"commit,omitempty"`
	Branch  string `json:"branch,omitempty"`
	RepoURL string `json:"repoUrl,omitempty"`
	// Message is the commit message; the server reads it from RepoURL when empty.
	Message string `json:"message,omitempty"`
	// Issues are issue keys: PROJ-123, owner/repo#123, #123.
	Issues []string `json:"issues,omitempty"`
}

// ImageFilter narrows an image listing.
type ImageFilter struct {
	ListOptions
	Repository string
	Digest     string
	Commit     string
}

// IssueTracker is an issue-tracker integration (its token is never returned).
type IssueTracker struct {
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	URL       string    `json:"url"`
	Username  string    `json:"username,omitempty"`
	Scope     []string  `json:"scope"`
	HasToken  bool      `json:"hasToken"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateIssueTrackerRequest adds an issue-tracker integration.
type CreateIssueTrackerRequest struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"` // jira, github, gitlab
	URL      string   `json:"url,omitempty"`
	Username string   `json:"username,omitempty"`
	Token    string   `json:"token,omitempty"`
	Scope    []string `json:"scope,omitempty"`
}

// ReportImage reports an image built by a CI system.
func (c *Client) ReportImage(ctx context.Context, r ReportImageRequest) (ReportedImage, error) {
	var out ReportedImage
	err := c.do(ctx, http.MethodPost, "/api/v1/images", nil, r, &out)
	return out, err
}

// ListImages lists reported images, newest first.
func (c *Client) ListImages(ctx context.Context, f ImageFilter) (List[ReportedImage], error) {
	q := listQuery(f.ListOptions)
	for k, v := range map[string]string{"repository": f.Repository, "digest": f.Digest, "commit": f.Commit} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out List[ReportedImage]
	err := c.do(ctx, http.MethodGet, "/api/v1/images", q, nil, &out)
	return out, err
}

// CreateIssueTracker adds an issue-tracker integration.
func (c *Client) CreateIssueTracker(ctx context.Context, r CreateIssueTrackerRequest) (IssueTracker, error) {
	var out IssueTracker
	err := c.do(ctx, http.MethodPost, "/api/v1/issue-trackers", nil, r, &out)
	return out, err
}

// ListIssueTrackers lists the account's issue trackers.
func (c *Client) ListIssueTrackers(ctx context.Context) (List[IssueTracker], error) {
	var out List[IssueTracker]
	err := c.do(ctx, http.MethodGet, "/api/v1/issue-trackers", nil, nil, &out)
	return out, err
}

// DeleteIssueTracker removes an issue tracker.
func (c *Client) DeleteIssueTracker(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/issue-trackers/"+url.PathEscape(name), nil, nil, nil)
}
