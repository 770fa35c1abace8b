package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// PauseReasonInconclusiveExperiment: an experiment step's Experiment ended Inconclusive; the
// Rollout waits to be promoted or aborted.
const PauseReasonInconclusiveExperiment PauseReason = "InconclusiveExperiment"

// RolloutExperimentStatus is the current experiment step's Experiment, as the controller last
// saw it.
type RolloutExperimentStatus struct {
	Name    string
	Phase   AnalysisPhase
	Message string
}

// experimentName is the Experiment of a revision's experiment step.
func experimentName(ro *Rollout, hash string, idx int32) string {
	return analysisRunName(ro, hash, idx)
}

// runExperimentStep creates the current step's Experiment when the step is an experiment step,
// and terminates the Rollout's other Experiments still running (the step was promoted past, the
// update was aborted or replaced). It returns the current Experiment's state.
func (c *Controller) runExperimentStep(ctx context.Context, ro *Rollout, rss []*appsv1.ReplicaSet) (*RolloutExperimentStatus, error) {
	cs := ro.Spec.Strategy.Canary
	st := ro.Status
	hash := PodTemplateHash(&ro.Spec.Template, st.CollisionCount)
	current := ""
	if cs != nil && !st.Abort && !ro.Spec.Paused && st.CurrentPodHash == hash && st.StableRS != hash && st.CurrentStepIndex != nil &&
		int(*st.CurrentStepIndex) < len(cs.Steps) && cs.Steps[*st.CurrentStepIndex].Experiment != nil {
		current = experimentName(ro, hash, *st.CurrentStepIndex)
	}
	if c.experiments == nil {
		return nil, nil
	}
	list, err := c.experiments.ByNamespace(ro.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var found *Experiment
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if ref := metav1.GetControllerOf(u); ref == nil || ref.UID != ro.UID {
			continue
		}
		b, _ := u.MarshalJSON()
		var ex Experiment
		if json.Unmarshal(b, &ex) != nil {
			continue
		}
		if ex.Name == current {
			found = &ex
			continue
		}
		if current == "" && st.Abort && ex.Name == st.Canary.CurrentExperiment {
			found = &ex // the aborted update's experiment: its verdict is the abort's reason
		}
		if !ex.Spec.Terminate && !experimentEnded(ex.Status.Phase) {
			body := []byte(`{"spec":{"terminate":true}}`)
			if _, err := c.dyn.Resource(ExperimentsResource).Namespace(ro.Namespace).Patch(ctx, ex.Name, types.MergePatchType, body,
				metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("terminate Experiment %s: %w", ex.Name, err)
			}
		}
	}
	if current == "" && found == nil {
		return nil, nil
	}
	if found != nil {
		return &RolloutExperimentStatus{Name: found.Name, Phase: found.Status.Phase, Message: found.Status.Message}, nil
	}
	ex, err := newStepExperiment(ro, rss, hash, *st.CurrentStepIndex, current)
	if err != nil {
		return &RolloutExperimentStatus{Name: current, Phase: AnalysisError, Message: err.Error()}, nil
	}
	b, _ := json.Marshal(ex)
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	if _, err := c.dyn.Resource(ExperimentsResource).Namespace(ro.Namespace).Create(ctx, &u, metav1.CreateOptions{FieldManager: FieldManager}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Experiment %s: %w", current, err)
	}
	return &RolloutExperimentStatus{Name: current, Phase: AnalysisPending}, nil
}

