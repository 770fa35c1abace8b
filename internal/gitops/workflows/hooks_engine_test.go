package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// hookKubelet runs echo-like pods: `false` fails, anything else echoes its last word.
func hookKubelet(p *corev1.Pod) run {
	if command(p)[0] == "false" {
		return run{code: 1}
	}
	return echo(p)
}

// child reports whether parent's node has child's node among its children.
func (h *harness) child(parent, child string) bool {
	return slices.Contains(h.node(parent).Children, h.node(child).ID)
}

// runSeconds runs the workflow to its end a second per operation (the status keeps seconds), so
// that what starts after another ended shows it.
func (h *harness) runSeconds() {
	h.t.Helper()
	for i := 0; i < 200; i++ {
		h.step()
		if h.wf.Status.Phase.Completed() {
			return
		}
		h.now = h.now.Add(time.Second)
	}
	h.t.Fatalf("workflow did not finish: %s", h.dump())
}

func (h *harness) result(name string) string {
	h.t.Helper()
	n := h.node(name)
	if n.Outputs == nil || n.Outputs.Result == nil {
		h.t.Fatalf("%s has no result: %s", name, h.dump())
	}
	return *n.Outputs.Result
}

// TestStepAndTaskOnExit: a step's and a task's exit handler run once it has completed, as
// <node>.onExit under it, with its status and outputs and the workflow's arguments; the next
// step group and the dependent task wait for them; a failing exit handler leaves the step's
// phase (and the workflow's) alone, as in Argo.
func TestStepAndTaskOnExit(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: hk}
spec:
  entrypoint: main
  arguments: {parameters: [{name: who, value: ann}]}
  templates:
  - name: main
    inputs: {parameters: [{name: who}]}
    steps:
    - - name: A
        template: fail
        continueOn: {failed: true}
        onExit: report
      - name: B
        template: echo
        arguments: {parameters: [{name: msg, value: out-b}]}
        hooks:
          exit:
            template: echo
            arguments: {parameters: [{name: msg, value: "{{steps.B.status}}/{{steps.B.outputs.result}}/{{workflow.status}}/{{inputs.parameters.who}}"}]}
      - name: skipped
        template: echo
        when: "1 == 2"
        arguments: {parameters: [{name: msg, value: x}]}
        onExit: report
    - - {name: C, template: dag}
  - name: dag
    dag:
      tasks:
      - name: T
        template: echo
        arguments: {parameters: [{name: msg, value: out-t}]}
        onExit: fail
      - name: U
        depends: T
        template: echo
        arguments: {parameters: [{name: msg, value: "{{tasks.T.status}}"}]}
  - name: report
    inputs: {parameters: [{name: who}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.who}}"]}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
  - name: fail
    container: {image: alpine, command: ["false"]}
