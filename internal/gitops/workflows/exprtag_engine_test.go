package workflows

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestExpressionTagsAndGlobalOutputs: {{=…}} tags in arguments, withParam, when and a
// container's args; a steps template's output from valueFrom.expression; a globalName output
// read by a later step, by the exit handler and in status.outputs; and an output holding an
// expression tag stays data.
func TestExpressionTagsAndGlobalOutputs(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: ex, labels: {team: blue}}
spec:
  entrypoint: main
  onExit: exit
  arguments: {parameters: [{name: count, value: "3"}, {name: my-env, value: prod}]}
  templates:
  - name: main
    steps:
    - - name: gen
        template: gen
    - - name: each
        template: echo
        withParam: "{{=toJson(filter(1..asInt(workflow.parameters.count), {# > 1}))}}"
        arguments: {parameters: [{name: x, value: "{{=asInt(item) * 10}}"}]}
      - name: loud
        template: echo
        when: "{{=sprig.upper(workflow.parameters['my-env']) == 'PROD'}}"
        arguments: {parameters: [{name: x, value: "{{=sprig.upper(steps.gen.outputs.parameters.evil)}}"}]}
      - name: quiet
        template: echo
        when: "{{=workflow.parameters['my-env'] != 'prod'}}"
        arguments: {parameters: [{name: x, value: q}]}
    - - name: late
        template: echo
        arguments: {parameters: [{name: x, value: "{{workflow.outputs.parameters.version}} {{=jsonpath(steps.gen.outputs.result, '$.build.id')}}"}]}
    outputs:
      parameters:
      - name: pick
        valueFrom:
          expression: "steps.loud.status == 'Succeeded' ? steps.loud.outputs.result : steps.quiet.outputs.result"
      - name: fallback
        valueFrom: {expression: "steps.quiet.outputs.result", default: none}
  - name: gen
    script: {image: alpine, command: [sh], source: gen}
    outputs:
      parameters:
      - {name: version, globalName: version, valueFrom: {path: /tmp/v}}
      - {name: evil, valueFrom: {path: /tmp/e}}
  - name: echo
    inputs: {parameters: [{name: x}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.x}}"]}
  - name: exit
    container: {image: alpine, command: [echo, "{{=workflow.status + ' ' + workflow.outputs.parameters.version + ' ' + workflow.labels.team}}"]}
`, func(p *corev1.Pod) run {
		if p.Annotations[annotationScript] != "" {
			return run{result: `{"build": {"id": 42}}`, params: map[string]string{"version": "v1.2", "evil": `{{=workflow.name}}' + 'x`}}
		}
		return echo(p)
	})
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	for name, want := range map[string]string{
		"ex[1].each(0:2)": "20",
		"ex[1].each(1:3)": "30",
		// An output holding a tag is data: upper-cased, never evaluated.
		"ex[1].loud": `{{=WORKFLOW.NAME}}' + 'X`,
		"ex[2].late": "v1.2 42",
		"ex.onExit":  "Succeeded v1.2 blue",
	} {
		if r := h.node(name).Outputs.Result; r == nil || *r != want {
			t.Errorf("%s result %v, want %q", name, r, want)
		}
	}
	if n := h.node("ex[1].quiet"); n.Phase != NodeSkipped {
		t.Errorf("quiet %s", n.Phase)
	}
	if _, ok := h.wf.Status.Nodes[nodeID("ex", "ex[1].each(2:4)")]; ok {
		t.Error("withParam gave more than [2, 3]")
	}
	outs := map[string]string{}
	for _, p := range h.node("ex").Outputs.Parameters {
		outs[p.Name] = string(*p.Value)
	}
	if outs["pick"] != `{{=WORKFLOW.NAME}}' + 'X` || outs["fallback"] != "none" {
		t.Errorf("steps outputs %v", outs)
	}
	o := h.wf.Status.Outputs
	if o == nil || len(o.Parameters) != 1 || o.Parameters[0].Name != "version" || string(*o.Parameters[0].Value) != "v1.2" {
		t.Fatalf("status.outputs %+v", o)
	}
}

// TestExpressionTagFailsNode: an expression that fails when its step runs errors that node
// with the field and why, and the workflow fails.
func TestExpressionTagFailsNode(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: bad}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: use
        template: echo
        arguments: {parameters: [{name: x, value: "{{=asInt(steps.gen.outputs.result) + 1}}"}]}
  - name: gen
    script: {image: alpine, command: [sh], source: gen}
  - name: echo
    inputs: {parameters: [{name: x}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.x}}"]}
`, func(p *corev1.Pod) run {
		if p.Annotations[annotationScript] != "" {
			return run{result: "not a number"}
		}
		return echo(p)
	})
	h.runToEnd()
	n := h.node("bad[1].use")
	if h.wf.Status.Phase != WorkflowFailed || n.Phase != NodeError ||
		!strings.Contains(n.Message, "arguments.parameters[0].value") || !strings.Contains(n.Message, "does not evaluate") {
		t.Fatalf("%s\nuse: %s", h.dump(), n.Message)
	}
}

