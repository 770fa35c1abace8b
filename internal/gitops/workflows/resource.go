package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
)

// Resource templates run in the controller, not in a pod as Argo's kubectl does: the action
// (get, create, apply, delete, patch, replace) is one API call made as the workflow's service
// account (impersonated), and a successCondition or failureCondition is checked by reading the
// object again every DefaultResourceCheckInterval (Argo's RESOURCE_STATE_CHECK_INTERVAL) until
// one holds or the template's deadline passes. A manifest given by manifestFrom is read by the
// controller from the node's input artifact, where Argo's init container stages it as a file.

// DefaultResourceCheckInterval is how often a resource node reads its object again while
// neither its success nor its failure condition holds (Argo's default).
const DefaultResourceCheckInterval = 5 * time.Second

// NodeResource is the object a resource node acted on, which it reads again for its conditions
// and outputs. Freshet's: Argo's executor keeps it in its pod.
type NodeResource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r *NodeResource) String() string { return lower(r.Kind) + "/" + r.Name }

// The merge strategies of a patch (kubectl patch --type).
var mergeStrategies = map[string]types.PatchType{
	"strategic": types.StrategicMergePatchType,
	"merge":     types.MergePatchType,
	"json":      types.JSONPatchType,
}

// resourceAction is what a resource node asks of the cluster.
type resourceAction struct {
	action string
	// obj is the manifest's object: what create, apply and replace send, the target of get,
	// delete and a strategic or merge patch. Nil when flags name the target.
	obj *unstructured.Unstructured
	// The flags' target, in namespace: a resource type (configmaps, configmap, jobs.batch)
	// and a name, or (to delete) a label selector.
	typ, name, selector, namespace string
	patchType                      types.PatchType
	patch                          []byte
}

// flagsTarget reads the flags Freshet maps: the target of get, delete or patch as kubectl
// takes it, TYPE NAME or TYPE/NAME, and for delete also TYPE --selector SELECTOR (-l, or
// --selector=SELECTOR). kubectl's other flags are not supported.
func flagsTarget(action string, flags []string) (typ, name, selector string, err error) {
	dash := func(s string) bool { return strings.HasPrefix(s, "-") }
	switch {
	case len(flags) == 2 && !dash(flags[0]) && !dash(flags[1]) && !strings.Contains(flags[0], "/"):
		typ, name = flags[0], flags[1]
	case len(flags) == 1 && !dash(flags[0]) && strings.Count(flags[0], "/") == 1:
		typ, name, _ = strings.Cut(flags[0], "/")
	case action == "delete" && len(flags) == 3 && !dash(flags[0]) && (flags[1] == "-l" || flags[1] == "--selector"):
		typ, selector = flags[0], flags[2]
	case action == "delete" && len(flags) == 2 && !dash(flags[0]) && strings.HasPrefix(flags[1], "--selector="):
		typ, selector = flags[0], strings.TrimPrefix(flags[1], "--selector=")
	default:
		return "", "", "", fmt.Errorf("are not supported except the target of get, delete and patch: TYPE NAME or TYPE/NAME (e.g. [configmap, my-config]), or to delete TYPE --selector SELECTOR; kubectl's other flags are not built in Freshet's workflow engine")
	}
	if typ == "" || (name == "" && selector == "") {
		return "", "", "", fmt.Errorf("must name a resource type and a name: TYPE NAME or TYPE/NAME")
	}
	if selector != "" && !strings.Contains(selector, "{{") {
		if _, err := labels.Parse(selector); err != nil {
			return "", "", "", fmt.Errorf("selector %q is not a label selector: %v", selector, err)
		}
	}
	return typ, name, selector, nil
}

