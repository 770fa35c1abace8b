package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// nameRe is what Argo accepts as a template, step, task or parameter name.
var nameRe = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9_]{0,127}$`)

// ValidateSpec checks a Workflow's spec as `argo lint` does: the entrypoint and onExit name
// templates, each template has exactly one kind, steps and tasks call templates that exist
// with the parameters they require, DAGs have no cycle and valid depends expressions, when
// expressions parse, and every {{reference}} resolves where it is used. What is recognised but
// not built yet is refused by name. The error is a *errdefs.FieldError naming the field (its
// path under path).
func ValidateSpec(s *WorkflowSpec, path string) error { return validateSpec(s, path, true) }

func validateSpec(s *WorkflowSpec, path string, needEntry bool) error {
	if err := checkUnsupportedSpec(s, path); err != nil {
		return err
	}
	idx := map[string]*Template{}
	for i := range s.Templates {
		t := &s.Templates[i]
		f := fmt.Sprintf("%s.templates[%d].name", path, i)
		if !nameRe.MatchString(t.Name) {
			return errdefs.Invalid(f, t.Name, "must be 1-128 letters, digits, '-' or '_', starting with a letter or digit")
		}
		if idx[t.Name] != nil {
			return errdefs.Invalid(f, t.Name, "is the name of another template")
		}
		idx[t.Name] = t
	}
	switch {
	case s.Entrypoint == "" && needEntry:
		return errdefs.Invalid(path+".entrypoint", "", "is required: the name of the template to run")
	case s.Entrypoint != "" && idx[s.Entrypoint] == nil:
		return errdefs.Invalid(path+".entrypoint", s.Entrypoint, "is not a template of this workflow"+known(idx))
	case s.OnExit != "" && idx[s.OnExit] == nil:
		return errdefs.Invalid(path+".onExit", s.OnExit, "is not a template of this workflow"+known(idx))
	case s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds < 0:
		return errdefs.Invalid(path+".activeDeadlineSeconds", strconv.FormatInt(*s.ActiveDeadlineSeconds, 10), "must be 0 or more")
	case s.Parallelism != nil && *s.Parallelism < 0:
		return errdefs.Invalid(path+".parallelism", strconv.FormatInt(*s.Parallelism, 10), "must be 0 or more")
	case s.Shutdown != "" && s.Shutdown != "Terminate" && s.Shutdown != "Stop":
		return errdefs.Invalid(path+".shutdown", s.Shutdown, "must be Terminate or Stop")
	}
	globals := map[string]bool{}
	if err := checkParams(s.Arguments.Parameters, path+".arguments.parameters", globals); err != nil {
		return err
	}
	if err := checkWorkflowHooks(idx, s.Hooks, path+".hooks", globals); err != nil {
		return err
	}
	globalArts := map[string]bool{}
	if err := checkArtifacts(s.Arguments.Artifacts, path+".arguments.artifacts", artsArguments, nil, globalArts); err != nil {
		return err
	}
	if err := checkArtifactSpec(s, path); err != nil {
		return err
	}
	vols, err := checkVolumes(s, path)
	if err != nil {
		return err
	}
	if !needEntry {
		vols = nil // a WorkflowTemplate's templates may mount the calling Workflow's volumes
	}
	if err := checkSync(s.Synchronization, path+".synchronization"); err != nil {
		return err
	}
	for i := range s.Templates {
		if err := validateTemplate(idx, &s.Templates[i], fmt.Sprintf("%s.templates[%d]", path, i), globals, vols); err != nil {
			return err
		}
	}
	return nil
}

func known(idx map[string]*Template) string {
	names := make([]string, 0, len(idx))
	for n := range idx {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return " (templates: " + strings.Join(names, ", ") + ")"
}

func notYet(field, what string) error {
	return errdefs.Invalid(field, "", "is not supported yet ("+what+" are not built in Freshet's workflow engine; see docs/runtimes.md)")
}

func checkUnsupportedSpec(s *WorkflowSpec, path string) error {
	for _, u := range []struct {
		name string
		v    json.RawMessage
	}{{"metrics", s.Metrics}, {"podSpecPatch", s.PodSpecPatch},
		{"executor", s.Executor}, {"memoize", s.Memoize}} {
		if isSet(u.v) {
			return notYet(path+"."+u.name, u.name)
		}
	}
	return validateGC(s, path)
}

func isSet(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// checkParams checks a parameter list's names and records them in names.
func checkParams(ps []Parameter, path string, names map[string]bool) error {
	for i, p := range ps {
		f := fmt.Sprintf("%s[%d]", path, i)
		if !nameRe.MatchString(p.Name) {
			return errdefs.Invalid(f+".name", p.Name, "must be 1-128 letters, digits, '-' or '_'")
		}
		if names[p.Name] {
			return errdefs.Invalid(f+".name", p.Name, "is given twice")
		}
		names[p.Name] = true
		if len(p.Enum) > 0 && p.Value != nil && !strings.Contains(string(*p.Value), "{{") && !slices.Contains(p.Enum, *p.Value) {
			return errdefs.Invalid(f+".value", string(*p.Value), "is not one of the parameter's enum values")
		}
		if p.GlobalName != "" && !strings.Contains(p.GlobalName, "{{") && !nameRe.MatchString(p.GlobalName) {
			return errdefs.Invalid(f+".globalName", p.GlobalName, "must be 1-128 letters, digits, '-' or '_'")
		}
		if v := p.ValueFrom; v != nil {
			if (v.JSONPath != "" || v.JQFilter != "") && !strings.HasSuffix(path, ".outputs.parameters") {
				return errdefs.Invalid(f+".valueFrom", v.JSONPath+v.JQFilter, "jsonPath and jqFilter are for the output parameters of resource templates only")
			}
			for _, u := range []struct{ name, v string }{{"event", v.Event}, {"configMapKeyRef", string(v.ConfigMapKeyRef)}} {
				if u.v != "" && u.v != "null" {
					return notYet(f+".valueFrom."+u.name, "parameters valueFrom."+u.name)
				}
			}
		}
	}
	return nil
}

func validateTemplate(idx map[string]*Template, t *Template, p string, globals, vols map[string]bool) error {
	for _, u := range []struct {
		name string
		v    json.RawMessage
	}{{"data", t.Data}, {"http", t.HTTP}, {"plugin", t.Plugin}, {"containerSet", t.ContainerSet},
		{"memoize", t.Memoize}, {"sidecars", t.Sidecars},
		{"initContainers", t.InitContainers}, {"daemon", t.Daemon}, {"archiveLocation", t.ArchiveLocation},
		{"metrics", t.Metrics}, {"podSpecPatch", t.PodSpecPatch}} {
		if isSet(u.v) {
			return notYet(p+"."+u.name, "template "+u.name)
		}
	}
	if isSet(t.Hooks) {
		return errdefs.Invalid(p+".hooks", "", "is not a field of a template: hooks go on a step, a DAG task or the workflow's spec")
	}
	var kinds []string
	for name, set := range map[string]bool{"container": t.Container != nil, "script": t.Script != nil, "resource": t.Resource != nil,
		"suspend": t.Suspend != nil, "steps": t.Steps != nil, "dag": t.DAG != nil} {
		if set {
			kinds = append(kinds, name)
		}
	}
	slices.Sort(kinds)
	switch len(kinds) {
	case 0:
		return errdefs.Invalid(p, t.Name, "names no template kind: give one of container, script, resource, suspend, steps, dag")
	case 1:
	default:
		return errdefs.Invalid(p, strings.Join(kinds, ", "), "must be exactly one template kind")
	}
	var mounted *corev1.Container
	kind := "container"
	switch {
	case t.Container != nil:
		mounted = t.Container
	case t.Script != nil:
		mounted, kind = &t.Script.Container, "script"
	}
	if err := checkMounts(t, mounted, p, kind, vols); err != nil {
		return err
	}
	if err := checkSync(t.Synchronization, p+".synchronization"); err != nil {
		return err
	}
	inputs := map[string]bool{}
	if err := checkParams(t.Inputs.Parameters, p+".inputs.parameters", inputs); err != nil {
		return err
	}
	inputArts := map[string]bool{}
	if err := checkArtifacts(t.Inputs.Artifacts, p+".inputs.artifacts", artsInputs, t, inputArts); err != nil {
		return err
	}
	if err := checkArtifacts(t.Outputs.Artifacts, p+".outputs.artifacts", artsOutputs, t, map[string]bool{}); err != nil {
		return err
	}
	if err := checkParams(t.Outputs.Parameters, p+".outputs.parameters", map[string]bool{}); err != nil {
		return err
	}
	leaf := t.Container != nil || t.Script != nil || t.Resource != nil || t.Suspend != nil
	for i, o := range t.Outputs.Parameters {
		f := fmt.Sprintf("%s.outputs.parameters[%d]", p, i)
		v := o.ValueFrom
		switch {
		case v == nil:
			return errdefs.Invalid(f+".valueFrom", "", "is required for an output parameter")
		case v.JSONPath != "" || v.JQFilter != "":
			if err := checkResourceOutput(t, f, v); err != nil {
				return err
			}
		case v.Expression != "" && leaf:
			return errdefs.Invalid(f+".valueFrom.expression", v.Expression, "is for steps and dag templates only")
		case v.Expression != "" && v.Parameter != "":
			return errdefs.Invalid(f+".valueFrom.expression", v.Expression, "cannot be given with valueFrom.parameter")
		case v.Expression != "":
		case v.Path != "" && (t.Container != nil || t.Script != nil):
			if !strings.HasPrefix(v.Path, "/") {
				return errdefs.Invalid(f+".valueFrom.path", v.Path, "must be an absolute path in the container")
			}
		case v.Path != "":
			return errdefs.Invalid(f+".valueFrom.path", v.Path, "is for container and script templates only")
		case v.Supplied != nil && t.Suspend != nil:
		case v.Supplied != nil:
			return errdefs.Invalid(f+".valueFrom.supplied", "", "is for suspend templates only")
		case v.Parameter != "" && !leaf:
		case v.Parameter != "":
			return errdefs.Invalid(f+".valueFrom.parameter", v.Parameter, "is for steps and dag templates only")
		default:
			return errdefs.Invalid(f+".valueFrom", "", "must give path (container, script), jsonPath or jqFilter (resource), parameter or expression (steps, dag) or supplied (suspend)")
		}
	}
	if err := checkRetry(t.RetryStrategy, p+".retryStrategy"); err != nil {
		return err
	}
	if d := t.ActiveDeadlineSeconds; d != nil && !(d.Type == intstr.String && strings.Contains(d.StrVal, "{{")) {
		if n, err := intOf(d); err != nil || n < 0 {
			return errdefs.Invalid(p+".activeDeadlineSeconds", d.String(), "must be a number of seconds, 0 or more")
		}
	}
	if t.Timeout != "" && !strings.Contains(t.Timeout, "{{") {
		if t.Container == nil && t.Script == nil && t.Resource == nil {
			return errdefs.Invalid(p+".timeout", t.Timeout, "applies to container, script and resource templates only (use activeDeadlineSeconds on the workflow for steps and DAGs)")
		}
		if _, err := parseDuration(&intstr.IntOrString{Type: intstr.String, StrVal: t.Timeout}); err != nil {
			return errdefs.Invalid(p+".timeout", t.Timeout, err.Error())
		}
	}
	if t.Parallelism != nil && *t.Parallelism < 0 {
		return errdefs.Invalid(p+".parallelism", strconv.FormatInt(*t.Parallelism, 10), "must be 0 or more")
	}
	sc := &refScope{globals: globals, inputs: inputs, inputArts: inputArts}
	switch {
	case t.Container != nil:
		if t.Container.Image == "" {
			return errdefs.Invalid(p+".container.image", "", "is required")
		}
	case t.Script != nil:
		if t.Script.Image == "" {
			return errdefs.Invalid(p+".script.image", "", "is required")
		}
		if len(t.Script.Command) == 0 {
			return errdefs.Invalid(p+".script.command", "", "is required (the interpreter, e.g. [sh] or [python])")
		}
		if t.Script.Source == "" {
			return errdefs.Invalid(p+".script.source", "", "is required")
		}
	case t.Resource != nil:
		if err := checkResource(t, p+".resource"); err != nil {
			return err
		}
	case t.Suspend != nil:
		if d := t.Suspend.Duration; d != nil && !(d.Type == intstr.String && strings.Contains(d.StrVal, "{{")) {
			if _, err := parseDuration(d); err != nil {
				return errdefs.Invalid(p+".suspend.duration", d.String(), err.Error())
			}
		}
	case t.Steps != nil:
		return validateSteps(idx, t, p, sc)
	case t.DAG != nil:
		return validateDAG(idx, t, p, sc)
	}
	return refs(t, p, sc.check)
}

func checkRetry(r *RetryStrategy, f string) error {
	if r == nil {
		return nil
	}
	if r.Expression != "" {
		err := checkExprTag(fillTags(retryExpr(r.Expression)), func(name string) error {
			if name == "retries" || slices.Contains([]string{"exitCode", "status", "duration", "message"}, strings.TrimPrefix(name, "lastRetry.")) {
				return nil
			}
			return fmt.Errorf("names %s: a retry expression sees retries and lastRetry.exitCode, lastRetry.status, lastRetry.duration, lastRetry.message", name)
		})
		if err != nil {
			return errdefs.Invalid(f+".expression", r.Expression, err.Error())
		}
	}
	if r.Limit != nil && !(r.Limit.Type == intstr.String && strings.Contains(r.Limit.StrVal, "{{")) {
		if n, err := intOf(r.Limit); err != nil || n < 0 {
			return errdefs.Invalid(f+".limit", r.Limit.String(), "must be a number, 0 or more")
		}
	}
	switch r.RetryPolicy {
	case "", RetryAlways, RetryOnFailure, RetryOnError, RetryOnTransientError:
	default:
		return errdefs.Invalid(f+".retryPolicy", r.RetryPolicy, "must be Always, OnFailure, OnError or OnTransientError")
	}
	if b := r.Backoff; b != nil {
		for name, d := range map[string]*intstr.IntOrString{"duration": b.Duration, "maxDuration": b.MaxDuration} {
			if d != nil {
				if _, err := parseDuration(d); err != nil {
					return errdefs.Invalid(f+".backoff."+name, d.String(), err.Error())
				}
			}
		}
		if b.Factor != nil {
			if n, err := intOf(b.Factor); err != nil || n < 1 {
				return errdefs.Invalid(f+".backoff.factor", b.Factor.String(), "must be a whole number, 1 or more")
			}
		}
	}
	return nil
}

// call is a step or a task: what it runs and with what.
type call struct {
	name, template string
	ref            *TemplateRef
	args           Arguments
	items          []Item
	param          string
	seq            *Sequence
	when           string
	onExit         string
	hooks          LifecycleHooks
	inline         json.RawMessage
	kind           string // "steps" or "tasks": how its node is named in variables
}

func (c call) hasItems() bool { return c.items != nil || c.param != "" || c.seq != nil }

func stepCall(s WorkflowStep) call {
	return call{name: s.Name, template: s.Template, ref: s.TemplateRef, args: s.Arguments, items: s.WithItems,
		param: s.WithParam, seq: s.WithSequence, when: s.When, onExit: s.OnExit, inline: s.Inline, hooks: s.Hooks, kind: "steps"}
}

func taskCall(t DAGTask) call {
	return call{name: t.Name, template: t.Template, ref: t.TemplateRef, args: t.Arguments, items: t.WithItems,
		param: t.WithParam, seq: t.WithSequence, when: t.When, onExit: t.OnExit, inline: t.Inline, hooks: t.Hooks, kind: "tasks"}
}

func validateCall(idx map[string]*Template, c call, f string) error {
	if !nameRe.MatchString(c.name) {
		return errdefs.Invalid(f+".name", c.name, "must be 1-128 letters, digits, '-' or '_', starting with a letter or digit")
	}
	switch {
	case isSet(c.inline):
		return notYet(f+".inline", "inline templates")
	case c.onExit != "" && idx[c.onExit] == nil:
		return errdefs.Invalid(f+".onExit", c.onExit, "is not a template of this workflow"+known(idx))
	case c.template != "" && c.ref != nil:
		return errdefs.Invalid(f, c.name, "must give template or templateRef, not both")
	case c.template == "" && c.ref == nil:
		return errdefs.Invalid(f+".template", "", "is required (or templateRef)")
	case c.ref != nil && c.ref.Name == "":
		return errdefs.Invalid(f+".templateRef.name", "", "is required")
	case c.ref != nil && c.ref.Template == "":
		return errdefs.Invalid(f+".templateRef.template", "", "is required")
	case c.template != "" && idx[c.template] == nil:
		return errdefs.Invalid(f+".template", c.template, "is not a template of this workflow"+known(idx))
	}
	givenArts := map[string]bool{}
	if err := checkArtifacts(c.args.Artifacts, f+".arguments.artifacts", artsArguments, nil, givenArts); err != nil {
		return err
	}
	if t := idx[c.template]; t != nil {
		for _, in := range t.Inputs.Artifacts {
			if !in.Optional && !in.HasLocation() && !givenArts[in.Name] {
				return errdefs.Invalid(f+".arguments.artifacts", in.Name, fmt.Sprintf("is an input artifact of template %q without a location: it must be given (or be optional)", t.Name))
			}
		}
	}
	given := map[string]bool{}
	if err := checkParams(c.args.Parameters, f+".arguments.parameters", given); err != nil {
		return err
	}
	for i, a := range c.args.Parameters {
		if a.Value == nil && (a.ValueFrom == nil || a.ValueFrom.Supplied == nil) {
			return errdefs.Invalid(fmt.Sprintf("%s.arguments.parameters[%d].value", f, i), "", "is required")
		}
	}
	if t := idx[c.template]; t != nil {
		for _, in := range t.Inputs.Parameters {
			if in.Value == nil && in.Default == nil && !given[in.Name] {
				return errdefs.Invalid(f+".arguments.parameters", in.Name, fmt.Sprintf("is an input parameter of template %q without a default: it must be given", t.Name))
			}
		}
	}
	n := 0
	for _, set := range []bool{c.items != nil, c.param != "", c.seq != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errdefs.Invalid(f, c.name, "must give at most one of withItems, withParam, withSequence")
	}
	if s := c.seq; s != nil {
		if (s.Count != nil) == (s.End != nil) {
			return errdefs.Invalid(f+".withSequence", "", "must give count or end (not both)")
		}
	}
	if c.when != "" {
		if err := checkWhen(c.when); err != nil {
			return errdefs.Invalid(f+".when", c.when, err.Error())
		}
	}
	return nil
}

func validateSteps(idx map[string]*Template, t *Template, p string, sc *refScope) error {
	seen := map[string]*Template{}
	visible := map[string]*Template{}
	for g, group := range t.Steps {
		if len(group) == 0 {
			return errdefs.Invalid(fmt.Sprintf("%s.steps[%d]", p, g), "", "is an empty step group")
		}
		for k, s := range group {
			f := fmt.Sprintf("%s.steps[%d][%d]", p, g, k)
			c := stepCall(s)
			if err := validateCall(idx, c, f); err != nil {
				return err
			}
			if _, dup := seen[s.Name]; dup {
				return errdefs.Invalid(f+".name", s.Name, "is the name of another step of this template")
			}
			seen[s.Name] = idx[s.Template]
			ssc := *sc
			ssc.steps, ssc.item = visible, c.hasItems()
			s.Hooks = nil // checked with the step itself visible
			if err := refs(s, f, ssc.check); err != nil {
				return err
			}
			if err := checkCallHooks(idx, c, f, ssc, idx[s.Template]); err != nil {
				return err
			}
		}
		for _, s := range group {
			visible[s.Name] = idx[s.Template]
		}
	}
	osc := *sc
	osc.steps = seen
	if err := refs(t.Outputs, p+".outputs", osc.check); err != nil {
		return err
	}
	if err := osc.checkOutputExprs(t, p); err != nil {
		return err
	}
	return refs(t.Inputs, p+".inputs", sc.check)
}

func validateDAG(idx map[string]*Template, t *Template, p string, sc *refScope) error {
	tasks := map[string]*DAGTask{}
	for i := range t.DAG.Tasks {
		tk := &t.DAG.Tasks[i]
		f := fmt.Sprintf("%s.dag.tasks[%d]", p, i)
		if err := validateCall(idx, taskCall(*tk), f); err != nil {
			return err
		}
		if tasks[tk.Name] != nil {
			return errdefs.Invalid(f+".name", tk.Name, "is the name of another task of this DAG")
		}
		tasks[tk.Name] = tk
	}
	deps := map[string][]string{}
	for i, tk := range t.DAG.Tasks {
		f := fmt.Sprintf("%s.dag.tasks[%d]", p, i)
		if tk.Depends != "" && len(tk.Dependencies) > 0 {
			return errdefs.Invalid(f+".depends", tk.Depends, "cannot be given with dependencies")
		}
		names := tk.Dependencies
		field := f + ".dependencies"
		if tk.Depends != "" {
			e, err := parseDepends(tk.Depends)
			if err != nil {
				return errdefs.Invalid(f+".depends", tk.Depends, err.Error())
			}
			names, field = dependsOf(e), f+".depends"
		}
		for _, d := range names {
			if tasks[d] == nil {
				return errdefs.Invalid(field, d, "is not a task of this DAG")
			}
			if d == tk.Name {
				return errdefs.Invalid(field, d, "is the task itself")
			}
		}
		deps[tk.Name] = names
	}
	if cyc := findCycle(t.DAG.Tasks, deps); cyc != nil {
		return errdefs.Invalid(p+".dag.tasks", strings.Join(cyc, " -> "), "is a dependency cycle")
	}
	if tg := t.DAG.Target; tg != "" && !strings.Contains(tg, "{{") {
		for _, n := range strings.Fields(tg) {
			if tasks[n] == nil {
				return errdefs.Invalid(p+".dag.target", n, "is not a task of this DAG")
			}
		}
	}
	for i, tk := range t.DAG.Tasks {
		anc := map[string]*Template{}
		var walk func(string)
		walk = func(n string) {
			for _, d := range deps[n] {
				if _, ok := anc[d]; !ok {
					anc[d] = idx[tasks[d].Template]
					walk(d)
				}
			}
		}
		walk(tk.Name)
		tsc := *sc
		tsc.tasks, tsc.item = anc, taskCall(tk).hasItems()
		c := taskCall(tk)
		tk.Hooks = nil // checked with the task itself visible
		if err := refs(tk, fmt.Sprintf("%s.dag.tasks[%d]", p, i), tsc.check); err != nil {
			return err
		}
		if err := checkCallHooks(idx, c, fmt.Sprintf("%s.dag.tasks[%d]", p, i), tsc, idx[tk.Template]); err != nil {
			return err
		}
	}
	all := map[string]*Template{}
	for n, tk := range tasks {
		all[n] = idx[tk.Template]
	}
	osc := *sc
	osc.tasks = all
	if err := refs(t.Outputs, p+".outputs", osc.check); err != nil {
		return err
	}
	if err := osc.checkOutputExprs(t, p); err != nil {
		return err
	}
	return refs(t.Inputs, p+".inputs", sc.check)
}

// findCycle returns a dependency cycle, first task repeated at the end, or nil.
func findCycle(tasks []DAGTask, deps map[string][]string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(string) []string
	visit = func(n string) []string {
		color[n] = grey
		stack = append(stack, n)
		for _, d := range deps[n] {
			switch color[d] {
			case grey:
				i := slices.Index(stack, d)
				return append(append([]string(nil), stack[i:]...), d)
			case white:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return nil
	}
	for _, t := range tasks {
		if color[t.Name] == white {
			if c := visit(t.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// refScope is what a {{reference}} may name at one place of a template.
type refScope struct {
	globals, inputs map[string]bool
	inputArts       map[string]bool
	steps, tasks    map[string]*Template // visible steps/tasks and their local template (nil: templateRef)
	item            bool
}

var workflowVars = map[string]bool{"workflow.name": true, "workflow.namespace": true, "workflow.uid": true,
	"workflow.serviceAccountName": true, "workflow.creationTimestamp": true, "workflow.status": true,
	"workflow.failures": true, "workflow.duration": true, "workflow.parameters": true, "workflow.mainEntrypoint": true,
	"pod.name": true, "node.name": true, "retries": true, "inputs.parameters": true,
	"workflow.parameters.json": true, "workflow.scheduledTime": true, "workflow.priority": true}

func (sc *refScope) check(path, name string) error {
	bad := func(why string) error { return errdefs.Invalid(path, "{{"+name+"}}", why) }
	switch {
	case strings.HasPrefix(name, "="):
		if err := checkExprTag(name[1:], func(v string) error { return sc.check(path, v) }); err != nil {
			if errors.Is(err, errdefs.ErrInvalid) {
				return err
			}
			return bad(err.Error())
		}
		return nil
	case workflowVars[name], strings.HasPrefix(name, "workflow.labels."), strings.HasPrefix(name, "workflow.annotations."),
		strings.HasPrefix(name, "workflow.outputs.parameters."):
		return nil
	case strings.HasPrefix(name, "lastRetry."):
		switch strings.TrimPrefix(name, "lastRetry.") {
		case "exitCode", "status", "duration", "message":
			return nil
		}
		return bad("names no field of lastRetry (exitCode, status, duration, message)")
	case strings.HasPrefix(name, "workflow.parameters."):
		if !sc.globals[strings.TrimPrefix(name, "workflow.parameters.")] {
			return bad("names a parameter that spec.arguments.parameters does not declare")
		}
		return nil
	case strings.HasPrefix(name, "inputs.artifacts."):
		a := strings.TrimPrefix(name, "inputs.artifacts.")
		a = strings.TrimSuffix(a, ".path")
		if !sc.inputArts[a] {
			return bad("names an artifact that the template's inputs.artifacts do not declare")
		}
		return nil
	case strings.HasPrefix(name, "workflow.outputs.artifacts."):
		return nil
	case strings.HasPrefix(name, "inputs.parameters."):
		if !sc.inputs[strings.TrimPrefix(name, "inputs.parameters.")] {
			return bad("names a parameter that the template's inputs.parameters do not declare")
		}
		return nil
	case name == "item" || strings.HasPrefix(name, "item."):
		if !sc.item {
			return bad("is used where there is no withItems, withParam or withSequence")
		}
		return nil
	case strings.HasPrefix(name, "steps."):
		return checkNodeRef(name, "steps.", sc.steps, bad, "a step of an earlier step group of this template")
	case strings.HasPrefix(name, "tasks."):
		return checkNodeRef(name, "tasks.", sc.tasks, bad, "a task this task depends on")
	}
	return bad("does not resolve to a variable Argo Workflows defines")
}

func checkNodeRef(name, prefix string, visible map[string]*Template, bad func(string) error, what string) error {
	rest := strings.TrimPrefix(name, prefix)
	n, field, _ := strings.Cut(rest, ".")
	t, ok := visible[n]
	if !ok {
		return bad("names " + strconv.Quote(n) + ", which is not " + what)
	}
	switch {
	case field == "outputs.result":
		if t != nil && t.Script == nil && t.Container == nil {
			return bad("names the result of a template that is not a script or container")
		}
	case strings.HasPrefix(field, "outputs.parameters."):
		p := strings.TrimPrefix(field, "outputs.parameters.")
		if t != nil && !slices.ContainsFunc(t.Outputs.Parameters, func(o Parameter) bool { return o.Name == p }) {
			return bad("names an output parameter that template " + strconv.Quote(t.Name) + " does not declare")
		}
	case strings.HasPrefix(field, "outputs.artifacts."):
		a := strings.TrimPrefix(field, "outputs.artifacts.")
		if t != nil && !slices.ContainsFunc(t.Outputs.Artifacts, func(o Artifact) bool { return o.Name == a }) {
			return bad("names an output artifact that template " + strconv.Quote(t.Name) + " does not declare")
		}
	case field == "outputs.parameters", field == "status", field == "id", field == "exitCode",
		field == "startedAt", field == "finishedAt", field == "ip":
	default:
		return bad("names no field of a " + strings.TrimSuffix(prefix, ".") + " node (outputs.result, outputs.parameters.NAME, outputs.artifacts.NAME, status, id, exitCode, startedAt, finishedAt)")
	}
	return nil
}

// intOf reads an int-or-string as a whole number.
func intOf(v *intstr.IntOrString) (int64, error) {
	if v.Type == intstr.Int {
		return int64(v.IntVal), nil
	}
	return strconv.ParseInt(strings.TrimSpace(v.StrVal), 10, 64)
}

// parseDuration reads a duration: a number is seconds; otherwise a Go duration with a unit
// ("30s", "5m", "1h"), up to a year.
func parseDuration(v *intstr.IntOrString) (time.Duration, error) {
	const max = 365 * 24 * time.Hour
	if n, err := intOf(v); err == nil {
		if n < 0 || n > int64(max/time.Second) {
			return 0, fmt.Errorf("must be 0 to a year in seconds")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v.StrVal)
	if err != nil || d < 0 || d > max {
		return 0, fmt.Errorf("is not a duration: seconds, or a number with a unit (30s, 5m, 1h), up to a year")
	}
	return d, nil
}

// checkOutputExprs checks the valueFrom.expression of a steps or DAG template's output
// parameters: each parses and names steps or tasks of the template.
func (sc *refScope) checkOutputExprs(t *Template, p string) error {
	for i, o := range t.Outputs.Parameters {
		if o.ValueFrom == nil || o.ValueFrom.Expression == "" {
			continue
		}
		f := fmt.Sprintf("%s.outputs.parameters[%d].valueFrom.expression", p, i)
		if err := checkExprTag(o.ValueFrom.Expression, func(v string) error { return sc.check(f, v) }); err != nil {
			if errors.Is(err, errdefs.ErrInvalid) {
				return err
			}
			return errdefs.Invalid(f, o.ValueFrom.Expression, err.Error())
		}
	}
	return nil
}
