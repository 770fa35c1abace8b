package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Labels Argo Workflows puts on the Workflows it submits (the same names, so that `argo list`
// and its UI read them), and Freshet's annotation of who submitted one.
const (
	// LabelCreator is the submitting user's ID; LabelCreatorEmail their email with "@" as
	// ".at." (label values allow no "@"), as Argo's server writes them.
	LabelCreator      = "workflows.argoproj.io/creator"
	LabelCreatorEmail = "workflows.argoproj.io/creator-email"
	// LabelWorkflowTemplate and LabelClusterWorkflowTemplate name the template a Workflow was
	// submitted from.
	LabelWorkflowTemplate        = "workflows.argoproj.io/workflow-template"
	LabelClusterWorkflowTemplate = "workflows.argoproj.io/cluster-workflow-template"
	// LabelResubmittedFrom names the Workflow a resubmitted one copies.
	LabelResubmittedFrom = "workflows.argoproj.io/resubmitted-from-workflow"
	// LabelCronWorkflow and LabelSensor name what started a Workflow (Argo's and Argo Events').
	LabelCronWorkflow = "workflows.argoproj.io/cron-workflow"
	LabelSensor       = "events.argoproj.io/sensor"
	// AnnotationSubmittedBy is the submitting user's email, as given (the report's TriggeredBy).
	AnnotationSubmittedBy = "workflows.freshet.dev/submitted-by"
)

// DefaultNamespace is where a Workflow is submitted when neither the request nor the manifest
// names a namespace.
const DefaultNamespace = "default"

// Submitter is who submits or resubmits a Workflow.
type Submitter struct {
	User, Email string
}

// SubmitOptions is one submission: a manifest (JSON), or From a template.
type SubmitOptions struct {
	Namespace string
	// Manifest is an argoproj.io/v1alpha1 Workflow, as JSON.
	Manifest []byte
	// From is workflowtemplate/NAME, clusterworkflowtemplate/NAME or cronworkflow/NAME
	// (Manifest empty).
	From string
	// Parameters are KEY=VALUE, replacing the arguments of that name.
	Parameters   []string
	Entrypoint   string
	GenerateName string
	By           Submitter
}

var labelValueUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue makes s a label value: unsafe characters become "-", at most 63 characters,
// starting and ending alphanumerically.
func labelValue(s string) string {
	s = labelValueUnsafe.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-_.")
}

// parseParameters reads KEY=VALUE pairs.
func parseParameters(ps []string) ([]Parameter, error) {
	var out []Parameter
	for i, p := range ps {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, errdefs.Invalid(fmt.Sprintf("parameters[%d]", i), p, "is not KEY=VALUE")
		}
		val := AnyString(v)
		out = append(out, Parameter{Name: k, Value: &val})
	}
	return out, nil
}

// overParams sets ps over args by name; a name args does not have is added.
func overParams(args []Parameter, ps []Parameter) []Parameter {
	for _, p := range ps {
		found := false
		for i := range args {
			if args[i].Name == p.Name {
				args[i].Value, args[i].Default, found = p.Value, nil, true
			}
		}
		if !found {
			args = append(args, p)
		}
	}
	return args
}

// parseFrom reads workflowtemplate/NAME or clusterworkflowtemplate/NAME (Argo's short names
// too).
func parseFrom(from string) (name string, cluster bool, err error) {
	kind, name, ok := strings.Cut(from, "/")
	switch strings.ToLower(kind) {
	case "workflowtemplate", "workflowtemplates", "wftmpl":
	case "clusterworkflowtemplate", "clusterworkflowtemplates", "cwft", "clusterwftmpl":
		cluster = true
	default:
		ok = false
	}
	if !ok || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", false, errdefs.Invalid("from", from, "is not workflowtemplate/NAME, clusterworkflowtemplate/NAME or cronworkflow/NAME")
	}
	return name, cluster, nil
}

// kubeErr maps the API server's errors to errdefs' kinds, with what.
func kubeErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %w", what, errdefs.ErrNotFound)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s already exists: %w", what, errdefs.ErrConflict)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s changed meanwhile; try again: %w", what, errdefs.ErrConflict)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return errdefs.Invalid(what, "", "was refused by the API server: "+err.Error())
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %v: %w", what, err, errdefs.ErrForbidden)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func templateKind(cluster bool) string {
	if cluster {
		return "ClusterWorkflowTemplate"
	}
	return "WorkflowTemplate"
}

