package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// ResumeOptions narrow and complete a Resume: which suspend node, and the values of its
// outputs.parameters that say `valueFrom: {supplied: {}}` — an approval gate's answer, what
// `argo node set --output-parameter` then `argo resume --node-field-selector` do together.
type ResumeOptions struct {
	// Node is a waiting suspend node's display name (or node name); empty: every one.
	Node string
	// Parameters are the values of the nodes' supplied output parameters, by name. A
	// parameter not given takes its valueFrom.default; one with neither is refused.
	Parameters map[string]string
	// Message is the resumed nodes' message ("Resumed" when empty).
	Message string
}

// effectiveSpec is the spec a Workflow runs: its own, merged over the WorkflowTemplate's it
// stored when it started (workflowTemplateRef).
func effectiveSpec(wf *Workflow) *WorkflowSpec {
	if wf.Spec.WorkflowTemplateRef != nil && wf.Status.StoredWorkflowTemplateSpec != nil {
		return mergeSpec(&wf.Spec, wf.Status.StoredWorkflowTemplateSpec)
	}
	return &wf.Spec
}

// Resume resumes a suspended Workflow: its suspend nodes that wait to be resumed succeed (with
// their output parameters' defaults) and spec.suspend is cleared (what `argo resume` does).
func (c *Ops) Resume(ctx context.Context, ns, name string) error {
	return c.ResumeWith(ctx, ns, name, ResumeOptions{})
}

// ResumeWith resumes the Workflow's waiting suspend nodes that o names, with the values o
// supplies for their outputs. Nothing is written unless every value checks: an unknown node or
// parameter, a value outside the parameter's enum, or a supplied parameter without a value or a
// default is refused, naming it.
func (c *Ops) ResumeWith(ctx context.Context, ns, name string, o ResumeOptions) error {
	res := c.dyn.Resource(WorkflowsResource).Namespace(ns)
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	data, _ := u.MarshalJSON()
	var wf Workflow
	if err := json.Unmarshal(data, &wf); err != nil {
		return decodeError(err, "Workflow")
	}
	var waiting, ids []string
	for id, n := range wf.Status.Nodes {
		if n.Type != NodeTypeSuspend || n.Phase != NodeRunning {
			continue
		}
		waiting = append(waiting, n.DisplayName)
		if o.Node == "" || n.DisplayName == o.Node || n.Name == o.Node {
			ids = append(ids, id)
		}
	}
	sort.Strings(waiting)
	sort.Strings(ids)
	if o.Node != "" && len(ids) == 0 {
		return errdefs.Invalid("node", o.Node, fmt.Sprintf("is not a suspend node waiting to be resumed (waiting: %s)", listOrNone(waiting)))
	}
	if len(ids) == 0 && len(o.Parameters) > 0 {
		return errdefs.Invalid("parameters", "", "are given, but no suspend node waits to be resumed")
	}
	now := metav1.NewTime(c.now())
	used := map[string]bool{}
	for _, id := range ids {
		n := wf.Status.Nodes[id]
		t := c.nodeTemplate(ctx, &wf, n)
		outs, err := suppliedOutputs(t, o.Parameters, used)
		if err != nil {
			return err
		}
		if len(outs) > 0 {
			n.Outputs = &Outputs{Parameters: outs}
		}
		n.Phase, n.FinishedAt, n.Message = NodeSucceeded, now, "Resumed"
		if o.Message != "" {
			n.Message = o.Message
		}
		wf.Status.Nodes[id] = n
	}
	for k := range o.Parameters {
		if !used[k] {
			return errdefs.Invalid("parameters."+k, o.Parameters[k], "is not an output parameter with valueFrom.supplied of the node(s) resumed")
		}
	}
	changed := len(ids) > 0
	if wf.Spec.Suspend != nil && *wf.Spec.Suspend {
		unstructured.RemoveNestedField(u.Object, "spec", "suspend")
		changed = true
	}
	if !changed {
		return nil
	}
	b, _ := json.Marshal(wf.Status)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	u.Object["status"] = m
	_, err = res.Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// addSupplied lists, on each suspend node of d waiting to be resumed, the output parameters
// its template says are supplied when it is resumed (an approval gate's questions). A node
// whose template cannot be found (deleted since) lists none.
func (c *Controller) addSupplied(ctx context.Context, wf *Workflow, d *appproxyv1.WorkflowDetail) {
	for i := range d.Nodes {
		wn := &d.Nodes[i]
		n, ok := wf.Status.Nodes[wn.ID]
		if !ok || n.Type != NodeTypeSuspend || n.Phase != NodeRunning {
			continue
		}
		t := c.nodeTemplate(ctx, wf, n)
		if t == nil {
			continue
		}
		for _, p := range t.Outputs.Parameters {
			if p.ValueFrom == nil || p.ValueFrom.Supplied == nil {
				continue
			}
			sp := appproxyv1.WorkflowSuppliedParameter{Name: p.Name, Enum: []string{}, Description: p.Description}
			if p.ValueFrom.Default != nil {
				v := string(*p.ValueFrom.Default)
				sp.Default = &v
			}
			for _, e := range p.Enum {
				sp.Enum = append(sp.Enum, string(e))
			}
			wn.Supplied = append(wn.Supplied, sp)
		}
	}
}

// suppliedOutputs are a resumed suspend template's output parameters: each valueFrom.supplied
// or valueFrom.default one, with the value given (marked used) or its default. A nil template
// (not found) takes the values given as they are.
func suppliedOutputs(t *Template, given map[string]string, used map[string]bool) ([]Parameter, error) {
	var out []Parameter
	if t == nil {
		for _, k := range slices.Sorted(maps.Keys(given)) {
			v := AnyString(given[k])
			out = append(out, Parameter{Name: k, Value: &v})
			used[k] = true
		}
		return out, nil
	}
	for _, p := range t.Outputs.Parameters {
		vf := p.ValueFrom
		if vf == nil || vf.Supplied == nil && vf.Default == nil {
			continue
		}
		var v AnyString
		switch g, ok := given[p.Name]; {
		case ok && vf.Supplied != nil:
			v = AnyString(g)
			used[p.Name] = true
		case vf.Default != nil:
			v = *vf.Default
		default:
			return nil, errdefs.Invalid("parameters."+p.Name, "", fmt.Sprintf("is required: template %s's output parameter %s is supplied when resumed and has no default", t.Name, p.Name))
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
			return nil, errdefs.Invalid("parameters."+p.Name, string(v), fmt.Sprintf("is not one of %v", p.Enum))
		}
		out = append(out, Parameter{Name: p.Name, Value: &v, GlobalName: p.GlobalName})
	}
	return out, nil
}

// nodeTemplate is the template a node ran: of the WorkflowTemplate its templateRef names, else
// of the Workflow's spec; nil when it cannot be found (a template deleted since).
func (c *Ops) nodeTemplate(ctx context.Context, wf *Workflow, n NodeStatus) *Template {
	spec, name := effectiveSpec(wf), n.TemplateName
	if r := n.TemplateRef; r != nil {
		s, err := c.specOf(ctx, wf.Namespace, r.Name, r.ClusterScope)
		if err != nil {
			return nil
		}
		spec, name = s, r.Template
	}
	for i := range spec.Templates {
		if spec.Templates[i].Name == name {
			return &spec.Templates[i]
		}
	}
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
