package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ExperimentAnalysisRunName is the AnalysisRun of one of an experiment's analyses.
func ExperimentAnalysisRunName(experiment, analysis string) string {
	return ExperimentReplicaSetName(experiment, analysis)
}

// runExperimentAnalyses creates or advances the experiment's AnalysisRuns (once its templates
// are available) and records them in st; it returns when the next measurement is due.
func (c *Controller) runExperimentAnalyses(ctx context.Context, ex *Experiment, st *ExperimentStatus, now time.Time) (time.Duration, error) {
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(ex.Namespace)
	var next time.Duration
	var out []ExperimentAnalysisRunStatus
	for _, a := range ex.Spec.Analyses {
		name := ExperimentAnalysisRunName(ex.Name, a.Name)
		u, err := runs.Get(ctx, name, metav1.GetOptions{})
		var run AnalysisRun
		switch {
		case apierrors.IsNotFound(err):
			u = nil
			run = c.newExperimentRun(ctx, ex, name, a)
		case err != nil:
			return 0, fmt.Errorf("read AnalysisRun %s: %w", name, err)
		default:
			if ref := metav1.GetControllerOf(u); ref == nil || ref.UID != ex.UID {
				return 0, fmt.Errorf("AnalysisRun %s exists and is not this experiment's", name)
			}
			b, _ := u.MarshalJSON()
			if err := json.Unmarshal(b, &run); err != nil {
				return 0, fmt.Errorf("AnalysisRun %s does not decode: %w", name, err)
			}
		}
		if !experimentEnded(run.Status.Phase) {
			if d := run.step(ctx, c.measurer(experimentOwner(ex), &run), now); d > 0 && (next == 0 || d < next) {
				next = d
			}
		}
		if _, err := c.saveRun(ctx, u, &run); err != nil {
			return 0, err
		}
		out = append(out, ExperimentAnalysisRunStatus{Name: a.Name, AnalysisRun: name, Phase: run.Status.Phase, Message: run.Status.Message})
	}
	st.AnalysisRuns = out
	return next, nil
}

// experimentOwner stands for the experiment where the analysis code takes the Rollout it runs
// for: its name, namespace and UID (an experiment's arguments are values only: nothing else of
// a Rollout is read).
func experimentOwner(ex *Experiment) *Rollout {
	return &Rollout{ObjectMeta: metav1.ObjectMeta{Name: ex.Name, Namespace: ex.Namespace, UID: ex.UID}}
}

// newExperimentRun builds an analysis's run from its template and arguments (with the code a
// Rollout's analysis step uses), owned by the experiment.
func (c *Controller) newExperimentRun(ctx context.Context, ex *Experiment, name string, a ExperimentAnalysis) AnalysisRun {
	run := c.newRun(ctx, experimentOwner(ex), "", name, "Experiment", &RolloutAnalysis{
		Templates: []AnalysisTemplateRef{{TemplateName: a.TemplateName, ClusterScope: a.ClusterScope}}, Args: a.Args})
	yes := true
	run.OwnerReferences = []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Experiment", Name: ex.Name, UID: ex.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}}
	run.Labels = map[string]string{"rollout-type": "Experiment"}
	if len(ex.Name) <= 63 {
		run.Labels[ExperimentNameLabel] = ex.Name
	}
	if h := ex.Labels[PodTemplateHashLabel]; h != "" {
		run.Labels[PodTemplateHashLabel] = h
	}
	return run
}

// endExperimentAnalyses ends the runs still measuring when the experiment ends (Argo Rollouts
// terminates them: phase Successful, "Run Terminated").
func (c *Controller) endExperimentAnalyses(ctx context.Context, ex *Experiment, st *ExperimentStatus) error {
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(ex.Namespace)
	for i, ar := range st.AnalysisRuns {
		if experimentEnded(ar.Phase) {
			continue
		}
		u, err := runs.Get(ctx, ar.AnalysisRun, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read AnalysisRun %s: %w", ar.AnalysisRun, err)
		}
		_ = unstructured.SetNestedField(u.Object, true, "spec", "terminate")
		_ = unstructured.SetNestedField(u.Object, string(AnalysisSuccessful), "status", "phase")
		_ = unstructured.SetNestedField(u.Object, "Run Terminated", "status", "message")
		if _, err := runs.Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("terminate AnalysisRun %s: %w", ar.AnalysisRun, err)
		}
		st.AnalysisRuns[i].Phase, st.AnalysisRuns[i].Message = AnalysisSuccessful, "Run Terminated"
	}
	return nil
}
