package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// CronWorkflow operations, as Argo's server and `argo cron` do them: list, get, create, lint and
// update (checked as `argo cron lint` checks it, so a bad one is refused naming the field before
// anything is written), delete, suspend and resume.

// CronOptions is a CronWorkflow to create or lint: its manifest (JSON) and namespace.
type CronOptions struct {
	Namespace string
	Manifest  []byte
	By        Submitter
}

// PrepareCron is the CronWorkflow a create makes, checked as far as it can be without the
// cluster: the manifest decoded and validated, the namespace, the creator's labels; unknown
// fields of the manifest are kept (the CRD preserves them). Errors are *errdefs.FieldError
// naming the field.
func PrepareCron(o CronOptions) (*CronWorkflow, *unstructured.Unstructured, error) {
	if len(o.Manifest) == 0 || string(o.Manifest) == "null" {
		return nil, nil, errdefs.Invalid("cronWorkflow", "", "is required: a CronWorkflow manifest")
	}
	cw, verr := DecodeCron(o.Manifest)
	if cw == nil {
		return nil, nil, verr
	}
	if verr != nil {
		return nil, nil, fmt.Errorf("invalid spec: %w", verr)
	}
	if cw.Name == "" {
		return nil, nil, errdefs.Invalid("metadata.name", "", "is required")
	}
	if len(validation.IsDNS1123Subdomain(cw.Name)) > 0 {
		return nil, nil, errdefs.Invalid("metadata.name", cw.Name, "is not a name: lowercase letters, digits, '-' and '.'")
	}
	ns := o.Namespace
	if cw.Namespace != "" {
		if ns != "" && cw.Namespace != ns {
			return nil, nil, errdefs.Invalid("metadata.namespace", cw.Namespace, "differs from the namespace asked for, "+ns)
		}
		ns = cw.Namespace
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, nil, errdefs.Invalid("namespace", ns, "is not a namespace name (a DNS-1123 label)")
	}
	cw.Namespace = ns
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(o.Manifest); err != nil {
		return nil, nil, errdefs.Invalid("cronWorkflow", "", "does not decode: "+err.Error())
	}
	delete(u.Object, "status")
	u.SetNamespace(ns)
	u.SetResourceVersion("")
	u.SetUID("")
	meta := metav1.ObjectMeta{Labels: u.GetLabels(), Annotations: u.GetAnnotations()}
	for _, k := range []string{LabelCreator, LabelCreatorEmail, LabelCronCompleted} {
		delete(meta.Labels, k)
	}
	delete(meta.Annotations, AnnotationSubmittedBy)
	markCreator(&meta, o.By)
	u.SetLabels(meta.Labels)
	u.SetAnnotations(meta.Annotations)
	cw.Labels, cw.Annotations = meta.Labels, meta.Annotations
	return cw, u, nil
}

// checkCronTemplate checks a CronWorkflow whose workflowSpec runs a workflowTemplateRef against
// that template, as the controller will.
func (c *Controller) checkCronTemplate(ctx context.Context, cw *CronWorkflow) error {
	ref := cw.Spec.WorkflowSpec.WorkflowTemplateRef
	if ref == nil {
		return nil
	}
	t, err := c.getTemplate(ctx, cw.Namespace, ref.Name, ref.ClusterScope)
	if err != nil {
		return err
	}
	if err := ValidateSpec(mergeSpec(&cw.Spec.WorkflowSpec, &t.Spec), "spec.workflowSpec"); err != nil {
		return fmt.Errorf("invalid spec: spec.workflowSpec.workflowTemplateRef %q: %w", ref.Name, err)
	}
	return nil
}

// LintCron checks a CronWorkflow as CreateCron would, and answers it as it would be created
// (`argo cron lint`). Nothing is created.
func (c *Controller) LintCron(ctx context.Context, o CronOptions) (appproxyv1.CronWorkflow, error) {
	cw, u, err := PrepareCron(o)
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	if err := c.checkCronTemplate(ctx, cw); err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	return c.cronSummary(u), nil
}

