package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/schedule"
)

// CronWorkflow scheduling (Argo's cron controller, in the same work queue as Workflows).
const (
	// cronKeyPrefix marks a CronWorkflow's key in the queue (namespaces have no ':').
	cronKeyPrefix = "cron:"
	// AnnotationScheduledTime on a Workflow a CronWorkflow created is the time it was due.
	AnnotationScheduledTime = "workflows.argoproj.io/scheduled-time"
	// defaultCronGrace is how late a due schedule may still start when the CronWorkflow sets
	// no startingDeadlineSeconds (Argo then runs no missed schedule; this allows for the
	// controller's own lag, and for a restart within the minute).
	defaultCronGrace = time.Minute
	// Argo's defaults of successfulJobsHistoryLimit and failedJobsHistoryLimit.
	defaultSuccessfulHistory = 3
	defaultFailedHistory     = 1
	// maxCronWait bounds a requeue, so that a clock change is noticed.
	maxCronWait = time.Hour
	// Argo's condition types on a CronWorkflow.
	CondSpecError       = "SpecError"
	CondSubmissionError = "SubmissionError"
	// EventReasonSkipped is the reason of the Event a Forbid CronWorkflow records when a
	// schedule passes while its Workflow still runs.
	EventReasonSkipped = "WorkflowSkipped"
)

// CronWorkflowStatus is Argo's CronWorkflow status.
type CronWorkflowStatus struct {
	Active            []corev1.ObjectReference `json:"active,omitempty"`
	LastScheduledTime *metav1.Time             `json:"lastScheduledTime,omitempty"`
	Conditions        []CronCondition          `json:"conditions,omitempty"`
	// Succeeded and Failed count its finished Workflows (Failed: Failed or Error, and the
	// schedules whose Workflow the API server refused), each once: a run is counted when it is
	// first seen finished while the status lists it as active, or scheduled after the status's
	// lastScheduledTime (it finished before a status named it).
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	// Phase is Active, or Stopped once spec.stopStrategy.expression held.
	Phase string `json:"phase,omitempty"`
}

// CronCondition is one of a CronWorkflow's conditions (SpecError, SubmissionError).
type CronCondition struct {
	Type    string                 `json:"type"`
	Status  metav1.ConditionStatus `json:"status"`
	Message string                 `json:"message,omitempty"`
}

// cronSchedules parses the CronWorkflow's schedule (or schedules) in its timezone; the error
// names the field (spec.schedule, spec.schedules[i] or spec.timezone).
func cronSchedules(s *CronWorkflowSpec) ([]schedule.Expr, error) {
	type item struct{ field, expr string }
	var items []item
	switch {
	case s.Schedule != "" && len(s.Schedules) > 0:
		return nil, errdefs.Invalid("spec.schedules", "", "cannot be given with spec.schedule: give the schedules in one of them")
	case s.Schedule != "":
		items = append(items, item{"spec.schedule", s.Schedule})
	case len(s.Schedules) == 0:
		return nil, errdefs.Invalid("spec.schedule", "", "is required (a cron expression)")
	}
	if len(s.Schedules) > 20 {
		return nil, errdefs.Invalid("spec.schedules", strconv.Itoa(len(s.Schedules)), "lists more than 20 schedules")
	}
	for i, e := range s.Schedules {
		items = append(items, item{fmt.Sprintf("spec.schedules[%d]", i), e})
	}
	out := make([]schedule.Expr, 0, len(items))
	for _, it := range items {
		e, err := schedule.Parse(it.expr, s.Timezone)
		if err != nil {
			var fe *errdefs.FieldError
			if errors.As(err, &fe) {
				field := it.field
				if fe.Field == schedule.FieldTimezone {
					field = "spec.timezone"
				}
				return nil, errdefs.Invalid(field, fe.Value, fe.Reason)
			}
			return nil, errdefs.Invalid(it.field, it.expr, err.Error())
		}
		out = append(out, e)
	}
	return out, nil
}

