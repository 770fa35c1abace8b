package workflows

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// TestLintHooks: bad exit handlers and hooks are refused as `argo lint` refuses them, naming the
// field.
func TestLintHooks(t *testing.T) {
	for _, tc := range []struct {
		name, spec, field, reason string
	}{
		{"step onExit names no template", `
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: s, template: t, onExit: nope}]]}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].onExit", `"nope" is not a template of this workflow`},
		{"task hook names no template", `
  entrypoint: main
  templates:
  - {name: main, dag: {tasks: [{name: a, template: t, hooks: {exit: {template: nope}}}]}}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].dag.tasks[0].hooks.exit.template", `"nope" is not a template`},
		{"hook without expression", `
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: s, template: t, hooks: {running: {template: t}}}]]}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].hooks.running.expression", "is required"},
		{"bad hook expression", `
  entrypoint: main
  templates:
  - {name: t, container: {image: x, command: [x]}}
  - {name: main, steps: [[{name: s, template: t, hooks: {running: {template: t, expression: "steps.s.status =="}}}]]}`, "spec.templates[1].steps[0][0].hooks.running.expression", "does not parse"},
		{"hook expression names another step", `
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: s, template: t, hooks: {running: {template: t, expression: "steps.other.status == 'Running'"}}}]]}
  - {name: t, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].hooks.running.expression", `names "other", which is not a step`},
		{"hook argument names an unknown output", `
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: s, template: t, hooks: {exit: {template: u, arguments: {parameters: [{name: m, value: "{{steps.s.outputs.parameters.nope}}"}]}}}}]]
  - {name: t, container: {image: x, command: [x]}}
  - {name: u, inputs: {parameters: [{name: m}]}, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].hooks.exit.arguments.parameters[0].value", "does not declare"},
		{"hook template input not given", `
  entrypoint: main
  templates:
  - {name: main, steps: [[{name: s, template: t, hooks: {ok: {template: u, expression: "steps.s.status == 'Succeeded'"}}}]]}
  - {name: t, container: {image: x, command: [x]}}
  - {name: u, inputs: {parameters: [{name: m}]}, container: {image: x, command: [x]}}`, "spec.templates[0].steps[0][0].hooks.ok.arguments.parameters", `"m" is an input parameter of template "u"`},
		{"workflow hook names a step", `
  entrypoint: main
  hooks: {running: {template: main, expression: "steps.a.status == 'Running'"}}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.hooks.running.expression", "not a step"},
		{"workflow hook names no template", `
  entrypoint: main
  hooks: {exit: {template: nope}}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.hooks.exit.template", `"nope" is not a template`},
		{"bad hook name", `
  entrypoint: main
  hooks: {"a.b": {template: main, expression: "true"}}
  templates:
  - {name: main, container: {image: x, command: [x]}}`, "spec.hooks.a.b", "is not a hook name"},
		{"template hooks", `
  entrypoint: main
  templates:
  - {name: main, hooks: {exit: {template: main}}, container: {image: x, command: [x]}}`, "spec.templates[0].hooks", "is not a field of a template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf, err := decodeYAML(t, lintHead+tc.spec)
			if wf == nil || err == nil {
				t.Fatalf("got %v, want an error", err)
			}
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("%v is not a field error", err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("got\n  %s\nwant field %s and %q", err, tc.field, tc.reason)
			}
		})
	}
}

// TestLintAcceptsHooks: Argo's examples of exit handlers and lifecycle hooks lint.
func TestLintAcceptsHooks(t *testing.T) {
	for name, y := range map[string]string{
		// examples/life-cycle-hooks-tmpl-level.yaml (an echo for its http template)
		"tmpl-level": `
  entrypoint: main
  templates:
    - name: main
      steps:
        - - name: step-1
            hooks:
              running:
                expression: steps["step-1"].status == "Running"
                template: http
              success:
                expression: steps["step-1"].status == "Succeeded"
                template: http
            template: echo
    - name: echo
      container: {image: alpine, command: [sh, -c], args: ["echo hi"]}
    - name: http
      container: {image: alpine, command: [echo, hook]}`,
		// examples/life-cycle-hooks-wf-level.yaml
		"wf-level": `
  entrypoint: main
  hooks:
    exit:
      template: http
    running:
      expression: workflow.status == "Running"
      template: http
  templates:
    - name: main
      steps: [[{name: step1, template: heads}]]
    - name: heads
      container: {image: alpine, command: [sh, -c], args: ["echo heads"]}
    - name: http
      container: {image: alpine, command: [echo, hook]}`,
		// Argo's TestStepsTemplateOnExitStatusArgument and examples/exit-handler-dag-level.yaml
		"exit arguments": `
  entrypoint: main
  arguments: {parameters: [{name: who, value: x}]}
  templates:
    - name: main
      dag:
        tasks:
          - name: main
            template: echo
            hooks:
              exit:
                template: hook
                arguments:
                  parameters:
                    - {name: status, value: "{{tasks.main.status}}"}
                    - {name: out, value: "{{tasks.main.outputs.result}}"}
          - {name: next, template: echo, onExit: greet, depends: main}
    - name: echo
      container: {image: alpine, command: [sh, -c], args: ["echo hi"]}
    - name: greet
      inputs: {parameters: [{name: who}]}
      container: {image: alpine, command: [echo, "{{inputs.parameters.who}}"]}
    - name: hook
      inputs: {parameters: [{name: status}, {name: out}]}
      container: {image: alpine, command: [echo, "{{inputs.parameters.status}}"]}`,
		// hooks of a task its depends may omit, and of one with items
		"omitted task": `
  entrypoint: main
  templates:
    - name: main
      dag:
        tasks:
          - {name: a, template: echo}
          - name: b
            depends: a.Failed
            template: echo
            withItems: [x]
            hooks:
              omitted: {expression: "tasks.b.status == 'Omitted'", template: echo}
              exit: {expression: "tasks.b.status != 'Omitted'", template: echo}
    - name: echo
      container: {image: alpine, command: [echo, hi]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeYAML(t, lintHead+y); err != nil {
				t.Fatal(err)
			}
		})
	}
}
