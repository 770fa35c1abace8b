package workflows_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestRealNode runs a workflow whose pods really run on the loopback cluster's real node: the
// init container copies the emissary (an image built with `ctrenv image` from a small main
// package that calls the emissary, pushed to the loopback registry) into the pod, a script's
// real stdout becomes the next step's parameter, and an output parameter is read from a file
// the step wrote.
func TestRealNode(t *testing.T) {
	c, reg := containers.RealNode(t)
	image := reg.EmissaryImage(t)
	sel, tol := kube.RealNodePlacement()
	e := startEnv(t, c, workflows.Options{ExecutorImage: image, ExecutorPath: "/usr/bin/freshet", NodeSelector: sel, Tolerations: tol})
	busybox := reg.Ref(containers.ImageBusybox)
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: real}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: use
        template: use
        arguments: {parameters: [{name: msg, value: "{{steps.gen.outputs.result}}"}]}
    - - name: check
        template: check
        arguments: {parameters: [{name: got, value: "{{steps.use.outputs.parameters.out}}"}]}
  - name: gen
    script:
      image: `+busybox+`
      command: [sh]
      source: |
        echo "hello from $(hostname | cut -c1-4)"
  - name: use
    inputs: {parameters: [{name: msg}]}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
    container:
      image: `+busybox+`
      command: [sh, -c, 'echo "{{inputs.parameters.msg}}" | tr a-z A-Z > /tmp/out']
  - name: check
    inputs: {parameters: [{name: got}]}
    container:
      image: `+busybox+`
      command: [sh, -c, 'test "{{inputs.parameters.got}}" = "HELLO FROM REAL"']
`)
	wf := e.finished("real", 4*time.Minute)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	if r := node(t, wf, "real[0].gen").Outputs.Result; r == nil || *r != "hello from real" {
		t.Fatalf("gen result %v: %s", r, dump(wf))
	}
	if n := node(t, wf, "real[1].use"); n.HostNodeName != kube.RealNodeName || string(*n.Outputs.Parameters[0].Value) != "HELLO FROM REAL" {
		t.Fatalf("use %+v", n)
	}
	// The pods' logs, read from the kubelet through the API server: the script's stdout went
	// to the container's log as well as to its result.
	for _, o := range []workflows.LogOptions{{}, {Follow: true}} {
		var logs bytes.Buffer
		if err := e.ctrl.Logs(e.ctx, e.ns, "real", o, &logs); err != nil || !strings.Contains(logs.String(), "gen: hello from real\n") {
			t.Fatalf("logs %+v: %v\n%s", o, err, logs.String())
		}
	}
	var one bytes.Buffer
	if err := e.ctrl.Logs(e.ctx, e.ns, "real", workflows.LogOptions{Node: "gen"}, &one); err != nil || one.String() != "gen: hello from real\n" {
		t.Fatalf("the gen node's log: %v %q", err, one.String())
	}
}
