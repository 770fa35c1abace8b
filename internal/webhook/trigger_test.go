package webhook

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// fieldsOf lists the fields named by the FieldErrors in err (joined or not).
func fieldsOf(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		var fe *errdefs.FieldError
		if errors.As(e, &fe) && !isJoin(e) {
			out = append(out, fe.Field)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

func isJoin(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

func TestTriggerValidate(t *testing.T) {
	ok := Trigger{Repo: "Codertocat/Hello-World", Events: []string{"push.heads"}}
	valid := []Trigger{
		ok,
		{Repo: "group/subgroup/project", Events: []string{"push.tags", "release"}},
		{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "/.*/gi"}, // Codefresh's default
		{Repo: "a/b", Events: []string{"pullrequest"}, BranchRegex: "/^((master|develop)$).*/gi", BranchRegexInput: "regex"},
		{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "/^((?!^feature).)*$/gi"},
		{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "/^((?!tag)).*/gi"},
		{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "^(?!wip/)"},
		{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "main, develop", BranchRegexInput: "multiselect"},
		{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "main", BranchRegexInput: "multiselect-exclude"},
		{Repo: "a/b", Events: []string{"pullrequest.reviewRequested", "pullrequest:fulfilled", "release.published", "pullrequest.unmerged-closed"}},
		{Repo: "a/b", Events: []string{"pullrequest.opened"}, PullRequestTargetBranchRegex: "/^(main|release\\/.*)$/"},
		{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: "/package.json, my-subproject/, {app/,test/}, !{deployment/,/version.cfg}, src//*.go, **/*.[ch]"},
		{Repo: "a/b", Events: []string{"push.heads"}, Disabled: true},
	}
	for _, tr := range valid {
		if err := tr.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", tr, err)
		}
	}

	invalid := []struct {
		name     string
		trigger  Trigger
		fields   []string
		contains string
	}{
		{"empty", Trigger{}, []string{"repo", "events"}, "owner/name"},
		{"URL repo", Trigger{Repo: "https://github.com/a/b", Events: []string{"push.heads"}}, []string{"repo"}, "is a URL"},
		{"repo without owner", Trigger{Repo: "hello", Events: []string{"push.heads"}}, []string{"repo"}, "owner/name"},
		{"unknown event", Trigger{Repo: "a/b", Events: []string{"push.heads", "push"}}, []string{"events[1]"}, `"push" is not a known event: use one of push.heads, push.tags`},
		{"comment event", Trigger{Repo: "a/b", Events: []string{"pullrequest.commentAdded"}}, []string{"events[0]"}, "not supported yet"},
		{"branch deletion event", Trigger{Repo: "a/b", Events: []string{"push.deleteBranch"}}, []string{"events[0]"}, "never start builds"},
		{"bad regex", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "feature/[a-"}, []string{"branchRegex"}, "is not a valid regular expression"},
		{"lookbehind", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "/(?<!x)main/"}, []string{"branchRegex"}, "multiselect-exclude"},
		{"backreference", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: `(a)\1`}, []string{"branchRegex"}, "RE2"},
		{"unknown regex flag is a plain regex", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "/x/q("}, []string{"branchRegex"}, ""},
		{"regex in multiselect", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "/^main$/", BranchRegexInput: "multiselect"}, []string{"branchRegex"}, "comma-separated list of branch names"},
		{"empty multiselect", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: " , ", BranchRegexInput: "multiselect-exclude"}, []string{"branchRegex"}, "lists no branch names"},
		{"bad input", Trigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegexInput: "list"}, []string{"branchRegexInput"}, "regex, multiselect or multiselect-exclude"},
		{"bad target regex", Trigger{Repo: "a/b", Events: []string{"pullrequest"}, PullRequestTargetBranchRegex: "("}, []string{"pullRequestTargetBranchRegex"}, "not a valid regular expression"},
		{"unclosed brace", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: "{app/,test/"}, []string{"modifiedFilesGlob"}, "without a matching }"},
		{"stray brace", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: "app/}"}, []string{"modifiedFilesGlob"}, "without a matching {"},
		{"unclosed class", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: "src/[a-"}, []string{"modifiedFilesGlob"}, "malformed"},
		{"only commas", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: ", ,"}, []string{"modifiedFilesGlob"}, "has no patterns"},
		{"root only", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: "/"}, []string{"modifiedFilesGlob"}, "use ** for every file"},
		{"brace bomb", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: strings.Repeat("{a,b}", 11)}, []string{"modifiedFilesGlob"}, "more than 1024 patterns"},
		{"deeply nested braces", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: strings.Repeat("{", 2000) + "a" + strings.Repeat("}", 2000)}, []string{"modifiedFilesGlob"}, "too complex"},
		{"overlong glob", Trigger{Repo: "a/b", Events: []string{"push.heads"}, ModifiedFilesGlob: strings.Repeat("a", 5000)}, []string{"modifiedFilesGlob"}, "longer than 4096"},
		{"everything wrong", Trigger{Repo: "x", Events: []string{"nope"}, BranchRegex: "(", PullRequestTargetBranchRegex: "[", ModifiedFilesGlob: "{"},
			[]string{"repo", "events[0]", "branchRegex", "pullRequestTargetBranchRegex", "modifiedFilesGlob"}, ""},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.trigger.Validate()
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("Validate = %v, want an ErrInvalid", err)
			}
			if got := fieldsOf(err); !slices.Equal(got, tc.fields) {
				t.Errorf("fields = %q, want %q (error %q)", got, tc.fields, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not say %q", err, tc.contains)
			}
		})
	}
}

