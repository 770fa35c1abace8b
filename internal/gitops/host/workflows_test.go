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
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

type apiError struct {
	Error struct{ Code, Message string }
}

// newWorkflowsWorld is a runtime's app-proxy with a workflow controller running on the loopback
// cluster.
func newWorkflowsWorld(t *testing.T) *world {
	t.Helper()
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
	return w
}

// The workflows API's roles and bad input, against a workflow controller on the loopback
// cluster: viewers read, members operate; a manifest that fails lint, an unknown operation and
// an unknown body field are 400s naming the field, and nothing is created.
func TestWorkflowsAPI(t *testing.T) {
	w := newWorkflowsWorld(t)
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

// An approval gate through GraphQL: resumeWorkflow takes the REST body's node, parameters and
// message. The detail lists what the waiting gate asks; a viewer is refused; a value outside
// the enum, a parameter the node lacks, parameters that are not an object of strings and an
// unknown node are GraphQL errors naming the field, and the gate still waits; a good answer
// resumes it with the values and the message.
func TestWorkflowResumeGraphQL(t *testing.T) {
	w := newWorkflowsWorld(t)
	manifest := `{"namespace":"` + w.ns + `","workflow":{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"name":"gate"},
		"spec":{"entrypoint":"main","templates":[
		{"name":"main","steps":[[{"name":"approve","template":"approve"}]]},
		{"name":"approve","suspend":{},"outputs":{"parameters":[
			{"name":"decision","enum":["approve","reject"],"valueFrom":{"supplied":{}}},
			{"name":"reason","valueFrom":{"supplied":{},"default":"none"}}]}}]}}}`
	var d appproxyv1.WorkflowDetail
	if code := w.call("member", "POST", "workflows", manifest, &d); code != http.StatusCreated {
		t.Fatalf("submit: %d %+v", code, d)
	}
	gate := func() appproxyv1.WorkflowNode {
		t.Helper()
		var d appproxyv1.WorkflowDetail
		w.call("viewer", "GET", "workflows/"+w.ns+"/gate", "", &d)
		for _, n := range d.Nodes {
			if n.DisplayName == "approve" {
				return n
			}
		}
		return appproxyv1.WorkflowNode{}
	}
	deadline := time.Now().Add(60 * time.Second)
	for gate().Phase != "Running" {
		if time.Now().After(deadline) {
			t.Fatalf("the gate does not wait: %+v", gate())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s := gate().Supplied; len(s) != 2 || s[0].Name != "decision" || len(s[0].Enum) != 2 || s[0].Default != nil || s[1].Name != "reason" || s[1].Default == nil || *s[1].Default != "none" {
		t.Fatalf("what the gate asks: %+v", s)
	}
	const resume = `mutation($ns: String!, $node: String, $p: JSON, $m: String) {
		resumeWorkflow(namespace: $ns, name: "gate", node: $node, parameters: $p, message: $m) }`
	vars := func(node string, p any, m string) map[string]any {
		return map[string]any{"ns": w.ns, "node": node, "p": p, "m": m}
	}
	if _, errs := w.gql("viewer", resume, vars("approve", map[string]any{"decision": "approve"}, "")); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "needs member or admin") {
		t.Errorf("viewer resumes: errors %v", errs)
	}
	for _, c := range []struct {
		node string
		p    any
		says string
	}{
		{"approve", map[string]any{"decision": "maybe"}, `parameters.decision: "maybe" is not one of [approve reject]`},
		{"approve", map[string]any{"decision": "approve", "colour": "red"}, "parameters.colour"},
		{"approve", map[string]any{"decision": 1}, "parameters.decision"},
		{"approve", []any{"decision=approve"}, "parameters"},
		{"nope", nil, `node: "nope" is not a suspend node waiting to be resumed (waiting: approve)`},
		{"approve", nil, "parameters.decision"},
	} {
		if _, errs := w.gql("member", resume, vars(c.node, c.p, "")); len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]["message"]), c.says) {
			t.Errorf("resume %s %v: errors %v, want one saying %s", c.node, c.p, errs, c.says)
		}
	}
	// The same as a literal in the query (docs/appproxy.md's example).
	literal := `mutation { resumeWorkflow(namespace: "` + w.ns + `", name: "gate", node: "approve", parameters: {decision: "maybe"}) }`
	if _, errs := w.gql("member", literal, nil); len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]["message"]), `parameters.decision: "maybe"`) {
		t.Errorf("resume with a literal object: errors %v", errs)
	}
	if n := gate(); n.Phase != "Running" || len(n.Outputs) != 0 {
		t.Fatalf("a refused resume changed the gate: %+v", n)
	}
	data, errs := w.gql("member", resume, vars("approve", map[string]any{"decision": "reject"}, "rejected by ann"))
	if len(errs) > 0 {
		t.Fatalf("resume: %v", errs)
	}
	var after appproxyv1.WorkflowDetail
	b, _ := json.Marshal(data["resumeWorkflow"])
	if err := json.Unmarshal(b, &after); err != nil || after.Name != "gate" {
		t.Fatalf("resumeWorkflow answered %s: %v", b, err)
	}
	n := gate()
	got := map[string]string{}
	for _, p := range n.Outputs {
		got[p.Name] = p.Value
	}
	if n.Phase != "Succeeded" || n.Message != "rejected by ann" || got["decision"] != "reject" || got["reason"] != "none" || len(n.Supplied) != 0 {
		t.Fatalf("the resumed gate: %+v", n)
	}
}