// latestDue is the latest time any of exprs was due in (from, now], or zero.
func latestDue(exprs []schedule.Expr, from, now time.Time) time.Time {
	var latest time.Time
	for _, e := range exprs {
		t := e.Next(from)
		for n := 0; !t.IsZero() && !t.After(now) && n < 100000; n++ {
			if t.After(latest) {
				latest = t
			}
			t = e.Next(t)
		}
	}
	return latest
}

// nextDue is the first time any of exprs is due after t, or zero.
func nextDue(exprs []schedule.Expr, t time.Time) time.Time {
	var next time.Time
	for _, e := range exprs {
		if n := e.Next(t); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// schedChange is a CronWorkflow's schedule (as its last-used-schedule annotation writes it)
// that differs from the annotation, and when the controller first saw it.
type schedChange struct {
	sched string
	at    time.Time
}

// cronWorkflowName is the Workflow a CronWorkflow creates for the time due: Argo's name (the
// CronWorkflow's, then the Unix time), which makes a second creation for the same time fail
// as already existing — so a schedule never runs twice, across restarts too.
func cronWorkflowName(cron string, due time.Time) string {
	suffix := "-" + strconv.FormatInt(due.Unix(), 10)
	if len(cron)+len(suffix) > 63 {
		cron = strings.TrimRight(cron[:63-len(suffix)], "-.")
	}
	return cron + suffix
}

func (c *Controller) enqueueCron(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(cronKeyPrefix + key)
	}
}

// reconcileCron runs a CronWorkflow: prunes its finished Workflows beyond the history limits,
// creates the Workflow of a schedule that is due (as its concurrencyPolicy allows), and writes
// its status.
func (c *Controller) reconcileCron(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, cronKeyPrefix))
	if err != nil {
		return 0, nil
	}
	obj, err := c.crons.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.written, key)
		delete(c.whenSkipped, key)
		delete(c.schedChanged, key)
		c.mu.Unlock()
		return 0, nil // its Workflows go with it (owner references)
	}
	if err != nil {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured)
	c.mu.Lock()
	stale := c.written[key] == u.GetResourceVersion()
	c.mu.Unlock()
	if stale {
		return staleRetry, nil
	}
	if u.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return 0, err
	}
	now := c.opts.Now()
	var old CronWorkflowStatus
	if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &old)
	}
	st := old
	// A SubmissionError stays until a run is created (as Argo's); the rest is decided anew.
	st.Conditions = slices.DeleteFunc(slices.Clone(old.Conditions), func(c CronCondition) bool { return c.Type != CondSubmissionError })
	st.Phase = CronPhaseActive
	if old.Phase == CronPhaseStopped {
		st.Phase = CronPhaseStopped // for good, as in Argo
	}
	cw, verr := DecodeCron(data)
	var exprs []schedule.Expr
	if verr == nil {
		exprs, verr = cronSchedules(&cw.Spec)
	}
	if verr != nil {
		st.Conditions = append(st.Conditions, CronCondition{Type: CondSpecError, Status: metav1.ConditionTrue, Message: verr.Error()})
		if !slices.Equal(old.Conditions, st.Conditions) {
			c.log.Info("cron workflow refused", logWorkflow, key, logErr, verr)
		}
		return 0, c.writeCronStatus(ctx, key, u, old, st, "")
	}
	sched := cronScheduleString(&cw.Spec)

	// The Workflows it created: the active ones, and the finished beyond the history limits.
	list, err := c.workflows.ByNamespace(ns).List(labels.SelectorFromSet(labels.Set{LabelCronWorkflow: name}))
	if err != nil {
		return 0, err
	}
	wasActive := map[types.UID]bool{}
	for _, a := range old.Active {
		wasActive[a.UID] = true
	}
	var active []*unstructured.Unstructured
	var succeeded, failed []*Workflow
	runs := map[string]bool{} // names of its Workflows
	for _, o := range list {
		wu := o.(*unstructured.Unstructured)
		if !metav1.IsControlledBy(wu, cw) {
			continue
		}
		b, _ := wu.MarshalJSON()
		var wf Workflow
		if json.Unmarshal(b, &wf) != nil {
			continue
		}
		scheduled, _ := time.Parse(time.RFC3339, wf.Annotations[AnnotationScheduledTime])
		if !scheduled.IsZero() && (st.LastScheduledTime == nil || scheduled.After(st.LastScheduledTime.Time)) {
			t := metav1.NewTime(scheduled)
			st.LastScheduledTime = &t // its run exists: a status write after the create was refused
		}
		// Counted once: the status named it active, or it was scheduled after what the status
		// had recorded, and the counts are written with the new active list and time.
		fresh := wf.Status.Phase.Completed() && (wasActive[wf.UID] ||
			(!scheduled.IsZero() && (old.LastScheduledTime == nil || scheduled.After(old.LastScheduledTime.Time))))
		if fresh && wf.Status.Phase == WorkflowSucceeded {
			st.Succeeded++
		} else if fresh {
			st.Failed++
		}
		if wu.GetDeletionTimestamp() != nil {
			continue
		}
		runs[wu.GetName()] = true
		switch {
		case !wf.Status.Phase.Completed():
			active = append(active, wu)
		case fresh:
			// Pruned once its count is written: were the write refused, it would be counted
			// again from the cluster.
		case wf.Status.Phase == WorkflowSucceeded:
			succeeded = append(succeeded, &wf)
		default:
			failed = append(failed, &wf)
		}
	}
	if err := c.pruneHistory(ctx, succeeded, cw.Spec.SuccessfulJobsHistoryLimit, defaultSuccessfulHistory); err != nil {
		return 0, err
	}
	if err := c.pruneHistory(ctx, failed, cw.Spec.FailedJobsHistoryLimit, defaultFailedHistory); err != nil {
		return 0, err
	}

	// The stop strategy, over the counts as they are now (before a run, as Argo checks it).
	halted := false
	if st.Phase != CronPhaseStopped && cw.Spec.StopStrategy != nil {
		var last *time.Time
		if st.LastScheduledTime != nil {
			last = &st.LastScheduledTime.Time
		}
		stop, err := stopHolds(cw, st.Succeeded, st.Failed, last)
		switch {
		case err != nil:
			halted = true
			st.Conditions = append(st.Conditions, CronCondition{Type: CondSpecError, Status: metav1.ConditionTrue,
				Message: fmt.Sprintf("failed to check CronWorkflow '%s' stopping condition: %v", cw.Name, err)})
		case stop:
			st.Phase = CronPhaseStopped
			c.log.Info("cron workflow stopped by its stop strategy", logWorkflow, key, "succeeded", st.Succeeded, "failed", st.Failed)
		}
	}
	halted = halted || st.Phase == CronPhaseStopped

	// What is due: the latest schedule since the last one run (or since creation), if it is
	// still within the starting deadline.
	last := cw.CreationTimestamp.Time
	if old.LastScheduledTime != nil && old.LastScheduledTime.After(last) {
		last = old.LastScheduledTime.Time
	}
	grace := defaultCronGrace
	if d := cw.Spec.StartingDeadlineSeconds; d != nil && *d >= 0 {
		grace = time.Duration(*d) * time.Second
	}
	from := last
	if w := now.Add(-grace - time.Second); w.After(from) {
		from = w
	}
	// Its schedule changed since it last ran by one: the times the new schedule missed are not
	// run, as Argo does (a schedule moved to just before now would otherwise run at once). The
	// annotation is rewritten once that no longer matters: a time of the new schedule has come,
	// or the change is older than the starting deadline.
	annotate := false
	if used, ok := u.GetAnnotations()[AnnotationLastUsedSchedule]; !ok {
		annotate = true
	} else if used != sched {
		c.mu.Lock()
		ch, seen := c.schedChanged[key]
		if !seen || ch.sched != sched {
			ch = schedChange{sched: sched, at: now}
			c.schedChanged[key] = ch
		}
		c.mu.Unlock()
		if ch.at.After(from) {
			from = ch.at
		}
		annotate = now.Sub(ch.at) > grace+time.Second
	} else {
		c.mu.Lock()
		delete(c.schedChanged, key)
		c.mu.Unlock()
	}
	due := latestDue(exprs, from, now)
	if !due.IsZero() && now.Sub(due) > grace {
		due = time.Time{}
	}
	annotate = annotate || !due.IsZero()
	if !due.IsZero() && !cw.Spec.Suspend && runs[cronWorkflowName(cw.Name, due)] {
		// Its run exists: created by a reconcile whose status write was refused (the object
		// had changed). It is this schedule's run, not a concurrent one to skip or replace.
		t := metav1.NewTime(due)
		st.LastScheduledTime = &t
	} else if !due.IsZero() && !cw.Spec.Suspend && !halted {
		run := true
		if cw.Spec.When != "" {
			var werr error
			run, werr = c.cronWhen(ctx, key, cw, st, due)
			if werr != nil {
				st.Conditions = append(st.Conditions, CronCondition{Type: CondSpecError, Status: metav1.ConditionTrue,
					Message: fmt.Sprintf("failed to evaluate CronWorkflow '%s' when: %v", cw.Name, werr)})
			}
		}
		switch policy := cw.Spec.ConcurrencyPolicy; {
		case !run:
		case policy == "Forbid":
			if len(active) > 0 {
				run = false
				c.cronEvent(ctx, cw, due, fmt.Sprintf("skipped the run due at %s: concurrencyPolicy is Forbid and workflow %s is running",
					due.UTC().Format(time.RFC3339), active[0].GetName()))
			}
		case policy == "Replace":
			for _, a := range active {
				if err := c.patchSpec(ctx, ns, a.GetName(), map[string]any{"shutdown": "Terminate"}); err != nil && !apierrors.IsNotFound(err) {
					return 0, err
				}
			}
		}
		if run {
			created, err := c.createCronWorkflow(ctx, u, cw, due)
			switch {
			case err != nil && errors.Is(err, errdefs.ErrInvalid):
				// This schedule is over, counted as failed (as Argo counts a refused submission).
				st.Conditions = append(slices.DeleteFunc(st.Conditions, func(c CronCondition) bool { return c.Type == CondSubmissionError }),
					CronCondition{Type: CondSubmissionError, Status: metav1.ConditionTrue, Message: err.Error()})
				st.Failed++
				t := metav1.NewTime(due)
				st.LastScheduledTime = &t
			case err != nil:
				return 0, err
			default:
				t := metav1.NewTime(due)
				st.LastScheduledTime = &t
				st.Conditions = slices.DeleteFunc(st.Conditions, func(c CronCondition) bool { return c.Type == CondSubmissionError })
				if created != nil {
					active = append(active, created)
					c.log.Info("cron workflow ran", logWorkflow, key, "workflow", created.GetName(), "due", due)
				}
			}
		}
	}
	st.Active = nil
	for _, a := range active {
		st.Active = append(st.Active, corev1.ObjectReference{APIVersion: Group + "/" + Version, Kind: "Workflow",
			Namespace: a.GetNamespace(), Name: a.GetName(), UID: a.GetUID()})
	}
	slices.SortFunc(st.Active, func(a, b corev1.ObjectReference) int { return strings.Compare(a.Name, b.Name) })
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	if !annotate {
		sched = "" // not yet: see above
	}
	if err := c.writeCronStatus(ctx, key, u, old, st, sched); err != nil {
		return 0, err
	}
	if halted {
		return maxCronWait, nil
	}
	next := nextDue(exprs, now)
	if next.IsZero() {
		return maxCronWait, nil
	}
	return min(next.Sub(now)+10*time.Millisecond, maxCronWait), nil
}

