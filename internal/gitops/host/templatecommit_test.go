package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	hubfs "github.com/freshet-dev/freshet/hub"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestCommitWorkflowTemplate: the Hub's "use this template" on the runtime side — a
// WorkflowTemplate committed to a Git Source's repository over real git, with the
// application that deploys its directory, which syncs it into the cluster where the workflow
// controller serves it. Viewers are refused, a template that fails lint or a directory inside
// the Git Source's own path is a 400 naming the field with nothing committed, and a second
// commit of the same template is a conflict unless upsert.
func TestCommitWorkflowTemplate(t *testing.T) {
	var ctrl *workflows.Controller
	w := newWorldWith(t, func(ns string, o *host.Options) {
		var err error
		if ctrl, err = workflows.New(kube.Shared(t).RESTConfig(), workflows.Options{Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		o.Workflows = ctrl
	})
	runController(t, ctrl)
	appsRepo := gitserver.New(t).NewRepo("pipelines")
	appsRepo.Commit("main", map[string]string{"apps/README.md": "applications"}, "init")
	gs := fmt.Sprintf("apiVersion: freshet.dev/v1\nkind: GitSource\nmetadata: {name: ci}\nspec:\n  repoURL: %s\n  path: apps\n  include: '*.yaml'\n  destination: {name: in-cluster, namespace: %s}\n", appsRepo.URL(), w.ns)
	var e apiError
	if code := w.call("member", "POST", "git-sources", gs, &e); code != http.StatusCreated {
		t.Fatalf("create git source: %d %+v", code, e)
	}
	manifest, err := hubfs.FS.ReadFile("workflows/git-clone/versions/0.1.0/workflowTemplate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := func(req appproxyv1.WorkflowTemplateCommitRequest) string {
		b, _ := json.Marshal(req)
		return string(b)
	}
	before := len(appsRepo.Log("main"))
	if code := w.call("viewer", "POST", "git-sources/ci/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: string(manifest)}), &e); code != http.StatusForbidden {
		t.Errorf("viewer commit: %d %+v", code, e)
	}
	bad := strings.Replace(string(manifest), "entrypoint: main", "entrypoint: nope", 1)
	if code := w.call("member", "POST", "git-sources/ci/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: bad}), &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "manifest.spec.entrypoint") {
		t.Errorf("a template that fails lint: %d %+v", code, e)
	}
	if code := w.call("member", "POST", "git-sources/ci/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: string(manifest), Dir: "apps/templates"}), &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "dir") {
		t.Errorf("a directory inside the Git Source's path: %d %+v", code, e)
	}
	if code := w.call("member", "POST", "git-sources/nope/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: string(manifest)}), &e); code != http.StatusNotFound {
		t.Errorf("an unknown Git Source: %d %+v", code, e)
	}
	if n := len(appsRepo.Log("main")); n != before {
		t.Fatalf("refused requests committed: %d commits, %d before", n, before)
	}

	var res appproxyv1.WorkflowTemplateCommit
	if code := w.call("member", "POST", "git-sources/ci/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: string(manifest)}), &res); code != http.StatusCreated {
		t.Fatalf("member commit: %d %+v", code, res)
	}
	if res.File != "workflow-templates/git-clone.yaml" || res.Application != "ci-workflow-templates" || !res.ApplicationCreated || len(res.Commit) != 40 || res.Namespace != w.ns {
		t.Errorf("commit answer: %+v", res)
	}
	if got := appsRepo.RevParse("main"); got != res.Commit {
		t.Errorf("the branch is at %s, the answer says %s", got, res.Commit)
	}
	if f, ok := appsRepo.ReadFile("main", "workflow-templates/git-clone.yaml"); !ok || strings.TrimSpace(f) != strings.TrimSpace(string(manifest)) {
		t.Errorf("the template in git differs from the manifest given (%v):\n%s", ok, f)
	}
	if f, ok := appsRepo.ReadFile("main", "apps/ci-workflow-templates.yaml"); !ok || !strings.Contains(f, "path: workflow-templates") {
		t.Errorf("the deploying application in git (%v):\n%s", ok, f)
	}
	if log := appsRepo.Log("main"); !strings.Contains(log[0], "add workflow template git-clone") {
		t.Errorf("commit message: %q", log[0])
	}
	w.waitApp("ci-workflow-templates", func(st engine.AppStatus) bool { return st.Sync == engine.Synced })
	deadline := time.Now().Add(30 * time.Second)
	for {
		var tpl appproxyv1.WorkflowTemplate
		if code := w.call("viewer", "GET", "workflow-templates/"+w.ns+"/git-clone", "", &tpl); code == http.StatusOK {
			if tpl.Entrypoint != "main" || len(tpl.Parameters) != 3 {
				t.Errorf("the deployed template: %+v", tpl)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the committed template never reached the workflow controller")
		}
		time.Sleep(200 * time.Millisecond)
	}

	if code := w.call("member", "POST", "git-sources/ci/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: string(manifest)}), &e); code != http.StatusConflict {
		t.Errorf("the same template again: %d %+v", code, e)
	}
	changed := strings.Replace(string(manifest), "value: main", "value: trunk", 1)
	if code := w.call("member", "POST", "git-sources/ci/workflow-templates", body(appproxyv1.WorkflowTemplateCommitRequest{Manifest: changed, Upsert: true}), &res); code != http.StatusCreated || res.ApplicationCreated {
		t.Errorf("upsert: %d %+v", code, res)
	}
	if f, _ := appsRepo.ReadFile("main", "workflow-templates/git-clone.yaml"); !strings.Contains(f, "value: trunk") {
		t.Errorf("upsert did not replace the file:\n%s", f)
	}
}

func runController(t *testing.T, ctrl *workflows.Controller) {
	t.Helper()
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for !ctrl.Healthy() {
		if time.Now().After(deadline) {
			t.Fatal("workflow controller not started")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
