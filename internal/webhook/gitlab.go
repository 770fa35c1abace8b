package webhook

import (
	"net/http"
	"strconv"
)

// GitLab webhook payloads (https://docs.gitlab.com/user/project/integrations/webhook_events/),
// only the fields Freshet uses.

type glProject struct {
	ID                int64  `json:"id"`
	Name              string `json:"name"`
	PathWithNamespace string `json:"path_with_namespace"`
	WebURL            string `json:"web_url"`
	GitHTTPURL        string `json:"git_http_url"`
	GitSSHURL         string `json:"git_ssh_url"`
	DefaultBranch     string `json:"default_branch"`
}

type glCommit struct {
	ID      string `json:"id"`
	Message string `json:"message"`
	URL     string `json:"url"`
	Author  struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"author"`
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Removed  []string `json:"removed"`
}

type glPush struct {
	ObjectKind        string     `json:"object_kind"`
	Ref               string     `json:"ref"`
	Before            string     `json:"before"`
	After             string     `json:"after"`
	CheckoutSHA       string     `json:"checkout_sha"`
	UserName          string     `json:"user_name"`
	UserUsername      string     `json:"user_username"`
	UserEmail         string     `json:"user_email"`
	Project           *glProject `json:"project"`
	Commits           []glCommit `json:"commits"`
	TotalCommitsCount int        `json:"total_commits_count"`
}

type glUser struct {
	Name     string `json:"name"`
	Username string `json:"username"`
	Email    string `json:"email"`
}

type glMergeRequest struct {
	ObjectKind       string     `json:"object_kind"`
	User             glUser     `json:"user"`
	Project          *glProject `json:"project"`
	ObjectAttributes *struct {
		IID             int        `json:"iid"`
		Title           string     `json:"title"`
		SourceBranch    string     `json:"source_branch"`
		TargetBranch    string     `json:"target_branch"`
		SourceProjectID int64      `json:"source_project_id"`
		TargetProjectID int64      `json:"target_project_id"`
		State           string     `json:"state"`
		Action          string     `json:"action"`
		URL             string     `json:"url"`
		OldRev          string     `json:"oldrev"`
		LastCommit      *glCommit  `json:"last_commit"`
		Source          *glProject `json:"source"`
	} `json:"object_attributes"`
}

type glRelease struct {
	ObjectKind string     `json:"object_kind"`
	Action     string     `json:"action"`
	Tag        string     `json:"tag"`
	Project    *glProject `json:"project"`
	Commit     *glCommit  `json:"commit"`
}

// GitLab merge request actions, as Freshet names them.
var gitLabMRActions = map[string]string{
	"open":   ActionOpened,
	"close":  ActionClosed,
	"reopen": ActionReopened,
	"merge":  ActionMerged,
}

// GitLab release actions, as Freshet names them. A GitLab release is public when created.
var gitLabReleaseActions = map[string]string{
	"create": ActionPublished,
	"update": "edited",
	"delete": "deleted",
}

func parseGitLab(h http.Header, body []byte) ([]Event, error) {
	name, err := header(h, "GitLab", "X-Gitlab-Event")
	if err != nil {
		return nil, err
	}
	// Idempotency-Key stays the same across retries of one event (GitLab 17.4+);
	// X-Gitlab-Event-UUID identifies the event in older versions.
	id, err := header(h, "GitLab", "X-Gitlab-Event-UUID", "Idempotency-Key")
	if err != nil {
		return nil, err
	}
	if k := h.Get("Idempotency-Key"); k != "" {
		id = k
	}
	ev := Event{DeliveryID: id}
	switch name {
	case "Push Hook", "Tag Push Hook":
		var p glPush
		if err := decode(GitLab, name, body, &p); err != nil {
			return nil, err
		}
		if err := p.fill(name, &ev); err != nil {
			return nil, err
		}
	case "Merge Request Hook":
		var p glMergeRequest
		if err := decode(GitLab, name, body, &p); err != nil {
			return nil, err
		}
		if err := p.fill(name, &ev); err != nil {
			return nil, err
		}
	case "Release Hook":
		var p glRelease
		if err := decode(GitLab, name, body, &p); err != nil {
			return nil, err
		}
		switch {
		case p.Action == "":
			return nil, missing(GitLab, name, "action")
		case p.Tag == "":
			return nil, missing(GitLab, name, "tag")
		case p.Project == nil || p.Project.PathWithNamespace == "":
			return nil, missing(GitLab, name, "project.path_with_namespace")
		}
		ev.Kind, ev.Action = KindRelease, p.Action
		if a, ok := gitLabReleaseActions[p.Action]; ok {
			ev.Action = a
		}
		ev.Tag, ev.Ref, ev.Repo = p.Tag, "refs/tags/"+p.Tag, p.Project.repo()
		if p.Commit != nil && p.Commit.ID != "" {
			c := p.Commit.commit()
			ev.SHA, ev.HeadCommit = c.ID, &c
		}
	default:
		return nil, unsupported(GitLab, name)
	}
	return []Event{ev}, nil
}

func (p *glPush) fill(name string, ev *Event) error {
	switch {
	case p.Ref == "":
		return missing(GitLab, name, "ref")
	case p.Project == nil || p.Project.PathWithNamespace == "":
		return missing(GitLab, name, "project.path_with_namespace")
	case p.After == "":
		return missing(GitLab, name, "after")
	}
	if err := pushEvent(GitLab, ev, p.Ref, name); err != nil {
		return err
	}
	ev.Repo = p.Project.repo()
	ev.Before, ev.SHA = p.Before, p.After
	ev.Created, ev.Deleted = isZeroSHA(p.Before), isZeroSHA(p.After)
	if p.CheckoutSHA != "" && !ev.Deleted {
		ev.SHA = p.CheckoutSHA // for an annotated tag "after" is the tag object
	}
	for i := range p.Commits {
		c := p.Commits[i].commit()
		ev.Commits = append(ev.Commits, c)
		if c.ID == ev.SHA {
			ev.HeadCommit = &c
		}
	}
	// GitLab lists at most 20 commits and says how many there were.
	ev.FilesIncomplete = p.TotalCommitsCount > len(p.Commits)
	ev.Sender = User{Login: p.UserUsername, Name: p.UserName, Email: p.UserEmail}
	return nil
}

func (p *glMergeRequest) fill(name string, ev *Event) error {
	a := p.ObjectAttributes
	switch {
	case a == nil:
		return missing(GitLab, name, "object_attributes")
	case a.IID <= 0:
		return missing(GitLab, name, "object_attributes.iid")
	case a.SourceBranch == "":
		return missing(GitLab, name, "object_attributes.source_branch")
	case a.TargetBranch == "":
		return missing(GitLab, name, "object_attributes.target_branch")
	case p.Project == nil || p.Project.PathWithNamespace == "":
		return missing(GitLab, name, "project.path_with_namespace")
	}
	ev.Kind = KindPullRequest
	switch act, known := gitLabMRActions[a.Action]; {
	case known:
		ev.Action = act
	case a.Action == "update" && a.OldRev != "":
		ev.Action = ActionSynchronize // oldrev is only set when the update pushed commits
	case a.Action == "update":
		ev.Action = ActionEdited
	default:
		ev.Action = a.Action // approved, unapproved, approval, unapproval, …
	}
	merged := ev.Action == ActionMerged || a.State == "merged"
	ev.Repo = p.Project.repo()
	ev.Ref = "refs/merge-requests/" + strconv.Itoa(a.IID) + "/head"
	ev.Branch, ev.Before = a.SourceBranch, a.OldRev
	if a.LastCommit != nil && a.LastCommit.ID != "" {
		c := a.LastCommit.commit()
		ev.SHA, ev.HeadCommit = c.ID, &c
	}
	ev.FilesIncomplete = true // merge request payloads list no files
	ev.Sender = User{Login: p.User.Username, Name: p.User.Name, Email: p.User.Email}
	src := p.Project.PathWithNamespace
	if a.Source != nil && a.Source.PathWithNamespace != "" {
		src = a.Source.PathWithNamespace
	}
	fork := a.SourceProjectID != 0 && a.TargetProjectID != 0 && a.SourceProjectID != a.TargetProjectID
	ev.PullRequest = &PullRequest{
		Number: a.IID, Title: a.Title, URL: a.URL, Merged: merged,
		SourceBranch: a.SourceBranch, TargetBranch: a.TargetBranch, HeadSHA: ev.SHA,
		SourceRepo: src, Fork: fork,
	}
	return nil
}

func (p *glProject) repo() Repo {
	owner, name := splitFullName(p.PathWithNamespace)
	return Repo{
		FullName: p.PathWithNamespace, Owner: owner, Name: name,
		CloneURL: p.GitHTTPURL, SSHURL: p.GitSSHURL, HTMLURL: p.WebURL, DefaultBranch: p.DefaultBranch,
	}
}

func (c *glCommit) commit() Commit {
	return Commit{
		ID: c.ID, Message: c.Message, URL: c.URL,
		Author: User{Name: c.Author.Name, Email: c.Author.Email},
		Added:  c.Added, Modified: c.Modified, Removed: c.Removed,
	}
}