// pruneHistory deletes the oldest finished Workflows beyond limit (def when nil).
func (c *Controller) pruneHistory(ctx context.Context, wfs []*Workflow, limit *int32, def int) error {
	keep := def
	if limit != nil {
		keep = max(int(*limit), 0)
	}
	if len(wfs) <= keep {
		return nil
	}
	slices.SortFunc(wfs, func(a, b *Workflow) int {
		if d := b.Status.FinishedAt.Compare(a.Status.FinishedAt.Time); d != 0 {
			return d
		}
		return strings.Compare(b.Name, a.Name)
	})
	for _, wf := range wfs[keep:] {
		err := c.dyn.Resource(WorkflowsResource).Namespace(wf.Namespace).Delete(ctx, wf.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete workflow %s beyond the history limit: %w", wf.Name, err)
		}
	}
	return nil
}

// createCronWorkflow creates the Workflow due at due: the CronWorkflow's workflowSpec (as
// stored, unknown fields kept) and workflowMetadata, labelled with and owned by it. It
// returns nil and no error when that Workflow exists already.
func (c *Controller) createCronWorkflow(ctx context.Context, u *unstructured.Unstructured, cw *CronWorkflow, due time.Time) (*unstructured.Unstructured, error) {
	wf := cronToWorkflow(u, cw)
	name := cronWorkflowName(cw.Name, due)
	wf.SetName(name)
	ann := wf.GetAnnotations()
	ann[AnnotationScheduledTime] = due.UTC().Format(time.RFC3339)
	wf.SetAnnotations(ann)
	out, err := c.dyn.Resource(WorkflowsResource).Namespace(cw.Namespace).Create(ctx, wf, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, nil
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return nil, errdefs.Invalid("spec.workflowSpec", "", "is refused by the API server: "+err.Error())
	case err != nil:
		return nil, fmt.Errorf("create workflow %s: %w", name, err)
	}
	return out, nil
}