func TestKnownEventsAreValid(t *testing.T) {
	for _, e := range KnownEvents() {
		if err := (Trigger{Repo: "a/b", Events: []string{e}}).Validate(); err != nil {
			t.Errorf("KnownEvents lists %q, but Validate says %v", e, err)
		}
	}
}

func TestMatch(t *testing.T) {
	ghPush := parseFile(t, GitHub, "push", "push.json")[0]
	ghTag := parseFile(t, GitHub, "push", "push-tag.json")[0]
	ghDelete := parseFile(t, GitHub, "push", "push-delete.json")[0]
	ghOpened := parseFile(t, GitHub, "pull_request", "pull_request-opened.json")[0]
	ghSync := parseFile(t, GitHub, "pull_request", "pull_request-synchronize.json")[0]
	ghMerged := parseFile(t, GitHub, "pull_request", "pull_request-closed-merged.json")[0]
	ghClosed := parseFile(t, GitHub, "pull_request", "pull_request-closed.json")[0]
	ghFork := parseFile(t, GitHub, "pull_request", "pull_request-fork.json")[0]
	ghPing := parseFile(t, GitHub, "ping", "ping.json")[0]
	ghRelease := parseFile(t, GitHub, "release", "release-published.json")[0]
	glPush := parseFile(t, GitLab, "Push Hook", "push.json")[0]
	glUpdate := parseFile(t, GitLab, "Merge Request Hook", "merge_request-update.json")[0]
	glEdit := parseFile(t, GitLab, "Merge Request Hook", "merge_request-edit.json")[0]
	gtDelete := parseFile(t, Gitea, "delete", "delete.json")[0]
	gtPush := parseFile(t, Gitea, "push", "push.json")[0]
	bbPushes := parseFile(t, Bitbucket, "repo:push", "repo-push.json")
	bbFulfilled := parseFile(t, Bitbucket, "pullrequest:fulfilled", "pullrequest-fulfilled.json")[0]

	newBranchNoCommits := ghPush
	newBranchNoCommits.Commits, newBranchNoCommits.ModifiedFiles, newBranchNoCommits.Created = nil, nil, true
	releaseEdited := ghRelease
	releaseEdited.Action = "edited"

	const repo = "Codertocat/Hello-World"
	tr := func(events ...string) Trigger { return Trigger{Repo: repo, Events: events} }
	with := func(t Trigger, f func(*Trigger)) Trigger { f(&t); return t }

	cases := []struct {
		name    string
		trigger Trigger
		ev      Event
		match   bool
		reason  string // substring; for a match, the note (empty means none)
	}{
		{"push to main", tr("push.heads"), ghPush, true, ""},
		{"repo compared case-insensitively", with(tr("push.heads"), func(t *Trigger) { t.Repo = "codertocat/hello-world" }), ghPush, true, ""},
		{"other repo", with(tr("push.heads"), func(t *Trigger) { t.Repo = "Codertocat/Other" }), ghPush, false, `repo "Codertocat/Hello-World" is not the trigger's repo "Codertocat/Other"`},
		{"event not selected", tr("pullrequest.opened"), ghPush, false, "event push.heads is not selected (trigger events: pullrequest.opened)"},
		{"disabled", with(tr("push.heads"), func(t *Trigger) { t.Disabled = true }), ghPush, false, "trigger is disabled"},
		{"ping never builds", tr("push.heads", "pullrequest"), ghPing, false, "ping events never start builds"},
		{"invalid trigger never fires", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "(" }), ghPush, false, "invalid trigger: branchRegex"},

		// branchRegex, Codefresh semantics
		{"Codefresh default regex", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "/.*/gi" }), ghPush, true, ""},
		{"exact-name idiom misses", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "/^((master|develop)$).*/gi" }), ghPush, false, `branch "main" does not match branchRegex "/^((master|develop)$).*/gi"`},
		{"exact-name idiom hits", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "/^((main|develop)$).*/gi" }), ghPush, true, ""},
		{"i flag", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "/^MAIN$/i" }), ghPush, true, ""},
		{"bare regex is case-sensitive", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "^MAIN$" }), ghPush, false, "does not match branchRegex"},
		{"unanchored regex matches a substring", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "ai" }), ghPush, true, ""},
		{"negative lookahead keeps main", with(tr("push.heads", "pullrequest"), func(t *Trigger) { t.BranchRegex = "/^((?!^feature).)*$/gi" }), ghPush, true, ""},
		{"negative lookahead drops feature/", with(tr("push.heads", "pullrequest"), func(t *Trigger) { t.BranchRegex = "/^((?!^feature).)*$/gi" }), ghOpened, false, `branch "feature/login" does not match`},
		{"lookahead anywhere", with(tr("push.heads", "pullrequest"), func(t *Trigger) { t.BranchRegex = "/^((?!login).)*$/" }), ghOpened, false, "does not match"},
		{"prefix lookahead", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "^(?!feature/).*$" }), ghPush, true, ""},
		{"prefix lookahead excludes", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex = "^(?!feature/).*$" }), ghDelete, false, "deleted"},
		{"multiselect hit", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex, t.BranchRegexInput = "develop, main", "multiselect" }), ghPush, true, ""},
		{"multiselect miss", with(tr("push.heads", "pullrequest"), func(t *Trigger) { t.BranchRegex, t.BranchRegexInput = "develop, main", "multiselect" }), ghOpened, false, `branch "feature/login" does not match branchRegex (multiselect) "develop, main"`},
		{"multiselect is exact", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex, t.BranchRegexInput = "mai", "multiselect" }), ghPush, false, "does not match"},
		{"multiselect-exclude drops", with(tr("push.heads"), func(t *Trigger) { t.BranchRegex, t.BranchRegexInput = "main", "multiselect-exclude" }), ghPush, false, `(multiselect-exclude) "main"`},
		{"multiselect-exclude keeps", with(tr("push.heads", "pullrequest"), func(t *Trigger) { t.BranchRegex, t.BranchRegexInput = "main", "multiselect-exclude" }), ghOpened, true, ""},

		// tags and releases use the tag name
		{"tag push", tr("push.tags"), ghTag, true, ""},
		{"tag push not selected", tr("push.heads"), ghTag, false, "event push.tags is not selected"},
		{"tag regex on the tag name", with(tr("push.tags"), func(t *Trigger) { t.BranchRegex = `^v\d+\.\d+\.\d+$` }), ghTag, true, ""},
		{"tag name mismatch", with(tr("push.tags"), func(t *Trigger) { t.BranchRegex = "^main$" }), ghTag, false, `tag "v1.2.0" does not match branchRegex "^main$"`},
		{"Codefresh tag-exclusion idiom", with(tr("push.tags"), func(t *Trigger) { t.BranchRegex = "/^((?!v1)).*/gi" }), ghTag, false, "does not match"},
		{"tags ignore modifiedFilesGlob", with(tr("push.tags"), func(t *Trigger) { t.ModifiedFilesGlob = "nothing/**" }), ghTag, true, ""},
		{"release published", tr("release"), ghRelease, true, ""},
		{"release.published alias", tr("release.published"), ghRelease, true, ""},
		{"release edited is not release", tr("release"), releaseEdited, false, "event release.edited is not selected"},
		{"release.edited selected", tr("release.edited"), releaseEdited, true, ""},
		{"release uses the tag for branchRegex", with(tr("release"), func(t *Trigger) { t.BranchRegex = "^v1\\." }), ghRelease, true, ""},

		// deletions
		{"deleted branch never builds", tr("push.heads"), ghDelete, false, `branch "feature/login" was deleted`},
		{"gitea delete never builds", with(tr("push.heads"), func(t *Trigger) { t.Repo = "gitea/webhooks" }), gtDelete, false, "was deleted"},

		// pull requests
		{"PR opened", tr("pullrequest.opened"), ghOpened, true, ""},
		{"any PR event", tr("pullrequest"), ghSync, true, ""},
		{"PR synchronize not selected", tr("pullrequest.opened"), ghSync, false, "event pullrequest.synchronize is not selected"},
		{"merged is merged", tr("pullrequest.merged"), ghMerged, true, ""},
		{"merged is closed", tr("pullrequest.closed"), ghMerged, true, ""},
		{"merged is not unmerged-closed", tr("pullrequest.unmerged-closed"), ghMerged, false, "event pullrequest.merged is not selected"},
		{"closed unmerged is closed", tr("pullrequest.closed"), ghClosed, true, ""},
		{"closed unmerged is unmerged-closed", tr("pullrequest.unmerged-closed"), ghClosed, true, ""},
		{"closed unmerged is not merged", tr("pullrequest.merged"), ghClosed, false, "not selected"},
		{"branchRegex looks at the source branch", with(tr("pullrequest"), func(t *Trigger) { t.BranchRegex = "^feature/" }), ghOpened, true, ""},
		{"target branch matches", with(tr("pullrequest"), func(t *Trigger) { t.PullRequestTargetBranchRegex = "/^main$/" }), ghOpened, true, ""},
		{"target branch differs", with(tr("pullrequest"), func(t *Trigger) { t.PullRequestTargetBranchRegex = "^release/" }), ghOpened, false, `target branch "main" does not match pullRequestTargetBranchRegex "^release/"`},
		{"target regex ignored for pushes", with(tr("push.heads"), func(t *Trigger) { t.PullRequestTargetBranchRegex = "^release/" }), ghPush, true, ""},
		{"fork PR refused by default", tr("pullrequest.opened"), ghFork, false, `pull request comes from fork "octocat-fork/Hello-World"`},
		{"fork PR allowed", with(tr("pullrequest.opened"), func(t *Trigger) { t.PullRequestAllowForkEvents = true }), ghFork, true, ""},
		{"PR with a file filter is not fully checked", with(tr("pullrequest"), func(t *Trigger) { t.ModifiedFilesGlob = "web/**" }), ghOpened, true, "modifiedFilesGlob not fully checked"},
		{"GitLab update with commits", with(tr("pullrequest.synchronize"), func(t *Trigger) { t.Repo = "mike/diaspora" }), glUpdate, true, ""},
		{"GitLab update without commits", with(tr("pullrequest.synchronize"), func(t *Trigger) { t.Repo = "mike/diaspora" }), glEdit, false, "event pullrequest.edited is not selected"},
		{"Bitbucket event name alias", with(tr("pullrequest:fulfilled"), func(t *Trigger) { t.Repo = "acme-inc/web-shop" }), bbFulfilled, true, ""},

		// modifiedFilesGlob
		{"glob hits an added file", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "services/**" }), ghPush, true, ""},
		{"glob hits a removed file", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "docs/" }), ghPush, true, ""},
		{"glob misses", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "web/**, *.js" }), ghPush, false, `none of the 5 modified files matches modifiedFilesGlob "web/**, *.js"`},
		{"glob is rooted", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "*.go" }), ghPush, false, "none of the 5 modified files"},
		{"glob any depth", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "**/*.go" }), ghPush, true, ""},
		{"glob root file", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "/README.md" }), ghPush, true, ""},
		{"exclusion with other changes", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "!README.md" }), ghPush, true, ""},
		{"exclusion of everything changed", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "!{*.md,docs/,go.mod,services/}" }), ghPush, false, "none of the 5 modified files"},
		{"no files changed", with(tr("push.heads"), func(t *Trigger) { t.ModifiedFilesGlob = "**" }), newBranchNoCommits, false, "no modified files to match"},
		{"truncated GitLab commit list with no hit", with(tr("push.heads"), func(t *Trigger) { t.Repo, t.ModifiedFilesGlob = "mike/diaspora", "web/**" }), glPush, true, "not fully checked: the gitlab payload"},
		{"truncated GitLab commit list with a hit", with(tr("push.heads"), func(t *Trigger) { t.Repo, t.ModifiedFilesGlob = "mike/diaspora", "app/" }), glPush, true, ""},
		{"Gitea dot directory", with(tr("push.heads"), func(t *Trigger) { t.Repo, t.ModifiedFilesGlob = "gitea/webhooks", ".gitea/**" }), gtPush, true, ""},
		{"Bitbucket lists no files", with(tr("push.heads"), func(t *Trigger) { t.Repo, t.ModifiedFilesGlob = "acme-inc/web-shop", "web/**" }), bbPushes[0], true, "not fully checked: the bitbucket payload"},
		{"Bitbucket tag in the same delivery", with(tr("push.tags"), func(t *Trigger) { t.Repo = "acme-inc/web-shop" }), bbPushes[1], true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := Match(tc.trigger, tc.ev)
			if got != tc.match {
				t.Fatalf("Match = %v (%q), want %v", got, reason, tc.match)
			}
			if tc.reason == "" && reason != "" {
				t.Errorf("reason = %q, want none", reason)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason = %q, want it to say %q", reason, tc.reason)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		glob  string
		file  string
		match bool
	}{
		{"package.json", "package.json", true},
		{"package.json", "web/package.json", false}, // rooted
		{"/package.json", "package.json", true},
		{"./package.json", "package.json", true},
		{"/Dockerfile*", "Dockerfile.prod", true},
		{"my-subproject/", "my-subproject/src/a.go", true},
		{"my-subproject/", "my-subproject", false}, // a file named like the directory is not under it
		{"my-subproject/", "other/my-subproject/a", false},
		{"my-subproject//pom.xml", "my-subproject/a/b/pom.xml", true},
		{"my-subproject//pom.xml", "my-subproject/pom.xml", true},
		{"src/**/x.go", "src/x.go", true},
		{"src/**/x.go", "src/a/b/x.go", true},
		{"src/**", "src", false},
		{"src/*", "src/a/b", false}, // * stays within a segment
		{"src/*.go", "src/main.go", true},
		{"**", "any/thing/at/all", true},
		{"**/*.md", "README.md", true},
		{"{app/,test/}", "test/unit/a_test.go", true},
		{"{app/,test/}", "docs/a.md", false},
		{"{/package.json,my-subproject/}", "package.json", true},
		{"web/{a,b{c,d}}/x", "web/bd/x", true},
		{"web/{a,b{c,d}}/x", "web/b/x", false},
		{"src/[ab].go", "src/b.go", true},
		{"src/?.go", "src/ab.go", false},
		{"a, b", "b", true},
		{" a , b ", "a", true},
		{"!config/manifest.yaml", "config/manifest.yaml", false},
		{"!config/manifest.yaml", "config/other.yaml", true},
		{"!{deployment/,/version.cfg}", "version.cfg", false},
		{"!{deployment/,/version.cfg}", "src/main.go", true},
		{"src/, !src/vendor/", "src/vendor/x.go", false},
		{"src/, !src/vendor/", "src/x.go", true},
		{"!!src/", "src/x.go", true}, // double negation
		{"src/**", "/src/x.go", true},
	}
	for _, tc := range cases {
		g, err := compileGlobs(tc.glob)
		if err != nil {
			t.Errorf("compileGlobs(%q): %v", tc.glob, err)
			continue
		}
		if got := g.matchAny([]string{tc.file}); got != tc.match {
			t.Errorf("glob %q on %q = %v, want %v", tc.glob, tc.file, got, tc.match)
		}
	}
}