// checkResource validates a resource template as argo lint does, and what Freshet adds.
func checkResource(t *Template, f string) error {
	r := t.Resource
	switch r.Action {
	case "get", "create", "apply", "delete", "patch", "replace":
	default:
		if !strings.Contains(r.Action, "{{") {
			return errdefs.Invalid(f+".action", r.Action, "must be one of get, create, apply, delete, patch, replace")
		}
	}
	from := r.ManifestFrom != nil
	if from {
		if err := checkManifestFrom(t, f); err != nil {
			return err
		}
	}
	flags := len(r.Flags) > 0
	if flags && !strings.Contains(r.Action, "{{") && !slices.ContainsFunc(r.Flags, func(s string) bool { return strings.Contains(s, "{{") }) {
		if !slices.Contains([]string{"get", "delete", "patch"}, r.Action) {
			return errdefs.Invalid(f+".flags", strings.Join(r.Flags, " "), "are not supported for the "+r.Action+" action (only the target of get, delete and patch: TYPE NAME or TYPE/NAME)")
		}
		if _, _, _, err := flagsTarget(r.Action, r.Flags); err != nil {
			return errdefs.Invalid(f+".flags", strings.Join(r.Flags, " "), err.Error())
		}
	}
	if r.MergeStrategy != "" && !strings.Contains(r.MergeStrategy, "{{") {
		if _, ok := mergeStrategies[r.MergeStrategy]; !ok {
			return errdefs.Invalid(f+".mergeStrategy", r.MergeStrategy, "must be strategic, merge or json")
		}
		if r.Action != "patch" {
			return errdefs.Invalid(f+".mergeStrategy", r.MergeStrategy, "is for the patch action only")
		}
	}
	switch {
	case r.Manifest == "" && !from && !flags:
		return errdefs.Invalid(f+".manifest", "", "is required (or manifestFrom, or for get, delete and patch, flags naming the target)")
	case r.Manifest == "" && !from && r.Action == "patch":
		return errdefs.Invalid(f+".manifest", "", "is required for a patch: the patch (or manifestFrom)")
	case (r.Manifest != "" || from) && flags && (r.Action == "get" || r.Action == "delete"):
		return errdefs.Invalid(f+".flags", strings.Join(r.Flags, " "), "give the target in the manifest or in flags, not both")
	case r.Action == "patch" && r.MergeStrategy == "json" && !flags:
		return errdefs.Invalid(f+".flags", "", "are required for a json patch: its target, TYPE NAME (the manifest is the list of operations)")
	}
	for _, c := range []struct{ name, v string }{{"successCondition", r.SuccessCondition}, {"failureCondition", r.FailureCondition}} {
		if c.v == "" {
			continue
		}
		if r.Action == "delete" {
			return errdefs.Invalid(f+"."+c.name, c.v, "is not supported for the delete action (as in Argo): a deleted object has no fields to check")
		}
		if !strings.Contains(c.v, "{{") {
			if _, err := parseCondition(c.v); err != nil {
				return errdefs.Invalid(f+"."+c.name, c.v, err.Error())
			}
		}
	}
	if r.Manifest != "" && !strings.Contains(r.Manifest+r.Action+r.MergeStrategy+strings.Join(r.Flags, " "), "{{") {
		if _, field, err := manifestAction(r, "ns"); err != nil {
			return errdefs.Invalid(f+"."+field, "", err.Error())
		}
	}
	return nil
}

// checkManifestFrom validates resource.manifestFrom: it names an input artifact of the
// template, and is not given with manifest (argo lint's rules).
func checkManifestFrom(t *Template, f string) error {
	r := t.Resource
	if r.Manifest != "" {
		return errdefs.Invalid(f+".manifestFrom", "", "cannot be given with manifest: give one, the manifest or the input artifact it is read from")
	}
	a := r.ManifestFrom.Artifact
	var names []string
	for _, in := range t.Inputs.Artifacts {
		names = append(names, in.Name)
	}
	which := "(it has none: declare it in inputs.artifacts)"
	if len(names) > 0 {
		which = "(" + strings.Join(names, ", ") + ")"
	}
	switch {
	case a == nil || a.Name == "":
		return errdefs.Invalid(f+".manifestFrom.artifact.name", "", "is required: the name of one of the template's input artifacts "+which)
	case !slices.Contains(names, a.Name):
		return errdefs.Invalid(f+".manifestFrom.artifact.name", a.Name, "must name one of the template's input artifacts "+which)
	}
	return nil
}

