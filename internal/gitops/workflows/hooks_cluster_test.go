package workflows_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// TestExitHandlersAndHooksOnCluster: on the loopback cluster, a step's onExit, a task's exit
// hook, a step's expression hook, the workflow's expression hook and its exit hook run as
// Argo's, with Argo's node names, each seeing the status it should; the task after the hooked
// one waits for its exit handler.
func TestExitHandlersAndHooksOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.kubelet(func(p *corev1.Pod) (int32, emissary.Outputs) {
		c := userCommand(p)
		if c[0] == "false" {
			return 1, emissary.Outputs{}
		}
		r := strings.Join(c[1:], " ")
		return 0, emissary.Outputs{Result: &r}
	})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: hooks}
spec:
  entrypoint: main
  arguments: {parameters: [{name: who, value: ann}]}
  hooks:
    exit:
      template: echo
      arguments: {parameters: [{name: msg, value: "exit {{workflow.status}}"}]}
    running:
      expression: workflow.status == "Running"
      template: echo
      arguments: {parameters: [{name: msg, value: "running {{workflow.name}}"}]}
  templates:
  - name: main
    steps:
    - - name: build
        template: fail
        continueOn: {failed: true}
        onExit: report
        hooks:
          failed:
            expression: steps.build.status == "Failed"
            template: echo
            arguments: {parameters: [{name: msg, value: "failed {{steps.build.exitCode}}"}]}
          succeeded:
            expression: steps.build.status == "Succeeded"
            template: echo
            arguments: {parameters: [{name: msg, value: "never"}]}
    - - name: deploy
        template: dag
  - name: dag
    dag:
      tasks:
      - name: T
        template: echo
        arguments: {parameters: [{name: msg, value: out-t}]}
        hooks:
          exit:
            template: echo
            arguments: {parameters: [{name: msg, value: "{{tasks.T.status}} {{tasks.T.outputs.result}}"}]}
      - {name: U, template: echo, depends: T, arguments: {parameters: [{name: msg, value: u}]}}
  - name: report
    inputs: {parameters: [{name: who}]}
    container: {image: alpine:3, command: [echo, "{{inputs.parameters.who}}"]}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine:3, command: [echo, "{{inputs.parameters.msg}}"]}
  - name: fail
    container: {image: alpine:3, command: ["false"]}
`)
	wf := e.finished("hooks", 90*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	if n := node(t, wf, "hooks[0].build"); n.Phase != workflows.NodeFailed {
		t.Fatalf("build %s: %s", n.Phase, dump(wf))
	}
	for name, want := range map[string]struct{ display, result string }{
		"hooks[0].build.onExit":       {"build.onExit", "ann"},            // the workflow's argument
		"hooks[0].build.hooks.failed": {"build.hooks.failed", "failed 1"}, // the step's status and exit code
		"hooks[1].deploy.T.onExit":    {"T.onExit", "Succeeded out-t"},    // the task's status and output
		"hooks.hooks.running":         {"hooks.hooks.running", "running hooks"},
		"hooks.onExit":                {"hooks.onExit", "exit Succeeded"},
	} {
		n := node(t, wf, name)
		if n.Phase != workflows.NodeSucceeded || n.DisplayName != want.display || n.NodeFlag == nil || !n.NodeFlag.Hooked {
			t.Fatalf("%s: %+v\n%s", name, n, dump(wf))
		}
		if n.Outputs == nil || n.Outputs.Result == nil || *n.Outputs.Result != want.result {
			t.Fatalf("%s: outputs %+v, want result %q", name, n.Outputs, want.result)
		}
	}
	for _, n := range wf.Status.Nodes {
		if n.Name == "hooks[0].build.hooks.succeeded" {
			t.Fatalf("a hook whose expression stayed false ran: %s", dump(wf))
		}
	}
	// The hooks hang off their step, task and root; U waited for T's exit handler.
	if !slices.Contains(node(t, wf, "hooks[0].build").Children, node(t, wf, "hooks[0].build.onExit").ID) ||
		!slices.Contains(node(t, wf, "hooks").Children, node(t, wf, "hooks.hooks.running").ID) {
		t.Fatal(dump(wf))
	}
	u, exitT := node(t, wf, "hooks[1].deploy.U"), node(t, wf, "hooks[1].deploy.T.onExit")
	if u.StartedAt.Before(&exitT.FinishedAt) {
		t.Fatalf("U started %v, before T.onExit ended %v", u.StartedAt, exitT.FinishedAt)
	}
	// Each hook ran a pod named by its node, as every step does.
	pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=hooks"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pods.Items {
		seen[p.Annotations[workflows.AnnotationNodeName]] = true
	}
	for _, name := range []string{"hooks[0].build.onExit", "hooks[0].build.hooks.failed", "hooks[1].deploy.T.onExit", "hooks.hooks.running", "hooks.onExit"} {
		if !seen[name] {
			t.Fatalf("no pod for %s (pods of %v)", name, seen)
		}
	}
}
