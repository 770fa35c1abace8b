package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// githubPush is a push event in GitHub's documented format.
func githubPush(branch, sha, cloneURL, message string) []byte {
	p := map[string]any{
		"ref": "refs/heads/" + branch, "before": strings.Repeat("0", 40), "after": sha, "created": false, "deleted": false,
		"repository": map[string]any{"full_name": "acme/app", "name": "app", "owner": map[string]any{"login": "acme", "name": "acme"},
			"clone_url": cloneURL, "html_url": "https://github.example/acme/app", "default_branch": "main"},
		"pusher": map[string]any{"name": "dev", "email": "dev@acme.test"},
		"sender": map[string]any{"login": "dev"},
		"head_commit": map[string]any{"id": sha, "message": message, "url": "https://github.example/acme/app/commit/" + sha,
			"author": map[string]any{"name": "Dev", "email": "dev@acme.test"}, "added": []string{}, "modified": []string{"VERSION"}, "removed": []string{}},
		"commits": []any{map[string]any{"id": sha, "message": message, "author": map[string]any{"name": "Dev", "email": "dev@acme.test"},
			"added": []string{}, "modified": []string{"VERSION"}, "removed": []string{}}},
	}
	b, _ := json.Marshal(p)
	return b
}

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestGitHubWebhookTriggersBuild(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	git := gitserver.New(t)
	repo := git.NewRepo("app")
	sha := repo.Commit("main", map[string]string{"VERSION": "2.0.0\n"}, "release 2.0")
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)

	s.Admin.CreateProject(ctx, "acme")
	spec := `version: '1.0'
steps:
  clone:
    type: git-clone
    repo: ${{CF_REPO_CLONE_URL}}
    revision: ${{CF_REVISION}}
  show:
    working_directory: ${{CF_VOLUME_PATH}}/app
    commands:
      - 'echo "built $(cat VERSION) at $(git rev-parse HEAD) on ${{CF_BRANCH}}: ${{CF_COMMIT_MESSAGE}} (${{CF_GIT_EVENT}})"'
`
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "acme", Name: "app", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	trg, err := s.Admin.CreateTrigger(ctx, "acme/app", client.TriggerRequest{Type: "git", Provider: "github",
		Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}, BranchRegex: "^main$"}})
	if err != nil {
		t.Fatal(err)
	}
	if trg.Secret == "" || !strings.HasSuffix(trg.WebhookURL, "/api/v1/webhooks/github/"+trg.ID) {
		t.Fatalf("created trigger = %+v", trg)
	}
	deliver := func(body []byte, delivery, sig string) (int, map[string]any) {
		st, out, _ := call(t, "POST", trg.WebhookURL, "", body, "X-GitHub-Event", "push", "X-GitHub-Delivery", delivery, "X-Hub-Signature-256", sig)
		return st, out
	}
	body := githubPush("main", sha, repo.URL(), "release 2.0")

	// A forged signature is refused and queues nothing.
	if st, _ := deliver(body, "d-forged", sign("wrong-secret-0123456789", body)); st != 401 {
		t.Fatalf("forged delivery: %d, want 401", st)
	}
	// A delivery for a trigger that does not exist looks the same as a forged one.
	if st, _, _ := call(t, "POST", strings.Replace(trg.WebhookURL, trg.ID, "trg_nope", 1), "", body,
		"X-GitHub-Event", "push", "X-GitHub-Delivery", "d-x", "X-Hub-Signature-256", sign(trg.Secret, body)); st != 401 {
		t.Fatalf("unknown trigger: %d, want 401", st)
	}
	// The real one queues a build.
	st, out := deliver(body, "d-1", sign(trg.Secret, body))
	if st != 201 {
		t.Fatalf("delivery: %d %v", st, out)
	}
	ids := out["builds"].([]any)
	if len(ids) != 1 {
		t.Fatalf("builds = %v", ids)
	}
	id := ids[0].(string)
	// The provider redelivers (same delivery id): nothing new.
	st, out = deliver(body, "d-1", sign(trg.Secret, body))
	if st != 202 || out["duplicate"] != true || len(out["builds"].([]any)) != 1 || out["builds"].([]any)[0] != id {
		t.Fatalf("redelivery: %d %v", st, out)
	}
	// Another branch does not match.
	other := githubPush("feature", sha, repo.URL(), "wip")
	st, out = deliver(other, "d-2", sign(trg.Secret, other))
	if st != 202 || len(out["builds"].([]any)) != 0 || !strings.Contains(fmt.Sprint(out["reason"]), "branch") {
		t.Fatalf("feature branch: %d %v", st, out)
	}
	// A ping is fine.
	if st, _, _ := call(t, "POST", trg.WebhookURL, "", []byte(`{"zen":"hi","hook_id":1}`), "X-GitHub-Event", "ping", "X-GitHub-Delivery", "d-3",
		"X-Hub-Signature-256", sign(trg.Secret, []byte(`{"zen":"hi","hook_id":1}`))); st != 202 {
		t.Fatalf("ping: %d", st)
	}

	b := waitBuild(t, s.Admin, id, 30*time.Second, "success", "failed")
	log, _ := s.Admin.BuildLog(ctx, id, 0)
	want := fmt.Sprintf("built 2.0.0 at %s on main: release 2.0 (push.heads)", sha)
	if b.Status != "success" || !strings.Contains(string(log), want) {
		t.Fatalf("build %s; log lacks %q:\n%s", b.Status, want, log)
	}
	if b.Trigger != "git" || b.SHA != sha || b.Branch != "main" || b.Repo != "acme/app" {
		t.Fatalf("build = %+v", b)
	}
	all, _ := s.Admin.ListBuilds(ctx, client.BuildFilter{})
	if len(all.Items) != 1 {
		t.Fatalf("%d builds, want 1", len(all.Items))
	}
}

func TestTriggerValidation(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	s.Admin.CreateProject(ctx, "p")
	s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "x", Spec: isolationSpec})
	cases := []struct {
		req   client.TriggerRequest
		field string
	}{
		{client.TriggerRequest{Type: "svn"}, "type"},
		{client.TriggerRequest{Type: "git", Provider: "sourceforge", Git: &client.GitTrigger{Repo: "a/b", Events: []string{"push.heads"}}}, "provider"},
		{client.TriggerRequest{Type: "git", Provider: "github"}, "git"},
		{client.TriggerRequest{Type: "git", Provider: "github", Git: &client.GitTrigger{Repo: "a/b", Events: []string{"push.everything"}}}, "events"},
		{client.TriggerRequest{Type: "git", Provider: "github", Git: &client.GitTrigger{Repo: "a/b", Events: []string{"push.heads"}, BranchRegex: "(["}}, "branchRegex"},
		{client.TriggerRequest{Type: "git", Provider: "github", Secret: "short", Git: &client.GitTrigger{Repo: "a/b", Events: []string{"push.heads"}}}, "secret"},
		{client.TriggerRequest{Type: "cron"}, "expression"},
	}
	for _, c := range cases {
		_, err := s.Admin.CreateTrigger(ctx, "p/x", c.req)
		var ae *client.Error
		if !asAPIError(err, &ae) || ae.Status != 400 || !strings.HasPrefix(ae.Field, c.field) {
			t.Errorf("%+v: err = %v (field %q), want 400 naming %s", c.req, err, fieldOf(ae), c.field)
		}
	}
}

func asAPIError(err error, out **client.Error) bool {
	e, ok := err.(*client.Error)
	*out = e
	return ok
}

func fieldOf(e *client.Error) string {
	if e == nil {
		return ""
	}
	return e.Field
}