`, hookKubelet)
	h.runSeconds()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatalf("a failing task exit handler failed the workflow: %s", h.dump())
	}
	// A failed: its exit handler ran with the workflow's arguments (it gives none).
	exitA := h.node("hk[0].A.onExit")
	if exitA.DisplayName != "A.onExit" || !isHooked(&exitA) || exitA.Phase != NodeSucceeded || !h.child("hk[0].A", "hk[0].A.onExit") {
		t.Fatalf("A.onExit %+v: %s", exitA, h.dump())
	}
	if got := h.result("hk[0].A.onExit"); got != "ann" {
		t.Fatalf("A.onExit got %q, want the workflow's argument", got)
	}
	if exitA.BoundaryID != h.node("hk").ID {
		t.Fatalf("A.onExit boundary %q", exitA.BoundaryID)
	}
	// B's hooks.exit saw its status and output, the workflow Running, the template's inputs.
	if got := h.result("hk[0].B.onExit"); got != "Succeeded/out-b/Running/ann" {
		t.Fatalf("B.onExit got %q", got)
	}
	// A skipped step has no exit handler.
	if _, ok := h.wf.Status.Nodes[nodeID("hk", "hk[0].skipped.onExit")]; ok {
		t.Fatalf("a skipped step ran its exit handler: %s", h.dump())
	}
	// The next group started once both exit handlers had ended.
	g1 := h.node("hk[1]")
	for _, e := range []string{"hk[0].A.onExit", "hk[0].B.onExit"} {
		x := h.node(e)
		if !x.FinishedAt.After(x.StartedAt.Time) || g1.StartedAt.Before(&x.FinishedAt) {
			t.Fatalf("group 1 started at %v, %s ran %v to %v", g1.StartedAt, e, x.StartedAt, x.FinishedAt)
		}
	}
	// T succeeded, its exit handler failed: T's phase is what counts.
	if h.node("hk[1].C.T").Phase != NodeSucceeded || h.node("hk[1].C.T.onExit").Phase != NodeFailed || h.node("hk[1].C").Phase != NodeSucceeded {
		t.Fatal(h.dump())
	}
	if !h.child("hk[1].C.T", "hk[1].C.T.onExit") || h.node("hk[1].C.T.onExit").DisplayName != "T.onExit" {
		t.Fatal(h.dump())
	}
	u, exitT := h.node("hk[1].C.U"), h.node("hk[1].C.T.onExit")
	if u.StartedAt.Before(&exitT.FinishedAt) {
		t.Fatalf("U started at %v, before T.onExit ended at %v", u.StartedAt, exitT.FinishedAt)
	}
	if got := h.result("hk[1].C.U"); got != "Succeeded" {
		t.Fatalf("U got %q", got)
	}
}

// TestLifecycleHooks: expression hooks of the workflow, of a retried step and of a task run
// once, when their expression is true, as <node>.hooks.<name>; the workflow waits for them and
// then runs hooks.exit as its exit handler.
func TestLifecycleHooks(t *testing.T) {
	tries := 0
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: lh}
spec:
  entrypoint: main
  hooks:
    exit:
      template: echo
      arguments: {parameters: [{name: msg, value: "exit {{workflow.status}}"}]}
    running:
      expression: workflow.status == "Running"
      template: echo
      arguments: {parameters: [{name: msg, value: "running {{workflow.name}}"}]}
    done:
      expression: workflow.status == "Succeeded"
      template: echo
      arguments: {parameters: [{name: msg, value: "done"}]}
  templates:
  - name: main
    steps:
    - - name: s-1
        template: flaky
        hooks:
          started:
            expression: steps["s-1"].status == "Running"
            template: echo
            arguments: {parameters: [{name: msg, value: "started"}]}
          ok:
            expression: steps["s-1"].status == "Succeeded"
            template: echo
            arguments: {parameters: [{name: msg, value: "ok {{steps.s-1.outputs.result}}"}]}
          failed:
            expression: steps["s-1"].status == "Failed"
            template: echo
            arguments: {parameters: [{name: msg, value: "failed"}]}
    - - name: d
        template: dag
  - name: dag
    dag:
      tasks:
      - name: T
        template: echo
        arguments: {parameters: [{name: msg, value: "t"}]}
        hooks:
          ok: {expression: "tasks.T.status == 'Succeeded'", template: echo, arguments: {parameters: [{name: msg, value: "task {{tasks.T.outputs.result}}"}]}}
      - {name: U, template: echo, depends: T, arguments: {parameters: [{name: msg, value: "u"}]}}
  - name: flaky
    retryStrategy: {limit: 2}
    container: {image: alpine, command: [sh, -c, "try"]}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
`, func(p *corev1.Pod) run {
		if command(p)[0] == "sh" {
			if tries++; tries == 1 {
				return run{code: 1}
			}
			return run{result: "second"}
		}
		return hookKubelet(p)
	})
	h.runSeconds()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	want := map[string]string{
		"lh.hooks.running":        "running lh",
		"lh.hooks.done":           "done",
		"lh.onExit":               "exit Succeeded",
		"lh[0].s-1.hooks.started": "started",
		"lh[0].s-1.hooks.ok":      "ok second",
		"lh[1].d.T.hooks.ok":      "task t",
	}
	for name, res := range want {
		n := h.node(name)
		if !isHooked(&n) || n.Phase != NodeSucceeded {
			t.Fatalf("%s: %+v", name, n)
		}
		if got := h.result(name); got != res {
			t.Fatalf("%s got %q, want %q", name, got, res)
		}
	}
	for _, never := range []string{"lh[0].s-1.hooks.failed", "lh.hooks.exit", "lh[0].s-1(0).hooks.ok"} {
		if _, ok := h.wf.Status.Nodes[nodeID("lh", never)]; ok {
			t.Fatalf("%s ran: %s", never, h.dump())
		}
	}
	if d := h.node("lh[0].s-1.hooks.ok").DisplayName; d != "s-1.hooks.ok" {
		t.Fatalf("display %q", d)
	}
	// The hooks hang off the retry node beside its two attempts, which they did not disturb.
	r := h.node("lh[0].s-1")
	if r.Type != NodeTypeRetry || len(r.Children) != 4 || len(attempts(nodesOf(h.wf), &r)) != 2 {
		t.Fatalf("retry node children %v: %s", r.Children, h.dump())
	}
	if h.node("lh[0].s-1(1)").Phase != NodeSucceeded || !h.child("lh", "lh.hooks.running") || !h.child("lh[1].d.T", "lh[1].d.T.hooks.ok") {
		t.Fatal(h.dump())
	}
	// The workflow's Succeeded hook ran after the root ended and before the exit handler.
	root, done, exit := h.node("lh"), h.node("lh.hooks.done"), h.node("lh.onExit")
	if done.StartedAt.Before(&root.FinishedAt) || exit.StartedAt.Before(&done.FinishedAt) {
		t.Fatalf("root ended %v, done hook %v-%v, exit from %v", root.FinishedAt, done.StartedAt, done.FinishedAt, exit.StartedAt)
	}
	// The next group waited for the step's hooks.
	if g1, ok := h.node("lh[1]"), h.node("lh[0].s-1.hooks.ok"); g1.StartedAt.Before(&ok.FinishedAt) {
		t.Fatalf("group 1 at %v before the hook ended at %v", g1.StartedAt, ok.FinishedAt)
	}
	if u, ok := h.node("lh[1].d.U"), h.node("lh[1].d.T.hooks.ok"); u.StartedAt.Before(&ok.FinishedAt) {
		t.Fatalf("U at %v before T's hook ended at %v", u.StartedAt, ok.FinishedAt)
	}
}