// checkResourceOutput validates an output parameter's valueFrom.jsonPath or jqFilter.
func checkResourceOutput(t *Template, f string, v *ValueFrom) error {
	name, val := "jsonPath", v.JSONPath
	if val == "" {
		name, val = "jqFilter", v.JQFilter
	}
	switch {
	case t.Resource == nil:
		return errdefs.Invalid(f+".valueFrom."+name, val, "is for resource templates only")
	case v.JSONPath != "" && v.JQFilter != "":
		return errdefs.Invalid(f+".valueFrom.jqFilter", v.JQFilter, "cannot be given with valueFrom.jsonPath: give one")
	case t.Resource.Action == "delete":
		return errdefs.Invalid(f+".valueFrom."+name, val, "is not supported for the delete action (as in Argo): a deleted object has no fields to read")
	case strings.Contains(val, "{{"):
		return nil
	}
	var err error
	if name == "jsonPath" {
		_, err = parseJSONPath(val)
	} else {
		_, err = parseJQ(val)
	}
	if err != nil {
		return errdefs.Invalid(f+".valueFrom."+name, val, err.Error())
	}
	return nil
}

// parseManifest reads a resource template's manifest: one object with apiVersion, kind and
// metadata.name (or generateName, to create).
func parseManifest(m string) (map[string]any, error) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(m), &obj); err != nil {
		return nil, fmt.Errorf("is not one YAML object: %v", err)
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	gen, _ := md["generateName"].(string)
	switch {
	case av == "" || kind == "":
		return nil, fmt.Errorf("must have apiVersion and kind")
	case name == "" && gen == "":
		return nil, fmt.Errorf("must have metadata.name or metadata.generateName")
	}
	return obj, nil
}

// manifestAction reads a (substituted) resource template into the action it asks for, its
// objects in namespace ns unless they name another. An error names the field it is of
// (manifest, flags, mergeStrategy).
func manifestAction(r *ResourceTemplate, ns string) (*resourceAction, string, error) {
	a, err := buildAction(r, ns)
	if err != nil && len(r.Flags) > 0 {
		if _, _, _, ferr := flagsTarget(r.Action, r.Flags); ferr != nil {
			return nil, "flags", ferr
		}
	}
	if err != nil && r.Action == "patch" && r.MergeStrategy != "" {
		if _, ok := mergeStrategies[r.MergeStrategy]; !ok {
			return nil, "mergeStrategy", err
		}
	}
	return a, "manifest", err
}

func buildAction(r *ResourceTemplate, ns string) (*resourceAction, error) {
	a := &resourceAction{action: r.Action}
	if len(r.Flags) > 0 {
		typ, name, sel, err := flagsTarget(r.Action, r.Flags)
		if err != nil {
			return nil, err
		}
		a.typ, a.name, a.selector, a.namespace = typ, name, sel, ns
	}
	if r.Action == "patch" {
		strategy := r.MergeStrategy
		if strategy == "" {
			strategy = "strategic" // kubectl patch's default
		}
		pt, ok := mergeStrategies[strategy]
		if !ok {
			return nil, fmt.Errorf("mergeStrategy %q must be strategic, merge or json", strategy)
		}
		a.patchType = pt
		var body any
		if err := yaml.Unmarshal([]byte(r.Manifest), &body); err != nil {
			return nil, fmt.Errorf("is not YAML: %v", err)
		}
		if pt == types.JSONPatchType {
			ops, ok := body.([]any)
			if !ok || len(ops) == 0 {
				return nil, fmt.Errorf("must be a list of JSON patch operations for mergeStrategy json (e.g. [{op: replace, path: /data/x, value: y}])")
			}
			for i, op := range ops {
				m, _ := op.(map[string]any)
				o, _ := m["op"].(string)
				_, isString := m["path"].(string)
				if !slices.Contains([]string{"add", "remove", "replace", "move", "copy", "test"}, o) || !isString {
					return nil, fmt.Errorf("operation %d must have op (add, remove, replace, move, copy or test) and path", i)
				}
			}
		} else {
			obj, ok := body.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("must be one object for mergeStrategy %s (a list is a json patch)", strategy)
			}
			if a.typ == "" {
				if _, err := parseManifest(r.Manifest); err != nil {
					return nil, err
				}
				a.obj = &unstructured.Unstructured{Object: obj}
			}
		}
		var err error
		if a.patch, err = json.Marshal(body); err != nil {
			return nil, err
		}
	} else if a.typ == "" {
		obj, err := parseManifest(r.Manifest)
		if err != nil {
			return nil, err
		}
		a.obj = &unstructured.Unstructured{Object: obj}
	}
	if a.obj != nil {
		if a.obj.GetName() == "" && r.Action != "create" {
			return nil, fmt.Errorf("must have metadata.name for the %s action (generateName is for create)", r.Action)
		}
		if a.obj.GetNamespace() == "" {
			a.obj.SetNamespace(ns)
		}
	}
	return a, nil
}

