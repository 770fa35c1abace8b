package webhook

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Bitbucket Cloud webhook payloads
// (https://support.atlassian.com/bitbucket-cloud/docs/event-payloads/), only the fields Freshet
// uses. Bitbucket Server/Data Center sends different payloads and is not supported here.

type bbLinks struct {
	HTML struct {
		Href string `json:"href"`
	} `json:"html"`
}

type bbAccount struct {
	DisplayName string `json:"display_name"`
	Nickname    string `json:"nickname"`
	Username    string `json:"username"`
}

type bbRepo struct {
	FullName  string  `json:"full_name"`
	Name      string  `json:"name"`
	Links     bbLinks `json:"links"`
	Workspace *struct {
		Slug string `json:"slug"`
	} `json:"workspace"`
	MainBranch *struct {
		Name string `json:"name"`
	} `json:"mainbranch"`
}

type bbCommit struct {
	Hash    string `json:"hash"`
	Message string `json:"message"`
	Author  struct {
		Raw  string     `json:"raw"`
		User *bbAccount `json:"user"`
	} `json:"author"`
	Links bbLinks `json:"links"`
}

type bbRef struct {
	Type   string    `json:"type"` // branch, named_branch, tag, annotated_tag
	Name   string    `json:"name"`
	Target *bbCommit `json:"target"`
}

type bbPush struct {
	Push *struct {
		Changes []struct {
			New       *bbRef     `json:"new"`
			Old       *bbRef     `json:"old"`
			Created   bool       `json:"created"`
			Closed    bool       `json:"closed"`
			Commits   []bbCommit `json:"commits"`
			Truncated bool       `json:"truncated"`
		} `json:"changes"`
	} `json:"push"`
	Repository *bbRepo   `json:"repository"`
	Actor      bbAccount `json:"actor"`
}

type bbPREnd struct {
	Branch struct {
		Name string `json:"name"`
	} `json:"branch"`
	Commit *struct {
		Hash string `json:"hash"`
	} `json:"commit"`
	Repository *bbRepo `json:"repository"`
}

type bbPullRequestEvent struct {
	PullRequest *struct {
		ID          int     `json:"id"`
		Title       string  `json:"title"`
		State       string  `json:"state"` // OPEN, MERGED, DECLINED, SUPERSEDED
		Source      bbPREnd `json:"source"`
		Destination bbPREnd `json:"destination"`
		Links       bbLinks `json:"links"`
	} `json:"pullrequest"`
	Repository *bbRepo   `json:"repository"`
	Actor      bbAccount `json:"actor"`
}

// Bitbucket pull request event keys Freshet builds from, with the action each becomes.
// pullrequest:updated fires for new commits and for edits alike; Freshet treats it as
// synchronize (a push to the source branch), the case that needs a build.
var bitbucketPRActions = map[string]string{
	"pullrequest:created":    ActionOpened,
	"pullrequest:updated":    ActionSynchronize,
	"pullrequest:fulfilled":  ActionMerged,
	"pullrequest:rejected":   ActionClosed,
	"pullrequest:approved":   "approved",
	"pullrequest:unapproved": "unapproved",
}

func parseBitbucket(h http.Header, body []byte) ([]Event, error) {
	key, err := header(h, "Bitbucket", "X-Event-Key")
	if err != nil {
		return nil, err
	}
	id, err := header(h, "Bitbucket", "X-Request-UUID")
	if err != nil {
		return nil, err
	}
	if key == "repo:push" {
		var p bbPush
		if err := decode(Bitbucket, key, body, &p); err != nil {
			return nil, err
		}
		return p.events(id)
	}
	action, ok := bitbucketPRActions[key]
	if !ok {
		return nil, unsupported(Bitbucket, key)
	}
	var p bbPullRequestEvent
	if err := decode(Bitbucket, key, body, &p); err != nil {
		return nil, err
	}
	pr := p.PullRequest
	switch {
	case pr == nil:
		return nil, missing(Bitbucket, key, "pullrequest")
	case pr.ID <= 0:
		return nil, missing(Bitbucket, key, "pullrequest.id")
	case pr.Source.Branch.Name == "":
		return nil, missing(Bitbucket, key, "pullrequest.source.branch.name")
	case pr.Destination.Branch.Name == "":
		return nil, missing(Bitbucket, key, "pullrequest.destination.branch.name")
	case p.Repository == nil || p.Repository.FullName == "":
		return nil, missing(Bitbucket, key, "repository.full_name")
	}
	ev := Event{DeliveryID: id, Kind: KindPullRequest, Action: action}
	ev.Repo, ev.Sender = p.Repository.repo(), p.Actor.user()
	// Bitbucket Cloud has no pull request refs: the source branch is fetched from SourceRepo.
	ev.Branch = pr.Source.Branch.Name
	ev.Ref = "refs/heads/" + ev.Branch
	if pr.Source.Commit != nil {
		ev.SHA = pr.Source.Commit.Hash
	}
	ev.FilesIncomplete = true
	src, dst := p.Repository.FullName, p.Repository.FullName
	if pr.Source.Repository != nil && pr.Source.Repository.FullName != "" {
		src = pr.Source.Repository.FullName
	}
	if pr.Destination.Repository != nil && pr.Destination.Repository.FullName != "" {
		dst = pr.Destination.Repository.FullName
	}
	ev.PullRequest = &PullRequest{
		Number: pr.ID, Title: pr.Title, URL: pr.Links.HTML.Href,
		Merged:       action == ActionMerged || pr.State == "MERGED",
		SourceBranch: pr.Source.Branch.Name, TargetBranch: pr.Destination.Branch.Name, HeadSHA: ev.SHA,
		SourceRepo: src, Fork: !strings.EqualFold(src, dst),
	}
	return []Event{ev}, nil
}