// getTemplate reads a (Cluster)WorkflowTemplate from the API server.
func (c *Ops) getTemplate(ctx context.Context, ns, name string, cluster bool) (*WorkflowTemplate, error) {
	kind := templateKind(cluster)
	var u *unstructured.Unstructured
	var err error
	if cluster {
		u, err = c.dyn.Resource(ClusterWorkflowTemplatesResource).Get(ctx, name, metav1.GetOptions{})
	} else {
		u, err = c.dyn.Resource(WorkflowTemplatesResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		where := ""
		if !cluster {
			where = " in namespace " + ns
		}
		return nil, kubeErr(err, fmt.Sprintf("%s %q%s", kind, name, where))
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var t WorkflowTemplate
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s %q does not decode: %w", kind, name, decodeError(err, kind))
	}
	return &t, nil
}

// Submit creates a Workflow from a manifest or a template, after validating it as `argo lint`
// does: a Workflow that would end in Error is refused (errdefs.ErrInvalid, the field named)
// and nothing is created. It answers the Workflow as created.
func (c *Ops) Submit(ctx context.Context, o SubmitOptions) (appproxyv1.WorkflowDetail, error) {
	if kind, name, ok := strings.Cut(o.From, "/"); ok && len(o.Manifest) == 0 && isCronKind(kind) {
		return c.submitCron(ctx, o, name)
	}
	wf, err := PrepareSubmit(o)
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	ns := wf.Namespace
	// What the controller will check, checked now: the merged template's spec.
	if ref := wf.Spec.WorkflowTemplateRef; ref != nil {
		t, err := c.getTemplate(ctx, ns, ref.Name, ref.ClusterScope)
		if err != nil {
			return appproxyv1.WorkflowDetail{}, err
		}
		if err := ValidateSpec(mergeSpec(&wf.Spec, &t.Spec), "spec"); err != nil {
			return appproxyv1.WorkflowDetail{}, fmt.Errorf("invalid spec: spec.workflowTemplateRef %q: %w", ref.Name, err)
		}
	}
	u, err := toUnstructured(wf)
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	if len(o.Manifest) > 0 {
		// Keep what the manifest has that this package does not model (the CRD preserves it).
		var raw map[string]any
		if err := json.Unmarshal(o.Manifest, &raw); err == nil {
			if spec, ok := raw["spec"].(map[string]any); ok {
				for k, v := range u.Object["spec"].(map[string]any) {
					spec[k] = v
				}
				u.Object["spec"] = spec
			}
		}
	}
	delete(u.Object, "status")
	out, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return appproxyv1.WorkflowDetail{}, kubeErr(err, "workflow "+ns+"/"+wf.Name+wf.GenerateName)
	}
	c.log.Info("workflow submitted", logWorkflow, ns+"/"+out.GetName(), "by", o.By.Email)
	return detailOf(out)
}

func isCronKind(kind string) bool {
	switch strings.ToLower(kind) {
	case "cronworkflow", "cronworkflows", "cronwf", "cwf":
		return true
	}
	return false
}

