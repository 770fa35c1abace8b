package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Exit handlers and lifecycle hooks, as Argo Workflows runs them (its controller's
// exit_handler.go and hooks.go):
//
//   - A step's or task's exit handler (onExit, or hooks.exit; onExit wins) runs once its node
//     has completed (Succeeded, Failed or Error; not Skipped or Omitted), as the node
//     <node>.onExit, a child of it. Its arguments are the hook's, else the workflow's; they
//     see the step's or task's status and outputs ({{steps.NAME.status}},
//     {{tasks.NAME.outputs.parameters.P}}), the template's inputs and the workflow's variables,
//     {{workflow.status}} being Running. The step group or the tasks after it wait for it; its
//     own phase does not count: the step's phase is the step's.
//   - Any other hook runs its template once, as <node>.hooks.<name>, the first time its
//     expression (expr-lang over the same variables) is true while the step or task is
//     visited; the step group or the tasks after it wait for every hook that started.
//   - The workflow's hooks are the same over the workflow's variables, {{workflow.status}}
//     being its root's phase; their nodes are <workflow>.hooks.<name>, and the workflow ends
//     once they have (its exit handler runs after them, as <workflow>.onExit).
//
// Hook and exit nodes are flagged Hooked (nodeFlag), as Argo's. While the workflow stops
// (Stop, its deadline), exit handlers still start and run to their end; no new expression
// hook starts; Terminate starts none.
//
// A DAG task that its depends omits has a node (Skipped, phase Omitted), as Argo's: its
// expression hooks are evaluated over it ({{tasks.NAME.status}} being Omitted), its exit
// handler does not run (it did not complete). Argo's executeDAGTask calls
// executeTmplLifeCycleHook for every fulfilled task node and runOnExitNode only for completed
// ones.
//
// A hook or exit handler that cannot start (its expression does not evaluate, its arguments
// do not resolve) is an error of what runs the step or task, as in Argo, where
// executeTmplLifeCycleHook's error marks the step group Error (executeStepGroup), or the task
// (executeDAGTask) and, for a target task, the DAG (executeDAG); here: its node
// <node>.hooks.<name> is Error with why, the step group (and its steps template, Failed) or
// the DAG ends Error with that message once what it started has ended, and nothing new
// starts there. A workflow hook's error is its root node's, and so the workflow's.

// exitHook is the exit handler of a step, task or workflow: onExit, else hooks.exit.
func exitHook(onExit string, hooks LifecycleHooks) *LifecycleHook {
	if onExit != "" {
		return &LifecycleHook{Template: onExit}
	}
	if h, ok := hooks[ExitHook]; ok {
		return &h
	}
	return nil
}

// notStarted reports whether hook node h could not start (errorNode's: Skipped, Error).
func notStarted(h *NodeStatus) bool {
	return h != nil && h.Type == NodeTypeSkipped && h.Phase == NodeError
}

// hookError is the message of the step group, DAG or workflow whose hook node h could not
// start, naming the hook: <node>.hooks.<name>.expression "…": why.
func hookError(h *NodeStatus) string {
	if i := strings.LastIndex(h.Name, ".hooks."); i >= 0 && strings.HasPrefix(h.Message, h.Name[i+1:]+".") {
		return h.Name[:i] + "." + h.Message
	}
	if strings.HasSuffix(h.Name, ".onExit") && strings.HasPrefix(h.Message, "hooks.exit.") {
		return strings.TrimSuffix(h.Name, "onExit") + h.Message
	}
	return h.Name + ": " + h.Message
}

// hookFailed records that hook node h of node x could not start (hookErr).
func (o *operation) hookFailed(x, h *NodeStatus) {
	if !notStarted(h) {
		return
	}
	if o.hookErrs == nil {
		o.hookErrs = map[string]string{}
	}
	if o.hookErrs[x.ID] == "" {
		o.hookErrs[x.ID] = hookError(h)
	}
}

// hookErr is why a hook or the exit handler of node x could not start in this pass ("": none).
func (o *operation) hookErr(x *NodeStatus) string {
	if x == nil {
		return ""
	}
	return o.hookErrs[x.ID]
}

// hookNames are a call's hook names but exit, sorted.
func hookNames(hooks LifecycleHooks) []string {
	names := make([]string, 0, len(hooks))
	for n := range hooks {
		if n != ExitHook {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// hookTrue evaluates a hook's expression over s: its {{…}} tags first, then expr-lang, which
// must give a boolean.
func hookTrue(e string, s scope) (bool, error) {
	e, err := s.expand("expression", e, nil)
	if err != nil {
		return false, err
	}
	v, err := evalExpr(e, s)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("gives %s, not a boolean", cut(fmt.Sprint(v), 60))
	}
	return b, nil
}

// completed is Argo's NodePhase.Completed: the node ran to an end (it was not skipped or
// omitted).
func completed(p NodePhase) bool {
	return p == NodeSucceeded || p == NodeFailed || p == NodeError
}

// hooked marks a node run by a hook or an exit handler.
func hooked(n *NodeStatus) {
	if n.NodeFlag == nil {
		n.NodeFlag = &NodeFlag{}
	}
	n.NodeFlag.Hooked = true
}

// isHooked reports whether a node was run by a hook or an exit handler.
func isHooked(n *NodeStatus) bool { return n != nil && n.NodeFlag != nil && n.NodeFlag.Hooked }

// attempts are a retry node's children but its hooks' nodes: its attempts, in order.
func attempts(nodes map[string]*NodeStatus, n *NodeStatus) []string {
	out := n.Children
	for i, id := range n.Children {
		if isHooked(nodes[id]) {
			out = make([]string, 0, len(n.Children))
			out = append(out, n.Children[:i]...)
			for _, id := range n.Children[i:] {
				if !isHooked(nodes[id]) {
					out = append(out, id)
				}
			}
			break
		}
	}
	return out
}

// isExitDisplay reports whether a display name is an exit handler's (or one of its retry
// attempts').
func isExitDisplay(d string) bool {
	if i := strings.LastIndexByte(d, '('); i > 0 && strings.HasSuffix(d, ")") {
		if _, err := fmt.Sscanf(d[i:], "(%d)", new(int)); err == nil {
			d = d[:i]
		}
	}
	return strings.HasSuffix(d, ".onExit")
}

// inExit reports whether the node named display under boundary is an exit handler's or part
// of one.
func (o *operation) inExit(display, boundary string) bool {
	if isExitDisplay(display) {
		return true
	}
	for i, id := 0, boundary; id != "" && i <= 2*maxDepth; i++ {
		b := o.nodes[id]
		if b == nil {
			return false
		}
		if isExitDisplay(b.DisplayName) {
			return true
		}
		id = b.BoundaryID
	}
	return false
}

// exitRuns reports whether a node of an exit handler runs although the workflow is stopping
// (Stop, its deadline; not Terminate).
func (o *operation) exitRuns(display, boundary string) bool {
	return o.spec.Shutdown != "Terminate" && o.inExit(display, boundary)
}

// survivesStop reports whether a node's pod is left to run while the workflow is stopping:
// the workflow's exit handler's, and under Stop or a deadline every exit handler's.
func (o *operation) survivesStop(n *NodeStatus) bool {
	return strings.HasPrefix(n.Name, o.wf.Name+".onExit") || o.exitRuns(n.DisplayName, n.BoundaryID)
}

// fireHook runs lifecycle hook h as invocation inv under parent: the first time its expression
// is true over s, then on every pass until its node has ended. It returns its node (nil when
// it has not started) and whether it is still to be waited for.
func (o *operation) fireHook(inv invocation, h LifecycleHook, field string, s scope, parent *NodeStatus) (*NodeStatus, bool) {
	inv.tmpl, inv.ref, inv.attempt = h.Template, h.TemplateRef, -1
	n := o.get(inv.name)
	if n == nil {
		if o.stopping != "" {
			return nil, false // no hook starts while the workflow stops
		}
		ok, err := hookTrue(h.Expression, s)
		if err != nil {
			n = o.errorNode(inv, fmt.Errorf("%s.expression %q: %v", field, h.Expression, err))
			hooked(n)
			o.addChild(parent, n)
			return n, false
		}
		if !ok {
			return nil, false
		}
	}
	return o.runHookNode(inv, h.Arguments, s, parent)
}

// runHookNode runs a hook's or exit handler's node one step further with args resolved over s.
func (o *operation) runHookNode(inv invocation, args Arguments, s scope, parent *NodeStatus) (*NodeStatus, bool) {
	n := o.get(inv.name)
	if n == nil || !n.Phase.Fulfilled() { // an ended one's arguments are not resolved again
		var err error
		if inv.args, inv.arts, err = resolveArgs(args, s, nil); err != nil {
			n = o.errorNode(inv, err)
		} else if n = o.execute(inv); n == nil {
			return nil, true // not started yet (parallelism, suspended)
		}
	}
	hooked(n)
	if parent != nil {
		o.addChild(parent, n)
	}
	return n, !n.Phase.Fulfilled()
}

// runHooks runs the hooks of step or task c on its node x (expr: its expression hooks; exit:
// its exit handler) over s, the scope its arguments were resolved in; inv is x's invocation.
// Whether x must wait for them is kept for hooksPending.
func (o *operation) runHooks(c call, x *NodeStatus, s scope, inv invocation, expr, exit bool) {
	s = merge(s)
	nodeVars(c.kind+"."+c.name, x, s)
	wait := false
	if expr {
		for _, name := range hookNames(c.hooks) {
			hinv := inv
			hinv.name, hinv.display = x.Name+".hooks."+name, x.DisplayName+".hooks."+name
			h, w := o.fireHook(hinv, c.hooks[name], "hooks."+name, s, x)
			if w {
				wait = true
			}
			o.hookFailed(x, h)
		}
	}
	// A node that never started (a when that did not evaluate, a template not found) has no
	// exit handler: in Argo it has no node.
	if h := exitHook(c.onExit, c.hooks); exit && h != nil && completed(x.Phase) && x.Type != NodeTypeSkipped {
		einv := inv
		einv.name, einv.display = x.Name+".onExit", x.DisplayName+".onExit"
		einv.tmpl, einv.ref, einv.attempt = h.Template, h.TemplateRef, -1
		run := o.get(einv.name) != nil || o.spec.Shutdown != "Terminate"
		if run && o.get(einv.name) == nil && h.Expression != "" {
			ok, err := hookTrue(h.Expression, s)
			if err != nil {
				n := o.errorNode(einv, fmt.Errorf("hooks.exit.expression %q: %v", h.Expression, err))
				hooked(n)
				o.addChild(x, n)
				o.hookFailed(x, n)
			}
			run = ok
		}
		if run {
			args := h.Arguments
			if len(args.Parameters) == 0 && len(args.Artifacts) == 0 {
				args = o.spec.Arguments // Argo gives an exit handler without arguments the workflow's
			}
			n, w := o.runHookNode(einv, args, s, x)
			if w {
				wait = true
			}
			o.hookFailed(x, n)
		}
	}
	if o.hooksWait == nil {
		o.hooksWait = map[string]bool{}
	}
	o.hooksWait[x.ID] = wait || o.hooksWait[x.ID]
}

// hooksPending reports whether node x waits for a hook or its exit handler in this pass.
func (o *operation) hooksPending(x *NodeStatus) bool { return o.hooksWait[x.ID] }

// workflowHooks runs the workflow's expression hooks under its root node and reports whether
// every one that started has ended, and why the first that could not start did not ("": none).
func (o *operation) workflowHooks(root *NodeStatus, tc tmplCtx) (bool, string) {
	names := hookNames(o.spec.Hooks)
	if len(names) == 0 || root == nil {
		return true, ""
	}
	s := merge(o.globals)
	s["workflow.status"] = string(workflowPhaseOf(root.Phase))
	s["workflow.failures"] = o.failures()
	done, failed := true, ""
	for _, name := range names {
		full := o.wf.Name + ".hooks." + name
		inv := invocation{name: full, display: full, tc: tc}
		h, w := o.fireHook(inv, o.spec.Hooks[name], "spec.hooks."+name, s, root)
		if w {
			done = false
		}
		if notStarted(h) && failed == "" {
			failed = h.Message
			if !strings.HasPrefix(failed, "spec.hooks."+name+".") {
				failed = full + ": " + failed
			}
		}
	}
	return done, failed
}

// workflowExit is the invocation of the workflow's exit handler (nil: none).
func (o *operation) workflowExit(tc tmplCtx) (invocation, Arguments, bool) {
	h := exitHook(o.spec.OnExit, o.spec.Hooks)
	if h == nil {
		return invocation{}, Arguments{}, false
	}
	name := o.wf.Name + ".onExit"
	args := h.Arguments
	if o.spec.OnExit != "" || (len(args.Parameters) == 0 && len(args.Artifacts) == 0) {
		args = o.spec.Arguments
	}
	return invocation{name: name, display: name, tmpl: h.Template, ref: h.TemplateRef, tc: tc, attempt: -1}, args, true
}

// workflowPhaseOf is {{workflow.status}} while the root node has phase p, as Argo maps it.
func workflowPhaseOf(p NodePhase) WorkflowPhase {
	switch p {
	case NodePending:
		return WorkflowPending
	case NodeFailed:
		return WorkflowFailed
	case NodeError:
		return WorkflowError
	case NodeSucceeded, NodeSkipped, NodeOmitted:
		return WorkflowSucceeded
	}
	return WorkflowRunning
}

// checkWorkflowHooks checks spec.hooks as lint does; their expressions and arguments see the
// workflow's variables.
func checkWorkflowHooks(idx map[string]*Template, hooks LifecycleHooks, f string, globals map[string]bool) error {
	sc := &refScope{globals: globals, inputs: map[string]bool{}, inputArts: map[string]bool{}}
	for _, name := range sortedHookNames(hooks) {
		if err := checkHook(idx, name, hooks[name], f+"."+name, sc); err != nil {
			return err
		}
	}
	return nil
}

// checkCallHooks checks a step's or task's hooks as lint does: they see what the step or task
// sees, and its own status and outputs (self is its template, nil for a templateRef).
func checkCallHooks(idx map[string]*Template, c call, f string, sc refScope, self *Template) error {
	if len(c.hooks) == 0 {
		return nil
	}
	vis := map[string]*Template{}
	src := sc.steps
	if c.kind == "tasks" {
		src = sc.tasks
	}
	for k, v := range src {
		vis[k] = v
	}
	vis[c.name] = self
	if c.kind == "tasks" {
		sc.tasks = vis
	} else {
		sc.steps = vis
	}
	for _, name := range sortedHookNames(c.hooks) {
		if err := checkHook(idx, name, c.hooks[name], f+".hooks."+name, &sc); err != nil {
			return err
		}
	}
	return nil
}

func sortedHookNames(hooks LifecycleHooks) []string {
	names := make([]string, 0, len(hooks))
	for n := range hooks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// checkHook checks one hook: its name, its template, its arguments (for the exit hook the
// workflow's stand in when it gives none), its expression and the references of both.
func checkHook(idx map[string]*Template, name string, h LifecycleHook, f string, sc *refScope) error {
	if !nameRe.MatchString(name) {
		return errdefs.Invalid(f, name, "is not a hook name: 1-128 letters, digits, '-' or '_' (\"exit\" is the exit handler)")
	}
	if name != ExitHook && strings.TrimSpace(h.Expression) == "" {
		return errdefs.Invalid(f+".expression", "", "is required: a hook other than exit runs when its expression is true")
	}
	hc := call{name: name, template: h.Template, ref: h.TemplateRef, args: h.Arguments}
	if name == ExitHook && len(h.Arguments.Parameters) == 0 && len(h.Arguments.Artifacts) == 0 {
		for g := range sc.globals { // the workflow's arguments are given
			v := AnyString("x")
			hc.args.Parameters = append(hc.args.Parameters, Parameter{Name: g, Value: &v})
		}
		slices.SortFunc(hc.args.Parameters, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })
	}
	if err := validateCall(idx, hc, f); err != nil {
		return err
	}
	if h.Expression != "" {
		field := f + ".expression"
		err := checkExprTag(fillTags(h.Expression), func(v string) error { return sc.check(field, v) })
		if err != nil {
			if errors.Is(err, errdefs.ErrInvalid) {
				return err
			}
			return errdefs.Invalid(field, h.Expression, err.Error())
		}
	}
	return refs(h, f, sc.check)
}