func nodesOf(wf *Workflow) map[string]*NodeStatus {
	m := map[string]*NodeStatus{}
	for id, n := range wf.Status.Nodes {
		n := n
		m[id] = &n
	}
	return m
}

// TestExitHandlersUnderStop: when the workflow is stopped, a running step's pod is deleted, its
// exit handler still runs to its end and the workflow's after it; Terminate runs none.
func TestExitHandlersUnderStop(t *testing.T) {
	for _, strategy := range []string{"Stop", "Terminate"} {
		t.Run(strategy, func(t *testing.T) {
			h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: st}
spec:
  entrypoint: main
  onExit: bye
  templates:
  - name: main
    steps: [[{name: long, template: sleep, onExit: bye, hooks: {later: {expression: "steps.long.status == 'Failed'", template: bye}}}]]
  - name: sleep
    container: {image: alpine, command: [sleep, infinity]}
  - name: bye
    container: {image: alpine, command: [echo, bye]}
`, func(p *corev1.Pod) run {
				if command(p)[0] == "sleep" {
					return run{code: -1}
				}
				return echo(p)
			})
			h.step()
			h.step()
			if h.node("st[0].long").Phase != NodeRunning {
				t.Fatal(h.dump())
			}
			h.wf.Spec.Shutdown = strategy
			h.runToEnd()
			if h.wf.Status.Phase != WorkflowFailed || h.node("st[0].long").Phase != NodeFailed {
				t.Fatal(h.dump())
			}
			_, stepExit := h.wf.Status.Nodes[nodeID("st", "st[0].long.onExit")]
			_, wfExit := h.wf.Status.Nodes[nodeID("st", "st.onExit")]
			_, hook := h.wf.Status.Nodes[nodeID("st", "st[0].long.hooks.later")]
			if hook {
				t.Fatalf("an expression hook started while the workflow stopped: %s", h.dump())
			}
			if strategy == "Terminate" {
				if stepExit || wfExit {
					t.Fatalf("Terminate ran exit handlers: %s", h.dump())
				}
				return
			}
			if h.node("st[0].long.onExit").Phase != NodeSucceeded || h.node("st.onExit").Phase != NodeSucceeded {
				t.Fatal(h.dump())
			}
			if !strings.Contains(h.wf.Status.Message, "Stop") {
				t.Fatalf("message %q", h.wf.Status.Message)
			}
		})
	}
}

// TestHooksOfExpandedStepsAndTasks: each child of an expanded step or task runs its exit
// handler with its item; an expanded task's expression hooks see its TaskGroup, as Argo's.
func TestHooksOfExpandedStepsAndTasks(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: ex}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: s
        template: echo
        withItems: [a, b]
        arguments: {parameters: [{name: msg, value: "{{item}}"}]}
        hooks:
          exit: {template: echo, arguments: {parameters: [{name: msg, value: "{{item}} {{steps.s.status}} {{steps.s.outputs.result}}"}]}}
    - - {name: d, template: dag}
  - name: dag
    dag:
      tasks:
      - name: T
        template: echo
        withItems: [x, z]
        arguments: {parameters: [{name: msg, value: "{{item}}"}]}
        hooks:
          exit: {template: echo, arguments: {parameters: [{name: msg, value: "exit {{item}}"}]}}
          done: {expression: "tasks.T.status == 'Succeeded'", template: echo, arguments: {parameters: [{name: msg, value: "group"}]}}
      - {name: U, template: echo, depends: T, arguments: {parameters: [{name: msg, value: u}]}}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
`, hookKubelet)
	h.runSeconds()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	for name, want := range map[string]string{
		"ex[0].s(0:a).onExit":   "a Succeeded a",
		"ex[0].s(1:b).onExit":   "b Succeeded b",
		"ex[1].d.T(0:x).onExit": "exit x",
		"ex[1].d.T(1:z).onExit": "exit z",
		"ex[1].d.T.hooks.done":  "group",
	} {
		if got := h.result(name); got != want {
			t.Fatalf("%s got %q, want %q", name, got, want)
		}
	}
	if _, ok := h.wf.Status.Nodes[nodeID("ex", "ex[1].d.T(0:x).hooks.done")]; ok {
		t.Fatalf("an expanded task's child ran the task's expression hook: %s", h.dump())
	}
	if u, done := h.node("ex[1].d.U"), h.node("ex[1].d.T.hooks.done"); u.StartedAt.Before(&done.FinishedAt) {
		t.Fatalf("U at %v before T's hook ended at %v", u.StartedAt, done.FinishedAt)
	}
	if g := h.node("ex[1].d.T"); g.Type != NodeTypeTaskGroup || g.Phase != NodeSucceeded || !h.child("ex[1].d.T", "ex[1].d.T.hooks.done") {
		t.Fatalf("group %+v: %s", g, h.dump())
	}
}

// TestOmittedTaskHooks: a task its depends omits has an Omitted node, as in Argo; its
// expression hooks see it Omitted and run (in the pass that omits it, so that a DAG ending
// then still runs them), the tasks after it wait for them; its exit handler does not run, and
// an omitted task with items runs none of them.
func TestOmittedTaskHooks(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: om}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: fail, continueOn: {failed: true}}
      - name: B
        depends: A.Succeeded
        template: echo
        arguments: {parameters: [{name: msg, value: b}]}
        onExit: report
        hooks:
          om:
            expression: tasks.B.status == 'Omitted'
            template: echo
            arguments: {parameters: [{name: msg, value: "B {{tasks.B.status}}"}]}
          ran: {expression: "tasks.B.status == 'Succeeded'", template: report}
      - name: E
        depends: A.Succeeded
        template: echo
        withItems: [one, two]
        arguments: {parameters: [{name: msg, value: "{{item}}"}]}
        hooks:
          exit: {template: report}
          om: {expression: "tasks.E.status == 'Omitted'", template: report}
      - {name: D, depends: B, template: echo, arguments: {parameters: [{name: msg, value: d}]}}
  - name: report
    container: {image: alpine, command: [echo, report]}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
  - name: fail
    container: {image: alpine, command: ["false"]}
