package webhook

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Each provider has its own fuzz target so that each can run on its own (go test -fuzz takes
// one). The inputs are the event header, the body and a signature (or GitLab token) header.

func FuzzParseGitHub(f *testing.F)    { fuzzParse(f, GitHub) }
func FuzzParseGitLab(f *testing.F)    { fuzzParse(f, GitLab) }
func FuzzParseGitea(f *testing.F)     { fuzzParse(f, Gitea) }
func FuzzParseBitbucket(f *testing.F) { fuzzParse(f, Bitbucket) }

// signatureHeader is where provider p carries the signature or token.
func signatureHeader(p Provider) string {
	switch p {
	case GitHub:
		return "X-Hub-Signature-256"
	case GitLab:
		return "X-Gitlab-Token"
	case Gitea:
		return "X-Gitea-Signature"
	}
	return "X-Hub-Signature"
}

func fuzzParse(f *testing.F, p Provider) {
	for _, tc := range parseCases {
		if tc.provider == p {
			f.Add(tc.event, readTestdata(f, p, tc.file), "sha256=00")
		}
	}
	for _, s := range []string{"{}", "null", "[]", `{"ref":"refs/heads/"}`, `{"push":{"changes":[{}]}}`, `{"object_attributes":{"iid":1}}`} {
		f.Add("push", []byte(s), "")
	}
	f.Fuzz(func(t *testing.T, event string, body []byte, sig string) {
		// Without the secret no delivery gets through.
		h := deliveryHeaders(p, event, body, "")
		if sig != "" {
			h.Set(signatureHeader(p), sig)
		}
		if _, err := ParseAll(p, h, body, testSecret); err == nil {
			t.Fatalf("accepted a delivery signed %q without knowing the secret", sig)
		} else if !errors.Is(err, ErrSignature) && !errors.Is(err, errdefs.ErrTooLarge) {
			t.Fatalf("unsigned delivery: error %q is neither a signature error nor too large", err)
		}

		// Correctly signed random bodies either parse into a sane event or fail cleanly.
		h = deliveryHeaders(p, event, body, testSecret)
		evs, err := ParseAll(p, h, body, testSecret)
		if err != nil {
			switch {
			case errors.Is(err, ErrSignature), errors.Is(err, ErrNoSecret):
				t.Fatalf("valid signature refused: %v", err)
			case !errors.Is(err, errdefs.ErrInvalid) && !errors.Is(err, errdefs.ErrTooLarge):
				t.Fatalf("error %q has no client error kind", err)
			case err.Error() == "" || strings.Contains(err.Error(), testSecret):
				t.Fatalf("bad error text %q", err)
			}
			return
		}
		if len(evs) == 0 {
			t.Fatal("no events and no error")
		}
		for _, ev := range evs {
			checkEvent(t, p, ev)
		}
	})
}

func checkEvent(t *testing.T, p Provider, ev Event) {
	t.Helper()
	fail := func(what string) { t.Helper(); t.Fatalf("%s: %+v", what, ev) }
	if ev.Provider != p || ev.DeliveryID == "" {
		fail("provider or delivery id")
	}
	if ev.Kind != KindPing && ev.Repo.FullName == "" {
		fail("no repository")
	}
	switch ev.Kind {
	case KindPush:
		if ev.Branch == "" || ev.Ref != "refs/heads/"+ev.Branch {
			fail("push without a branch ref")
		}
	case KindTag:
		if ev.Tag == "" || ev.Ref != "refs/tags/"+ev.Tag {
			fail("tag without a tag ref")
		}
	case KindPullRequest:
		pr := ev.PullRequest
		if pr == nil || pr.Number <= 0 || pr.SourceBranch == "" || pr.TargetBranch == "" || ev.Branch != pr.SourceBranch || ev.Action == "" {
			fail("pull request fields")
		}
		if pr.Merged != (ev.Action == ActionMerged) && !pr.Merged {
			fail("merged action without Merged")
		}
	case KindRelease:
		if ev.Tag == "" || ev.Action == "" {
			fail("release without tag or action")
		}
	case KindPing:
	default:
		fail("unknown kind")
	}
	if (ev.CodefreshName() == "") != (ev.Kind == KindPing) {
		fail("CodefreshName")
	}
	if !slices.IsSorted(ev.ModifiedFiles) || len(slices.Compact(slices.Clone(ev.ModifiedFiles))) != len(ev.ModifiedFiles) {
		fail("ModifiedFiles not a sorted set")
	}
	if _, err := json.Marshal(ev); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	repo := ev.Repo.FullName
	if !strings.Contains(repo, "/") {
		repo = "a/b"
	}
	trig := Trigger{Repo: repo, Events: KnownEvents(), ModifiedFilesGlob: "**", PullRequestAllowForkEvents: true}
	if ok, reason := Match(trig, ev); ok && (ev.Deleted || ev.Kind == KindPing) {
		t.Fatalf("a deletion or ping matched (%q): %+v", reason, ev)
	}
}

// FuzzTrigger checks that any trigger configuration validates without panicking, that an invalid
// one names its fields and never fires, and that matching stays fast.
func FuzzTrigger(f *testing.F) {
	f.Add("/^((?!^feature).)*$/gi", "", "^main$", "src/**, !src/vendor/", "feature/x", "src/a.go")
	f.Add("main, develop", "multiselect", "", "{app/,test/}", "main", "app/x")
	f.Add("^(?!wip)", "regex", "/x/i", "my-subproject//pom.xml", "wip/1", "my-subproject/a/pom.xml")
	f.Add("((", "multiselect-exclude", "[", "{", "", "")
	f.Fuzz(func(t *testing.T, branchRegex, input, target, glob, branch, file string) {
		tr := Trigger{
			Repo: "a/b", Events: []string{"push.heads", "pullrequest"},
			BranchRegex: branchRegex, BranchRegexInput: input,
			PullRequestTargetBranchRegex: target, ModifiedFilesGlob: glob,
		}
		verr := tr.Validate()
		if verr != nil {
			if !errors.Is(verr, errdefs.ErrInvalid) || len(fieldsOf(verr)) == 0 {
				t.Fatalf("Validate error %q names no field", verr)
			}
		}
		evs := []Event{
			{Provider: GitHub, Kind: KindPush, Repo: Repo{FullName: "a/b"}, Ref: "refs/heads/" + branch, Branch: branch, ModifiedFiles: []string{file}},
			{Provider: GitHub, Kind: KindPullRequest, Action: ActionOpened, Repo: Repo{FullName: "a/b"}, Branch: branch,
				PullRequest: &PullRequest{Number: 1, SourceBranch: branch, TargetBranch: file}, ModifiedFiles: []string{file}},
		}
		for _, ev := range evs {
			ok, reason := Match(tr, ev)
			if verr != nil && (ok || !strings.HasPrefix(reason, "invalid trigger")) {
				t.Fatalf("invalid trigger (%v) gave %v, %q", verr, ok, reason)
			}
		}
	})
}
