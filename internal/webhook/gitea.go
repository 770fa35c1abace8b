package webhook

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Gitea (and Forgejo) webhook payloads (https://docs.gitea.com/usage/webhooks), only the fields
// Freshet uses. They follow GitHub's shapes closely.

type gtUser struct {
	Login    string `json:"login"`
	Username string `json:"username"`
	FullName string `json:"full_name"`
	Email    string `json:"email"`
}

type gtRepo struct {
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         gtUser `json:"owner"`
	HTMLURL       string `json:"html_url"`
	CloneURL      string `json:"clone_url"`
	SSHURL        string `json:"ssh_url"`
	DefaultBranch string `json:"default_branch"`
}

type gtCommit struct {
	ID      string `json:"id"`
	Message string `json:"message"`
	URL     string `json:"url"`
	Author  struct {
		Name     string `json:"name"`
		Email    string `json:"email"`
		Username string `json:"username"`
	} `json:"author"`
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Removed  []string `json:"removed"`
}

type gtPush struct {
	Ref          string     `json:"ref"`
	Before       string     `json:"before"`
	After        string     `json:"after"`
	Commits      []gtCommit `json:"commits"`
	TotalCommits int        `json:"total_commits"`
	HeadCommit   *gtCommit  `json:"head_commit"`
	Repository   *gtRepo    `json:"repository"`
	Pusher       gtUser     `json:"pusher"`
	Sender       gtUser     `json:"sender"`
}

// gtDelete is Gitea's "delete" event: a branch or tag was deleted (Gitea sends no push for it).
type gtDelete struct {
	Ref        string  `json:"ref"`
	RefType    string  `json:"ref_type"`
	Repository *gtRepo `json:"repository"`
	Sender     gtUser  `json:"sender"`
}

type gtBranchRef struct {
	Ref    string  `json:"ref"`
	SHA    string  `json:"sha"`
	RepoID int64   `json:"repo_id"`
	Repo   *gtRepo `json:"repo"`
}

type gtPullRequestEvent struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	PullRequest *struct {
		Number  int         `json:"number"`
		Title   string      `json:"title"`
		HTMLURL string      `json:"html_url"`
		Merged  bool        `json:"merged"`
		Head    gtBranchRef `json:"head"`
		Base    gtBranchRef `json:"base"`
	} `json:"pull_request"`
	Repository *gtRepo `json:"repository"`
	Sender     gtUser  `json:"sender"`
}

type gtReleaseEvent struct {
	Action  string `json:"action"`
	Release *struct {
		TagName string `json:"tag_name"`
	} `json:"release"`
	Repository *gtRepo `json:"repository"`
	Sender     gtUser  `json:"sender"`
}

// Gitea pull request actions that differ from GitHub's names.
var giteaPRActions = map[string]string{
	"synchronized":  ActionSynchronize,
	"label_updated": "labeled",
	"label_cleared": "unlabeled",
}

func parseGitea(h http.Header, body []byte) ([]Event, error) {
	name, err := header(h, "Gitea", "X-Gitea-Event", "X-Forgejo-Event", "X-Gogs-Event")
	if err != nil {
		return nil, err
	}
	id, err := header(h, "Gitea", "X-Gitea-Delivery", "X-Forgejo-Delivery", "X-Gogs-Delivery")
	if err != nil {
		return nil, err
	}
	ev := Event{DeliveryID: id}
	switch name {
	case "push":
		var p gtPush
		if err := decode(Gitea, name, body, &p); err != nil {
			return nil, err
		}
		if err := p.fill(&ev); err != nil {
			return nil, err
		}
	case "delete":
		var p gtDelete
		if err := decode(Gitea, name, body, &p); err != nil {
			return nil, err
		}
		switch {
		case p.Ref == "":
			return nil, missing(Gitea, name, "ref")
		case p.Repository == nil || p.Repository.FullName == "":
			return nil, missing(Gitea, name, "repository.full_name")
		}
		ref := p.Ref
		if !strings.HasPrefix(ref, "refs/") {
			switch p.RefType {
			case "branch":
				ref = "refs/heads/" + ref
			case "tag":
				ref = "refs/tags/" + ref
			default:
				return nil, errInvalidRefType(p.RefType)
			}
		}
		if err := pushEvent(Gitea, &ev, ref, name); err != nil {
			return nil, err
		}
		ev.Deleted = true
		ev.Repo, ev.Sender = p.Repository.repo(), p.Sender.user()
	case "pull_request":
		var p gtPullRequestEvent
		if err := decode(Gitea, name, body, &p); err != nil {
			return nil, err
		}
		if err := p.fill(&ev); err != nil {
			return nil, err
		}
	case "release":
		var p gtReleaseEvent
		if err := decode(Gitea, name, body, &p); err != nil {
			return nil, err
		}
		switch {
		case p.Action == "":
			return nil, missing(Gitea, name, "action")
		case p.Release == nil || p.Release.TagName == "":
			return nil, missing(Gitea, name, "release.tag_name")
		case p.Repository == nil || p.Repository.FullName == "":
			return nil, missing(Gitea, name, "repository.full_name")
		}
		ev.Kind, ev.Action = KindRelease, p.Action
		if ev.Action == "updated" {
			ev.Action = "edited"
		}
		ev.Tag, ev.Ref = p.Release.TagName, "refs/tags/"+p.Release.TagName
		ev.Repo, ev.Sender = p.Repository.repo(), p.Sender.user()
	default:
		return nil, unsupported(Gitea, name)
	}
	return []Event{ev}, nil
}

