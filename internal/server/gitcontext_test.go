package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// A git-clone step with git: NAME clones owner/name through a git context created over the
// API, from a real git server with basic authentication; the token is in neither the log nor
// the build.
func TestGitCloneWithGitContext(t *testing.T) {
	ctx := context.Background()
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) {
		o.Net.PrivateNetworks, o.Net.ProviderHosts = []string{"loopback"}, []string{"*"}
	}})
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	const token = "gitea-token-for-clone-77"
	git := gitserver.New(t, gitserver.WithBasicAuth("ci-bot", token))
	repo := git.NewRepo("acme/svc")
	sha := repo.Commit("main", map[string]string{"VERSION": "4.5.6\n"}, "v4")
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "gt", Type: "git",
		Git: &client.GitContext{Provider: "gitea", URL: git.URL(), Username: "ci-bot", Token: token}}); err != nil {
		t.Fatal(err)
	}
	s.Admin.CreateProject(ctx, "p")
	spec := "version: '1.0'\nsteps:\n  clone:\n    type: git-clone\n    repo: acme/svc\n    git: gt\n  show:\n    working_directory: ${{CF_VOLUME_PATH}}/svc\n    commands: ['cat VERSION']\n"
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "svc", Spec: spec, Config: client.PipelineConfig{Contexts: []string{"gt"}}}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Admin.RunPipeline(ctx, "p/svc", client.RunRequest{Branch: "main", SHA: sha})
	if err != nil {
		t.Fatal(err)
	}
	done := waitBuild(t, s.Admin, b.ID, 60*time.Second, "success", "failed")
	log, _ := s.Admin.BuildLog(ctx, b.ID, 0)
	if done.Status != "success" || !strings.Contains(string(log), "4.5.6") || !strings.Contains(string(log), "cloned "+sha) {
		t.Fatalf("build %s (%s):\n%s", done.Status, done.Reason, log)
	}
	if strings.Contains(string(log), token) {
		t.Fatalf("the token is in the log:\n%s", log)
	}
	// A pipeline that does not list the context cannot use it.
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "other", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	b, _ = s.Admin.RunPipeline(ctx, "p/other", client.RunRequest{Branch: "main", SHA: sha})
	done = waitBuild(t, s.Admin, b.ID, 60*time.Second, "success", "failed")
	log, _ = s.Admin.BuildLog(ctx, b.ID, 0)
	if done.Status != "failed" || !strings.Contains(string(log)+done.Reason, "not a git context of this pipeline") {
		t.Fatalf("build of a pipeline without the context: %s (%s)\n%s", done.Status, done.Reason, log)
	}
}