// submitCron creates a Workflow from CronWorkflow name now, as `argo submit --from
// cronwf/NAME` does: its workflowSpec and workflowMetadata, labelled with and owned by it,
// named after it; checked as a submitted manifest is.
func (c *Ops) submitCron(ctx context.Context, o SubmitOptions, name string) (appproxyv1.WorkflowDetail, error) {
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return appproxyv1.WorkflowDetail{}, errdefs.Invalid("from", o.From, "is not cronworkflow/NAME")
	}
	if len(o.Parameters) > 0 || o.Entrypoint != "" {
		return appproxyv1.WorkflowDetail{}, errdefs.Invalid("from", o.From, "takes no parameters or entrypoint: a CronWorkflow's Workflow runs its workflowSpec as written")
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	u, err := c.dyn.Resource(CronWorkflowsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return appproxyv1.WorkflowDetail{}, kubeErr(err, fmt.Sprintf("CronWorkflow %q in namespace %s", name, ns))
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	cw, err := DecodeCron(data)
	if cw == nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	if err != nil {
		return appproxyv1.WorkflowDetail{}, fmt.Errorf("CronWorkflow %q: invalid spec: %w", name, err)
	}
	wf := cronToWorkflow(u, cw)
	gen := name + "-"
	if o.GenerateName != "" {
		gen = o.GenerateName
	}
	wf.SetGenerateName(gen)
	var meta metav1.ObjectMeta
	meta.Labels, meta.Annotations = wf.GetLabels(), wf.GetAnnotations()
	markCreator(&meta, o.By)
	wf.SetLabels(meta.Labels)
	wf.SetAnnotations(meta.Annotations)
	manifest, err := wf.MarshalJSON()
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	if _, err := Decode(manifest); err != nil {
		return appproxyv1.WorkflowDetail{}, fmt.Errorf("CronWorkflow %q: invalid workflowSpec: %w", name, err)
	}
	out, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).Create(ctx, wf, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return appproxyv1.WorkflowDetail{}, kubeErr(err, "workflow "+ns+"/"+gen+" from CronWorkflow "+name)
	}
	c.log.Info("workflow submitted", logWorkflow, ns+"/"+out.GetName(), "from", "cronworkflow/"+name, "by", o.By.Email)
	return detailOf(out)
}

// PrepareSubmit is the Workflow a submission creates, checked as far as it can be without the
// cluster: the manifest decoded and validated as `argo lint` does (a Workflow with its own
// templates, with the parameters and entrypoint given), or a Workflow running From's template;
// the namespace; the creator's labels. A Workflow running a template is checked against it by
// Submit. Errors are *errdefs.FieldError naming the field.
func PrepareSubmit(o SubmitOptions) (*Workflow, error) {
	params, err := parseParameters(o.Parameters)
	if err != nil {
		return nil, err
	}
	var wf *Workflow
	switch {
	case len(o.Manifest) > 0 && o.From != "":
		return nil, errdefs.Invalid("from", o.From, "cannot be given with a workflow manifest: submit one or the other")
	case len(o.Manifest) > 0:
		w, verr := Decode(o.Manifest)
		if w == nil {
			return nil, verr
		}
		if verr != nil {
			return nil, fmt.Errorf("invalid spec: %w", verr)
		}
		if w.Name == "" && w.GenerateName == "" {
			return nil, errdefs.Invalid("metadata.name", "", "is required (or metadata.generateName)")
		}
		if o.Namespace != "" && w.Namespace != "" && w.Namespace != o.Namespace {
			return nil, errdefs.Invalid("metadata.namespace", w.Namespace, "differs from the namespace asked for, "+o.Namespace)
		}
		wf = w
	case o.From != "":
		name, cluster, err := parseFrom(o.From)
		if err != nil {
			return nil, err
		}
		gen := o.GenerateName
		if gen == "" {
			gen = name + "-"
		}
		if len(gen) > 58 || len(validation.IsDNS1123Subdomain(strings.TrimSuffix(gen, "-")+"-x")) > 0 {
			return nil, errdefs.Invalid("generateName", gen, "is not a name prefix: lowercase letters, digits, '-' and '.', at most 58 characters")
		}
		wf = &Workflow{TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "Workflow"},
			ObjectMeta: metav1.ObjectMeta{GenerateName: gen, Labels: map[string]string{}},
			Spec:       WorkflowSpec{WorkflowTemplateRef: &WorkflowTemplateRef{Name: name, ClusterScope: cluster}}}
		if cluster {
			wf.Labels[LabelClusterWorkflowTemplate] = name
		} else {
			wf.Labels[LabelWorkflowTemplate] = name
		}
	default:
		return nil, errdefs.Invalid("workflow", "", "is required: a Workflow manifest, or from: workflowtemplate/NAME")
	}
	ns := o.Namespace
	if ns == "" {
		ns = wf.Namespace
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, errdefs.Invalid("namespace", ns, "is not a namespace name (a DNS-1123 label)")
	}
	wf.Namespace = ns
	wf.Spec.Arguments.Parameters = overParams(wf.Spec.Arguments.Parameters, params)
	if o.Entrypoint != "" {
		wf.Spec.Entrypoint = o.Entrypoint
	}
	if wf.Spec.WorkflowTemplateRef == nil && (len(params) > 0 || o.Entrypoint != "") {
		if err := ValidateSpec(&wf.Spec, "spec"); err != nil {
			return nil, fmt.Errorf("invalid spec: %w", err)
		}
	}
	if wf.Labels == nil {
		wf.Labels = map[string]string{}
	}
	for _, k := range []string{LabelCompleted, LabelCreator, LabelCreatorEmail, LabelResubmittedFrom, LabelCronWorkflow, LabelSensor} {
		delete(wf.Labels, k)
	}
	delete(wf.Annotations, AnnotationSubmittedBy)
	markCreator(&wf.ObjectMeta, o.By)
	wf.Status = WorkflowStatus{}
	return wf, nil
}

