package webhook

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Trigger is a pipeline's git trigger, in the shape of Codefresh's pipeline spec
// (spec.triggers[] with type: git). The zero values of the optional fields mean "no filter".
type Trigger struct {
	// Repo is owner/name (GitLab: group/subgroup/name), compared case-insensitively.
	Repo string `json:"repo" yaml:"repo"`
	// Events are Codefresh event names: push.heads, push.tags, pullrequest (any pull request
	// event), pullrequest.<action>, release, release.<action>. See [KnownEvents].
	Events []string `json:"events" yaml:"events"`
	// BranchRegex filters the branch (a pull request's source branch; a tag's name for push.tags
	// and release). With BranchRegexInput regex (the default) it is a regular expression, bare
	// or in the /…/flags form; it matches anywhere in the name unless anchored.
	BranchRegex string `json:"branchRegex,omitempty" yaml:"branchRegex,omitempty"`
	// BranchRegexInput says how to read BranchRegex: regex (default), multiselect (a
	// comma-separated list of branch names that trigger) or multiselect-exclude (a list of
	// branch names that do not).
	BranchRegexInput string `json:"branchRegexInput,omitempty" yaml:"branchRegexInput,omitempty"`
	// PullRequestTargetBranchRegex filters a pull request's target branch (a regex as above).
	PullRequestTargetBranchRegex string `json:"pullRequestTargetBranchRegex,omitempty" yaml:"pullRequestTargetBranchRegex,omitempty"`
	// PullRequestAllowForkEvents lets pull requests from forks trigger; they do not by default,
	// because a fork's code would run with the pipeline's secrets.
	PullRequestAllowForkEvents bool `json:"pullRequestAllowForkEvents,omitempty" yaml:"pullRequestAllowForkEvents,omitempty"`
	// ModifiedFilesGlob is a comma-separated list of globs over repository-relative paths;
	// the trigger fires only when a changed file matches. See docs/webhooks.md.
	ModifiedFilesGlob string `json:"modifiedFilesGlob,omitempty" yaml:"modifiedFilesGlob,omitempty"`
	// Disabled triggers never fire.
	Disabled bool `json:"disabled,omitempty" yaml:"disabled,omitempty"`
}

// BranchRegexInput values.
const (
	BranchInputRegex              = "regex"
	BranchInputMultiselect        = "multiselect"
	BranchInputMultiselectExclude = "multiselect-exclude"
)

// Pull request actions Codefresh names as trigger events (pullrequest.<action>).
var prEventActions = []string{
	ActionOpened, ActionClosed, ActionMerged, "unmerged-closed", ActionReopened, ActionEdited,
	"assigned", "unassigned", "review_requested", "review_request_removed", "labeled", "unlabeled",
	ActionSynchronize, "ready_for_review", "converted_to_draft",
}

// Release actions that are trigger events (release.<action>); "release" alone is published.
var releaseEventActions = []string{"created", "edited", "deleted", "prereleased", "released", "unpublished"}

// eventAliases maps other spellings Codefresh accepts to the names above.
var eventAliases = map[string]string{
	"pullrequest.reviewRequested":      "pullrequest.review_requested",
	"pullrequest.reviewRequestRemoved": "pullrequest.review_request_removed",
	"release.published":                "release",
	"pullrequest:created":              "pullrequest.opened",
	"pullrequest:updated":              "pullrequest.synchronize",
	"pullrequest:fulfilled":            "pullrequest.merged",
	"pullrequest:rejected":             "pullrequest.unmerged-closed",
}

// Codefresh events Freshet knows but does not build from, with why.
var unsupportedEvents = map[string]string{
	"push.deleteBranch":                              "branch deletions never start builds",
	"pullrequest.commentAdded":                       "pull request comment triggers are not supported yet",
	"pullrequest.commentAddedUnrestricted":           "pull request comment triggers are not supported yet",
	"pullrequest:comment_created":                    "pull request comment triggers are not supported yet",
	"pullrequest.review.submitted.approved":          "pull request review triggers are not supported yet",
	"pullrequest.review.submitted.commented":         "pull request review triggers are not supported yet",
	"pullrequest.review.submitted.changes_requested": "pull request review triggers are not supported yet",
}