// TestRetryExpressionAndLastRetry: retryStrategy.expression decides over lastRetry.*, which an
// attempt's command also sees; the retries stop when it is false.
func TestRetryExpressionAndLastRetry(t *testing.T) {
	var seen []string
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: rx}
spec:
  entrypoint: flaky
  templates:
  - name: flaky
    retryStrategy:
      limit: 10
      expression: "asInt(lastRetry.exitCode) > 1 && lastRetry.status == 'Failed' && asInt(retries) < 5"
    container: {image: alpine, command: [sh, -c, "try {{retries}} after {{lastRetry.exitCode}}/{{lastRetry.status}}"]}
`, func(p *corev1.Pod) run {
		c := command(p)
		seen = append(seen, c[2])
		if len(seen) < 3 {
			return run{code: 3}
		}
		return run{code: 1} // exit code 1: the expression says stop
	})
	h.runToEnd()
	r := h.node("rx")
	if h.wf.Status.Phase != WorkflowFailed || len(r.Children) != 3 || r.Message != msgRetryExprFalse {
		t.Fatalf("%s\nretry node: %d attempts, %q", h.dump(), len(r.Children), r.Message)
	}
	want := []string{"try 0 after 0/", "try 1 after 3/Failed", "try 2 after 3/Failed"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("attempts saw %q, want %q", seen, want)
	}
}

// TestScheduledTime: a Workflow a CronWorkflow made sees when it was due.
func TestScheduledTime(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: cr, annotations: {workflows.argoproj.io/scheduled-time: "2026-01-02T03:04:05Z"}}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine, command: [echo, "{{=sprig.trimSuffix('Z', workflow.scheduledTime)}} {{workflow.scheduledTime}}"]}
`, echo)
	h.runToEnd()
	if r := h.node("cr").Outputs.Result; r == nil || *r != "2026-01-02T03:04:05 2026-01-02T03:04:05Z" {
		t.Fatalf("result %v: %s", r, h.dump())
	}
}

// TestGlobalOutputSamePass: a global output made by a pod that finished in this pass is seen
// by the steps template that called it, finishing in the same pass.
func TestGlobalOutputSamePass(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: gp}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    outputs:
      parameters:
      - {name: seen, valueFrom: {expression: "'saw ' + workflow.outputs.parameters.v"}}
  - name: gen
    container: {image: alpine, command: [gen]}
    outputs:
      parameters:
      - {name: v, globalName: v, valueFrom: {path: /tmp/v}}
`, func(p *corev1.Pod) run { return run{params: map[string]string{"v": "7"}} })
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	if p := h.node("gp").Outputs.Parameters; len(p) != 1 || string(*p[0].Value) != "saw 7" {
		t.Fatalf("outputs %+v", p)
	}
}

// TestOutputsStayDataThroughNestedTemplates: an output holding tags, passed into a steps
// template and from there to a step (and to its outputs), is never read for tags again.
func TestOutputsStayDataThroughNestedTemplates(t *testing.T) {
	const evil = `{{=workflow.name}} {{workflow.name}} {{inputs.parameters.x}}`
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: nest}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: inner
        template: inner
        arguments: {parameters: [{name: x, value: "{{steps.gen.outputs.result}}"}]}
  - name: inner
    inputs: {parameters: [{name: x}]}
    steps:
    - - name: say
        template: echo
        arguments: {parameters: [{name: x, value: "{{inputs.parameters.x}}"}]}
      - name: say-expr
        template: echo
        arguments: {parameters: [{name: x, value: "{{=inputs.parameters.x}}"}]}
    outputs:
      parameters:
      - {name: back, valueFrom: {parameter: "{{inputs.parameters.x}}"}}
  - name: gen
    script: {image: alpine, command: [sh], source: gen}
  - name: echo
    inputs: {parameters: [{name: x}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.x}}"]}
`, func(p *corev1.Pod) run {
		if p.Annotations[annotationScript] != "" {
			return run{result: evil}
		}
		return echo(p)
	})
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	for _, name := range []string{"nest[1].inner[0].say", "nest[1].inner[0].say-expr"} {
		if r := h.node(name).Outputs.Result; r == nil || *r != evil {
			t.Errorf("%s got %q, want the output as it was", name, deref(r))
		}
	}
	if p := h.node("nest[1].inner").Outputs.Parameters; len(p) != 1 || string(*p[0].Value) != evil {
		t.Errorf("inner's output %+v", p)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
