package workflows

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// msgRetryExprFalse is Argo's message when retryStrategy.expression stops the retries.
const msgRetryExprFalse = "retryStrategy.expression evaluated to false"

// compositeParam is the value of a steps or DAG template's output parameter: its
// valueFrom.parameter (a reference) or valueFrom.expression (expr-lang over the template's
// scope, as Argo's), else its valueFrom.default when that fails.
func compositeParam(p Parameter, sc scope) (string, error) {
	vf := p.ValueFrom
	var v string
	var err error
	if vf.Expression != "" {
		var out any
		if out, err = evalExpr(vf.Expression, sc); err == nil {
			v, err = exprString(out)
		}
		if err != nil {
			err = fmt.Errorf("outputs.parameters.%s.valueFrom.expression %q: %v", p.Name, vf.Expression, err)
		}
	} else {
		v, err = sc.expand("outputs.parameters."+p.Name, vf.Parameter, leafStrict)
	}
	if err != nil {
		if vf.Default != nil {
			return string(*vf.Default), nil
		}
		return "", err
	}
	return v, nil
}

// globalParams records the output parameters of n with a globalName as
// workflow.outputs.parameters.NAME, for the nodes after it.
func (o *operation) globalParams(n *NodeStatus) {
	if n.Outputs == nil {
		return
	}
	for _, p := range n.Outputs.Parameters {
		if p.GlobalName != "" && p.Value != nil {
			o.globals["workflow.outputs.parameters."+p.GlobalName] = string(*p.Value)
		}
	}
}

// outputGlobals are the workflow.outputs.* variables as they are now: a node that finished in
// this pass may have added to them after a steps or DAG template took its scope.
func (o *operation) outputGlobals() scope {
	sc := scope{}
	for k, v := range o.globals {
		if strings.HasPrefix(k, "workflow.outputs.") {
			sc[k] = v
		}
	}
	return sc
}

// finishedInOrder are the nodes that have outputs, in the order they finished (then by ID).
func (o *operation) finishedInOrder() []*NodeStatus {
	nodes := make([]*NodeStatus, 0, len(o.nodes))
	for _, n := range o.nodes {
		if n.Outputs != nil && n.Phase.Fulfilled() {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool {
		if !nodes[i].FinishedAt.Equal(&nodes[j].FinishedAt) {
			return nodes[i].FinishedAt.Before(&nodes[j].FinishedAt)
		}
		return nodes[i].ID < nodes[j].ID
	})
	return nodes
}

// loadGlobalParams records the global output parameters of the nodes of earlier passes (the
// node that finished last wins, as in Argo).
func (o *operation) loadGlobalParams() {
	for _, n := range o.finishedInOrder() {
		o.globalParams(n)
	}
}

// workflowOutputParams writes the global output parameters into status.outputs.parameters,
// by name.
func (o *operation) workflowOutputParams(st *WorkflowStatus) {
	vals := map[string]string{}
	for _, n := range o.finishedInOrder() {
		for _, p := range n.Outputs.Parameters {
			if p.GlobalName != "" && p.Value != nil {
				vals[p.GlobalName] = string(*p.Value)
			}
		}
	}
	if len(vals) == 0 {
		return
	}
	names := make([]string, 0, len(vals))
	for nm := range vals {
		names = append(names, nm)
	}
	sort.Strings(names)
	if st.Outputs == nil {
		st.Outputs = &Outputs{}
	}
	st.Outputs.Parameters = nil
	for _, nm := range names {
		v := AnyString(vals[nm])
		st.Outputs.Parameters = append(st.Outputs.Parameters, Parameter{Name: nm, Value: &v})
	}
}

// lastRetryVars are the variables of attempt i of retry node n: retries, and lastRetry.* of
// the attempt before it (Argo's defaults for the first: exit code and duration 0).
func lastRetryVars(nodes map[string]*NodeStatus, n *NodeStatus, i int) scope {
	sc := scope{"retries": strconv.Itoa(i), "lastRetry.exitCode": "0", "lastRetry.duration": "0",
		"lastRetry.status": "", "lastRetry.message": ""}
	tries := attempts(nodes, n)
	if i == 0 || i > len(tries) {
		return sc
	}
	prev := nodes[tries[i-1]]
	if prev == nil {
		return sc
	}
	sc["lastRetry.exitCode"] = "-1"
	if prev.Outputs != nil && prev.Outputs.ExitCode != nil {
		sc["lastRetry.exitCode"] = *prev.Outputs.ExitCode
	}
	sc["lastRetry.status"] = string(prev.Phase)
	if !prev.FinishedAt.IsZero() {
		sc["lastRetry.duration"] = fmt.Sprint(prev.FinishedAt.Sub(prev.StartedAt.Time).Seconds())
	}
	sc["lastRetry.message"] = prev.Message
	return sc
}

// retryExpr is a retryStrategy.expression's body: Argo evaluates it as an expression; the
// tag form "{{=…}}" some workflows use is read the same.
func retryExpr(e string) string {
	e = strings.TrimSpace(e)
	if strings.HasPrefix(e, "{{=") && strings.HasSuffix(e, "}}") {
		e = e[3 : len(e)-2]
	}
	return e
}

// evalRetryExpression decides whether a retry node retries once its last attempt failed:
// retryStrategy.expression over retries (the attempts so far, less one) and lastRetry.*.
func evalRetryExpression(e string, vars scope) (bool, error) {
	if n, err := strconv.Atoi(vars["retries"]); err == nil {
		vars["retries"] = strconv.Itoa(n - 1)
	}
	out, err := evalExpr(retryExpr(e), vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("gives %T, not a boolean", out)
	}
	return b, nil
}

// hideComposite takes a steps or DAG template's steps, tasks and outputs out of cp (a copy),
// for restoreComposite to put back after cp's own fields are substituted.
func hideComposite(cp *Template) ([][]WorkflowStep, []DAGTask, Outputs) {
	if cp.Steps == nil && cp.DAG == nil {
		return nil, nil, Outputs{}
	}
	steps, outs := cp.Steps, cp.Outputs
	cp.Steps, cp.Outputs = nil, Outputs{}
	var tasks []DAGTask
	if cp.DAG != nil {
		d := *cp.DAG
		tasks, d.Tasks = d.Tasks, nil
		cp.DAG = &d
	}
	return steps, tasks, outs
}

func restoreComposite(cp *Template, steps [][]WorkflowStep, tasks []DAGTask, outs Outputs) {
	if steps == nil && cp.DAG == nil {
		return
	}
	cp.Steps, cp.Outputs = steps, outs
	if cp.DAG != nil {
		cp.DAG.Tasks = tasks
	}
}

// globalName is a steps or DAG template's output's globalName with its references
// substituted ("" when they do not resolve).
func (sc scope) globalName(g string) string {
	if !strings.Contains(g, "{{") {
		return g
	}
	out, err := sc.expand("globalName", g, leafStrict)
	if err != nil || !nameRe.MatchString(out) {
		return ""
	}
	return out
}