// CreateCron creates a CronWorkflow after checking it (`argo cron create`) and answers it as
// created.
func (c *Controller) CreateCron(ctx context.Context, o CronOptions) (appproxyv1.CronWorkflow, error) {
	cw, u, err := PrepareCron(o)
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	if err := c.checkCronTemplate(ctx, cw); err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	out, err := c.dyn.Resource(CronWorkflowsResource).Namespace(cw.Namespace).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return appproxyv1.CronWorkflow{}, kubeErr(err, "cron workflow "+cw.Namespace+"/"+cw.Name)
	}
	c.log.Info("cron workflow created", logWorkflow, cw.Namespace+"/"+cw.Name, "by", o.By.Email)
	return c.cronSummary(out), nil
}

// UpdateCron replaces the spec of CronWorkflow ns/name with the manifest's (`argo cron update`),
// checked as CreateCron checks it, and answers it as updated. Its status, labels and annotations
// are kept (the controller schedules by the new spec from now on: times the new schedule missed
// are not run); the manifest must name it, in ns. The write is guarded by the resourceVersion it
// read, so a concurrent change is a conflict, not lost.
func (c *Controller) UpdateCron(ctx context.Context, ns, name string, o CronOptions) (appproxyv1.CronWorkflow, error) {
	if o.Namespace != "" && o.Namespace != ns {
		return appproxyv1.CronWorkflow{}, errdefs.Invalid("namespace", o.Namespace, "differs from the CronWorkflow's namespace, "+ns)
	}
	o.Namespace = ns
	cw, u, err := PrepareCron(o)
	if err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	if cw.Name != name {
		return appproxyv1.CronWorkflow{}, errdefs.Invalid("metadata.name", cw.Name, "differs from the CronWorkflow updated, "+name+": a manifest updates the CronWorkflow it names")
	}
	if err := c.checkCronTemplate(ctx, cw); err != nil {
		return appproxyv1.CronWorkflow{}, err
	}
	res := c.dyn.Resource(CronWorkflowsResource).Namespace(ns)
	cur, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return appproxyv1.CronWorkflow{}, kubeErr(err, "cron workflow "+ns+"/"+name)
	}
	obj := cur.DeepCopy()
	obj.Object["spec"] = u.Object["spec"]
	out, err := res.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return appproxyv1.CronWorkflow{}, kubeErr(err, "cron workflow "+ns+"/"+name)
	}
	c.log.Info("cron workflow updated", logWorkflow, ns+"/"+name, "by", o.By.Email)
	return c.cronSummary(out), nil
}

