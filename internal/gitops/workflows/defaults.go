package workflows

import (
	"encoding/json"
	"fmt"
	"maps"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// WorkflowDefaults is the workflowDefaults key of workflow-controller-configmap (Argo's): a
// Workflow's metadata and spec that every Workflow of the runtime starts from. The Workflow's
// own fields (and its WorkflowTemplate's) win over them.
type WorkflowDefaults struct {
	Labels      map[string]string
	Annotations map[string]string
	// spec is the defaults' spec as JSON, merged under each Workflow's.
	spec map[string]any
	// Deadline is spec.activeDeadlineSeconds (nil: none given).
	Deadline *int64
}

// decodeWorkflowDefaults reads a workflowDefaults value; field names the key in errors.
func decodeWorkflowDefaults(s, field string) (*WorkflowDefaults, error) {
	if len(s) > maxControllerConfigBytes {
		return nil, errdefs.Invalid(field, fmt.Sprintf("%d bytes", len(s)), fmt.Sprintf("must be at most %d bytes", maxControllerConfigBytes))
	}
	var d struct {
		Metadata struct {
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec WorkflowSpec `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(s), &d); err != nil {
		return nil, errdefs.Invalid(field, "", "is not a Workflow's metadata (labels, annotations) and spec: "+err.Error())
	}
	if d.Spec.WorkflowTemplateRef != nil {
		return nil, errdefs.Invalid(field+".spec.workflowTemplateRef", d.Spec.WorkflowTemplateRef.Name, "cannot be a default: a Workflow names its own template")
	}
	if d.Spec.Shutdown != "" || d.Spec.Suspend != nil {
		return nil, errdefs.Invalid(field+".spec", "", "cannot default shutdown or suspend: they are operations on one Workflow")
	}
	if v := d.Spec.ActiveDeadlineSeconds; v != nil && *v <= 0 {
		return nil, errdefs.Invalid(field+".spec.activeDeadlineSeconds", fmt.Sprint(*v), "must be more than 0")
	}
	if v := d.Spec.Parallelism; v != nil && *v < 0 {
		return nil, errdefs.Invalid(field+".spec.parallelism", fmt.Sprint(*v), "must be 0 or more")
	}
	for i, t := range d.Spec.Templates {
		if t.Name == "" {
			return nil, errdefs.Invalid(fmt.Sprintf("%s.spec.templates[%d].name", field, i), "", "is required: default templates are merged by name")
		}
	}
	b, err := json.Marshal(d.Spec)
	if err != nil {
		return nil, errdefs.Invalid(field+".spec", "", err.Error())
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, errdefs.Invalid(field+".spec", "", err.Error())
	}
	return &WorkflowDefaults{Labels: d.Metadata.Labels, Annotations: d.Metadata.Annotations, spec: spec, Deadline: d.Spec.ActiveDeadlineSeconds}, nil
}

// Apply returns spec over the defaults, as Argo's strategic merge joins them: objects merge
// field by field with spec's values winning; lists are spec's, except templates, arguments'
// parameters and artifacts, and volumes, which merge by name (spec's item of a name replaces
// the default's). spec itself is not changed.
func (d *WorkflowDefaults) Apply(spec *WorkflowSpec) (*WorkflowSpec, error) {
	if d == nil || len(d.spec) == 0 {
		return spec, nil
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var over map[string]any
	if err := json.Unmarshal(b, &over); err != nil {
		return nil, err
	}
	merged := mergeJSON(d.spec, over, "")
	b, err = json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	var out WorkflowSpec
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("workflowDefaults: %w", err)
	}
	return &out, nil
}

// ApplyMetadata adds the default labels and annotations the Workflow does not give itself.
func (d *WorkflowDefaults) ApplyMetadata(wf *Workflow) {
	if d == nil {
		return
	}
	merge := func(own, def map[string]string) map[string]string {
		if len(def) == 0 {
			return own
		}
		out := maps.Clone(def)
		maps.Copy(out, own)
		return out
	}
	wf.Labels = merge(wf.Labels, d.Labels)
	wf.Annotations = merge(wf.Annotations, d.Annotations)
}

// byName are the lists (by their path in a spec) merged by their items' names.
var byName = map[string]bool{".templates": true, ".arguments.parameters": true, ".arguments.artifacts": true, ".volumes": true}

func mergeJSON(base, over any, path string) any {
	switch o := over.(type) {
	case map[string]any:
		b, ok := base.(map[string]any)
		if !ok {
			return o
		}
		out := make(map[string]any, len(b)+len(o))
		maps.Copy(out, b)
		for k, v := range o {
			if bv, ok := b[k]; ok && path != ".hooks" { // a hook of the Workflow's replaces the default of its name
				out[k] = mergeJSON(bv, v, path+"."+k)
			} else {
				out[k] = v
			}
		}
		return out
	case []any:
		b, ok := base.([]any)
		if !ok || !byName[path] {
			return o
		}
		out := make([]any, 0, len(b)+len(o))
		index := map[string]int{}
		for _, item := range b {
			if n, ok := itemName(item); ok {
				index[n] = len(out)
			}
			out = append(out, item)
		}
		for _, item := range o {
			if n, ok := itemName(item); ok {
				if i, seen := index[n]; seen {
					out[i] = item
					continue
				}
			}
			out = append(out, item)
		}
		return out
	default:
		return over
	}
}

func itemName(item any) (string, bool) {
	m, ok := item.(map[string]any)
	if !ok {
		return "", false
	}
	n, ok := m["name"].(string)
	return n, ok && n != ""
}
