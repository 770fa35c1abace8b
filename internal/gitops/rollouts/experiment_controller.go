package rollouts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/cache"
)

// experimentKeyPrefix marks an Experiment's key in the work queue (Rollouts' keys have none).
const experimentKeyPrefix = "experiment:"

// Reasons of an Experiment's Progressing condition.
const (
	reasonExperimentRunning   = "ExperimentRunning"
	reasonExperimentPending   = "ReplicaSetUpdated"
	reasonExperimentCompleted = "ExperimentCompleted"
	reasonExperimentTimedOut  = "ProgressDeadlineExceeded"
)

func (c *Controller) enqueueExperiment(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(experimentKeyPrefix + key)
	if m, ok := obj.(metav1.Object); ok {
		// A Rollout's experiment step waits on it.
		if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "Rollout" && ref.APIVersion == Group+"/"+Version {
			c.queue.Add(m.GetNamespace() + "/" + ref.Name)
		}
	}
}

func experimentEnded(p AnalysisPhase) bool {
	return p == AnalysisSuccessful || p == AnalysisFailed || p == AnalysisError || p == AnalysisInconclusive
}

// reconcileExperiment runs one Experiment: its templates' ReplicaSets, its AnalysisRuns, its
// phase, and the scale-down once it ended.
func (c *Controller) reconcileExperiment(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	obj, err := c.experiments.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil // deleted: its ReplicaSets and runs go with it (owner references)
	}
	if err != nil {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured)
	if u.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return 0, err
	}
	ex, verr := DecodeExperiment(data)
	if ex == nil {
		return 0, verr
	}
	now := c.opts.Now()
	st := ex.Status
	if b, err := json.Marshal(ex.Status); err == nil {
		st = ExperimentStatus{}
		_ = json.Unmarshal(b, &st)
	}
	if verr != nil {
		if !experimentEnded(st.Phase) {
			st.Phase, st.Message = AnalysisError, "InvalidSpec: "+verr.Error()
			setExperimentCondition(&st, now, corev1.ConditionFalse, "InvalidSpec", verr.Error())
		}
		return 0, errors.Join(verr, c.writeExperimentStatus(ctx, u, ex, st))
	}
	var after time.Duration
	later := func(d time.Duration) {
		if d <= 0 {
			d = time.Millisecond
		}
		if after == 0 || d < after {
			after = d
		}
	}
	owned, err := c.experimentReplicaSets(ex)
	if err != nil {
		return 0, err
	}
	ended := experimentEnded(st.Phase)
	// Templates: a ReplicaSet each, and its status.
	prev := map[string]ExperimentTemplateStatus{}
	for _, ts := range st.TemplateStatuses {
		prev[ts.Name] = ts
	}
	deadline := time.Duration(DefaultProgressDeadlineSeconds) * time.Second
	if ex.Spec.ProgressDeadlineSeconds != nil {
		deadline = time.Duration(*ex.Spec.ProgressDeadlineSeconds) * time.Second
	}
	allRunning, failed := true, ""
	var statuses []ExperimentTemplateStatus
	for _, t := range ex.Spec.Templates {
		rs := owned[t.Name]
		if rs == nil && !ended {
			if rs, err = c.createExperimentRS(ctx, ex, t); err != nil {
				return 0, err
			}
		}
		ts := prev[t.Name]
		ts.Name = t.Name
		want := DefaultReplicas
		if t.Replicas != nil {
			want = *t.Replicas
		}
		if rs != nil {
			ts.Replicas, ts.UpdatedReplicas = rs.Status.Replicas, rs.Status.Replicas
			ts.ReadyReplicas, ts.AvailableReplicas = rs.Status.ReadyReplicas, rs.Status.AvailableReplicas
			ts.PodTemplateHash = rs.Labels[PodTemplateHashLabel]
		}
		state := ts.Status
		if !ended {
			switch {
			case state == TemplateFailed || state == TemplateError:
			case rs != nil && specReplicas(rs) == want && rs.Status.AvailableReplicas >= want:
				state, ts.Message = TemplateRunning, ""
			case state == "" || state == TemplateProgressing:
				state = TemplateProgressing
				since := now
				if ts.LastTransitionTime != nil && ts.Status == TemplateProgressing {
					since = ts.LastTransitionTime.Time
				}
				if end := since.Add(deadline); !now.Before(end) {
					state = TemplateFailed
					ts.Message = fmt.Sprintf("Template %q exceeded its progressDeadlineSeconds (%d)", t.Name, int(deadline/time.Second))
				} else {
					later(end.Sub(now))
				}
			default: // was running, lost availability: progressing again
				state = TemplateProgressing
			}
		} else if state == TemplateRunning || state == TemplateProgressing || state == "" {
			state = TemplateSuccessful
		}
		if state != ts.Status {
			t := metav1.NewTime(now.Truncate(time.Second))
			ts.Status, ts.LastTransitionTime = state, &t
		}
		if state != TemplateRunning {
			allRunning = false
		}
		if (state == TemplateFailed || state == TemplateError) && failed == "" {
			failed = ts.Message
			if failed == "" {
				failed = fmt.Sprintf("Template %q %s", t.Name, state)
			}
		}
		statuses = append(statuses, ts)
	}
	st.TemplateStatuses = statuses

	if !ended {
		if allRunning && st.AvailableAt == nil {
			t := metav1.NewTime(now.Truncate(time.Second))
			st.AvailableAt = &t
		}
		if st.AvailableAt != nil {
			next, err := c.runExperimentAnalyses(ctx, ex, &st, now)
			if err != nil {
				return 0, err
			}
			if next > 0 {
				later(next)
			}
		}
		c.judgeExperiment(ex, &st, now, failed, allRunning, later)
		ended = experimentEnded(st.Phase)
		if ended {
			if err := c.endExperimentAnalyses(ctx, ex, &st); err != nil {
				return 0, err
			}
			for i := range st.TemplateStatuses {
				if s := st.TemplateStatuses[i].Status; s == TemplateRunning || s == TemplateProgressing {
					t := metav1.NewTime(now.Truncate(time.Second))
					st.TemplateStatuses[i].Status, st.TemplateStatuses[i].LastTransitionTime = TemplateSuccessful, &t
				}
			}
		}
	}
	if ended {
		next, err := c.scaleDownExperiment(ctx, ex, owned, now)
		if err != nil {
			return 0, err
		}
		if next > 0 {
			later(next)
		}
	}
	if err := c.writeExperimentStatus(ctx, u, ex, st); err != nil {
		if apierrors.IsConflict(err) {
			return staleRetry, nil
		}
		return 0, err
	}
	return after, nil
}

