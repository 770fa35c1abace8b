package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// analysisRunName is the run of a revision's analysis step (names longer than a label value are
// cut, as Argo Rollouts does).
func analysisRunName(ro *Rollout, hash string, idx int32) string {
	n := fmt.Sprintf("%s-%s-%d", ro.Name, hash, idx)
	if len(n) > 253 {
		n = n[:240] + "-" + rand.String(5)
	}
	return n
}

// runAnalysis creates or advances the AnalysisRun of the current canary step when it is an
// analysis step, and returns its state for the decision and when its next measurement is due.
// A template that is missing or invalid, or an argument left without a value, makes a run in
// phase Error naming what is wrong: the step fails and the update is aborted, back to stable.
func (c *Controller) runAnalysis(ctx context.Context, ro *Rollout, now time.Time) (*RolloutAnalysisRunStatus, time.Duration, error) {
	cs := ro.Spec.Strategy.Canary
	st := ro.Status
	hash := PodTemplateHash(&ro.Spec.Template, st.CollisionCount)
	if cs == nil || st.Abort || ro.Spec.Paused || st.CurrentPodHash != hash || st.StableRS == hash || st.CurrentStepIndex == nil ||
		int(*st.CurrentStepIndex) >= len(cs.Steps) || cs.Steps[*st.CurrentStepIndex].Analysis == nil {
		return nil, 0, nil
	}
	idx := *st.CurrentStepIndex
	name := analysisRunName(ro, hash, idx)
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(ro.Namespace)
	u, err := runs.Get(ctx, name, metav1.GetOptions{})
	var run AnalysisRun
	switch {
	case apierrors.IsNotFound(err):
		run = c.newRun(ctx, ro, hash, name, cs.Steps[idx].Analysis)
	case err != nil:
		return nil, 0, fmt.Errorf("read AnalysisRun %s: %w", name, err)
	default:
		b, _ := u.MarshalJSON()
		if err := json.Unmarshal(b, &run); err != nil {
			return nil, 0, fmt.Errorf("AnalysisRun %s does not decode: %w", name, err)
		}
	}
	var next time.Duration
	terminal := run.Status.Phase == AnalysisSuccessful || run.Status.Phase == AnalysisFailed || run.Status.Phase == AnalysisError || run.Status.Phase == AnalysisInconclusive
	if !terminal {
		next = run.step(ctx, c.opts.Policy.HTTPClient(30*time.Second), now)
	}
	if err := c.saveRun(ctx, u, &run); err != nil {
		return nil, 0, err
	}
	return &RolloutAnalysisRunStatus{Name: name, Status: run.Status.Phase, Message: run.Status.Message}, next, nil
}

// newRun builds the run from the step's templates and arguments.
func (c *Controller) newRun(ctx context.Context, ro *Rollout, hash, name string, a *RolloutAnalysis) AnalysisRun {
	yes := true
	run := AnalysisRun{
		TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "AnalysisRun"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ro.Namespace,
			Labels: map[string]string{PodTemplateHashLabel: hash, "rollout-type": "Step"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Rollout", Name: ro.Name, UID: ro.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
	}
	fail := func(err error) AnalysisRun {
		run.Status = AnalysisRunStatus{Phase: AnalysisError, Message: err.Error()}
		return run
	}
	args := map[string]string{}
	for _, ref := range a.Templates {
		res, kind := AnalysisTemplatesResource, "AnalysisTemplate"
		var u *unstructured.Unstructured
		var err error
		if ref.ClusterScope {
			res, kind = ClusterAnalysisTemplatesResource, "ClusterAnalysisTemplate"
			u, err = c.dyn.Resource(res).Get(ctx, ref.TemplateName, metav1.GetOptions{})
		} else {
			u, err = c.dyn.Resource(res).Namespace(ro.Namespace).Get(ctx, ref.TemplateName, metav1.GetOptions{})
		}
		if err != nil {
			return fail(fmt.Errorf("%s %q: %w", kind, ref.TemplateName, err))
		}
		b, _ := u.MarshalJSON()
		at, err := DecodeAnalysisTemplate(b)
		if err != nil {
			return fail(fmt.Errorf("%s %q: %w", kind, ref.TemplateName, err))
		}
		run.Spec.Metrics = append(run.Spec.Metrics, at.Spec.Metrics...)
		for _, arg := range at.Spec.Args {
			if arg.Value != nil {
				args[arg.Name] = *arg.Value
			} else if _, ok := args[arg.Name]; !ok {
				args[arg.Name+"\x00declared"] = ""
			}
		}
	}
	for _, arg := range a.Args {
		switch {
		case arg.Value != nil:
			args[arg.Name] = *arg.Value
		case arg.ValueFrom != nil && arg.ValueFrom.PodTemplateHashValue != nil && *arg.ValueFrom.PodTemplateHashValue == "Stable":
			args[arg.Name] = ro.Status.StableRS
		case arg.ValueFrom != nil && arg.ValueFrom.PodTemplateHashValue != nil:
			args[arg.Name] = hash
		}
	}
	for k := range args {
		if n, ok := strings.CutSuffix(k, "\x00declared"); ok {
			if _, has := args[n]; !has {
				return fail(errdefs.Invalid("args", n, "is declared by the template and given no value"))
			}
			delete(args, k)
		}
	}
	for k, v := range args {
		run.Spec.Args = append(run.Spec.Args, AnalysisArg{Name: k, Value: &v})
	}
	metrics, err := resolveArgs(run.Spec.Metrics, args)
	if err != nil {
		return fail(err)
	}
	run.Spec.Metrics = metrics
	run.Status.Phase = AnalysisRunning
	return run
}

// saveRun creates the run, or updates it when it changed (AnalysisRun has no status
// subresource, as in Argo Rollouts).
func (c *Controller) saveRun(ctx context.Context, cur *unstructured.Unstructured, run *AnalysisRun) error {
	b, err := json.Marshal(run)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(run.Namespace)
	if cur == nil {
		if _, err := runs.Create(ctx, &u, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create AnalysisRun %s: %w", run.Name, err)
		}
		return nil
	}
	if was, _ := cur.MarshalJSON(); string(was) == string(b) {
		return nil
	}
	if _, err := runs.Update(ctx, &u, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("update AnalysisRun %s: %w", run.Name, err)
	}
	return nil
}

// deleteFailedRuns removes the current revision's unsuccessful AnalysisRuns, so that Retry
// measures afresh (the abort's reason stays in the Rollout's condition).
func (c *Controller) deleteFailedRuns(ctx context.Context, ro *Rollout) error {
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(ro.Namespace)
	list, err := runs.List(ctx, metav1.ListOptions{LabelSelector: PodTemplateHashLabel + "=" + ro.Status.CurrentPodHash})
	if err != nil {
		return fmt.Errorf("list AnalysisRuns: %w", err)
	}
	for _, u := range list.Items {
		if ref := metav1.GetControllerOf(&u); ref == nil || ref.UID != ro.UID {
			continue
		}
		if ph, _, _ := unstructured.NestedString(u.Object, "status", "phase"); ph == string(AnalysisSuccessful) {
			continue
		}
		if err := runs.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete AnalysisRun %s: %w", u.GetName(), err)
		}
	}
	return nil
}
