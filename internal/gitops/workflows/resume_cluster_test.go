package workflows_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// An approval gate: a suspend node whose outputs are supplied when it is resumed. A resume that
// names no waiting node, leaves a supplied parameter without a value, gives one outside its enum
// or one the node does not have is refused naming the field, and nothing changes; a good one
// resumes the node with the values (a default for the one not given, its globalName set), and the
// next step reads them.
func TestResumeWithSuppliedValuesOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.grantConfigMaps("approver")
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: gate}
spec:
  entrypoint: main
  serviceAccountName: approver
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
    - - name: record
        template: record
        when: "{{steps.approve.outputs.parameters.decision}} == approve"
        arguments: {parameters: [{name: answer, value: "{{steps.approve.outputs.parameters.decision}}/{{steps.approve.outputs.parameters.reason}}"}]}
  - name: approve
    suspend: {}
    outputs:
      parameters:
      - {name: decision, enum: [approve, reject], description: "ship it?", valueFrom: {supplied: {}}}
      - {name: reason, globalName: reason, valueFrom: {supplied: {}, default: none}}
  - name: record
    inputs: {parameters: [{name: answer}]}
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{workflow.name}}"}
        data: {answer: "{{inputs.parameters.answer}}"}
`)
	e.waitNode("gate", workflows.NodeTypeSuspend, workflows.NodeRunning)
	// The detail lists what the waiting gate asks (what the web UI's approval form shows).
	d, err := e.ctrl.Get(e.ctx, e.ns, "gate")
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string][]appproxyv1.WorkflowSuppliedParameter{}
	for _, n := range d.Nodes {
		if len(n.Supplied) > 0 {
			asked[n.DisplayName] = n.Supplied
		}
	}
	none := "none"
	want := map[string][]appproxyv1.WorkflowSuppliedParameter{"approve": {
		{Name: "decision", Enum: []string{"approve", "reject"}, Description: "ship it?"},
		{Name: "reason", Default: &none, Enum: []string{}},
	}}
	if !reflect.DeepEqual(asked, want) {
		t.Fatalf("supplied parameters in the detail: %s, want %s", showJSON(asked), showJSON(want))
	}
	for _, c := range []struct {
		o     workflows.ResumeOptions
		field string
		says  string
	}{
		{workflows.ResumeOptions{Node: "nope"}, "node", "waiting: approve"},
		{workflows.ResumeOptions{Node: "approve"}, "parameters.decision", "has no default"},
		{workflows.ResumeOptions{Parameters: map[string]string{"decision": "maybe"}}, "parameters.decision", "is not one of [approve reject]"},
		{workflows.ResumeOptions{Parameters: map[string]string{"decision": "approve", "colour": "red"}}, "parameters.colour", "is not an output parameter"},
	} {
		var fe *errdefs.FieldError
		if err := e.ctrl.ResumeWith(e.ctx, e.ns, "gate", c.o); !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.says) {
			t.Errorf("resume %+v: %v, want %s: …%s", c.o, err, c.field, c.says)
		}
	}
	for _, n := range e.workflow("gate").Status.Nodes {
		if n.Type == workflows.NodeTypeSuspend && (n.Phase != workflows.NodeRunning || n.Outputs != nil) {
			t.Fatalf("a refused resume changed the node: %+v", n)
		}
	}
	if err := e.ctrl.ResumeWith(e.ctx, e.ns, "gate", workflows.ResumeOptions{Node: "approve", Parameters: map[string]string{"decision": "approve"},
		Message: "approved by ann"}); err != nil {
		t.Fatal(err)
	}
	wf := e.finished("gate", 60*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "gate", metav1.GetOptions{})
	if err != nil || cm.Data["answer"] != "approve/none" {
		t.Fatalf("the record step's ConfigMap: %v, %v", cm, err)
	}
	approve := node(t, wf, "gate[0].approve")
	if approve.Message != "approved by ann" || approve.Outputs == nil || len(approve.Outputs.Parameters) != 2 {
		t.Fatalf("approve: %+v", approve)
	}
	if d, err := e.ctrl.Get(e.ctx, e.ns, "gate"); err != nil || slices.ContainsFunc(d.Nodes, func(n appproxyv1.WorkflowNode) bool { return len(n.Supplied) > 0 }) {
		t.Fatalf("a resumed gate still asks: %v %s", err, showJSON(d.Nodes))
	}
	if o := wf.Status.Outputs; o == nil || len(o.Parameters) != 1 || o.Parameters[0].Name != "reason" || string(*o.Parameters[0].Value) != "none" {
		t.Fatalf("the workflow's outputs: %+v", wf.Status.Outputs)
	}
}

func showJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