// judgeExperiment sets the phase: a failed template or analysis ends it Failed (Error,
// Inconclusive likewise); terminate, the duration elapsed after every template was available,
// or (without a duration) the analyses it waits for all succeeding end it Successful.
func (c *Controller) judgeExperiment(ex *Experiment, st *ExperimentStatus, now time.Time, failed string, allRunning bool, later func(time.Duration)) {
	end := func(ph AnalysisPhase, msg string) {
		st.Phase, st.Message = ph, msg
		reason := reasonExperimentCompleted
		if strings.Contains(msg, "progressDeadlineSeconds") {
			reason = reasonExperimentTimedOut
		}
		setExperimentCondition(st, now, corev1.ConditionFalse, reason, fmt.Sprintf("Experiment %q has ended %s", ex.Name, ph))
	}
	if failed != "" {
		end(AnalysisFailed, failed)
		return
	}
	for _, ar := range st.AnalysisRuns {
		switch ar.Phase {
		case AnalysisFailed, AnalysisError, AnalysisInconclusive:
			end(ar.Phase, fmt.Sprintf("AnalysisRun %q assessed %s: %s", ar.AnalysisRun, ar.Phase, ar.Message))
			return
		}
	}
	if ex.Spec.Terminate {
		end(AnalysisSuccessful, "Experiment terminated")
		return
	}
	d, _ := experimentDuration(ex.Spec.Duration)
	if st.AvailableAt != nil {
		if d >= 0 {
			if e := st.AvailableAt.Add(d); !now.Before(e) {
				end(AnalysisSuccessful, "")
				return
			} else {
				later(e.Sub(now))
			}
		} else if len(ex.Spec.Analyses) > 0 {
			required := map[string]bool{}
			for _, a := range ex.Spec.Analyses {
				if a.RequiredForCompletion {
					required[a.Name] = true
				}
			}
			done := 0
			for _, ar := range st.AnalysisRuns {
				if ar.Phase == AnalysisSuccessful && (len(required) == 0 || required[ar.Name]) {
					done++
				}
			}
			if (len(required) == 0 && done == len(ex.Spec.Analyses)) || (len(required) > 0 && done == len(required)) {
				end(AnalysisSuccessful, "")
				return
			}
		}
	}
	if allRunning {
		st.Phase, st.Message = AnalysisRunning, ""
		setExperimentCondition(st, now, corev1.ConditionTrue, reasonExperimentRunning, fmt.Sprintf("Experiment %q is running.", ex.Name))
	} else {
		if st.Phase == "" || st.Phase == AnalysisPending {
			st.Phase = AnalysisPending
		}
		st.Message = ""
		setExperimentCondition(st, now, corev1.ConditionTrue, reasonExperimentPending, fmt.Sprintf("Experiment %q is progressing.", ex.Name))
	}
}

func setExperimentCondition(st *ExperimentStatus, now time.Time, status corev1.ConditionStatus, reason, msg string) {
	ts := metav1.NewTime(now.Truncate(time.Second))
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != string(ConditionProgressing) {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return
		}
		if c.Status != status {
			c.LastTransitionTime = ts
		}
		c.Status, c.Reason, c.Message, c.LastUpdateTime = status, reason, msg, ts
		return
	}
	st.Conditions = append(st.Conditions, ExperimentCondition{Type: string(ConditionProgressing), Status: status, Reason: reason,
		Message: msg, LastUpdateTime: ts, LastTransitionTime: ts})
}