func (o *operation) executeResource(inv invocation, t *Template, inputs *Inputs) *NodeStatus {
	n, ok := o.leafNode(inv, NodeTypePod, t, inputs)
	if !ok {
		return n
	}
	const waiting = " (waiting for its success or failure condition)"
	what := strings.TrimSuffix(n.Message, waiting)
	if n.Resource != nil && o.killPods && !strings.HasPrefix(n.Name, o.wf.Name+".onExit") {
		o.finish(n, NodeFailed, o.stopping)
		return n
	}
	limit := time.Duration(-1)
	if d := t.ActiveDeadlineSeconds; d != nil {
		if secs, err := intOf(d); err == nil {
			limit = time.Duration(secs) * time.Second
		}
	}
	if t.Timeout != "" {
		if d, err := parseDuration(&intstr.IntOrString{Type: intstr.String, StrVal: t.Timeout}); err == nil && (limit < 0 || d < limit) {
			limit = d
		}
	}
	if limit >= 0 && n.Resource != nil {
		end := n.StartedAt.Add(limit)
		if !o.now.Before(end) {
			o.finish(n, NodeFailed, msgDeadline)
			return n
		}
		o.after(end.Sub(o.now))
	}
	r := t.Resource
	success, err := parseCondition(r.SuccessCondition)
	if err != nil {
		o.finish(n, NodeError, "resource.successCondition: "+err.Error())
		return n
	}
	failure, err := parseCondition(r.FailureCondition)
	if err != nil {
		o.finish(n, NodeError, "resource.failureCondition: "+err.Error())
		return n
	}
	sa := t.ServiceAccountName
	if sa == "" {
		sa = o.spec.ServiceAccountName
	}
	if sa == "" {
		sa = "default"
	}
	var obj *unstructured.Unstructured
	if n.Resource == nil {
		rt := r
		if r.ManifestFrom != nil {
			m, err := o.manifestFrom(n, r)
			if err != nil {
				o.finish(n, NodeFailed, "resource.manifestFrom: "+err.Error())
				return n
			}
			cp := *r
			cp.Manifest, rt = m, &cp
		}
		a, field, err := manifestAction(rt, o.wf.Namespace)
		if err != nil {
			if r.ManifestFrom != nil && field == "manifest" {
				field = fmt.Sprintf("manifestFrom (input artifact %q)", r.ManifestFrom.Artifact.Name)
			}
			o.finish(n, NodeError, "resource."+field+": "+err.Error())
			return n
		}
		if r.SetOwnerReference && a.obj != nil && a.action != "get" && a.action != "delete" {
			a.obj.SetOwnerReferences(append(a.obj.GetOwnerReferences(), o.ownerRef()))
			if a.action == "patch" { // the manifest is the patch: Argo's owner goes in it too
				if a.patch, err = json.Marshal(a.obj.Object); err != nil {
					o.finish(n, NodeError, "resource.manifest: "+err.Error())
					return n
				}
			}
		}
		if obj, what, err = o.cl.resource(o.ctx, o.wf, sa, a); err != nil {
			o.finish(n, NodeFailed, err.Error())
			return n
		}
		if obj == nil { // deleted
			o.finish(n, NodeSucceeded, what)
			return n
		}
		n.Resource = &NodeResource{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	} else {
		obj, err = o.cl.getResource(o.ctx, o.wf, sa, n.Resource)
		switch {
		case apierrors.IsNotFound(err):
			o.finish(n, NodeFailed, fmt.Sprintf("%s was deleted while its conditions were checked", n.Resource))
			return n
		case apierrors.IsForbidden(err):
			o.finish(n, NodeFailed, err.Error())
			return n
		case err != nil:
			o.err = fmt.Errorf("get %s: %w", n.Resource, err)
			return n
		}
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		o.finish(n, NodeError, err.Error())
		return n
	}
	phase, why := conditionsOutcome(success, failure, data)
	switch phase {
	case NodeFailed:
		o.finish(n, NodeFailed, what+"; "+why)
		return n
	case "":
		n.Message = what + waiting
		interval := o.opts.resourceCheck
		if interval <= 0 {
			interval = DefaultResourceCheckInterval
		}
		o.after(interval)
		return n
	}
	if why != "" {
		what += "; " + why
	}
	for _, p := range t.Outputs.Parameters {
		v := p.ValueFrom
		if v == nil || (v.JSONPath == "" && v.JQFilter == "") {
			continue
		}
		var val string
		if v.JSONPath != "" {
			val, err = evalJSONPath(v.JSONPath, obj.Object)
		} else {
			val, err = evalJQ(o.ctx, v.JQFilter, obj.Object)
		}
		if err != nil {
			o.finish(n, NodeFailed, fmt.Sprintf("output parameter %q: %v", p.Name, err))
			return n
		}
		if n.Outputs == nil {
			n.Outputs = &Outputs{}
		}
		as := AnyString(val)
		n.Outputs.Parameters = append(n.Outputs.Parameters, Parameter{Name: p.Name, Value: &as, GlobalName: p.GlobalName})
	}
	o.globalParams(n)
	o.finish(n, NodeSucceeded, what)
	return n
}

// maxManifestBytes bounds a manifest read from an input artifact (resource.manifestFrom).
const maxManifestBytes = 1 << 20

// manifestFrom reads the manifest of a resource node from its input artifact, as it is (the
// artifact's content is not templated: Argo's executor reads the file kubectl is given).
func (o *operation) manifestFrom(n *NodeStatus, r *ResourceTemplate) (string, error) {
	if r.ManifestFrom.Artifact == nil || r.ManifestFrom.Artifact.Name == "" {
		return "", fmt.Errorf("artifact.name is required: the name of one of the template's input artifacts")
	}
	name := r.ManifestFrom.Artifact.Name
	var art *Artifact
	if n.Inputs != nil {
		for i := range n.Inputs.Artifacts {
			if n.Inputs.Artifacts[i].Name == name {
				art = &n.Inputs.Artifacts[i]
			}
		}
	}
	if art == nil {
		return "", fmt.Errorf("input artifact %q is not an input of the template, or was not given (an optional artifact left out)", name)
	}
	tooLarge := func() error {
		return fmt.Errorf("input artifact %q is larger than %d bytes (1 MiB), the most a manifest read from an artifact may be", name, maxManifestBytes)
	}
	if art.Raw != nil {
		if len(art.Raw.Data) > maxManifestBytes {
			return "", tooLarge()
		}
		return art.Raw.Data, nil
	}
	var se secretEnvs
	loc, err := o.location(art.ArtifactLocation, "inputs.artifacts."+name, &se)
	if err != nil {
		return "", fmt.Errorf("input artifact %q: %w", name, err)
	}
	data, err := o.cl.readArtifact(o.ctx, o.wf.Namespace, loc, se.env, maxManifestBytes)
	switch {
	case errors.Is(err, artifacts.ErrTooLarge):
		return "", tooLarge()
	case err != nil:
		return "", fmt.Errorf("input artifact %q: %w", name, err)
	}
	return string(data), nil
}

// readArtifact implements cluster: the artifact is fetched by the controller through the
// runtime's network policy, with the Workflow namespace's Secrets as credentials.
func (c *Controller) readArtifact(ctx context.Context, ns string, loc artifacts.Location, env []corev1.EnvVar, max int64) ([]byte, error) {
	secret := c.secretReader(ctx, ns)
	vals := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		v, err := secret(e.ValueFrom.SecretKeyRef)
		if err != nil {
			return nil, err
		}
		vals[e.Name] = v
	}
	m := &artifacts.Mover{Policy: c.opts.Policy, Timeout: gcTimeout, Getenv: func(k string) string { return vals[k] }}
	return m.Read(ctx, loc, max)
}