`, hookKubelet)
	h.runSeconds()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	for _, name := range []string{"om.B", "om.E", "om.D"} {
		if n := h.node(name); n.Type != NodeTypeSkipped || n.Phase != NodeOmitted || n.Message != "omitted: depends condition not met" {
			t.Fatalf("%s: %+v", name, n)
		}
	}
	if got := h.result("om.B.hooks.om"); got != "B Omitted" {
		t.Fatalf("B's hook got %q", got)
	}
	for _, hook := range []string{"om.B.hooks.om", "om.E.hooks.om"} {
		n := h.node(hook)
		if !isHooked(&n) || n.Phase != NodeSucceeded || !h.child(hook[:strings.Index(hook, ".hooks.")], hook) {
			t.Fatalf("%s %+v: %s", hook, n, h.dump())
		}
	}
	for _, never := range []string{"om.B.onExit", "om.B.hooks.ran", "om.E(0:one)", "om.E(1:two)", "om.E(0:one).onExit", "om.E.onExit", "om.D.hooks.om"} {
		if _, ok := h.wf.Status.Nodes[nodeID("om", never)]; ok {
			t.Fatalf("%s ran: %s", never, h.dump())
		}
	}
	// D was omitted once B's hook had ended.
	if d, om := h.node("om.D"), h.node("om.B.hooks.om"); d.StartedAt.Before(&om.FinishedAt) {
		t.Fatalf("D omitted at %v, before B's hook ended at %v", d.StartedAt, om.FinishedAt)
	}
}

// TestHookExpressionErrors: a hook whose expression does not evaluate at run time errors what
// runs its step (the step group; the steps template fails), its task (the DAG) or the workflow
// (its root node), as in Argo, with a message naming the hook; what had started runs to its
// end (exit handlers too); nothing new starts after it.
func TestHookExpressionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, spec, node, msg string
		hook, slow, exit      string
		phase                 WorkflowPhase
		never                 []string
	}{
		{"step", `
  - name: main
    steps:
    - - name: s
        template: echo
        arguments: {parameters: [{name: msg, value: abc}]}
        onExit: report
        hooks:
          bad: {expression: "steps.s.status == 'Succeeded' && int(steps.s.outputs.result) > 1", template: report}
      - {name: slow, template: sleep}
    - - {name: next, template: report}`, "he[0]", `he[0].s.hooks.bad.expression "steps.s.status == 'Succeeded' && int(steps.s.outputs.result) > 1": does not evaluate`,
			"he[0].s.hooks.bad", "he[0].slow", "he[0].s.onExit", WorkflowFailed, []string{"he[1]", "he[1].next"}},
		{"exit hook", `
  - name: main
    steps:
    - - name: s
        template: echo
        arguments: {parameters: [{name: msg, value: abc}]}
        hooks:
          exit: {expression: "int(steps.s.outputs.result) > 1", template: report}
      - {name: slow, template: sleep}
    - - {name: next, template: report}`, "he[0]", `he[0].s.hooks.exit.expression "int(steps.s.outputs.result) > 1": does not evaluate`,
			"he[0].s.onExit", "he[0].slow", "", WorkflowFailed, []string{"he[1]", "he[1].next"}},
		{"task", `
  - name: main
    dag:
      tasks:
      - name: T
        template: echo
        arguments: {parameters: [{name: msg, value: abc}]}
        onExit: report
        hooks:
          bad: {expression: "tasks.T.status == 'Succeeded' && int(tasks.T.outputs.result) > 1", template: report}
      - {name: slow, template: sleep}
      - {name: U, depends: T, template: report}`, "he", `he.T.hooks.bad.expression "tasks.T.status == 'Succeeded' && int(tasks.T.outputs.result) > 1": does not evaluate`,
			"he.T.hooks.bad", "he.slow", "he.T.onExit", WorkflowError, []string{"he.U"}},
		{"workflow", `
  - name: main
    steps: [[{name: s, template: report}]]`, "he", `spec.hooks.bad.expression "workflow.status == 'Succeeded' && int(workflow.parameters.x) > 1": does not evaluate`,
			"he.hooks.bad", "", "", WorkflowError, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hooks := ""
			if tc.name == "workflow" {
				hooks = `
  arguments: {parameters: [{name: x, value: abc}]}
  hooks:
    bad: {expression: "workflow.status == 'Succeeded' && int(workflow.parameters.x) > 1", template: report}`
			}
			h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: he}
spec:
  entrypoint: main
  onExit: status`+hooks+`
  templates:`+tc.spec+`
  - name: report
    container: {image: alpine, command: [echo, report]}
  - name: status
    container: {image: alpine, command: [echo, "{{workflow.status}}"]}
  - name: sleep
    container: {image: alpine, command: [sleep, "2"]}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
`, func(p *corev1.Pod) run {
				if command(p)[0] == "sleep" {
					return run{code: -1} // until the hook has errored (below)
				}
				return hookKubelet(p)
			})
			for i := 0; i < 200 && !h.wf.Status.Phase.Completed(); i++ {
				h.step()
				h.now = h.now.Add(time.Second)
				if _, ok := h.wf.Status.Nodes[nodeID("he", tc.hook)]; !ok {
					continue
				}
				for _, p := range h.fc.pods { // the hook has errored: slow ends now
					if command(p)[0] == "sleep" && p.Status.Phase == corev1.PodRunning {
						p.Status.Phase = corev1.PodSucceeded
						p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
							Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", Message: "{}"}}}}
					}
				}
			}
			if !h.wf.Status.Phase.Completed() {
				t.Fatalf("workflow did not finish: %s", h.dump())
			}
			hook := h.node(tc.hook)
			if !isHooked(&hook) || hook.Phase != NodeError || !strings.Contains(hook.Message, ".expression ") {
				t.Fatalf("hook node %+v", hook)
			}
			if tc.slow != "" {
				// What had started ran to its end, and its exit handler; the steps or DAG
				// template ended after them, with the hook's message.
				slow, end := h.node(tc.slow), h.node("he")
				if slow.Phase != NodeSucceeded || end.FinishedAt.Before(&slow.FinishedAt) {
					t.Fatalf("%s %s ended %v, he ended %v", tc.slow, slow.Phase, slow.FinishedAt, end.FinishedAt)
				}
				if !strings.HasPrefix(end.Message, tc.msg) {
					t.Fatalf("he message %q", end.Message)
				}
				if tc.exit != "" {
					if x := h.node(tc.exit); x.Phase != NodeSucceeded {
						t.Fatalf("%s: %+v", tc.exit, x)
					}
				}
			}
			if h.wf.Status.Phase != tc.phase {
				t.Fatalf("phase %s, want %s: %s", h.wf.Status.Phase, tc.phase, h.dump())
			}
			n := h.node(tc.node)
			if !strings.HasPrefix(n.Message, tc.msg) {
				t.Fatalf("%s message %q, want %q…", tc.node, n.Message, tc.msg)
			}
			for _, never := range tc.never {
				if _, ok := h.wf.Status.Nodes[nodeID("he", never)]; ok {
					t.Fatalf("%s started: %s", never, h.dump())
				}
			}
			if got := h.result("he.onExit"); got != string(tc.phase) {
				t.Fatalf("the workflow's exit handler saw %q", got)
			}
			if !strings.HasPrefix(h.wf.Status.Message, tc.msg) {
				t.Fatalf("workflow message %q", h.wf.Status.Message)
			}
		})
	}
}

