package host_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

type apiError struct {
	Error struct{ Code, Message string }
}

// The workflows API's roles and bad input, against a workflow controller on the loopback
// cluster: viewers read, members operate; a manifest that fails lint, an unknown operation and
// an unknown body field are 400s naming the field, and nothing is created.
func TestWorkflowsAPI(t *testing.T) {
	var ctrl *workflows.Controller
	w := newWorldWith(t, func(ns string, o *host.Options) {
		var err error
		if ctrl, err = workflows.New(kube.Shared(t).RESTConfig(), workflows.Options{Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		o.Workflows = ctrl
	})
	ctx, cancel := context.WithCancel(context.Background())
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
	manifest := `{"namespace":"` + w.ns + `","workflow":{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"name":"hold"},
		"spec":{"entrypoint":"main","templates":[{"name":"main","suspend":{}}]}}}`
	var e apiError
	if code := w.call("viewer", "POST", "workflows", manifest, &e); code != http.StatusForbidden || e.Error.Code != "permission_denied" {
		t.Fatalf("viewer submit: %d %+v", code, e)
	}
	bad := strings.Replace(manifest, `"entrypoint":"main"`, `"entrypoint":"nope"`, 1)
	if code := w.call("member", "POST", "workflows", bad, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "spec.entrypoint") {
		t.Fatalf("a bad entrypoint: %d %+v", code, e)
	}
	if code := w.call("member", "POST", "workflows", `{"workflow":{},"colour":"red"}`, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "colour") {
		t.Fatalf("an unknown field: %d %+v", code, e)
	}
	var list appproxyv1.List[appproxyv1.Workflow]
	if w.call("viewer", "GET", "workflows?namespace="+w.ns, "", &list); len(list.Items) != 0 {
		t.Fatalf("created by refused submits: %+v", list.Items)
	}
	var d appproxyv1.WorkflowDetail
	if code := w.call("member", "POST", "workflows", manifest, &d); code != http.StatusCreated || d.Name != "hold" || d.Creator != "dev@example.com" {
		t.Fatalf("member submit: %d %+v", code, d)
	}
	if code := w.call("viewer", "GET", "workflows/"+w.ns+"/hold", "", &d); code != http.StatusOK || d.Name != "hold" {
		t.Fatalf("viewer get: %d %+v", code, d)
	}
	if code := w.call("viewer", "POST", "workflows/"+w.ns+"/hold/terminate", "", &e); code != http.StatusForbidden {
		t.Fatalf("viewer terminate: %d %+v", code, e)
	}
	if code := w.call("member", "POST", "workflows/"+w.ns+"/hold/explode", "", &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "operation") {
		t.Fatalf("an unknown operation: %d %+v", code, e)
	}
	if code := w.call("member", "POST", "workflows/"+w.ns+"/hold/terminate", "", &d); code != http.StatusOK || d.Shutdown != "Terminate" {
		t.Fatalf("member terminate: %d %+v", code, d)
	}
	if code := w.call("viewer", "GET", "workflows/"+w.ns+"/absent", "", &e); code != http.StatusNotFound {
		t.Fatalf("a missing workflow: %d %+v", code, e)
	}
}