func (o *operation) ownerRef() metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: Group + "/" + Version, Kind: "Workflow", Name: o.wf.Name, UID: o.wf.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}
}

// resourceClient is the client of one kind's objects in namespace ns (cluster-scoped kinds
// ignore it), as the workflow's service account.
func (c *Controller) resourceClient(wf *Workflow, sa string, gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, bool, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, false, fmt.Errorf("resource %s: %w", gvk, err)
	}
	dyn, err := c.clientAs(wf.Namespace, sa)
	if err != nil {
		return nil, false, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(ns), true, nil
	}
	return dyn.Resource(m.Resource), false, nil
}

// kindFor resolves a resource type as kubectl takes it (configmaps, configmap, cm, jobs.batch,
// jobs.v1.batch) to its kind.
func (c *Controller) kindFor(typ string) (schema.GroupVersionKind, error) {
	full, gr := schema.ParseResourceArg(strings.ToLower(typ))
	mapper := restmapper.NewShortcutExpander(c.mapper, c.disco, func(string) {})
	try := func() (schema.GroupVersionKind, error) {
		if full != nil {
			if gvk, err := mapper.KindFor(*full); err == nil {
				return gvk, nil
			}
		}
		return mapper.KindFor(gr.WithVersion(""))
	}
	gvk, err := try()
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		gvk, err = try()
	}
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("resource type %q: %w", typ, err)
	}
	return gvk, nil
}

