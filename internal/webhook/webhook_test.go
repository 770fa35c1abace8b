package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testSecret = "It's a Secret to Everybody"

// Delivery ids as each provider formats them.
const (
	ghDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	glUUID     = "2ba2bd4f-0bd5-4f53-bf0c-4d8f1e7e4a51"
	glIdemKey  = "f4a3c1e6-7b0b-4b8e-9a51-2d0c7d5e3f10"
	gtDelivery = "f6266f16-1bf3-46a5-9ea4-602e06ead473"
	bbDelivery = "0a9c8b7e-6d5f-4e3a-8b1c-2d3e4f5a6b7c"
)

func hexHMAC(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// deliveryHeaders returns the headers provider p sends for event, signed with secret over body
// (unsigned when secret is empty), in the providers' documented formats.
func deliveryHeaders(p Provider, event string, body []byte, secret string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	switch p {
	case GitHub:
		h.Set("User-Agent", "GitHub-Hookshot/044aadd")
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Delivery", ghDelivery)
		h.Set("X-GitHub-Hook-ID", "292430182")
		if secret != "" {
			h.Set("X-Hub-Signature-256", "sha256="+hexHMAC(secret, body))
		}
	case GitLab:
		h.Set("User-Agent", "GitLab/17.5.0")
		h.Set("X-Gitlab-Event", event)
		h.Set("X-Gitlab-Event-UUID", glUUID)
		h.Set("X-Gitlab-Instance", "https://gitlab.example.com")
		h.Set("X-Gitlab-Webhook-UUID", "8b5a4c1e-1111-2222-3333-444455556666")
		if secret != "" {
			h.Set("X-Gitlab-Token", secret)
		}
	case Gitea:
		h.Set("X-Gitea-Event", event)
		h.Set("X-Gitea-Event-Type", event)
		h.Set("X-Gitea-Delivery", gtDelivery)
		h.Set("X-GitHub-Event", event) // Gitea also sends GitHub's and Gogs' headers
		h.Set("X-Gogs-Event", event)
		if secret != "" {
			h.Set("X-Gitea-Signature", hexHMAC(secret, body))
		}
	case Bitbucket:
		h.Set("User-Agent", "Bitbucket-Webhooks/2.0")
		h.Set("X-Event-Key", event)
		h.Set("X-Request-UUID", bbDelivery)
		h.Set("X-Hook-UUID", "{4e1b6f0a-2c3d-4e5f-8a9b-0c1d2e3f4a5b}")
		h.Set("X-Attempt-Number", "1")
		if secret != "" {
			h.Set("X-Hub-Signature", "sha256="+hexHMAC(secret, body))
		}
	}
	return h
}

func readTestdata(t testing.TB, p Provider, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", string(p), file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseFile parses a testdata payload delivered with valid signature headers.
func parseFile(t testing.TB, p Provider, event, file string) []Event {
	t.Helper()
	body := readTestdata(t, p, file)
	evs, err := ParseAll(p, deliveryHeaders(p, event, body, testSecret), body, testSecret)
	if err != nil {
		t.Fatalf("parse %s/%s: %v", p, file, err)
	}
	return evs
}

// want is what a user relies on in a parsed event.
type want struct {
	n               int // events in the delivery; 0 means 1
	delivery        string
	kind            Kind
	name            string // CodefreshName
	action          string
	repo            string
	ref             string
	branch          string
	tag             string
	sha             string
	created         bool
	deleted         bool
	files           []string
	filesIncomplete bool
	headMessage     string
	sender          string
	pr              *PullRequest // Number, SourceBranch, TargetBranch, HeadSHA, Merged, Fork checked
}

var parseCases = []struct {
	provider Provider
	event    string
	file     string
	want     want
}{
	{GitHub, "push", "push.json", want{
		delivery: ghDelivery, kind: KindPush, name: "push.heads", repo: "Codertocat/Hello-World",
		ref: "refs/heads/main", branch: "main", sha: "b0c7b3f1e2d4a5c6978877665544332211009988",
		files:       []string{"README.md", "docs/old.md", "go.mod", "services/deploy/Dockerfile", "services/deploy/main.go"},
		headMessage: "Update README", sender: "Codertocat",
	}},
	{GitHub, "push", "push-tag.json", want{
		delivery: ghDelivery, kind: KindTag, name: "push.tags", repo: "Codertocat/Hello-World",
		ref: "refs/tags/v1.2.0", tag: "v1.2.0", created: true,
		sha:         "b0c7b3f1e2d4a5c6978877665544332211009988", // the commit, not the tag object in "after"
		headMessage: "Update README", sender: "Codertocat",
	}},
	{GitHub, "push", "push-delete.json", want{
		delivery: ghDelivery, kind: KindPush, name: "push.heads", repo: "Codertocat/Hello-World",
		ref: "refs/heads/feature/login", branch: "feature/login", deleted: true,
		sha: "0000000000000000000000000000000000000000", sender: "Codertocat",
	}},
	{GitHub, "pull_request", "pull_request-opened.json", want{
		delivery: ghDelivery, kind: KindPullRequest, name: "pullrequest.opened", action: "opened",
		repo: "Codertocat/Hello-World", ref: "refs/pull/2/head", branch: "feature/login",
		sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", filesIncomplete: true, sender: "Codertocat",
		pr: &PullRequest{Number: 2, SourceBranch: "feature/login", TargetBranch: "main", HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821"},
	}},
	{GitHub, "pull_request", "pull_request-synchronize.json", want{
		delivery: ghDelivery, kind: KindPullRequest, name: "pullrequest.synchronize", action: "synchronize",
		repo: "Codertocat/Hello-World", ref: "refs/pull/2/head", branch: "feature/login",
		sha: "34c5c7793cb3b279e22454cb6750c80560547b3a", filesIncomplete: true, sender: "Codertocat",
		pr: &PullRequest{Number: 2, SourceBranch: "feature/login", TargetBranch: "main", HeadSHA: "34c5c7793cb3b279e22454cb6750c80560547b3a"},
	}},
	{GitHub, "pull_request", "pull_request-closed-merged.json", want{
		delivery: ghDelivery, kind: KindPullRequest, name: "pullrequest.merged", action: "merged",
		repo: "Codertocat/Hello-World", ref: "refs/pull/2/head", branch: "feature/login",
		sha: "34c5c7793cb3b279e22454cb6750c80560547b3a", filesIncomplete: true, sender: "Codertocat",
		pr: &PullRequest{Number: 2, SourceBranch: "feature/login", TargetBranch: "main", HeadSHA: "34c5c7793cb3b279e22454cb6750c80560547b3a", Merged: true},
	}},
	{GitHub, "pull_request", "pull_request-closed.json", want{
		delivery: ghDelivery, kind: KindPullRequest, name: "pullrequest.closed", action: "closed",
		repo: "Codertocat/Hello-World", ref: "refs/pull/2/head", branch: "feature/login",
		sha: "34c5c7793cb3b279e22454cb6750c80560547b3a", filesIncomplete: true, sender: "Codertocat",
		pr: &PullRequest{Number: 2, SourceBranch: "feature/login", TargetBranch: "main", HeadSHA: "34c5c7793cb3b279e22454cb6750c80560547b3a"},
	}},
	{GitHub, "pull_request", "pull_request-fork.json", want{
		delivery: ghDelivery, kind: KindPullRequest, name: "pullrequest.opened", action: "opened",
		repo: "Codertocat/Hello-World", ref: "refs/pull/2/head", branch: "feature/login",
		sha: "5c5c7793cb3b279e22454cb6750c80560547b3aa", filesIncomplete: true, sender: "Codertocat",
		pr: &PullRequest{Number: 2, SourceBranch: "feature/login", TargetBranch: "main", HeadSHA: "5c5c7793cb3b279e22454cb6750c80560547b3aa", Fork: true},
	}},
	{GitHub, "ping", "ping.json", want{
		delivery: ghDelivery, kind: KindPing, name: "", repo: "Codertocat/Hello-World", sender: "Codertocat",
	}},
	{GitHub, "release", "release-published.json", want{
		delivery: ghDelivery, kind: KindRelease, name: "release", action: "published",
		repo: "Codertocat/Hello-World", ref: "refs/tags/v1.2.0", tag: "v1.2.0", sender: "Codertocat",
	}},

	{GitLab, "Push Hook", "push.json", want{
		delivery: glUUID, kind: KindPush, name: "push.heads", repo: "mike/diaspora",
		ref: "refs/heads/master", branch: "master", sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
		files:           []string{"CHANGELOG", "README.old", "app/controller/application.rb"},
		filesIncomplete: true, // total_commits_count 4, two listed
		headMessage:     "fixed readme", sender: "jsmith",
	}},
	{GitLab, "Tag Push Hook", "tag_push.json", want{
		delivery: glUUID, kind: KindTag, name: "push.tags", repo: "mike/diaspora",
		ref: "refs/tags/v1.0.0", tag: "v1.0.0", created: true,
		sha:    "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", // checkout_sha, not the tag object
		sender: "jsmith",
	}},
	{GitLab, "Push Hook", "push-delete.json", want{
		delivery: glUUID, kind: KindPush, name: "push.heads", repo: "mike/diaspora",
		ref: "refs/heads/feature/old", branch: "feature/old", deleted: true,
		sha: "0000000000000000000000000000000000000000", sender: "jsmith",
	}},
	{GitLab, "Merge Request Hook", "merge_request-open.json", want{
		delivery: glUUID, kind: KindPullRequest, name: "pullrequest.opened", action: "opened",
		repo: "mike/diaspora", ref: "refs/merge-requests/1/head", branch: "ms-viewport",
		sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", filesIncomplete: true,
		headMessage: "fixed readme", sender: "root",
		pr: &PullRequest{Number: 1, SourceBranch: "ms-viewport", TargetBranch: "master", HeadSHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"},
	}},
	{GitLab, "Merge Request Hook", "merge_request-update.json", want{
		delivery: glUUID, kind: KindPullRequest, name: "pullrequest.synchronize", action: "synchronize",
		repo: "mike/diaspora", ref: "refs/merge-requests/1/head", branch: "ms-viewport",
		sha: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", filesIncomplete: true,
		headMessage: "fixed readme", sender: "root",
		pr: &PullRequest{Number: 1, SourceBranch: "ms-viewport", TargetBranch: "master", HeadSHA: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"},
	}},
	{GitLab, "Merge Request Hook", "merge_request-edit.json", want{
		delivery: glUUID, kind: KindPullRequest, name: "pullrequest.edited", action: "edited",
		repo: "mike/diaspora", ref: "refs/merge-requests/1/head", branch: "ms-viewport",
		sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", filesIncomplete: true,
		headMessage: "fixed readme", sender: "root",
		pr: &PullRequest{Number: 1, SourceBranch: "ms-viewport", TargetBranch: "master", HeadSHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"},
	}},
	{GitLab, "Merge Request Hook", "merge_request-merge.json", want{
		delivery: glUUID, kind: KindPullRequest, name: "pullrequest.merged", action: "merged",
		repo: "mike/diaspora", ref: "refs/merge-requests/1/head", branch: "ms-viewport",
		sha: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", filesIncomplete: true,
		headMessage: "fixed readme", sender: "root",
		pr: &PullRequest{Number: 1, SourceBranch: "ms-viewport", TargetBranch: "master", HeadSHA: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", Merged: true},
	}},
	{GitLab, "Merge Request Hook", "merge_request-fork.json", want{
		delivery: glUUID, kind: KindPullRequest, name: "pullrequest.opened", action: "opened",
		repo: "mike/diaspora", ref: "refs/merge-requests/1/head", branch: "ms-viewport",
		sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", filesIncomplete: true,
		headMessage: "fixed readme", sender: "root",
		pr: &PullRequest{Number: 1, SourceBranch: "ms-viewport", TargetBranch: "master", HeadSHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", Fork: true},
	}},
	{GitLab, "Release Hook", "release.json", want{
		delivery: glUUID, kind: KindRelease, name: "release", action: "published",
		repo: "gitlab-org/release-webhook-example", ref: "refs/tags/v1.1", tag: "v1.1",
		sha: "ee0a3fb31ac16e11b9dbb596ad16d4af654d08f8", headMessage: "Release v1.1",
	}},

	{Gitea, "push", "push.json", want{
		delivery: gtDelivery, kind: KindPush, name: "push.heads", repo: "gitea/webhooks",
		ref: "refs/heads/develop", branch: "develop", sha: "bffeb74224043ba2feb48d137756c8a9331c449a",
		files:       []string{".gitea/workflows/ci.yml", "charts/app/Chart.yaml", "charts/app/values.yaml"},
		headMessage: "Webhooks Yay!\n", sender: "gitea",
	}},
	{Gitea, "delete", "delete.json", want{
		delivery: gtDelivery, kind: KindPush, name: "push.heads", repo: "gitea/webhooks",
		ref: "refs/heads/feature/helm", branch: "feature/helm", deleted: true, sender: "gitea",
	}},
	{Gitea, "pull_request", "pull_request-opened.json", want{
		delivery: gtDelivery, kind: KindPullRequest, name: "pullrequest.opened", action: "opened",
		repo: "gitea/webhooks", ref: "refs/pull/3/head", branch: "feature/helm",
		sha: "bffeb74224043ba2feb48d137756c8a9331c449a", filesIncomplete: true, sender: "gitea",
		pr: &PullRequest{Number: 3, SourceBranch: "feature/helm", TargetBranch: "main", HeadSHA: "bffeb74224043ba2feb48d137756c8a9331c449a"},
	}},
	{Gitea, "pull_request", "pull_request-synchronized.json", want{
		delivery: gtDelivery, kind: KindPullRequest, name: "pullrequest.synchronize", action: "synchronize",
		repo: "gitea/webhooks", ref: "refs/pull/3/head", branch: "feature/helm",
		sha: "c0ffee4224043ba2feb48d137756c8a9331c449a", filesIncomplete: true, sender: "gitea",
		pr: &PullRequest{Number: 3, SourceBranch: "feature/helm", TargetBranch: "main", HeadSHA: "c0ffee4224043ba2feb48d137756c8a9331c449a"},
	}},
	{Gitea, "pull_request", "pull_request-closed-merged.json", want{
		delivery: gtDelivery, kind: KindPullRequest, name: "pullrequest.merged", action: "merged",
		repo: "gitea/webhooks", ref: "refs/pull/3/head", branch: "feature/helm",
		sha: "c0ffee4224043ba2feb48d137756c8a9331c449a", filesIncomplete: true, sender: "gitea",
		pr: &PullRequest{Number: 3, SourceBranch: "feature/helm", TargetBranch: "main", HeadSHA: "c0ffee4224043ba2feb48d137756c8a9331c449a", Merged: true},
	}},
	{Gitea, "release", "release-published.json", want{
		delivery: gtDelivery, kind: KindRelease, name: "release", action: "published",
		repo: "gitea/webhooks", ref: "refs/tags/v0.3.0", tag: "v0.3.0", sender: "gitea",
	}},

	{Bitbucket, "repo:push", "repo-push.json", want{
		n: 2, delivery: bbDelivery, kind: KindPush, name: "push.heads", repo: "acme-inc/web-shop",
		ref: "refs/heads/main", branch: "main", sha: "1e65c05c1d5171631d92438a13901ca7dae9618c",
		filesIncomplete: true, headMessage: "Fix checkout totals\n", sender: "emmalee",
	}},
	{Bitbucket, "repo:push", "repo-push-delete.json", want{
		delivery: bbDelivery, kind: KindPush, name: "push.heads", repo: "acme-inc/web-shop",
		ref: "refs/heads/feature/cart", branch: "feature/cart", deleted: true, sender: "emmalee",
	}},
	{Bitbucket, "pullrequest:created", "pullrequest-created.json", want{
		delivery: bbDelivery, kind: KindPullRequest, name: "pullrequest.opened", action: "opened",
		repo: "acme-inc/web-shop", ref: "refs/heads/feature/cart", branch: "feature/cart",
		sha: "1e65c05c1d51", filesIncomplete: true, sender: "emmalee",
		pr: &PullRequest{Number: 17, SourceBranch: "feature/cart", TargetBranch: "main", HeadSHA: "1e65c05c1d51"},
	}},
	{Bitbucket, "pullrequest:fulfilled", "pullrequest-fulfilled.json", want{
		delivery: bbDelivery, kind: KindPullRequest, name: "pullrequest.merged", action: "merged",
		repo: "acme-inc/web-shop", ref: "refs/heads/feature/cart", branch: "feature/cart",
		sha: "1e65c05c1d51", filesIncomplete: true, sender: "emmalee",
		pr: &PullRequest{Number: 17, SourceBranch: "feature/cart", TargetBranch: "main", HeadSHA: "1e65c05c1d51", Merged: true},
	}},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(string(tc.provider)+"/"+tc.file, func(t *testing.T) {
			evs := parseFile(t, tc.provider, tc.event, tc.file)
			w := tc.want
			if n := max(w.n, 1); len(evs) != n {
				t.Fatalf("got %d events, want %d", len(evs), n)
			}
			ev := evs[0]
			check := func(field string, got, want any) {
				t.Helper()
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				if !bytes.Equal(gj, wj) {
					t.Errorf("%s = %s, want %s", field, gj, wj)
				}
			}
			check("Provider", ev.Provider, tc.provider)
			check("DeliveryID", ev.DeliveryID, w.delivery)
			check("Kind", ev.Kind, w.kind)
			check("CodefreshName()", ev.CodefreshName(), w.name)
			check("Action", ev.Action, w.action)
			check("Repo.FullName", ev.Repo.FullName, w.repo)
			check("Ref", ev.Ref, w.ref)
			check("Branch", ev.Branch, w.branch)
			check("Tag", ev.Tag, w.tag)
			check("SHA", ev.SHA, w.sha)
			check("Created", ev.Created, w.created)
			check("Deleted", ev.Deleted, w.deleted)
			check("ModifiedFiles", ev.ModifiedFiles, w.files)
			check("FilesIncomplete", ev.FilesIncomplete, w.filesIncomplete)
			check("Sender.Login", ev.Sender.Login, w.sender)
			var head string
			if ev.HeadCommit != nil {
				head = ev.HeadCommit.Message
			}
			check("HeadCommit.Message", head, w.headMessage)
			if w.pr == nil {
				if ev.PullRequest != nil {
					t.Errorf("PullRequest = %+v, want nil", ev.PullRequest)
				}
			} else if pr := ev.PullRequest; pr == nil {
				t.Error("PullRequest = nil")
			} else {
				check("PullRequest.Number", pr.Number, w.pr.Number)
				check("PullRequest.SourceBranch", pr.SourceBranch, w.pr.SourceBranch)
				check("PullRequest.TargetBranch", pr.TargetBranch, w.pr.TargetBranch)
				check("PullRequest.HeadSHA", pr.HeadSHA, w.pr.HeadSHA)
				check("PullRequest.Merged", pr.Merged, w.pr.Merged)
				check("PullRequest.Fork", pr.Fork, w.pr.Fork)
			}
			if ev.Kind != KindPing {
				if ev.Repo.Owner == "" || ev.Repo.Name == "" || ev.Repo.Owner+"/"+ev.Repo.Name != ev.Repo.FullName && tc.provider != Bitbucket {
					t.Errorf("Repo owner/name = %q/%q, full name %q", ev.Repo.Owner, ev.Repo.Name, ev.Repo.FullName)
				}
				if ev.Repo.CloneURL == "" || ev.Repo.HTMLURL == "" {
					t.Errorf("Repo URLs missing: %+v", ev.Repo)
				}
			}
			golden(t, filepath.Join("testdata", string(tc.provider), strings.TrimSuffix(tc.file, ".json")+".golden"), evs)
		})
	}
}

// golden compares v's JSON with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantB, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, wantB) {
		t.Errorf("%s differs from the parsed event (run go test -update and review the diff):\n%s", path, got)
	}
}

func TestParseBitbucketSeveralRefs(t *testing.T) {
	evs := parseFile(t, Bitbucket, "repo:push", "repo-push.json")
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2", len(evs))
	}
	tag := evs[1]
	if tag.Kind != KindTag || tag.Tag != "v2.0.1" || !tag.Created || tag.CodefreshName() != "push.tags" {
		t.Errorf("second change = %+v, want the created tag v2.0.1", tag)
	}
	if tag.DeliveryID != bbDelivery+"#2" {
		t.Errorf("second change's DeliveryID = %q, want %q (distinct, for dedup)", tag.DeliveryID, bbDelivery+"#2")
	}
	// Parse returns the first change.
	body := readTestdata(t, Bitbucket, "repo-push.json")
	ev, err := Parse(Bitbucket, deliveryHeaders(Bitbucket, "repo:push", body, testSecret), body, testSecret)
	if err != nil || ev.Branch != "main" {
		t.Errorf("Parse = %+v, %v; want the main branch change", ev, err)
	}
}

func TestRedeliveryKeepsDeliveryID(t *testing.T) {
	for _, tc := range []struct {
		p     Provider
		event string
		file  string
	}{
		{GitHub, "push", "push.json"},
		{GitLab, "Push Hook", "push.json"},
		{Gitea, "push", "push.json"},
		{Bitbucket, "repo:push", "repo-push.json"},
	} {
		body := readTestdata(t, tc.p, tc.file)
		first, err := Parse(tc.p, deliveryHeaders(tc.p, tc.event, body, testSecret), body, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		h := deliveryHeaders(tc.p, tc.event, body, testSecret)
		h.Set("X-Attempt-Number", "2")
		again, err := Parse(tc.p, h, body, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if first.DeliveryID == "" || first.DeliveryID != again.DeliveryID {
			t.Errorf("%s: delivery ids %q and %q, want the same non-empty id", tc.p, first.DeliveryID, again.DeliveryID)
		}
	}

	// GitLab 17.4+ keeps Idempotency-Key across retries; it wins over the event UUID.
	body := readTestdata(t, GitLab, "push.json")
	h := deliveryHeaders(GitLab, "Push Hook", body, testSecret)
	h.Set("Idempotency-Key", glIdemKey)
	ev, err := Parse(GitLab, h, body, testSecret)
	if err != nil || ev.DeliveryID != glIdemKey {
		t.Errorf("GitLab with Idempotency-Key: DeliveryID %q, %v; want %q", ev.DeliveryID, err, glIdemKey)
	}
	h.Del("X-Gitlab-Event-UUID")
	if ev, err := Parse(GitLab, h, body, testSecret); err != nil || ev.DeliveryID != glIdemKey {
		t.Errorf("GitLab with only Idempotency-Key: DeliveryID %q, %v", ev.DeliveryID, err)
	}
}

func TestGiteaSignatureHeaders(t *testing.T) {
	body := readTestdata(t, Gitea, "push.json")
	h := deliveryHeaders(Gitea, "push", body, testSecret)
	sig := h.Get("X-Gitea-Signature")

	// Forgejo names its headers X-Forgejo-*.
	fh := http.Header{}
	fh.Set("X-Forgejo-Event", "push")
	fh.Set("X-Forgejo-Delivery", gtDelivery)
	fh.Set("X-Forgejo-Signature", sig)
	if _, err := Parse(Gitea, fh, body, testSecret); err != nil {
		t.Errorf("Forgejo headers: %v", err)
	}
	// Recent Gitea versions also sign in GitHub's header.
	h.Del("X-Gitea-Signature")
	h.Set("X-Hub-Signature-256", "sha256="+sig)
	if _, err := Parse(Gitea, h, body, testSecret); err != nil {
		t.Errorf("X-Hub-Signature-256 only: %v", err)
	}
	h.Set("X-Hub-Signature-256", "sha256="+hexHMAC("wrong", body))
	if _, err := Parse(Gitea, h, body, testSecret); !errors.Is(err, ErrSignature) {
		t.Errorf("bad X-Hub-Signature-256: err = %v, want ErrSignature", err)
	}
}

func TestParseErrors(t *testing.T) {
	ghPush := readTestdata(t, GitHub, "push.json")
	signed := func(p Provider, event string, body []byte) http.Header {
		return deliveryHeaders(p, event, body, testSecret)
	}
	big := append(bytes.Repeat([]byte(" "), DefaultMaxBodyBytes), '{', '}')

	cases := []struct {
		name     string
		provider Provider
		headers  http.Header
		body     []byte
		secret   string
		opts     []Option
		is       []error // every one must hold
		code     string  // errdefs.Code
		contains string
		field    string // errdefs.Field, when a field is named
	}{
		{
			name: "github wrong secret", provider: GitHub,
			headers: deliveryHeaders(GitHub, "push", ghPush, "not the secret"), body: ghPush, secret: testSecret,
			is: []error{ErrSignature, errdefs.ErrUnauthenticated}, code: "unauthenticated",
			contains: "X-Hub-Signature-256 does not match",
		},
		{
			name: "github body changed after signing", provider: GitHub,
			headers: signed(GitHub, "push", ghPush), body: bytes.Replace(ghPush, []byte(`"main"`), []byte(`"prod"`), 1), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "does not match",
		},
		{
			name: "github unsigned", provider: GitHub,
			headers: deliveryHeaders(GitHub, "push", ghPush, ""), body: ghPush, secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "missing X-Hub-Signature-256 header",
		},
		{
			name: "github only the legacy sha1 signature", provider: GitHub,
			headers: func() http.Header {
				h := deliveryHeaders(GitHub, "push", ghPush, "")
				h.Set("X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567")
				return h
			}(), body: ghPush, secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "missing X-Hub-Signature-256",
		},
		{
			name: "github malformed signature", provider: GitHub,
			headers: func() http.Header {
				h := signed(GitHub, "push", ghPush)
				h.Set("X-Hub-Signature-256", "sha256=not-hex")
				return h
			}(), body: ghPush, secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: `is not of the form "sha256=<hex HMAC-SHA256>"`,
		},
		{
			name: "github signature without the sha256= prefix", provider: GitHub,
			headers: func() http.Header {
				h := signed(GitHub, "push", ghPush)
				h.Set("X-Hub-Signature-256", hexHMAC(testSecret, ghPush))
				return h
			}(), body: ghPush, secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "is not of the form",
		},
		{
			name: "github missing event header", provider: GitHub,
			headers: func() http.Header {
				h := signed(GitHub, "push", ghPush)
				h.Del("X-GitHub-Event")
				return h
			}(), body: ghPush, secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "X-GitHub-Event", contains: "header is missing",
		},
		{
			name: "github missing delivery header", provider: GitHub,
			headers: func() http.Header {
				h := signed(GitHub, "push", ghPush)
				h.Del("X-GitHub-Delivery")
				return h
			}(), body: ghPush, secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "X-GitHub-Delivery",
		},
		{
			name: "github event freshet does not build from", provider: GitHub,
			headers: signed(GitHub, "issues", readTestdata(t, GitHub, "issues.json")), body: readTestdata(t, GitHub, "issues.json"), secret: testSecret,
			is: []error{ErrUnsupportedEvent, errdefs.ErrInvalid}, code: "invalid_argument", contains: `github event "issues"`,
		},
		{
			name: "github malformed JSON", provider: GitHub,
			headers: signed(GitHub, "push", []byte(`{"ref": "refs/heads/main",`)), body: []byte(`{"ref": "refs/heads/main",`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body",
		},
		{
			name: "github JSON syntax error", provider: GitHub,
			headers: signed(GitHub, "push", []byte(`{"ref": refs/heads/main}`)), body: []byte(`{"ref": refs/heads/main}`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body", contains: "is not valid JSON at byte",
		},
		{
			name: "github field of the wrong type", provider: GitHub,
			headers: signed(GitHub, "push", []byte(`{"ref": 5}`)), body: []byte(`{"ref": 5}`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body.ref", contains: "wrong type",
		},
		{
			name: "github push without ref", provider: GitHub,
			headers: signed(GitHub, "push", []byte(`{"after": "abc"}`)), body: []byte(`{"after": "abc"}`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body.ref", contains: "is missing",
		},
		{
			name: "github JSON array", provider: GitHub,
			headers: signed(GitHub, "push", []byte(`[]`)), body: []byte(`[]`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", contains: "is not a JSON object",
		},
		{
			name: "github empty body", provider: GitHub,
			headers: signed(GitHub, "push", nil), body: nil, secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", contains: "is empty",
		},
		{
			name: "github push to a note ref", provider: GitHub,
			headers: signed(GitHub, "push", bytes.Replace(ghPush, []byte("refs/heads/main"), []byte("refs/notes/commits"), 1)),
			body:    bytes.Replace(ghPush, []byte("refs/heads/main"), []byte("refs/notes/commits"), 1), secret: testSecret,
			is: []error{ErrUnsupportedEvent}, code: "invalid_argument", contains: "neither a branch nor a tag",
		},
		{
			name: "github form-encoded delivery", provider: GitHub,
			headers: func() http.Header {
				b := []byte("payload=%7B%7D")
				h := signed(GitHub, "push", b)
				h.Set("Content-Type", "application/x-www-form-urlencoded")
				return h
			}(), body: []byte("payload=%7B%7D"), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "Content-Type", contains: "application/json",
		},
		{
			name: "oversized body, refused before anything else", provider: GitHub,
			headers: http.Header{}, body: big, secret: testSecret,
			is: []error{errdefs.ErrTooLarge}, code: "too_large", contains: "larger than 5242880 bytes",
		},
		{
			name: "smaller configured limit", provider: GitHub,
			headers: signed(GitHub, "push", ghPush), body: ghPush, secret: testSecret, opts: []Option{MaxBodyBytes(100)},
			is: []error{errdefs.ErrTooLarge}, code: "too_large",
		},
		{
			name: "no secret configured", provider: GitHub,
			headers: signed(GitHub, "push", ghPush), body: ghPush, secret: "",
			is: []error{ErrNoSecret}, code: "internal", contains: "secret is not configured",
		},
		{
			name: "AllowUnsigned does not skip a configured secret", provider: GitHub,
			headers: deliveryHeaders(GitHub, "push", ghPush, "wrong"), body: ghPush, secret: testSecret, opts: []Option{AllowUnsigned()},
			is: []error{ErrSignature}, code: "unauthenticated",
		},
		{
			name: "unknown provider", provider: "svn",
			headers: http.Header{}, body: ghPush, secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "provider",
		},

		{
			name: "gitlab wrong token", provider: GitLab,
			headers: deliveryHeaders(GitLab, "Push Hook", nil, "guess"), body: readTestdata(t, GitLab, "push.json"), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "X-Gitlab-Token does not match",
		},
		{
			name: "gitlab token that is a prefix of the secret", provider: GitLab,
			headers: deliveryHeaders(GitLab, "Push Hook", nil, testSecret[:5]), body: readTestdata(t, GitLab, "push.json"), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated",
		},
		{
			name: "gitlab missing token", provider: GitLab,
			headers: deliveryHeaders(GitLab, "Push Hook", nil, ""), body: readTestdata(t, GitLab, "push.json"), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "missing X-Gitlab-Token",
		},
		{
			name: "gitlab missing event uuid", provider: GitLab,
			headers: func() http.Header {
				h := deliveryHeaders(GitLab, "Push Hook", nil, testSecret)
				h.Del("X-Gitlab-Event-UUID")
				return h
			}(), body: readTestdata(t, GitLab, "push.json"), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "X-Gitlab-Event-UUID",
		},
		{
			name: "gitlab issue hook", provider: GitLab,
			headers: deliveryHeaders(GitLab, "Issue Hook", nil, testSecret), body: []byte(`{"object_kind":"issue"}`), secret: testSecret,
			is: []error{ErrUnsupportedEvent}, code: "invalid_argument", contains: `gitlab event "Issue Hook"`,
		},
		{
			name: "gitlab merge request without attributes", provider: GitLab,
			headers: deliveryHeaders(GitLab, "Merge Request Hook", nil, testSecret), body: []byte(`{"object_kind":"merge_request"}`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body.object_attributes",
		},

		{
			name: "gitea wrong secret", provider: Gitea,
			headers: deliveryHeaders(Gitea, "push", readTestdata(t, Gitea, "push.json"), "nope"), body: readTestdata(t, Gitea, "push.json"), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "X-Gitea-Signature does not match",
		},
		{
			name: "gitea unsigned", provider: Gitea,
			headers: deliveryHeaders(Gitea, "push", nil, ""), body: readTestdata(t, Gitea, "push.json"), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "missing X-Gitea-Signature",
		},
		{
			name: "gitea delete of an unknown ref type", provider: Gitea,
			headers: signed(Gitea, "delete", []byte(`{"ref":"x","ref_type":"note","repository":{"full_name":"a/b"}}`)),
			body:    []byte(`{"ref":"x","ref_type":"note","repository":{"full_name":"a/b"}}`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body.ref_type",
		},
		{
			name: "gitea create event", provider: Gitea,
			headers: signed(Gitea, "create", []byte(`{}`)), body: []byte(`{}`), secret: testSecret,
			is: []error{ErrUnsupportedEvent}, code: "invalid_argument",
		},

		{
			name: "bitbucket wrong secret", provider: Bitbucket,
			headers: deliveryHeaders(Bitbucket, "repo:push", readTestdata(t, Bitbucket, "repo-push.json"), "nope"), body: readTestdata(t, Bitbucket, "repo-push.json"), secret: testSecret,
			is: []error{ErrSignature}, code: "unauthenticated", contains: "X-Hub-Signature does not match",
		},
		{
			name: "bitbucket missing event key", provider: Bitbucket,
			headers: func() http.Header {
				b := readTestdata(t, Bitbucket, "repo-push.json")
				h := signed(Bitbucket, "repo:push", b)
				h.Del("X-Event-Key")
				return h
			}(), body: readTestdata(t, Bitbucket, "repo-push.json"), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "X-Event-Key",
		},
		{
			name: "bitbucket missing request uuid", provider: Bitbucket,
			headers: func() http.Header {
				b := readTestdata(t, Bitbucket, "repo-push.json")
				h := signed(Bitbucket, "repo:push", b)
				h.Del("X-Request-UUID")
				return h
			}(), body: readTestdata(t, Bitbucket, "repo-push.json"), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "X-Request-UUID",
		},
		{
			name: "bitbucket fork event", provider: Bitbucket,
			headers: signed(Bitbucket, "repo:fork", []byte(`{}`)), body: []byte(`{}`), secret: testSecret,
			is: []error{ErrUnsupportedEvent}, code: "invalid_argument", contains: `bitbucket event "repo:fork"`,
		},
		{
			name: "bitbucket push without changes", provider: Bitbucket,
			headers: signed(Bitbucket, "repo:push", []byte(`{"push":{"changes":[]},"repository":{"full_name":"a/b"}}`)),
			body:    []byte(`{"push":{"changes":[]},"repository":{"full_name":"a/b"}}`), secret: testSecret,
			is: []error{errdefs.ErrInvalid}, code: "invalid_argument", field: "body.push.changes",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAll(tc.provider, tc.headers, tc.body, tc.secret, tc.opts...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("error %q is not %q", err, target)
				}
			}
			if got := errdefs.Code(err); got != tc.code {
				t.Errorf("errdefs.Code = %q, want %q (error %q)", got, tc.code, err)
			}
			if tc.contains != "" && !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not say %q", err, tc.contains)
			}
			if tc.field != "" && errdefs.Field(err) != tc.field {
				t.Errorf("errdefs.Field = %q, want %q (error %q)", errdefs.Field(err), tc.field, err)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), hexHMAC(testSecret, tc.body)) {
				t.Errorf("error %q reveals the secret or the expected signature", err)
			}
		})
	}
}

func TestAllowUnsigned(t *testing.T) {
	body := readTestdata(t, GitHub, "push.json")
	h := deliveryHeaders(GitHub, "push", body, "")
	if _, err := Parse(GitHub, h, body, ""); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("without the option: err = %v, want ErrNoSecret", err)
	}
	ev, err := Parse(GitHub, h, body, "", AllowUnsigned())
	if err != nil || ev.Branch != "main" {
		t.Fatalf("with AllowUnsigned: %+v, %v", ev, err)
	}
}

func TestReadBody(t *testing.T) {
	b, err := ReadBody(bytes.NewReader(make([]byte, 100)), 100)
	if err != nil || len(b) != 100 {
		t.Errorf("body of exactly the limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadBody(bytes.NewReader(make([]byte, 101)), 100); !errors.Is(err, errdefs.ErrTooLarge) {
		t.Errorf("body over the limit: err = %v, want ErrTooLarge", err)
	}
	if _, err := ReadBody(bytes.NewReader(make([]byte, DefaultMaxBodyBytes+1)), 0); !errors.Is(err, errdefs.ErrTooLarge) {
		t.Errorf("default limit: err = %v, want ErrTooLarge", err)
	}
}

func TestParseProvider(t *testing.T) {
	for _, p := range Providers() {
		if got, err := ParseProvider(string(p)); err != nil || got != p {
			t.Errorf("ParseProvider(%q) = %q, %v", p, got, err)
		}
	}
	if _, err := ParseProvider("GitHub"); errdefs.Field(err) != "provider" {
		t.Errorf("ParseProvider(GitHub) err = %v, want a provider field error (names are lower case)", err)
	}
}

func TestModifiedFilesSortedUnion(t *testing.T) {
	got := modifiedFiles([]Commit{
		{Added: []string{"b", "a"}, Modified: []string{"c"}},
		{Removed: []string{"a", ""}, Modified: []string{"d"}},
	})
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("modifiedFiles = %q, want %q", got, want)
	}
}

// TestVerify: every provider's signature checked without decoding the body, which may be an
// event Parse does not build from (an issue comment).
func TestVerify(t *testing.T) {
	body := []byte(`{"action":"created","comment":{"body":"hi"}}`)
	for _, p := range Providers() {
		h := deliveryHeaders(p, "issue_comment", body, testSecret)
		if err := Verify(p, h, body, testSecret); err != nil {
			t.Errorf("%s: signed delivery refused: %v", p, err)
		}
		if err := Verify(p, h, body, "another secret"); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: wrong secret: err = %v, want ErrSignature", p, err)
		}
		if err := Verify(p, h, append([]byte(" "), body...), testSecret); p != GitLab && !errors.Is(err, ErrSignature) {
			t.Errorf("%s: changed body: err = %v, want ErrSignature", p, err)
		}
		if err := Verify(p, h, body, ""); !errors.Is(err, ErrNoSecret) {
			t.Errorf("%s: no secret: err = %v, want ErrNoSecret", p, err)
		}
	}
	if err := Verify("svn", http.Header{}, body, testSecret); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("unknown provider: err = %v", err)
	}
}