// newStepExperiment builds the Experiment of step idx: each template runs the stable or the
// canary pod template; podTemplateHashValue arguments are resolved here.
func newStepExperiment(ro *Rollout, rss []*appsv1.ReplicaSet, hash string, idx int32, name string) (*Experiment, error) {
	step := ro.Spec.Strategy.Canary.Steps[idx].Experiment
	f := fmt.Sprintf("spec.strategy.canary.steps[%d].experiment", idx)
	var stable *appsv1.ReplicaSet
	for _, rs := range rss {
		if hashOf(rs) == ro.Status.StableRS {
			stable = rs
		}
	}
	yes := true
	ex := &Experiment{
		TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "Experiment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ro.Namespace,
			Labels: map[string]string{PodTemplateHashLabel: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Rollout", Name: ro.Name, UID: ro.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: ExperimentSpec{Duration: step.Duration, ProgressDeadlineSeconds: ro.Spec.ProgressDeadlineSeconds},
	}
	for i, t := range step.Templates {
		tmpl := ro.Spec.Template.DeepCopy()
		if t.SpecRef == "stable" {
			if stable == nil {
				return nil, fmt.Errorf("%s.templates[%d].specRef: there is no stable ReplicaSet", f, i)
			}
			tmpl = stable.Spec.Template.DeepCopy()
			delete(tmpl.Labels, PodTemplateHashLabel)
		}
		sel := ro.Spec.Selector.DeepCopy()
		if t.Selector != nil {
			sel = t.Selector.DeepCopy()
		}
		if sel != nil {
			delete(sel.MatchLabels, PodTemplateHashLabel)
		}
		ex.Spec.Templates = append(ex.Spec.Templates, ExperimentTemplate{Name: t.Name, Replicas: t.Replicas,
			MinReadySeconds: ro.Spec.MinReadySeconds, Selector: sel, Template: *tmpl})
	}
	for _, a := range step.Analyses {
		a.Args = append([]AnalysisArg(nil), a.Args...)
		for j, arg := range a.Args {
			if arg.ValueFrom != nil && arg.ValueFrom.PodTemplateHashValue != nil {
				v := hash
				if *arg.ValueFrom.PodTemplateHashValue == "Stable" {
					v = ro.Status.StableRS
				}
				a.Args[j] = AnalysisArg{Name: arg.Name, Value: &v}
			}
		}
		ex.Spec.Analyses = append(ex.Spec.Analyses, a)
	}
	return ex, nil
}

// experimentStep decides an experiment step: done once its Experiment succeeded; a failed (or
// erroneous) Experiment aborts the update, back to stable, as a failed analysis does; an
// inconclusive one pauses the Rollout until it is promoted or aborted.
func experimentStep(w world, p *plan, st *RolloutStatus) bool {
	e := w.experiment
	if e == nil {
		return false
	}
	st.Canary.CurrentExperiment = e.Name
	switch e.Phase {
	case AnalysisSuccessful:
		return true
	case AnalysisFailed, AnalysisError:
		st.Abort = true
		p.events = append(p.events, fmt.Sprintf("experiment %s %s: aborting", e.Name, e.Phase))
		p.after(time.Millisecond)
	case AnalysisInconclusive:
		_, has := hasPause(st, PauseReasonInconclusiveExperiment)
		switch {
		case !has && st.ControllerPause:
			return true // promoted past the inconclusive experiment
		case !has:
			st.PauseConditions = append(st.PauseConditions, PauseCondition{Reason: PauseReasonInconclusiveExperiment, StartTime: metav1.NewTime(w.now)})
			st.ControllerPause = true
		}
	}
	return false
}

// deleteFailedExperiments removes the current revision's Experiments that did not succeed, so
// that Retry runs them afresh.
func (c *Controller) deleteFailedExperiments(ctx context.Context, ro *Rollout) error {
	exps := c.dyn.Resource(ExperimentsResource).Namespace(ro.Namespace)
	list, err := exps.List(ctx, metav1.ListOptions{LabelSelector: PodTemplateHashLabel + "=" + ro.Status.CurrentPodHash})
	if err != nil {
		return fmt.Errorf("list Experiments: %w", err)
	}
	for _, u := range list.Items {
		if ref := metav1.GetControllerOf(&u); ref == nil || ref.UID != ro.UID {
			continue
		}
		if ph, _, _ := unstructured.NestedString(u.Object, "status", "phase"); ph == string(AnalysisSuccessful) {
			continue
		}
		if err := exps.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Experiment %s: %w", u.GetName(), err)
		}
	}
	return nil
}