func markCreator(m *metav1.ObjectMeta, by Submitter) {
	if by.User == "" && by.Email == "" {
		return
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	if v := labelValue(by.User); v != "" {
		m.Labels[LabelCreator] = v
	}
	if v := labelValue(strings.ReplaceAll(by.Email, "@", ".at.")); v != "" {
		m.Labels[LabelCreatorEmail] = v
	}
	who := by.Email
	if who == "" {
		who = by.User
	}
	m.Annotations[AnnotationSubmittedBy] = who
}

func toUnstructured(v any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}

func decodeObject(u *unstructured.Unstructured) (*Workflow, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var wf Workflow
	if err := json.Unmarshal(data, &wf); err != nil {
		return nil, fmt.Errorf("workflow %s/%s does not decode: %w", u.GetNamespace(), u.GetName(), decodeError(err, "Workflow"))
	}
	return &wf, nil
}

func timePtr(t metav1.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := t.UTC()
	return &v
}

func summaryOf(wf *Workflow) appproxyv1.Workflow {
	s := appproxyv1.Workflow{Name: wf.Name, Namespace: wf.Namespace, UID: string(wf.UID), Phase: string(wf.Status.Phase), Message: wf.Status.Message,
		StartedAt: timePtr(wf.Status.StartedAt), FinishedAt: timePtr(wf.Status.FinishedAt), Progress: wf.Status.Progress,
		Suspended: wf.Spec.Suspend != nil && *wf.Spec.Suspend, Shutdown: wf.Spec.Shutdown, Creator: wf.Annotations[AnnotationSubmittedBy],
		ResubmittedFrom: wf.Labels[LabelResubmittedFrom], Sensor: wf.Labels[LabelSensor],
		CronWorkflow: wf.Labels[LabelCronWorkflow], CreatedAt: wf.CreationTimestamp.UTC()}
	if s.Phase == "" {
		s.Phase = string(WorkflowPending)
	}
	if ref := wf.Spec.WorkflowTemplateRef; ref != nil {
		s.Template = ref.Name
		if ref.ClusterScope {
			s.Template = "cluster/" + ref.Name
		}
	}
	return s
}

func params(ps []Parameter) []appproxyv1.WorkflowParameter {
	out := []appproxyv1.WorkflowParameter{}
	for _, p := range ps {
		v := ""
		switch {
		case p.Value != nil:
			v = string(*p.Value)
		case p.Default != nil:
			v = string(*p.Default)
		}
		out = append(out, appproxyv1.WorkflowParameter{Name: p.Name, Value: v})
	}
	return out
}

// sortedNodes is a status's nodes by start time, then ID.
func sortedNodes(m map[string]NodeStatus) []NodeStatus {
	ns := make([]NodeStatus, 0, len(m))
	for _, n := range m {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool {
		if !ns[i].StartedAt.Equal(&ns[j].StartedAt) {
			return ns[i].StartedAt.Before(&ns[j].StartedAt)
		}
		return ns[i].ID < ns[j].ID
	})
	return ns
}

func nodeTemplate(n NodeStatus) string {
	if r := n.TemplateRef; r != nil {
		return r.Name + "/" + r.Template
	}
	return n.TemplateName
}

// artifactsOf is a node's artifacts as the API shows them: where they are, without
// credentials (a URL's user and query are left out).
func artifactsOf(as []Artifact) []appproxyv1.WorkflowArtifact {
	out := make([]appproxyv1.WorkflowArtifact, 0, len(as))
	for _, a := range as {
		wa := appproxyv1.WorkflowArtifact{Name: a.Name, Path: a.Path, Deleted: a.Deleted}
		switch {
		case a.S3 != nil:
			wa.Location, wa.Endpoint, wa.Bucket, wa.Key = "s3", a.S3.Endpoint, a.S3.Bucket, a.S3.Key
		case a.Git != nil:
			wa.Location, wa.URL, wa.Revision = "git", publicURL(a.Git.Repo), a.Git.Revision
		case a.HTTP != nil:
			wa.Location, wa.URL = "http", publicURL(a.HTTP.URL)
		case a.Raw != nil:
			wa.Location = "raw"
		}
		out = append(out, wa)
	}
	return out
}

// publicURL is u without its user information and query, which may carry credentials.
func publicURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return u
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

func detailFrom(wf *Workflow) appproxyv1.WorkflowDetail {
	d := appproxyv1.WorkflowDetail{Workflow: summaryOf(wf), Entrypoint: wf.Spec.Entrypoint, Parameters: params(wf.Spec.Arguments.Parameters),
		Nodes: []appproxyv1.WorkflowNode{}}
	if d.Entrypoint == "" && wf.Status.StoredWorkflowTemplateSpec != nil {
		d.Entrypoint = wf.Status.StoredWorkflowTemplateSpec.Entrypoint
	}
	for _, n := range sortedNodes(wf.Status.Nodes) {
		wn := appproxyv1.WorkflowNode{ID: n.ID, Name: n.Name, DisplayName: n.DisplayName, Type: string(n.Type), TemplateName: nodeTemplate(n),
			Phase: string(n.Phase), Message: n.Message, BoundaryID: n.BoundaryID, StartedAt: timePtr(n.StartedAt), FinishedAt: timePtr(n.FinishedAt),
			Children: append([]string{}, n.Children...), Inputs: []appproxyv1.WorkflowParameter{}, Outputs: []appproxyv1.WorkflowParameter{},
			InputArtifacts: []appproxyv1.WorkflowArtifact{}, OutputArtifacts: []appproxyv1.WorkflowArtifact{}, Supplied: []appproxyv1.WorkflowSuppliedParameter{}}
		if n.Type == NodeTypePod {
			wn.PodName = podName(n.ID)
		}
		if n.Inputs != nil {
			wn.Inputs = params(n.Inputs.Parameters)
			wn.InputArtifacts = artifactsOf(n.Inputs.Artifacts)
		}
		if n.Outputs != nil {
			wn.Outputs = params(n.Outputs.Parameters)
			wn.Result, wn.ExitCode = n.Outputs.Result, n.Outputs.ExitCode
			wn.OutputArtifacts = artifactsOf(n.Outputs.Artifacts)
		}
		d.Nodes = append(d.Nodes, wn)
	}
	return d
}

func detailOf(u *unstructured.Unstructured) (appproxyv1.WorkflowDetail, error) {
	wf, err := decodeObject(u)
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	return detailFrom(wf), nil
}

// List returns the Workflows of namespace ns (every namespace the controller watches when
// empty), newest first.
func (c *Controller) List(ctx context.Context, ns string) ([]appproxyv1.Workflow, error) {
	if ns == "" {
		ns = c.opts.Namespace
	}
	l, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kubeErr(err, "list workflows")
	}
	out := make([]appproxyv1.Workflow, 0, len(l.Items))
	for i := range l.Items {
		wf, err := decodeObject(&l.Items[i])
		if err != nil {
			out = append(out, appproxyv1.Workflow{Name: l.Items[i].GetName(), Namespace: l.Items[i].GetNamespace(), Phase: string(WorkflowError),
				Message: err.Error(), CreatedAt: l.Items[i].GetCreationTimestamp().UTC()})
			continue
		}
		out = append(out, summaryOf(wf))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (c *Ops) getWorkflow(ctx context.Context, ns, name string) (*unstructured.Unstructured, *Workflow, error) {
	u, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, kubeErr(err, "workflow "+ns+"/"+name)
	}
	wf, err := decodeObject(u)
	return u, wf, err
}

// Get returns a Workflow with its node tree.
func (c *Controller) Get(ctx context.Context, ns, name string) (appproxyv1.WorkflowDetail, error) {
	_, wf, err := c.getWorkflow(ctx, ns, name)
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	d := detailFrom(wf)
	c.addSupplied(ctx, wf, &d)
	return d, nil
}

// patchSpec merge-patches the Workflow's spec.
func (c *Ops) patchSpec(ctx context.Context, ns, name string, spec map[string]any) error {
	body, _ := json.Marshal(map[string]any{"spec": spec})
	_, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	return kubeErr(err, "workflow "+ns+"/"+name)
}

func finished(wf *Workflow, op string) error {
	if wf.Status.Phase.Completed() {
		return fmt.Errorf("workflow %s/%s has finished (%s): there is nothing to %s: %w", wf.Namespace, wf.Name, wf.Status.Phase, op, errdefs.ErrConflict)
	}
	return nil
}

// Shutdown stops (strategy Stop: the exit handler runs) or terminates (Terminate: it does not)
// a running Workflow, as `argo stop` and `argo terminate`: its pods are deleted and nothing new
// starts.
func (c *Ops) Shutdown(ctx context.Context, ns, name, strategy string) error {
	if strategy != "Stop" && strategy != "Terminate" {
		return errdefs.Invalid("shutdown", strategy, "is not Stop or Terminate")
	}
	_, wf, err := c.getWorkflow(ctx, ns, name)
	if err != nil {
		return err
	}
	if err := finished(wf, strings.ToLower(strategy)); err != nil {
		return err
	}
	return c.patchSpec(ctx, ns, name, map[string]any{"shutdown": strategy})
}

// Suspend holds a running Workflow: no new node starts until it is resumed (`argo suspend`).
func (c *Ops) Suspend(ctx context.Context, ns, name string) error {
	_, wf, err := c.getWorkflow(ctx, ns, name)
	if err != nil {
		return err
	}
	if err := finished(wf, "suspend"); err != nil {
		return err
	}
	return c.patchSpec(ctx, ns, name, map[string]any{"suspend": true})
}

// Resubmit creates a new Workflow with the spec of ns/name (`argo resubmit`), named after it,
// labelled with where it comes from, and answers it.
func (c *Ops) Resubmit(ctx context.Context, ns, name string, by Submitter) (appproxyv1.WorkflowDetail, error) {
	u, _, err := c.getWorkflow(ctx, ns, name)
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	delete(spec, "shutdown")
	delete(spec, "suspend")
	meta := metav1.ObjectMeta{GenerateName: name + "-", Namespace: ns, Labels: map[string]string{}, Annotations: map[string]string{}}
	for k, v := range u.GetLabels() {
		if !slices.Contains([]string{LabelCompleted, LabelCreator, LabelCreatorEmail, LabelCronWorkflow, LabelSensor}, k) {
			meta.Labels[k] = v
		}
	}
	meta.Labels[LabelResubmittedFrom] = name
	markCreator(&meta, by)
	nu, err := toUnstructured(struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
	}{metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "Workflow"}, meta})
	if err != nil {
		return appproxyv1.WorkflowDetail{}, err
	}
	nu.Object["spec"] = spec
	out, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).Create(ctx, nu, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return appproxyv1.WorkflowDetail{}, kubeErr(err, "resubmit workflow "+ns+"/"+name)
	}
	c.log.Info("workflow resubmitted", logWorkflow, ns+"/"+out.GetName(), "from", name, "by", by.Email)
	return detailOf(out)
}