// cronToWorkflow is the Workflow a CronWorkflow (u, decoded as cw) makes, without a name: its
// workflowSpec as stored (unknown fields kept) and workflowMetadata, labelled with and owned by
// it.
func cronToWorkflow(u *unstructured.Unstructured, cw *CronWorkflow) *unstructured.Unstructured {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec", "workflowSpec")
	if spec == nil {
		spec = map[string]any{}
	}
	lbl := map[string]any{}
	ann := map[string]any{}
	if m, _, _ := unstructured.NestedStringMap(u.Object, "spec", "workflowMetadata", "labels"); m != nil {
		for k, v := range m {
			lbl[k] = v
		}
	}
	if m, _, _ := unstructured.NestedStringMap(u.Object, "spec", "workflowMetadata", "annotations"); m != nil {
		for k, v := range m {
			ann[k] = v
		}
	}
	lbl[LabelCronWorkflow] = cw.Name
	wf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version, "kind": "Workflow",
		"metadata": map[string]any{"namespace": cw.Namespace, "labels": lbl, "annotations": ann},
		"spec":     spec,
	}}
	yes := true
	wf.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "CronWorkflow",
		Name: cw.Name, UID: cw.UID, Controller: &yes, BlockOwnerDeletion: &yes}})
	return wf
}