// KnownEvents lists the event names a Trigger accepts, canonical spellings first, then the
// other spellings Codefresh accepts.
func KnownEvents() []string {
	out := canonicalEvents()
	aliases := make([]string, 0, len(eventAliases))
	for a := range eventAliases {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases)
	return append(out, aliases...)
}

func canonicalEvents() []string {
	out := []string{"push.heads", "push.tags", "pullrequest"}
	for _, a := range prEventActions {
		out = append(out, "pullrequest."+a)
	}
	out = append(out, "release")
	for _, a := range releaseEventActions {
		out = append(out, "release."+a)
	}
	return out
}

// canonicalEvent returns the canonical spelling of a trigger event name, or "" when unknown.
func canonicalEvent(name string) string {
	if c, ok := eventAliases[name]; ok {
		return c
	}
	switch {
	case name == "push.heads" || name == "push.tags" || name == "pullrequest" || name == "release":
		return name
	case strings.HasPrefix(name, "pullrequest.") && slices.Contains(prEventActions, strings.TrimPrefix(name, "pullrequest.")):
		return name
	case strings.HasPrefix(name, "release.") && slices.Contains(releaseEventActions, strings.TrimPrefix(name, "release.")):
		return name
	}
	return ""
}

// eventNames are the trigger event names ev answers to: its CodefreshName, plus "pullrequest"
// for every pull request event, pullrequest.closed for a merged one and
// pullrequest.unmerged-closed for one closed without merging.
func eventNames(ev Event) []string {
	name := ev.CodefreshName()
	if name == "" {
		return nil
	}
	names := []string{name}
	if ev.Kind == KindPullRequest {
		names = append(names, "pullrequest")
		switch ev.Action {
		case ActionMerged:
			names = append(names, "pullrequest.closed")
		case ActionClosed:
			names = append(names, "pullrequest.unmerged-closed")
		}
	}
	return names
}