// events returns one Event per pushed ref.
func (p *bbPush) events(id string) ([]Event, error) {
	const key = "repo:push"
	switch {
	case p.Push == nil || len(p.Push.Changes) == 0:
		return nil, missing(Bitbucket, key, "push.changes")
	case p.Repository == nil || p.Repository.FullName == "":
		return nil, missing(Bitbucket, key, "repository.full_name")
	}
	repo, sender := p.Repository.repo(), p.Actor.user()
	var evs []Event
	for i, ch := range p.Push.Changes {
		field := "push.changes[" + strconv.Itoa(i) + "]"
		ref := ch.New
		if ref == nil {
			ref = ch.Old // a deletion has only the old ref
		}
		if ref == nil || ref.Name == "" {
			return nil, missing(Bitbucket, key, field+".new.name")
		}
		ev := Event{DeliveryID: id, Repo: repo, Sender: sender, Created: ch.Created}
		if i > 0 {
			ev.DeliveryID = id + "#" + strconv.Itoa(i+1)
		}
		var full string
		switch ref.Type {
		case "branch", "named_branch":
			full = "refs/heads/" + ref.Name
		case "tag", "annotated_tag":
			full = "refs/tags/" + ref.Name
		default:
			return nil, fmt.Errorf("bitbucket %s of a %q ref: %w", key, ref.Type, ErrUnsupportedEvent)
		}
		if err := pushEvent(Bitbucket, &ev, full, key); err != nil {
			return nil, err
		}
		ev.Deleted = ch.New == nil || ch.Closed
		if ch.Old != nil && ch.Old.Target != nil {
			ev.Before = ch.Old.Target.Hash
		}
		if ch.New != nil && ch.New.Target != nil {
			c := ch.New.Target.commit()
			ev.SHA, ev.HeadCommit = c.ID, &c
		}
		for j := range ch.Commits {
			ev.Commits = append(ev.Commits, ch.Commits[j].commit())
		}
		// Bitbucket lists no files in push payloads.
		ev.FilesIncomplete = !ev.Deleted
		evs = append(evs, ev)
	}
	return evs, nil
}

func (r *bbRepo) repo() Repo {
	owner, name := splitFullName(r.FullName)
	if r.Workspace != nil && r.Workspace.Slug != "" {
		owner = r.Workspace.Slug
	}
	out := Repo{FullName: r.FullName, Owner: owner, Name: name, HTMLURL: r.Links.HTML.Href}
	if out.HTMLURL != "" {
		out.CloneURL = strings.TrimSuffix(out.HTMLURL, "/") + ".git"
	}
	if r.MainBranch != nil {
		out.DefaultBranch = r.MainBranch.Name
	}
	return out
}

func (a bbAccount) user() User {
	login := a.Nickname
	if login == "" {
		login = a.Username
	}
	return User{Login: login, Name: a.DisplayName}
}

func (c *bbCommit) commit() Commit {
	out := Commit{ID: c.Hash, Message: c.Message, URL: c.Links.HTML.Href}
	out.Author.Name, out.Author.Email = splitRawAuthor(c.Author.Raw)
	if c.Author.User != nil {
		out.Author.Login = c.Author.User.Nickname
		if out.Author.Name == "" {
			out.Author.Name = c.Author.User.DisplayName
		}
	}
	return out
}

// splitRawAuthor splits git's "Name <email>" form.
func splitRawAuthor(raw string) (name, email string) {
	i := strings.LastIndex(raw, "<")
	j := strings.LastIndex(raw, ">")
	if i < 0 || j < i {
		return strings.TrimSpace(raw), ""
	}
	return strings.TrimSpace(raw[:i]), strings.TrimSpace(raw[i+1 : j])
}
