package webhook

import (
	"net/http"
	"strconv"
	"strings"
)

// GitHub webhook payloads (https://docs.github.com/en/webhooks/webhook-events-and-payloads), only
// the fields Freshet uses.

type ghUser struct {
	Login string `json:"login"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

type ghRepo struct {
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         ghUser `json:"owner"`
	HTMLURL       string `json:"html_url"`
	CloneURL      string `json:"clone_url"`
	SSHURL        string `json:"ssh_url"`
	DefaultBranch string `json:"default_branch"`
}

type ghCommitAuthor struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	Username string `json:"username"`
}

type ghCommit struct {
	ID       string         `json:"id"`
	Message  string         `json:"message"`
	URL      string         `json:"url"`
	Author   ghCommitAuthor `json:"author"`
	Added    []string       `json:"added"`
	Modified []string       `json:"modified"`
	Removed  []string       `json:"removed"`
}

type ghPush struct {
	Ref        string     `json:"ref"`
	Before     string     `json:"before"`
	After      string     `json:"after"`
	Created    bool       `json:"created"`
	Deleted    bool       `json:"deleted"`
	Commits    []ghCommit `json:"commits"`
	HeadCommit *ghCommit  `json:"head_commit"`
	Repository *ghRepo    `json:"repository"`
	Pusher     ghUser     `json:"pusher"`
	Sender     ghUser     `json:"sender"`
}

type ghBranchRef struct {
	Ref  string  `json:"ref"`
	SHA  string  `json:"sha"`
	Repo *ghRepo `json:"repo"`
}

type ghPullRequest struct {
	Number  int         `json:"number"`
	Title   string      `json:"title"`
	HTMLURL string      `json:"html_url"`
	Merged  bool        `json:"merged"`
	Head    ghBranchRef `json:"head"`
	Base    ghBranchRef `json:"base"`
}

type ghPullRequestEvent struct {
	Action      string         `json:"action"`
	Number      int            `json:"number"`
	Before      string         `json:"before"`
	PullRequest *ghPullRequest `json:"pull_request"`
	Repository  *ghRepo        `json:"repository"`
	Sender      ghUser         `json:"sender"`
}

type ghReleaseEvent struct {
	Action  string `json:"action"`
	Release *struct {
		TagName string `json:"tag_name"`
	} `json:"release"`
	Repository *ghRepo `json:"repository"`
	Sender     ghUser  `json:"sender"`
}

type ghPing struct {
	Repository *ghRepo `json:"repository"`
	Sender     ghUser  `json:"sender"`
}

// gitHubCommitLimit is the most commits a GitHub push webhook lists.
const gitHubCommitLimit = 2048

func parseGitHub(h http.Header, body []byte) ([]Event, error) {
	name, err := header(h, "GitHub", "X-GitHub-Event")
	if err != nil {
		return nil, err
	}
	id, err := header(h, "GitHub", "X-GitHub-Delivery")
	if err != nil {
		return nil, err
	}
	ev := Event{DeliveryID: id}
	switch name {
	case "push":
		var p ghPush
		if err := decode(GitHub, name, body, &p); err != nil {
			return nil, err
		}
		if err := p.fill(&ev); err != nil {
			return nil, err
		}
	case "pull_request":
		var p ghPullRequestEvent
		if err := decode(GitHub, name, body, &p); err != nil {
			return nil, err
		}
		if err := p.fill(&ev); err != nil {
			return nil, err
		}
	case "release":
		var p ghReleaseEvent
		if err := decode(GitHub, name, body, &p); err != nil {
			return nil, err
		}
		switch {
		case p.Action == "":
			return nil, missing(GitHub, name, "action")
		case p.Release == nil || p.Release.TagName == "":
			return nil, missing(GitHub, name, "release.tag_name")
		case p.Repository == nil || p.Repository.FullName == "":
			return nil, missing(GitHub, name, "repository.full_name")
		}
		ev.Kind, ev.Action = KindRelease, p.Action
		ev.Tag, ev.Ref = p.Release.TagName, "refs/tags/"+p.Release.TagName
		ev.Repo, ev.Sender = p.Repository.repo(), p.Sender.user()
	case "ping":
		var p ghPing
		if err := decode(GitHub, name, body, &p); err != nil {
			return nil, err
		}
		ev.Kind, ev.Sender = KindPing, p.Sender.user()
		if p.Repository != nil { // organization hooks have no repository
			ev.Repo = p.Repository.repo()
		}
	default:
		return nil, unsupported(GitHub, name)
	}
	return []Event{ev}, nil
}

func (p *ghPush) fill(ev *Event) error {
	switch {
	case p.Ref == "":
		return missing(GitHub, "push", "ref")
	case p.Repository == nil || p.Repository.FullName == "":
		return missing(GitHub, "push", "repository.full_name")
	case p.After == "":
		return missing(GitHub, "push", "after")
	}
	if err := pushEvent(GitHub, ev, p.Ref, "push"); err != nil {
		return err
	}
	ev.Repo = p.Repository.repo()
	ev.Before, ev.Created = p.Before, p.Created
	ev.Deleted = p.Deleted || isZeroSHA(p.After)
	ev.SHA = p.After
	if p.HeadCommit != nil && p.HeadCommit.ID != "" && !ev.Deleted {
		// For an annotated tag "after" is the tag object; head_commit is the tagged commit.
		c := p.HeadCommit.commit()
		ev.HeadCommit, ev.SHA = &c, c.ID
	}
	for _, c := range p.Commits {
		ev.Commits = append(ev.Commits, c.commit())
	}
	ev.FilesIncomplete = len(p.Commits) >= gitHubCommitLimit
	ev.Sender = User{Login: p.Sender.Login, Name: p.Pusher.Name, Email: p.Pusher.Email}
	if ev.Sender.Login == "" {
		ev.Sender.Login = p.Pusher.Name
	}
	return nil
}

func (p *ghPullRequestEvent) fill(ev *Event) error {
	const name = "pull_request"
	pr := p.PullRequest
	switch {
	case p.Action == "":
		return missing(GitHub, name, "action")
	case pr == nil:
		return missing(GitHub, name, "pull_request")
	case pr.Number <= 0 && p.Number <= 0:
		return missing(GitHub, name, "pull_request.number")
	case pr.Head.Ref == "":
		return missing(GitHub, name, "pull_request.head.ref")
	case pr.Base.Ref == "":
		return missing(GitHub, name, "pull_request.base.ref")
	case p.Repository == nil || p.Repository.FullName == "":
		return missing(GitHub, name, "repository.full_name")
	}
	number := pr.Number
	if number <= 0 {
		number = p.Number
	}
	ev.Kind, ev.Action = KindPullRequest, p.Action
	if p.Action == ActionClosed && pr.Merged {
		ev.Action = ActionMerged
	}
	ev.Repo, ev.Sender = p.Repository.repo(), p.Sender.user()
	ev.Ref = "refs/pull/" + strconv.Itoa(number) + "/head"
	ev.Branch, ev.SHA, ev.Before = pr.Head.Ref, pr.Head.SHA, p.Before
	ev.FilesIncomplete = true // pull request payloads list no files
	src := ""
	if pr.Head.Repo != nil {
		src = pr.Head.Repo.FullName
	}
	base := p.Repository.FullName
	if pr.Base.Repo != nil && pr.Base.Repo.FullName != "" {
		base = pr.Base.Repo.FullName
	}
	ev.PullRequest = &PullRequest{
		Number: number, Title: pr.Title, URL: pr.HTMLURL, Merged: pr.Merged,
		SourceBranch: pr.Head.Ref, TargetBranch: pr.Base.Ref, HeadSHA: pr.Head.SHA,
		SourceRepo: src, Fork: src == "" || !strings.EqualFold(src, base),
	}
	return nil
}

func (r *ghRepo) repo() Repo {
	owner, name := splitFullName(r.FullName)
	if r.Owner.Login != "" {
		owner = r.Owner.Login
	} else if r.Owner.Name != "" {
		owner = r.Owner.Name
	}
	if r.Name != "" {
		name = r.Name
	}
	return Repo{
		FullName: r.FullName, Owner: owner, Name: name,
		CloneURL: r.CloneURL, SSHURL: r.SSHURL, HTMLURL: r.HTMLURL, DefaultBranch: r.DefaultBranch,
	}
}

func (u ghUser) user() User { return User(u) }

func (c *ghCommit) commit() Commit {
	return Commit{
		ID: c.ID, Message: c.Message, URL: c.URL,
		Author: User{Login: c.Author.Username, Name: c.Author.Name, Email: c.Author.Email},
		Added:  c.Added, Modified: c.Modified, Removed: c.Removed,
	}
}