// Retry runs a Failed or Errored Workflow again from where it failed (`argo retry`): its
// failed, errored and omitted nodes (and the exit handler's) are forgotten with their pods,
// what succeeded is kept, and the controller walks the tree again.
func (c *Ops) Retry(ctx context.Context, ns, name string) error {
	u, wf, err := c.getWorkflow(ctx, ns, name)
	if err != nil {
		return err
	}
	if wf.Status.Phase != WorkflowFailed && wf.Status.Phase != WorkflowError {
		phase := wf.Status.Phase
		if phase == "" {
			phase = WorkflowPending
		}
		return fmt.Errorf("workflow %s/%s is %s: only a Failed or Errored workflow is retried: %w", ns, name, phase, errdefs.ErrConflict)
	}
	exitPrefix := wf.Name + ".onExit"
	keep := map[string]NodeStatus{}
	var pods []string
	for id, n := range wf.Status.Nodes {
		drop := n.Phase == NodeFailed || n.Phase == NodeError || n.Phase == NodeOmitted || n.Name == exitPrefix || strings.HasPrefix(n.Name, exitPrefix+"(") ||
			strings.HasPrefix(n.Name, exitPrefix+".") || strings.HasPrefix(n.Name, exitPrefix+"[")
		if !drop {
			keep[id] = n
			continue
		}
		if n.Type == NodeTypePod {
			pods = append(pods, podName(n.ID))
		}
	}
	// The hooks and exit handler of a forgotten node run again with it.
	for id, n := range keep {
		if n.NodeFlag == nil || !n.NodeFlag.Hooked {
			continue
		}
		for _, p := range wf.Status.Nodes {
			if _, kept := keep[p.ID]; !kept && slices.Contains(p.Children, id) {
				delete(keep, id)
				if n.Type == NodeTypePod {
					pods = append(pods, podName(n.ID))
				}
				break
			}
		}
	}
	// A node kept (it succeeded, or is still running) no longer links to a forgotten one.
	for id, n := range keep {
		var children []string
		for _, ch := range n.Children {
			if _, ok := keep[ch]; ok {
				children = append(children, ch)
			}
		}
		n.Children = children
		keep[id] = n
	}
	for _, p := range pods {
		if err := c.deletePodNow(ctx, ns, p); err != nil {
			return err
		}
	}
	st := wf.Status
	st.Nodes = keep
	st.Phase, st.Message, st.FinishedAt = WorkflowRunning, "", metav1.Time{}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	u.Object["status"] = m
	unstructured.RemoveNestedField(u.Object, "spec", "shutdown")
	lbl := u.GetLabels()
	if lbl == nil {
		lbl = map[string]string{}
	}
	lbl[LabelCompleted] = "false"
	u.SetLabels(lbl)
	if _, err := c.dyn.Resource(WorkflowsResource).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return kubeErr(err, "workflow "+ns+"/"+name)
	}
	c.log.Info("workflow retried", logWorkflow, ns+"/"+name, "nodes-kept", len(keep), "pods-deleted", len(pods))
	return nil
}