// TestWhenSkippedHooks: a step its when skips runs no hook, as in Argo (its step group keeps no
// step for it); a DAG task its when skips has its expression hooks evaluated over it, as Argo's
// DAG evaluates every task's that has a node (`tasks.S.status == 'Skipped'` runs one).
func TestWhenSkippedHooks(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: ws}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: S
        template: echo
        when: "1 == 2"
        arguments: {parameters: [{name: msg, value: s}]}
        hooks:
          sk: {expression: "steps.S.status == 'Skipped'", template: report}
          any: {expression: "true", template: report}
    - - {name: D, template: dag}
  - name: dag
    dag:
      tasks:
      - name: T
        template: echo
        when: "1 == 2"
        arguments: {parameters: [{name: msg, value: t}]}
        hooks:
          sk: {expression: "tasks.T.status == 'Skipped'", template: report}
  - name: report
    container: {image: alpine, command: [echo, report]}
  - name: echo
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
`, hookKubelet)
	h.runSeconds()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	if n := h.node("ws[0].S"); n.Type != NodeTypeSkipped || n.Phase != NodeSkipped {
		t.Fatalf("S: %+v", n)
	}
	for _, never := range []string{"ws[0].S.hooks.sk", "ws[0].S.hooks.any"} {
		if _, ok := h.wf.Status.Nodes[nodeID("ws", never)]; ok {
			t.Fatalf("%s ran: %s", never, h.dump())
		}
	}
	if n := h.node("ws[1].D.T.hooks.sk"); !isHooked(&n) || n.Phase != NodeSucceeded {
		t.Fatalf("T's hook %+v: %s", n, h.dump())
	}
}