// The cron-workflows API (REST and GraphQL) against a workflow controller on the loopback
// cluster: a viewer lists, reads and lints but does not create, suspend or delete; a bad
// manifest, a body that is not an object, an unknown body field and an unknown operation are
// 400s naming the field, and nothing is created; a member creates (with Argo's creator labels),
// suspends, resumes, updates (a bad when, another name or namespace refused naming the field)
// and deletes.
func TestCronWorkflowsAPI(t *testing.T) {
	w := newWorkflowsWorld(t)
	manifest := `{"namespace":"` + w.ns + `","cronWorkflow":{"apiVersion":"argoproj.io/v1alpha1","kind":"CronWorkflow","metadata":{"name":"nightly"},
		"spec":{"schedule":"0 3 * * *","timezone":"Europe/Berlin","stopStrategy":{"expression":"cronworkflow.failed >= 3"},
		"workflowSpec":{"entrypoint":"main","templates":[{"name":"main","suspend":{}}]}}}}`
	var e apiError
	for _, c := range []struct{ body, field string }{
		{strings.Replace(manifest, `"entrypoint":"main"`, `"entrypoint":"nope"`, 1), "spec.workflowSpec.entrypoint"},
		{strings.Replace(manifest, `cronworkflow.failed`, `cronworkflow.fialed`, 1), "spec.stopStrategy.expression"},
		{strings.Replace(manifest, `0 3 * * *`, `61 * * * *`, 1), "spec.schedule"},
		{`{"cronWorkflow":[1]}`, "cronWorkflow"},
		{`{"cronWorkflow":{},"colour":"red"}`, "colour"},
		{`{}`, "cronWorkflow"},
	} {
		for _, path := range []string{"cron-workflows", "cron-workflows/lint"} {
			if code := w.call("member", "POST", path, c.body, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, c.field) {
				t.Errorf("POST %s %s: %d %+v, want 400 naming %s", path, c.body, code, e, c.field)
			}
		}
	}
	var cw appproxyv1.CronWorkflow
	if code := w.call("viewer", "POST", "cron-workflows/lint", manifest, &cw); code != http.StatusOK || cw.Name != "nightly" || cw.Namespace != w.ns || cw.StopExpression != "cronworkflow.failed >= 3" {
		t.Fatalf("viewer lint: %d %+v", code, cw)
	}
	if code := w.call("viewer", "POST", "cron-workflows", manifest, &e); code != http.StatusForbidden {
		t.Fatalf("viewer create: %d %+v", code, e)
	}
	var list appproxyv1.List[appproxyv1.CronWorkflow]
	if w.call("viewer", "GET", "cron-workflows?namespace="+w.ns, "", &list); len(list.Items) != 0 {
		t.Fatalf("created by lint or refused creates: %+v", list.Items)
	}
	if code := w.call("member", "POST", "cron-workflows", manifest, &cw); code != http.StatusCreated || cw.Creator != "dev@example.com" ||
		len(cw.Schedules) != 1 || cw.Schedules[0] != "0 3 * * *" || cw.Timezone != "Europe/Berlin" || cw.NextScheduledTime == nil {
		t.Fatalf("member create: %d %+v", code, cw)
	}
	if code := w.call("member", "POST", "cron-workflows", manifest, &e); code != http.StatusConflict {
		t.Fatalf("a second create: %d %+v", code, e)
	}
	if w.call("viewer", "GET", "cron-workflows?namespace="+w.ns, "", &list); len(list.Items) != 1 || list.Items[0].Name != "nightly" {
		t.Fatalf("viewer list: %+v", list.Items)
	}
	path := "cron-workflows/" + w.ns + "/nightly"
	if code := w.call("viewer", "POST", path+"/suspend", "", &e); code != http.StatusForbidden {
		t.Fatalf("viewer suspend: %d %+v", code, e)
	}
	if code := w.call("member", "POST", path+"/explode", "", &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "operation") {
		t.Fatalf("an unknown operation: %d %+v", code, e)
	}
	if code := w.call("member", "POST", path+"/suspend", "", &cw); code != http.StatusOK || !cw.Suspended || cw.NextScheduledTime != nil {
		t.Fatalf("member suspend: %d %+v", code, cw)
	}
	data, errs := w.gql("viewer", `query($ns: String!) { cronWorkflow(namespace: $ns, name: "nightly") cronWorkflows(namespace: $ns) }`, map[string]any{"ns": w.ns})
	if b, _ := json.Marshal(data); len(errs) > 0 || !strings.Contains(string(b), `"suspended":true`) || !strings.Contains(string(b), `"cronWorkflows":[{`) {
		t.Fatalf("GraphQL read: %s %v", b, errs)
	}
	if _, errs := w.gql("viewer", `mutation($ns: String!) { resumeCronWorkflow(namespace: $ns, name: "nightly") }`, map[string]any{"ns": w.ns}); len(errs) == 0 {
		t.Fatal("viewer resumes through GraphQL")
	}
	data, errs = w.gql("member", `mutation($ns: String!) { resumeCronWorkflow(namespace: $ns, name: "nightly") }`, map[string]any{"ns": w.ns})
	if b, _ := json.Marshal(data); len(errs) > 0 || !strings.Contains(string(b), `"suspended":false`) {
		t.Fatalf("GraphQL resume: %s %v", b, errs)
	}
	// update (PUT, argo cron update): a viewer may not; a bad when, another name or an unknown
	// field is a 400 naming it; a member's replaces the spec and keeps the status.
	updated := strings.Replace(strings.Replace(manifest, `0 3 * * *`, `30 4 * * *`, 1), `"timezone":"Europe/Berlin",`, `"timezone":"Europe/Berlin","when":"{{= cronworkflow.failed < 3 }}",`, 1)
	if code := w.call("viewer", "PUT", path, updated, &e); code != http.StatusForbidden {
		t.Fatalf("viewer update: %d %+v", code, e)
	}
	for _, c := range []struct{ body, field string }{
		{strings.Replace(updated, `cronworkflow.failed < 3`, `cronworkflow.failed <`, 1), "spec.when"},
		{strings.Replace(updated, `{"name":"nightly"}`, `{"name":"weekly"}`, 1), "metadata.name"},
		{strings.Replace(updated, `"namespace":"`+w.ns+`"`, `"namespace":"elsewhere"`, 1), "namespace"},
		{`{"cronWorkflow":{},"colour":"red"}`, "colour"},
	} {
		if code := w.call("member", "PUT", path, c.body, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, c.field) {
			t.Errorf("PUT %s: %d %+v, want 400 naming %s", c.body, code, e, c.field)
		}
	}
	if code := w.call("member", "PUT", "cron-workflows/"+w.ns+"/absent", strings.Replace(updated, `{"name":"nightly"}`, `{"name":"absent"}`, 1), &e); code != http.StatusNotFound {
		t.Fatalf("update of an absent cron workflow: %d %+v", code, e)
	}
	if code := w.call("member", "PUT", path, updated, &cw); code != http.StatusOK || len(cw.Schedules) != 1 || cw.Schedules[0] != "30 4 * * *" ||
		cw.When != "{{= cronworkflow.failed < 3 }}" || cw.Creator != "dev@example.com" || cw.Suspended {
		t.Fatalf("member update: %d %+v", code, cw)
	}
	data, errs = w.gql("member", `mutation($ns: String!, $m: String!) { updateCronWorkflow(namespace: $ns, name: "nightly", manifest: $m) }`,
		map[string]any{"ns": w.ns, "m": strings.ReplaceAll(strings.Replace(manifest[strings.Index(manifest, `"cronWorkflow":`)+len(`"cronWorkflow":`):len(manifest)-1], `0 3 * * *`, `15 2 * * *`, 1), "\n\t\t", "")})
	if b, _ := json.Marshal(data); len(errs) > 0 || !strings.Contains(string(b), `15 2 * * *`) {
		t.Fatalf("GraphQL update: %s %v", b, errs)
	}
	if _, errs := w.gql("member", `mutation { lintCronWorkflow(manifest: "kind: CronWorkflow\napiVersion: argoproj.io/v1alpha1\nmetadata: {name: x}\nspec: {schedule: '@daily', stopStrategy: {expression: 'x > 1'}, workflowSpec: {entrypoint: a, templates: [{name: a, suspend: {}}]}}") }`, nil); len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]["message"]), "spec.stopStrategy.expression") {
		t.Fatalf("GraphQL lint of a bad stop expression: %v", errs)
	}
	if code := w.call("viewer", "DELETE", path, "", &e); code != http.StatusForbidden {
		t.Fatalf("viewer delete: %d %+v", code, e)
	}
	if code := w.call("member", "DELETE", path, "", nil); code != http.StatusNoContent {
		t.Fatalf("member delete: %d", code)
	}
	if code := w.call("viewer", "GET", path, "", &e); code != http.StatusNotFound {
		t.Fatalf("a deleted cron workflow: %d %+v", code, e)
	}
}