// ListCrons returns the CronWorkflows of namespace ns (every namespace the controller watches
// when empty), by namespace and name.
func (c *Controller) ListCrons(ctx context.Context, ns string) ([]appproxyv1.CronWorkflow, error) {
	if ns == "" {
		ns = c.opts.Namespace
	}
	l, err := c.dyn.Resource(CronWorkflowsResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kubeErr(err, "list cron workflows")
	}
	out := make([]appproxyv1.CronWorkflow, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, c.cronSummary(&l.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// GetCron returns a CronWorkflow.
func (c *Controller) GetCron(ctx context.Context, ns, name string) (appproxyv1.CronWorkflow, error) {
	u, err := c.dyn.Resource(CronWorkflowsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return appproxyv1.CronWorkflow{}, kubeErr(err, "cron workflow "+ns+"/"+name)
	}
	return c.cronSummary(u), nil
}

// DeleteCron deletes a CronWorkflow; its Workflows go with it (owner references), as with
// `argo cron delete`.
func (c *Controller) DeleteCron(ctx context.Context, ns, name string) error {
	fg := metav1.DeletePropagationBackground
	err := c.dyn.Resource(CronWorkflowsResource).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil {
		return kubeErr(err, "cron workflow "+ns+"/"+name)
	}
	c.log.Info("cron workflow deleted", logWorkflow, ns+"/"+name)
	return nil
}

// SuspendCron sets spec.suspend (`argo cron suspend` and `resume`): a suspended CronWorkflow
// runs nothing. A CronWorkflow its stop strategy stopped is not resumed: it runs no more, as in
// Argo, and saying so beats a resume that changes nothing.
func (c *Controller) SuspendCron(ctx context.Context, ns, name string, suspend bool) (appproxyv1.CronWorkflow, error) {
	cur, err := c.GetCron(ctx, ns, name)
	if err != nil {
		return cur, err
	}
	if !suspend && cur.Phase == CronPhaseStopped {
		return cur, fmt.Errorf("cron workflow %s/%s was stopped by its stopStrategy (%s; succeeded %d, failed %d) and runs no more: delete it and create it again to start afresh: %w",
			ns, name, cur.StopExpression, cur.Succeeded, cur.Failed, errdefs.ErrConflict)
	}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"suspend": suspend}})
	out, err := c.dyn.Resource(CronWorkflowsResource).Namespace(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return appproxyv1.CronWorkflow{}, kubeErr(err, "cron workflow "+ns+"/"+name)
	}
	return c.cronSummary(out), nil
}

// cronSummary is a CronWorkflow as the API answers it. One that does not decode is answered
// with a SpecError naming the field.
func (c *Controller) cronSummary(u *unstructured.Unstructured) appproxyv1.CronWorkflow {
	s := appproxyv1.CronWorkflow{Name: u.GetName(), Namespace: u.GetNamespace(), UID: string(u.GetUID()),
		CreatedAt: u.GetCreationTimestamp().UTC(), Creator: u.GetAnnotations()[AnnotationSubmittedBy]}
	var obj struct {
		CronWorkflow
		Status CronWorkflowStatus `json:"status"`
	}
	data, err := u.MarshalJSON()
	if err == nil {
		err = json.Unmarshal(data, &obj)
	}
	if err != nil {
		s.Conditions = []appproxyv1.CronWorkflowCondition{{Type: CondSpecError, Status: string(metav1.ConditionTrue),
			Message: decodeError(err, "CronWorkflow").Error()}}
		return s
	}
	sp, st := obj.Spec, obj.Status
	s.Schedules = sp.Schedules
	if sp.Schedule != "" {
		s.Schedules = []string{sp.Schedule}
	}
	s.Timezone, s.ConcurrencyPolicy, s.StartingDeadlineSeconds, s.Suspended = sp.Timezone, sp.ConcurrencyPolicy, sp.StartingDeadlineSeconds, sp.Suspend
	if sp.StopStrategy != nil {
		s.StopExpression = sp.StopStrategy.Expression
	}
	s.When = sp.When
	s.Phase, s.Succeeded, s.Failed = st.Phase, st.Succeeded, st.Failed
	if st.LastScheduledTime != nil {
		s.LastScheduledTime = timePtr(*st.LastScheduledTime)
	}
	for _, a := range st.Active {
		s.Active = append(s.Active, a.Name)
	}
	for _, cd := range st.Conditions {
		s.Conditions = append(s.Conditions, appproxyv1.CronWorkflowCondition{Type: cd.Type, Status: string(cd.Status), Message: cd.Message})
	}
	s.Entrypoint = sp.WorkflowSpec.Entrypoint
	if ref := sp.WorkflowSpec.WorkflowTemplateRef; ref != nil {
		s.Template = ref.Name
		if ref.ClusterScope {
			s.Template = "cluster/" + ref.Name
		}
	}
	if !sp.Suspend && st.Phase != CronPhaseStopped {
		if exprs, err := cronSchedules(&sp); err == nil {
			if next := nextDue(exprs, c.opts.Now()); !next.IsZero() {
				n := next.UTC()
				s.NextScheduledTime = &n
			}
		}
	}
	return s
}