// retryPodGone bounds the wait for a retried node's old pod to be gone.
const retryPodGone = 30 * time.Second

// deletePodNow deletes a pod at once and waits until the API server no longer has it, so that
// the node started again does not read the old pod's end.
func (c *Ops) deletePodNow(ctx context.Context, ns, name string) error {
	zero := int64(0)
	err := c.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return kubeErr(err, "pod "+ns+"/"+name)
	}
	deadline := time.Now().Add(retryPodGone)
	for {
		_, err := c.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s/%s is still being deleted after %s; retry again later: %w", ns, name, retryPodGone, errdefs.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ListTemplates returns the WorkflowTemplates of ns (every namespace when empty) and the
// ClusterWorkflowTemplates, by kind, namespace and name.
func (c *Controller) ListTemplates(ctx context.Context, ns string) ([]appproxyv1.WorkflowTemplate, error) {
	if ns == "" {
		ns = c.opts.Namespace
	}
	out := []appproxyv1.WorkflowTemplate{}
	l, err := c.dyn.Resource(WorkflowTemplatesResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kubeErr(err, "list workflow templates")
	}
	cl, err := c.dyn.Resource(ClusterWorkflowTemplatesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kubeErr(err, "list cluster workflow templates")
	}
	for _, items := range [][]unstructured.Unstructured{cl.Items, l.Items} {
		for i := range items {
			data, err := items[i].MarshalJSON()
			if err != nil {
				return nil, err
			}
			var t WorkflowTemplate
			if json.Unmarshal(data, &t) != nil {
				t = WorkflowTemplate{ObjectMeta: metav1.ObjectMeta{Name: items[i].GetName(), Namespace: items[i].GetNamespace()}}
			}
			out = append(out, templateOf(&t, items[i].GetKind()))
		}
	}
	return out, nil
}

// Template returns a WorkflowTemplate (cluster: a ClusterWorkflowTemplate).
func (c *Controller) Template(ctx context.Context, ns, name string, cluster bool) (appproxyv1.WorkflowTemplate, error) {
	t, err := c.getTemplate(ctx, ns, name, cluster)
	if err != nil {
		return appproxyv1.WorkflowTemplate{}, err
	}
	return templateOf(t, templateKind(cluster)), nil
}

func templateOf(t *WorkflowTemplate, kind string) appproxyv1.WorkflowTemplate {
	out := appproxyv1.WorkflowTemplate{Name: t.Name, Namespace: t.Namespace, Kind: kind, Entrypoint: t.Spec.Entrypoint,
		Parameters: []appproxyv1.WorkflowTemplateParameter{}, Templates: []string{}, CreatedAt: t.CreationTimestamp.UTC()}
	for _, p := range t.Spec.Arguments.Parameters {
		tp := appproxyv1.WorkflowTemplateParameter{Name: p.Name, Description: p.Description, Enum: []string{}}
		switch {
		case p.Value != nil:
			v := string(*p.Value)
			tp.Value = &v
		case p.Default != nil:
			v := string(*p.Default)
			tp.Value = &v
		}
		for _, e := range p.Enum {
			tp.Enum = append(tp.Enum, string(e))
		}
		out.Parameters = append(out.Parameters, tp)
	}
	for _, tm := range t.Spec.Templates {
		out.Templates = append(out.Templates, tm.Name)
	}
	return out
}

// maxRecordMessage bounds a reported message.
const maxRecordMessage = 4096

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Record is a finished Workflow as the runtime reports it to the control plane.
func Record(wf *Workflow) runtimev1.WorkflowRecord {
	r := runtimev1.WorkflowRecord{Namespace: wf.Namespace, Name: wf.Name, UID: string(wf.UID), Phase: string(wf.Status.Phase),
		Message: clip(wf.Status.Message, maxRecordMessage), StartedAt: wf.Status.StartedAt.UTC().Truncate(time.Second),
		FinishedAt: wf.Status.FinishedAt.UTC().Truncate(time.Second),
		Progress:   wf.Status.Progress, Trigger: runtimev1.WorkflowTriggerCluster}
	if ref := wf.Spec.WorkflowTemplateRef; ref != nil {
		r.Template = ref.Name
		if ref.ClusterScope {
			r.Template = "cluster/" + ref.Name
		}
	}
	switch l := wf.Labels; {
	case l[LabelResubmittedFrom] != "":
		r.Trigger, r.TriggeredBy = runtimev1.WorkflowTriggerResubmit, wf.Annotations[AnnotationSubmittedBy]
		if r.TriggeredBy == "" {
			r.TriggeredBy = l[LabelResubmittedFrom]
		}
	case wf.Annotations[AnnotationSubmittedBy] != "":
		r.Trigger, r.TriggeredBy = runtimev1.WorkflowTriggerSubmit, wf.Annotations[AnnotationSubmittedBy]
	case l[LabelCronWorkflow] != "":
		r.Trigger, r.TriggeredBy = runtimev1.WorkflowTriggerCron, l[LabelCronWorkflow]
	case l[LabelSensor] != "":
		r.Trigger, r.TriggeredBy = runtimev1.WorkflowTriggerSensor, l[LabelSensor]
	}
	r.TriggeredBy = clip(r.TriggeredBy, 256)
	for _, n := range sortedNodes(wf.Status.Nodes) {
		if len(r.Nodes) >= runtimev1.MaxWorkflowNodes {
			break
		}
		r.Nodes = append(r.Nodes, runtimev1.WorkflowNodeRecord{ID: n.ID, Name: n.Name, DisplayName: n.DisplayName, Type: string(n.Type),
			TemplateName: nodeTemplate(n), Phase: string(n.Phase), Message: clip(n.Message, 1024), StartedAt: n.StartedAt.UTC().Truncate(time.Second),
			FinishedAt: n.FinishedAt.UTC().Truncate(time.Second), Children: n.Children})
	}
	return r
}