func TestBranchRegexLookaheadEquivalence(t *testing.T) {
	// The lookahead idioms evaluated without lookahead, against what JavaScript answers.
	cases := []struct {
		re     string
		branch string
		match  bool
	}{
		{"/^((?!^feature).)*$/gi", "main", true},
		{"/^((?!^feature).)*$/gi", "feature-x", false},
		{"/^((?!^feature).)*$/gi", "FEATURE-x", false}, // i flag reaches inside
		{"/^((?!^feature).)*$/gi", "my-feature", true},
		{"/^((?!feature).)*$/", "my-feature", false},
		{"/^((?!feature).)*$/", "", true},
		{"/^((?!$).)*$/", "abc", true}, // X matching only at the very end excludes nothing
		{"/^((?!tag)).*/gi", "tag-1", false},
		{"/^((?!tag)).*/gi", "v1-tag", true},
		{"^(?!release/)feat", "feature", true},
		{"^(?!release/)feat", "release/feat", false},
		{"^(?!release/)feat", "main", false},
		{`/^((?!\)).)*$/`, "a)b", false},  // escaped paren inside X
		{`/^((?![)]).)*$/`, "a)b", false}, // paren inside a class
	}
	for _, tc := range cases {
		m, err := compileRegex("branchRegex", tc.re)
		if err != nil {
			t.Errorf("compile %q: %v", tc.re, err)
			continue
		}
		if got := m.match(tc.branch); got != tc.match {
			t.Errorf("%q on %q = %v, want %v", tc.re, tc.branch, got, tc.match)
		}
	}
}
