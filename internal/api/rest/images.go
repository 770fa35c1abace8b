package rest

import (
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/images"
)

func (a *API) reportImage(w http.ResponseWriter, r *http.Request) error {
	var in client.ReportImageRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	im, err := a.images.ReportImage(r.Context(), principal(r), images.Report{Image: in.Image, Digest: in.Digest, Tags: in.Tags,
		Commit: in.Commit, Branch: in.Branch, RepoURL: in.RepoURL, Message: in.Message, Issues: in.Issues})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToReportedImage(im))
	return nil
}

func (a *API) listImages(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ims, err := a.images.ListImages(r.Context(), principal(r), images.ImageFilter{Repository: q.Get("repository"), Digest: q.Get("digest"),
		Commit: q.Get("commit")}, page)
	if err != nil {
		return err
	}
	out := client.List[client.ReportedImage]{Items: make([]client.ReportedImage, 0, len(ims))}
	for _, im := range ims {
		out.Items = append(out.Items, ToReportedImage(im))
	}
	if len(ims) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ims), ims[len(ims)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) listIssueTrackers(w http.ResponseWriter, r *http.Request) error {
	ts, err := a.images.ListTrackers(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.IssueTracker]{Items: make([]client.IssueTracker, 0, len(ts))}
	for _, t := range ts {
		out.Items = append(out.Items, toIssueTracker(t))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createIssueTracker(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateIssueTrackerRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	t, err := a.images.CreateTracker(r.Context(), principal(r), images.TrackerSpec{Name: in.Name, Kind: in.Kind, URL: in.URL,
		Username: in.Username, Token: in.Token, Scope: in.Scope})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toIssueTracker(t))
	return nil
}

func (a *API) deleteIssueTracker(w http.ResponseWriter, r *http.Request) error {
	if err := a.images.DeleteTracker(r.Context(), principal(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func toIssueTracker(t images.Tracker) client.IssueTracker {
	return client.IssueTracker{Name: t.Name, Kind: t.Kind, URL: t.URL, Username: t.Username, Scope: t.Scope, HasToken: t.HasToken, CreatedAt: t.CreatedAt}
}

// ToImageCommit converts an image's commit to its API form (nil when nothing is known).
func ToImageCommit(c images.Commit) *client.ImageCommit {
	if c == (images.Commit{}) {
		return nil
	}
	return &client.ImageCommit{SHA: c.SHA, Branch: c.Branch, RepoURL: c.RepoURL, Message: c.Message, Author: c.Author, Time: timeOrNil(c.Time)}
}

// ToImageIssues converts issues to their API form.
func ToImageIssues(is []images.Issue) []client.ImageIssue {
	out := make([]client.ImageIssue, 0, len(is))
	for _, i := range is {
		out = append(out, client.ImageIssue{Key: i.Key, Tracker: i.Tracker, Kind: i.Kind, Title: i.Title, State: i.State, URL: i.URL, Error: i.Error})
	}
	return out
}

// ToReportedImage converts a reported image to its API form.
func ToReportedImage(im images.Image) client.ReportedImage {
	return client.ReportedImage{ID: im.ID, Registry: im.Registry, Repository: im.Repository, Digest: im.Digest, Tags: im.Tags, BuildID: im.BuildID,
		Commit: ToImageCommit(im.Commit), Issues: ToImageIssues(im.Issues), ReportedBy: im.ReportedBy, CreatedAt: im.CreatedAt, UpdatedAt: im.UpdatedAt}
}