// resource implements cluster: the action runs as the workflow's service account
// (impersonated), so that it may do what that account may do and nothing more — as Argo runs
// kubectl in a pod of that account.
func (c *Controller) resource(ctx context.Context, wf *Workflow, sa string, a *resourceAction) (*unstructured.Unstructured, string, error) {
	var gvk schema.GroupVersionKind
	var name, ns string
	if a.obj != nil {
		gvk, name, ns = a.obj.GroupVersionKind(), a.obj.GetName(), a.obj.GetNamespace()
	} else {
		var err error
		if gvk, err = c.kindFor(a.typ); err != nil {
			return nil, "", err
		}
		name, ns = a.name, a.namespace
	}
	ri, namespaced, err := c.resourceClient(wf, sa, gvk, ns)
	if err != nil {
		return nil, "", err
	}
	if a.obj != nil && !namespaced {
		a.obj.SetNamespace("")
	}
	what := lower(gvk.Kind) + "/" + name
	switch a.action {
	case "get":
		out, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("get %s: %w", what, err)
		}
		return out, "read " + what, nil
	case "create":
		out, err := ri.Create(ctx, a.obj, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, "", fmt.Errorf("create %s: %w", what, err)
		}
		return out, "created " + lower(gvk.Kind) + "/" + out.GetName(), nil
	case "apply":
		body, err := json.Marshal(a.obj.Object)
		if err != nil {
			return nil, "", err
		}
		force := true
		out, err := ri.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
		if err != nil {
			return nil, "", fmt.Errorf("apply %s: %w", what, err)
		}
		return out, "applied " + what, nil
	case "replace":
		// kubectl replace: the object as it is now is replaced, whatever its resourceVersion.
		if a.obj.GetResourceVersion() == "" {
			cur, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, "", fmt.Errorf("replace %s: %w", what, err)
			}
			a.obj.SetResourceVersion(cur.GetResourceVersion())
		}
		out, err := ri.Update(ctx, a.obj, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, "", fmt.Errorf("replace %s: %w", what, err)
		}
		return out, "replaced " + what, nil
	case "patch":
		out, err := ri.Patch(ctx, name, a.patchType, a.patch, metav1.PatchOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, "", fmt.Errorf("patch %s: %w", what, err)
		}
		return out, "patched " + what, nil
	case "delete":
		if a.selector != "" {
			// kubectl delete --selector: lists, then deletes each (the verbs list and delete).
			list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: a.selector})
			if err != nil {
				return nil, "", fmt.Errorf("delete %s -l %s: %w", lower(gvk.Kind), a.selector, err)
			}
			n := 0
			for _, it := range list.Items {
				err := ri.Delete(ctx, it.GetName(), metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return nil, "", fmt.Errorf("delete %s/%s: %w", lower(gvk.Kind), it.GetName(), err)
				}
				n++
			}
			return nil, fmt.Sprintf("deleted %d objects of kind %s (selector %s)", n, gvk.Kind, a.selector), nil
		}
		err := ri.Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil, what + " not found: nothing to delete", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("delete %s: %w", what, err)
		}
		return nil, "deleted " + what, nil
	}
	return nil, "", fmt.Errorf("resource action %q is not supported", a.action)
}

// getResource implements cluster.
func (c *Controller) getResource(ctx context.Context, wf *Workflow, sa string, r *NodeResource) (*unstructured.Unstructured, error) {
	ri, _, err := c.resourceClient(wf, sa, schema.FromAPIVersionAndKind(r.APIVersion, r.Kind), r.Namespace)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, r.Name, metav1.GetOptions{})
}
