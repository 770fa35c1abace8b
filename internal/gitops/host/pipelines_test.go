package host_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	hubfs "github.com/freshet-dev/freshet/hub"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestCommitDeliveryPipeline: the Delivery Pipelines wizard on the runtime side — an
// EventSource, a Sensor whose trigger submits the Hub's git-clone template, and the template,
// committed to a Git Source's repository over real git in one commit, deployed by the
// application the commit adds into the loopback cluster, where GET sensors and GET
// event-sources list them. Viewers are refused; a bad name, a webhook without a secret and an
// unknown event type are 400s naming the field, with nothing committed.
func TestCommitDeliveryPipeline(t *testing.T) {
	var (
		ctrl *workflows.Controller
		ev   *events.Controller
	)
	w := newWorldWith(t, func(ns string, o *host.Options) {
		var err error
		if ctrl, err = workflows.New(kube.Shared(t).RESTConfig(), workflows.Options{Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		if ev, err = events.New(kube.Shared(t).RESTConfig(), events.Options{Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		o.Workflows, o.Events = ctrl, ev
	})
	runController(t, ctrl)
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- ev.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

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
	body := func(req appproxyv1.DeliveryPipelineCommitRequest) string {
		b, _ := json.Marshal(req)
		return string(b)
	}
	good := appproxyv1.DeliveryPipelineCommitRequest{Name: "build-on-push", TemplateManifest: string(manifest),
		Event:      appproxyv1.PipelineEvent{Type: appproxyv1.EventGitHub, Owner: "acme", Repository: "shop", SecretName: "github-hook"},
		Parameters: []appproxyv1.WorkflowParameter{{Name: "repo", Value: "https://example.com/acme/shop.git"}}}
	before := len(appsRepo.Log("main"))
	if code := w.call("viewer", "POST", "git-sources/ci/delivery-pipelines", body(good), &e); code != http.StatusForbidden {
		t.Errorf("viewer commit: %d %+v", code, e)
	}
	for _, c := range []struct {
		what  string
		edit  func(*appproxyv1.DeliveryPipelineCommitRequest)
		field string
	}{
		{"a name that is not DNS-1123", func(r *appproxyv1.DeliveryPipelineCommitRequest) { r.Name = "Build_On_Push" }, `name: "Build_On_Push"`},
		{"a git provider without a secret", func(r *appproxyv1.DeliveryPipelineCommitRequest) { r.Event.SecretName = "" }, "event.secretName"},
		{"an unknown event type", func(r *appproxyv1.DeliveryPipelineCommitRequest) { r.Event.Type = "sqs" }, `event.type: "sqs"`},
		{"a calendar without a schedule", func(r *appproxyv1.DeliveryPipelineCommitRequest) {
			r.Event = appproxyv1.PipelineEvent{Type: "calendar"}
		}, "event.schedule"},
		{"a bad schedule", func(r *appproxyv1.DeliveryPipelineCommitRequest) {
			r.Event = appproxyv1.PipelineEvent{Type: "calendar", Schedule: "every day"}
		}, "eventSource.spec.calendar.build-on-push.schedule"},
		{"a template that fails lint", func(r *appproxyv1.DeliveryPipelineCommitRequest) {
			r.TemplateManifest = strings.Replace(r.TemplateManifest, "entrypoint: main", "entrypoint: nope", 1)
		}, "templateManifest.spec.entrypoint"},
		{"no template", func(r *appproxyv1.DeliveryPipelineCommitRequest) { r.TemplateManifest = "" }, "workflowTemplate"},
	} {
		req := good
		c.edit(&req)
		if code := w.call("member", "POST", "git-sources/ci/delivery-pipelines", body(req), &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, c.field) {
			t.Errorf("%s: %d %+v (want the field %s named)", c.what, code, e, c.field)
		}
	}
	if n := len(appsRepo.Log("main")); n != before {
		t.Fatalf("refused requests committed: %d commits, %d before", n, before)
	}

	var res appproxyv1.DeliveryPipelineCommit
	if code := w.call("member", "POST", "git-sources/ci/delivery-pipelines", body(good), &res); code != http.StatusCreated {
		t.Fatalf("member commit: %d %+v", code, res)
	}
	want := []string{"delivery-pipelines/build-on-push-eventsource.yaml", "delivery-pipelines/build-on-push-sensor.yaml", "delivery-pipelines/git-clone-workflow-template.yaml"}
	if strings.Join(res.Files, ",") != strings.Join(want, ",") || res.Application != "ci-delivery-pipelines" || !res.ApplicationCreated ||
		res.WorkflowTemplate != "git-clone" || appsRepo.RevParse("main") != res.Commit {
		t.Errorf("commit answer: %+v", res)
	}
	if n := len(appsRepo.Log("main")); n != before+1 {
		t.Errorf("%d commits for one pipeline", n-before)
	}
	if f, _ := appsRepo.ReadFile("main", want[1]); !strings.Contains(f, "name: git-clone") || !strings.Contains(f, "generateName: build-on-push-") {
		t.Errorf("the Sensor in git:\n%s", f)
	}
	w.waitApp("ci-delivery-pipelines", func(st engine.AppStatus) bool { return st.Sync == engine.Synced })
	deadline := time.Now().Add(30 * time.Second)
	for {
		var sensors appproxyv1.List[appproxyv1.Sensor]
		var sources appproxyv1.List[appproxyv1.EventSource]
		w.call("viewer", "GET", "sensors?namespace="+w.ns, "", &sensors)
		w.call("viewer", "GET", "event-sources?namespace="+w.ns, "", &sources)
		if len(sensors.Items) == 1 && len(sources.Items) == 1 {
			s, es := sensors.Items[0], sources.Items[0]
			if s.Name != "build-on-push" || len(s.Dependencies) != 1 || s.Dependencies[0].EventSourceName != "build-on-push" ||
				len(s.Triggers) != 1 || s.Triggers[0].WorkflowTemplate != "git-clone" || s.Triggers[0].Type != "argoWorkflow" {
				t.Errorf("the listed Sensor: %+v", s)
			}
			if len(es.Events) != 1 || es.Events[0].Type != "github" || es.Events[0].Endpoint != "/build-on-push" {
				t.Errorf("the listed EventSource: %+v", es)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the committed pipeline never reached the cluster: %+v %+v", sensors, sources)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code := w.call("member", "POST", "git-sources/ci/delivery-pipelines", body(good), &e); code != http.StatusConflict {
		t.Errorf("the same pipeline again: %d %+v", code, e)
	}

	// GraphQL: the same lists, and the same commit with the same role check and field errors.
	data, errs := w.gql("viewer", `query($ns: String) { sensors(namespace: $ns) eventSources(namespace: $ns) }`, map[string]any{"ns": w.ns})
	if len(errs) > 0 || len(data["sensors"].([]any)) != 1 || data["sensors"].([]any)[0].(map[string]any)["name"] != "build-on-push" ||
		len(data["eventSources"].([]any)) != 1 {
		t.Errorf("GraphQL sensors and eventSources: %v %v", data, errs)
	}
	const create = `mutation($p: JSON!) { createDeliveryPipeline(gitSource: "ci", pipeline: $p) }`
	nightly := map[string]any{"name": "nightly", "workflowTemplate": "git-clone", "event": map[string]any{"type": "calendar", "schedule": "0 3 * * *"},
		"parameters": []any{map[string]any{"name": "repo", "value": "https://example.com/acme/shop.git"}}}
	before = len(appsRepo.Log("main"))
	if _, errs := w.gql("viewer", create, map[string]any{"p": nightly}); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "needs member or admin") {
		t.Errorf("viewer commits through GraphQL: %v", errs)
	}
	if _, errs := w.gql("member", create, map[string]any{"p": map[string]any{"name": "nightly", "evnt": map[string]any{}}}); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), `unknown field "evnt"`) {
		t.Errorf("a misspelt field through GraphQL: %v", errs)
	}
	if _, errs := w.gql("member", create, map[string]any{"p": map[string]any{"name": "Nightly!"}}); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), `name: "Nightly!"`) {
		t.Errorf("a bad name through GraphQL: %v", errs)
	}
	if n := len(appsRepo.Log("main")); n != before {
		t.Fatalf("refused GraphQL requests committed: %d commits, %d before", n, before)
	}
	data, errs = w.gql("member", create, map[string]any{"p": nightly})
	if len(errs) > 0 {
		t.Fatalf("GraphQL commit: %v", errs)
	}
	if got := data["createDeliveryPipeline"].(map[string]any); got["commit"] != appsRepo.RevParse("main") || got["workflowTemplate"] != "git-clone" ||
		fmt.Sprint(got["files"]) != "[delivery-pipelines/nightly-eventsource.yaml delivery-pipelines/nightly-sensor.yaml]" {
		t.Errorf("GraphQL commit answer: %v", got)
	}
}

// Without an events controller, sensors and event-sources answer unavailable.
func TestSensorsUnavailable(t *testing.T) {
	w := newWorldWith(t, nil)
	var e apiError
	if code := w.call("viewer", "GET", "sensors", "", &e); code != http.StatusServiceUnavailable || !strings.Contains(e.Error.Message, "events controller") {
		t.Errorf("sensors: %d %+v", code, e)
	}
}