// experimentReplicaSets are the ReplicaSets ex controls, by template name.
func (c *Controller) experimentReplicaSets(ex *Experiment) (map[string]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(ex.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]*appsv1.ReplicaSet{}
	for _, rs := range all {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == ex.UID {
			out[rs.Labels[ExperimentTemplateLabel]] = rs.DeepCopy()
		}
	}
	return out, nil
}

// ExperimentReplicaSetName is the ReplicaSet of one template.
func ExperimentReplicaSetName(experiment, template string) string {
	n := experiment + "-" + template
	if len(n) > 253 {
		n = n[:240] + "-" + rand.SafeEncodeString(fmt.Sprint(fnvHash(n)))[:5]
	}
	return n
}

func fnvHash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// experimentHash is a template's pod-template hash: of the template, the experiment and the
// template's name, so that an experiment's pods never match a Rollout's revision selector.
func experimentHash(ex *Experiment, t ExperimentTemplate) string {
	b, _ := json.Marshal(t.Template)
	return rand.SafeEncodeString(fmt.Sprint(fnvHash(string(b) + "\x00" + ex.Name + "\x00" + t.Name)))
}

func (c *Controller) createExperimentRS(ctx context.Context, ex *Experiment, t ExperimentTemplate) (*appsv1.ReplicaSet, error) {
	hash := experimentHash(ex, t)
	yes := true
	want := DefaultReplicas
	if t.Replicas != nil {
		want = *t.Replicas
	}
	sel := t.Selector.DeepCopy()
	sel.MatchLabels = copyLabels(sel.MatchLabels, PodTemplateHashLabel, hash)
	tmpl := *t.Template.DeepCopy()
	tmpl.Labels = copyLabels(tmpl.Labels, PodTemplateHashLabel, hash)
	lbl := map[string]string{PodTemplateHashLabel: hash, ExperimentTemplateLabel: t.Name}
	if len(ex.Name) <= 63 {
		lbl[ExperimentNameLabel] = ex.Name
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: ExperimentReplicaSetName(ex.Name, t.Name), Namespace: ex.Namespace, Labels: lbl,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Experiment", Name: ex.Name, UID: ex.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &want, MinReadySeconds: t.MinReadySeconds, Selector: sel, Template: tmpl},
	}
	made, err := c.kube.AppsV1().ReplicaSets(ex.Namespace).Create(ctx, rs, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil, errStaleCache // ours, not in the cache yet; or another's: retried, and reported then
	}
	if err != nil {
		return nil, fmt.Errorf("create ReplicaSet %s: %w", rs.Name, err)
	}
	return made, nil
}

// scaleDownExperiment scales an ended experiment's ReplicaSets to zero, scaleDownDelaySeconds
// after it ended (the deadline is kept in the ReplicaSet's scale-down-deadline annotation).
func (c *Controller) scaleDownExperiment(ctx context.Context, ex *Experiment, owned map[string]*appsv1.ReplicaSet, now time.Time) (time.Duration, error) {
	delay := time.Duration(DefaultExperimentScaleDownDelaySeconds) * time.Second
	if ex.Spec.ScaleDownDelaySeconds != nil {
		delay = time.Duration(*ex.Spec.ScaleDownDelaySeconds) * time.Second
	}
	var next time.Duration
	for _, rs := range owned {
		if specReplicas(rs) == 0 {
			continue
		}
		var patch map[string]any
		dl, perr := time.Parse(time.RFC3339, rs.Annotations[ScaleDownDeadlineAnnotation])
		switch {
		case delay > 0 && perr != nil:
			patch = map[string]any{"metadata": map[string]any{"annotations": map[string]any{ScaleDownDeadlineAnnotation: now.Add(delay).UTC().Format(time.RFC3339)}}}
			if next == 0 || delay < next {
				next = delay
			}
		case delay > 0 && now.Before(dl):
			if d := dl.Sub(now); next == 0 || d < next {
				next = d
			}
			continue
		default:
			patch = map[string]any{"spec": map[string]any{"replicas": 0}, "metadata": map[string]any{"annotations": map[string]any{ScaleDownDeadlineAnnotation: nil}}}
		}
		body, _ := json.Marshal(patch)
		if _, err := c.kube.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return 0, fmt.Errorf("scale down ReplicaSet %s: %w", rs.Name, err)
		}
	}
	return next, nil
}

// writeExperimentStatus writes st unless it equals what the Experiment holds (Experiment has
// no status subresource, as in Argo Rollouts).
func (c *Controller) writeExperimentStatus(ctx context.Context, u *unstructured.Unstructured, ex *Experiment, st ExperimentStatus) error {
	a, _ := json.Marshal(ex.Status)
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if string(a) == string(b) {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	obj := u.DeepCopy()
	obj.Object["status"] = m
	if _, err := c.dyn.Resource(ExperimentsResource).Namespace(u.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("write Experiment status: %w", err)
	}
	return nil
}