func errInvalidRefType(t string) error {
	return errdefs.Invalid("body.ref_type", t, `is not "branch" or "tag" in a gitea delete payload`)
}

func (p *gtPush) fill(ev *Event) error {
	switch {
	case p.Ref == "":
		return missing(Gitea, "push", "ref")
	case p.Repository == nil || p.Repository.FullName == "":
		return missing(Gitea, "push", "repository.full_name")
	case p.After == "":
		return missing(Gitea, "push", "after")
	}
	if err := pushEvent(Gitea, ev, p.Ref, "push"); err != nil {
		return err
	}
	ev.Repo = p.Repository.repo()
	ev.Before, ev.SHA = p.Before, p.After
	ev.Created, ev.Deleted = isZeroSHA(p.Before), isZeroSHA(p.After)
	if p.HeadCommit != nil && p.HeadCommit.ID != "" && !ev.Deleted {
		c := p.HeadCommit.commit()
		ev.HeadCommit, ev.SHA = &c, c.ID
	}
	for i := range p.Commits {
		ev.Commits = append(ev.Commits, p.Commits[i].commit())
	}
	ev.FilesIncomplete = p.TotalCommits > len(p.Commits)
	ev.Sender = p.Sender.user()
	if ev.Sender.Login == "" {
		ev.Sender = p.Pusher.user()
	}
	return nil
}

func (p *gtPullRequestEvent) fill(ev *Event) error {
	const name = "pull_request"
	pr := p.PullRequest
	switch {
	case p.Action == "":
		return missing(Gitea, name, "action")
	case pr == nil:
		return missing(Gitea, name, "pull_request")
	case pr.Number <= 0 && p.Number <= 0:
		return missing(Gitea, name, "pull_request.number")
	case pr.Head.Ref == "":
		return missing(Gitea, name, "pull_request.head.ref")
	case pr.Base.Ref == "":
		return missing(Gitea, name, "pull_request.base.ref")
	case p.Repository == nil || p.Repository.FullName == "":
		return missing(Gitea, name, "repository.full_name")
	}
	number := pr.Number
	if number <= 0 {
		number = p.Number
	}
	ev.Kind, ev.Action = KindPullRequest, p.Action
	if a, ok := giteaPRActions[p.Action]; ok {
		ev.Action = a
	}
	if ev.Action == ActionClosed && pr.Merged {
		ev.Action = ActionMerged
	}
	ev.Repo, ev.Sender = p.Repository.repo(), p.Sender.user()
	ev.Ref = "refs/pull/" + strconv.Itoa(number) + "/head"
	ev.Branch, ev.SHA = pr.Head.Ref, pr.Head.SHA
	ev.FilesIncomplete = true
	src := ""
	if pr.Head.Repo != nil {
		src = pr.Head.Repo.FullName
	}
	fork := src == "" || !strings.EqualFold(src, p.Repository.FullName)
	if pr.Head.RepoID != 0 && pr.Base.RepoID != 0 {
		fork = pr.Head.RepoID != pr.Base.RepoID
	}
	ev.PullRequest = &PullRequest{
		Number: number, Title: pr.Title, URL: pr.HTMLURL, Merged: pr.Merged,
		SourceBranch: pr.Head.Ref, TargetBranch: pr.Base.Ref, HeadSHA: pr.Head.SHA,
		SourceRepo: src, Fork: fork,
	}
	return nil
}

func (r *gtRepo) repo() Repo {
	owner, name := splitFullName(r.FullName)
	if r.Owner.Login != "" {
		owner = r.Owner.Login
	} else if r.Owner.Username != "" {
		owner = r.Owner.Username
	}
	if r.Name != "" {
		name = r.Name
	}
	return Repo{
		FullName: r.FullName, Owner: owner, Name: name,
		CloneURL: r.CloneURL, SSHURL: r.SSHURL, HTMLURL: r.HTMLURL, DefaultBranch: r.DefaultBranch,
	}
}

func (u gtUser) user() User {
	login := u.Login
	if login == "" {
		login = u.Username
	}
	return User{Login: login, Name: u.FullName, Email: u.Email}
}

func (c *gtCommit) commit() Commit {
	return Commit{
		ID: c.ID, Message: c.Message, URL: c.URL,
		Author: User{Login: c.Author.Username, Name: c.Author.Name, Email: c.Author.Email},
		Added:  c.Added, Modified: c.Modified, Removed: c.Removed,
	}
}