// Validate checks every field and returns all problems (joined), each an *errdefs.FieldError
// naming the field, the value and what would be valid.
func (t Trigger) Validate() error {
	var errs []error
	if err := validateRepo(t.Repo); err != nil {
		errs = append(errs, err)
	}
	if len(t.Events) == 0 {
		errs = append(errs, errdefs.Invalid("events", "", "is empty: list at least one event, e.g. push.heads"))
	}
	for i, e := range t.Events {
		field := fmt.Sprintf("events[%d]", i)
		if why, ok := unsupportedEvents[e]; ok {
			errs = append(errs, errdefs.Invalid(field, e, "is not supported: "+why))
		} else if canonicalEvent(e) == "" {
			errs = append(errs, errdefs.Invalid(field, e, "is not a known event: use one of "+strings.Join(canonicalEvents(), ", ")))
		}
	}
	if _, err := compileBranchFilter(t.BranchRegex, t.BranchRegexInput); err != nil {
		errs = append(errs, err)
	}
	if _, err := compileRegex("pullRequestTargetBranchRegex", t.PullRequestTargetBranchRegex); err != nil {
		errs = append(errs, err)
	}
	if _, err := compileGlobs(t.ModifiedFilesGlob); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateRepo(repo string) error {
	switch {
	case repo == "":
		return errdefs.Invalid("repo", "", "is empty: name the repository as owner/name")
	case strings.Contains(repo, "://") || strings.HasPrefix(repo, "git@"):
		return errdefs.Invalid("repo", repo, "is a URL: name the repository as owner/name")
	case strings.ContainsAny(repo, " \t\r\n"):
		return errdefs.Invalid("repo", repo, "contains white space: name the repository as owner/name")
	}
	owner, name := splitFullName(repo)
	if owner == "" || name == "" || strings.HasPrefix(owner, "/") || strings.Contains(owner, "//") {
		return errdefs.Invalid("repo", repo, "is not of the form owner/name")
	}
	return nil
}

// Match reports whether trigger t fires for ev. When it does not, reason says why in a sentence
// fit for a user ("branch \"dev\" does not match branchRegex \"^main$\""). When it fires but a
// filter could not be checked (modifiedFilesGlob on a payload that lists no files), reason says
// so. An invalid trigger never fires; reason carries the validation error.
func Match(t Trigger, ev Event) (bool, string) {
	if t.Disabled {
		return false, "trigger is disabled"
	}
	if ev.Kind == KindPing {
		return false, "ping events never start builds"
	}
	if err := t.Validate(); err != nil {
		return false, "invalid trigger: " + err.Error()
	}
	if !strings.EqualFold(strings.TrimSuffix(t.Repo, ".git"), ev.Repo.FullName) {
		return false, fmt.Sprintf("repo %q is not the trigger's repo %q", ev.Repo.FullName, t.Repo)
	}
	if ev.Deleted {
		if ev.Kind == KindTag {
			return false, fmt.Sprintf("tag %q was deleted: deletions never start builds", ev.Tag)
		}
		return false, fmt.Sprintf("branch %q was deleted: deletions never start builds", ev.Branch)
	}
	if !eventSelected(t.Events, ev) {
		name := ev.CodefreshName()
		if name == "" {
			name = string(ev.Kind)
		}
		return false, fmt.Sprintf("event %s is not selected (trigger events: %s)", name, strings.Join(t.Events, ", "))
	}
	bf, _ := compileBranchFilter(t.BranchRegex, t.BranchRegexInput)
	if !bf.match(ev.RefName()) {
		what := "branch"
		if ev.Kind == KindTag || ev.Kind == KindRelease {
			what = "tag"
		}
		return false, fmt.Sprintf("%s %q does not match branchRegex %s", what, ev.RefName(), bf.describe())
	}
	if ev.Kind == KindPullRequest && ev.PullRequest != nil {
		if ev.PullRequest.Fork && !t.PullRequestAllowForkEvents {
			from := "a deleted fork"
			if ev.PullRequest.SourceRepo != "" {
				from = fmt.Sprintf("fork %q", ev.PullRequest.SourceRepo)
			}
			return false, "pull request comes from " + from + ": set pullRequestAllowForkEvents to build pull requests from forks"
		}
		target, _ := compileRegex("pullRequestTargetBranchRegex", t.PullRequestTargetBranchRegex)
		if !target.match(ev.PullRequest.TargetBranch) {
			return false, fmt.Sprintf("target branch %q does not match pullRequestTargetBranchRegex %q", ev.PullRequest.TargetBranch, t.PullRequestTargetBranchRegex)
		}
	}
	// Tags and releases name a commit rather than change files: the file filter does not apply.
	if t.ModifiedFilesGlob != "" && (ev.Kind == KindPush || ev.Kind == KindPullRequest) {
		globs, _ := compileGlobs(t.ModifiedFilesGlob)
		if globs.matchAny(ev.ModifiedFiles) {
			return true, ""
		}
		if ev.FilesIncomplete {
			return true, "modifiedFilesGlob not fully checked: the " + string(ev.Provider) + " payload does not list every changed file"
		}
		if len(ev.ModifiedFiles) == 0 {
			return false, fmt.Sprintf("no modified files to match modifiedFilesGlob %q", t.ModifiedFilesGlob)
		}
		return false, fmt.Sprintf("none of the %d modified files matches modifiedFilesGlob %q", len(ev.ModifiedFiles), t.ModifiedFilesGlob)
	}
	return true, ""
}

func eventSelected(selected []string, ev Event) bool {
	names := eventNames(ev)
	for _, s := range selected {
		if slices.Contains(names, canonicalEvent(s)) {
			return true
		}
	}
	return false
}