// cronWhen decides whether the run due at due goes ahead by spec.when, over the status's
// counts and the last time it ran. A time it skips is decided once: remembered, and recorded
// as an Event named for it, which a restarted controller finds. An expression that fails to
// evaluate skips the run too, with the error.
func (c *Controller) cronWhen(ctx context.Context, key string, cw *CronWorkflow, st CronWorkflowStatus, due time.Time) (bool, error) {
	c.mu.Lock()
	skipped := c.whenSkipped[key].Equal(due)
	c.mu.Unlock()
	name := cronEventName(cw.Name, "when", due)
	if !skipped {
		ev, err := c.kube.CoreV1().Events(cw.Namespace).Get(ctx, name, metav1.GetOptions{})
		skipped = err == nil && ev.InvolvedObject.UID == cw.UID // not one of an earlier CronWorkflow of that name
	}
	if skipped {
		return false, nil
	}
	var last *time.Time
	if st.LastScheduledTime != nil {
		last = &st.LastScheduledTime.Time
	}
	ok, err := whenHolds(cw, st.Succeeded, st.Failed, last)
	if ok && err == nil {
		return true, nil
	}
	// An expression that fails when it runs is evaluated again while the time is due (its
	// SpecError condition stays until the next evaluation); a false one is decided.
	msg := fmt.Sprintf("skipped the run due at %s: spec.when %q is false", due.UTC().Format(time.RFC3339), cw.Spec.When)
	if err != nil {
		msg = fmt.Sprintf("skipped the run due at %s: %v", due.UTC().Format(time.RFC3339), err)
	}
	c.log.Info("cron workflow run skipped by its when", logWorkflow, key, "due", due, logErr, err)
	if err != nil {
		name = cronEventName(cw.Name, "when-error", due)
	}
	c.recordCronEvent(ctx, cw, name, msg)
	if err == nil {
		c.mu.Lock()
		c.whenSkipped[key] = due
		c.mu.Unlock()
	}
	return false, err
}

// cronEventName is the name of the Event of a skipped run: one per CronWorkflow, cause and due
// time.
func cronEventName(cron, cause string, due time.Time) string {
	return cron + "." + cause + "." + strconv.FormatInt(due.Unix(), 10)
}

// cronEvent records a Normal Event on the CronWorkflow, once per due time.
func (c *Controller) cronEvent(ctx context.Context, cw *CronWorkflow, due time.Time, msg string) {
	c.recordCronEvent(ctx, cw, cronEventName(cw.Name, "skip", due), msg)
}

// recordCronEvent records a Normal Event WorkflowSkipped named name on the CronWorkflow, once.
func (c *Controller) recordCronEvent(ctx context.Context, cw *CronWorkflow, name, msg string) {
	now := metav1.NewTime(c.opts.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cw.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: Group + "/" + Version, Kind: "CronWorkflow", Namespace: cw.Namespace,
			Name: cw.Name, UID: cw.UID},
		Reason: EventReasonSkipped, Message: msg, Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "workflow-controller"},
	}
	_, err := c.kube.CoreV1().Events(cw.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.log.Warn("record event", logWorkflow, cw.Namespace+"/"+cw.Name, logErr, err)
	}
}

// writeCronStatus writes st when it differs from old, and the last-used-schedule annotation
// when sched (the schedule it is scheduled by; "" leaves it) differs from it (the CRD has no
// status subresource, as Argo's: an update of the whole object, guarded by its
// resourceVersion).
func (c *Controller) writeCronStatus(ctx context.Context, key string, u *unstructured.Unstructured, old, st CronWorkflowStatus, sched string) error {
	a, _ := json.Marshal(old)
	b, _ := json.Marshal(st)
	// A Stopped CronWorkflow carries Argo's label, so that a selector finds it.
	label := st.Phase == CronPhaseStopped && u.GetLabels()[LabelCronCompleted] != "true"
	used, annotated := u.GetAnnotations()[AnnotationLastUsedSchedule]
	annotate := sched != "" && (!annotated || used != sched)
	if string(a) == string(b) && !label && !annotate {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	obj := u.DeepCopy()
	obj.Object["status"] = m
	if label {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[LabelCronCompleted] = "true"
		obj.SetLabels(l)
	}
	if annotate {
		an := obj.GetAnnotations()
		if an == nil {
			an = map[string]string{}
		}
		an[AnnotationLastUsedSchedule] = sched
		obj.SetAnnotations(an)
	}
	before := u.GetResourceVersion()
	_, err := c.dyn.Resource(CronWorkflowsResource).Namespace(u.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		c.queue.AddAfter(key, staleRetry)
		return nil
	}
	if err != nil {
		return fmt.Errorf("write cron workflow status: %w", err)
	}
	c.mu.Lock()
	c.written[key] = before
	c.mu.Unlock()
	return nil
}
