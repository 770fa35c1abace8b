package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
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
// A step's run that is no longer wanted (the update aborted, or replaced) is terminated.
func (c *Controller) runAnalysis(ctx context.Context, ro *Rollout, now time.Time) (*RolloutAnalysisRunStatus, time.Duration, error) {
	cs := ro.Spec.Strategy.Canary
	st := ro.Status
	hash := PodTemplateHash(&ro.Spec.Template, st.CollisionCount)
	if cs == nil || st.Abort || ro.Spec.Paused || st.CurrentPodHash != hash || st.StableRS == hash || st.CurrentStepIndex == nil ||
		int(*st.CurrentStepIndex) >= len(cs.Steps) || cs.Steps[*st.CurrentStepIndex].Analysis == nil {
		if cur := st.Canary.CurrentStepAnalysisRunStatus; cur != nil && !terminalPhase(cur.Status) && !ro.Spec.Paused {
			return nil, 0, c.terminateRun(ctx, ro.Namespace, cur.Name)
		}
		return nil, 0, nil
	}
	idx := *st.CurrentStepIndex
	return c.advanceRun(ctx, ro, hash, analysisRunName(ro, hash, idx), "Step", cs.Steps[idx].Analysis, now)
}

// advanceRun reads the named run (creating it from a when it does not exist), takes the
// measurements due, and saves it.
func (c *Controller) advanceRun(ctx context.Context, ro *Rollout, hash, name, kind string, a *RolloutAnalysis, now time.Time) (*RolloutAnalysisRunStatus, time.Duration, error) {
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(ro.Namespace)
	u, err := runs.Get(ctx, name, metav1.GetOptions{})
	var run AnalysisRun
	switch {
	case apierrors.IsNotFound(err):
		run = c.newRun(ctx, ro, hash, name, kind, a)
		// Created first: a Job measurement's Job is owned by the run, through its UID.
		if u, err = c.saveRun(ctx, nil, &run); err != nil {
			return nil, 0, err
		}
		if err := decodeRun(u, &run); err != nil {
			return nil, 0, err
		}
	case err != nil:
		return nil, 0, fmt.Errorf("read AnalysisRun %s: %w", name, err)
	default:
		if err := decodeRun(u, &run); err != nil {
			return nil, 0, err
		}
	}
	var next time.Duration
	if !terminalPhase(run.Status.Phase) {
		next = run.step(ctx, c.measurer(ro, &run), now)
		if terminalPhase(run.Status.Phase) && usesJobs(&run) {
			if err := c.deleteRunJobs(ctx, &run); err != nil {
				return nil, 0, err
			}
		}
	}
	if _, err := c.saveRun(ctx, u, &run); err != nil {
		return nil, 0, err
	}
	return &RolloutAnalysisRunStatus{Name: name, Status: run.Status.Phase, Message: run.Status.Message}, next, nil
}

func decodeRun(u *unstructured.Unstructured, run *AnalysisRun) error {
	b, _ := u.MarshalJSON()
	if err := json.Unmarshal(b, run); err != nil {
		return fmt.Errorf("AnalysisRun %s does not decode: %w", u.GetName(), err)
	}
	return nil
}

func usesJobs(run *AnalysisRun) bool {
	for _, m := range run.Spec.Metrics {
		if m.Provider.Job != nil {
			return true
		}
	}
	return false
}

// terminateRun ends a run that is still measuring (as Argo Rollouts' spec.terminate): it is
// Successful with "Run Terminated", and its Jobs are deleted.
func (c *Controller) terminateRun(ctx context.Context, ns, name string) error {
	u, err := c.dyn.Resource(AnalysisRunsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read AnalysisRun %s: %w", name, err)
	}
	var run AnalysisRun
	if err := decodeRun(u, &run); err != nil {
		return err
	}
	if terminalPhase(run.Status.Phase) {
		return nil
	}
	run.Spec.Terminate = true
	run.step(ctx, nil, time.Now())
	if usesJobs(&run) {
		if err := c.deleteRunJobs(ctx, &run); err != nil {
			return err
		}
	}
	_, err = c.saveRun(ctx, u, &run)
	return err
}

// measurer takes the run's measurements through the metric's provider, with the Secret
// arguments read afresh each time and their values masked in what is recorded.
func (c *Controller) measurer(ro *Rollout, run *AnalysisRun) measurer {
	return func(ctx context.Context, i int, m Metric, n int32) (AnalysisPhase, string, string) {
		secrets := map[string]string{}
		keep := map[string]bool{}
		for _, arg := range run.Spec.Args {
			if arg.ValueFrom == nil || arg.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := arg.ValueFrom.SecretKeyRef
			sec, err := c.kube.CoreV1().Secrets(run.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return AnalysisError, "", fmt.Sprintf("argument %q: Secret %q: %v", arg.Name, ref.Name, err)
			}
			v, ok := sec.Data[ref.Key]
			if !ok {
				return AnalysisError, "", fmt.Sprintf("argument %q: Secret %q has no key %q", arg.Name, ref.Name, ref.Key)
			}
			secrets[arg.Name] = string(v)
		}
		if len(secrets) > 0 {
			ms, err := resolveArgs([]Metric{m}, secrets, keep)
			if err != nil {
				return AnalysisError, "", err.Error()
			}
			m = ms[0]
		}
		var phase AnalysisPhase
		var value, msg string
		switch {
		case m.Provider.Web != nil:
			phase, value, msg = measureWeb(ctx, c.opts.Policy.HTTPClient(30*time.Second), m)
		case m.Provider.Prometheus != nil:
			phase, value, msg = measurePrometheus(ctx, c.opts.Policy.HTTPClient(0), m)
			if msg != "" {
				msg = "provider.prometheus: " + msg
			}
		case m.Provider.Job != nil:
			phase, value, msg = c.measureJob(ctx, run, m, n)
		default:
			phase, msg = AnalysisError, "no supported provider"
		}
		for _, v := range secrets {
			if v != "" {
				value = strings.ReplaceAll(value, v, "*****")
				msg = strings.ReplaceAll(msg, v, "*****")
			}
		}
		return phase, value, msg
	}
}

// newRun builds the run from the templates and arguments. Arguments: the templates' defaults,
// then a's args: a value, a pod-template hash, a field of the Rollout (resolved now), or a
// Secret's key (kept as a reference in the run and read at each measurement).
func (c *Controller) newRun(ctx context.Context, ro *Rollout, hash, name, kind string, a *RolloutAnalysis) AnalysisRun {
	yes := true
	run := AnalysisRun{
		TypeMeta: metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "AnalysisRun"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ro.Namespace,
			Labels: map[string]string{PodTemplateHashLabel: hash, "rollout-type": kind},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Rollout", Name: ro.Name, UID: ro.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
	}
	fail := func(err error) AnalysisRun {
		run.Status = AnalysisRunStatus{Phase: AnalysisError, Message: err.Error()}
		return run
	}
	args := map[string]string{}
	declared := map[string]bool{}
	secrets := map[string]*SecretKeyRef{}
	var doc map[string]any // the Rollout, for fieldRef
	set := func(f string, arg AnalysisArg) error {
		if arg.Value != nil || arg.ValueFrom != nil {
			delete(secrets, arg.Name)
		}
		switch vf := arg.ValueFrom; {
		case arg.Value != nil:
			args[arg.Name] = *arg.Value
		case vf == nil:
			declared[arg.Name] = true
		case vf.PodTemplateHashValue != nil && *vf.PodTemplateHashValue == "Stable":
			args[arg.Name] = ro.Status.StableRS
		case vf.PodTemplateHashValue != nil:
			args[arg.Name] = hash
		case vf.SecretKeyRef != nil:
			delete(args, arg.Name)
			secrets[arg.Name] = vf.SecretKeyRef
		case vf.FieldRef != nil:
			if doc == nil {
				b, _ := json.Marshal(ro)
				_ = json.Unmarshal(b, &doc)
			}
			v, err := fieldPath(doc, vf.FieldRef.FieldPath)
			if err != nil {
				return errdefs.Invalid(f+".valueFrom.fieldRef.fieldPath", vf.FieldRef.FieldPath, err.Error())
			}
			args[arg.Name] = v
		}
		return nil
	}
	for _, ref := range a.Templates {
		res, tkind := AnalysisTemplatesResource, "AnalysisTemplate"
		var u *unstructured.Unstructured
		var err error
		if ref.ClusterScope {
			res, tkind = ClusterAnalysisTemplatesResource, "ClusterAnalysisTemplate"
			u, err = c.dyn.Resource(res).Get(ctx, ref.TemplateName, metav1.GetOptions{})
		} else {
			u, err = c.dyn.Resource(res).Namespace(ro.Namespace).Get(ctx, ref.TemplateName, metav1.GetOptions{})
		}
		if err != nil {
			return fail(fmt.Errorf("%s %q: %w", tkind, ref.TemplateName, err))
		}
		b, _ := u.MarshalJSON()
		at, err := DecodeAnalysisTemplate(b)
		if err != nil {
			return fail(fmt.Errorf("%s %q: %w", tkind, ref.TemplateName, err))
		}
		run.Spec.Metrics = append(run.Spec.Metrics, at.Spec.Metrics...)
		run.Spec.DryRun = append(run.Spec.DryRun, at.Spec.DryRun...)
		run.Spec.MeasurementRetention = append(run.Spec.MeasurementRetention, at.Spec.MeasurementRetention...)
		for i, arg := range at.Spec.Args {
			if _, has := args[arg.Name]; has && arg.Value == nil && arg.ValueFrom == nil {
				continue // a default from an earlier template stays
			}
			if err := set(fmt.Sprintf("%s %q spec.args[%d]", tkind, ref.TemplateName, i), arg); err != nil {
				return fail(err)
			}
		}
	}
	run.Spec.DryRun = append(run.Spec.DryRun, a.DryRun...)
	run.Spec.MeasurementRetention = append(a.MeasurementRetention, run.Spec.MeasurementRetention...)
	for i, arg := range a.Args {
		if err := set(fmt.Sprintf("args[%d]", i), arg); err != nil {
			return fail(err)
		}
	}
	for _, n := range sortedKeys(declared) {
		if _, has := args[n]; !has && secrets[n] == nil {
			return fail(errdefs.Invalid("args", n, "is declared by the template and given no value"))
		}
	}
	keep := map[string]bool{}
	for _, n := range sortedKeys(args) {
		v := args[n]
		run.Spec.Args = append(run.Spec.Args, AnalysisArg{Name: n, Value: &v})
	}
	for _, n := range sortedKeys(secrets) {
		keep[n] = true
		run.Spec.Args = append(run.Spec.Args, AnalysisArg{Name: n, ValueFrom: &ValueFrom{SecretKeyRef: secrets[n]}})
	}
	metrics, err := resolveArgs(run.Spec.Metrics, args, keep)
	if err != nil {
		return fail(err)
	}
	run.Spec.Metrics = metrics
	run.Status.Phase = AnalysisRunning
	return run
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fieldPath reads a field of doc (the Rollout): metadata.name, metadata.labels['app'],
// spec.template.spec.containers[0].image. A string is itself; another scalar or an object is
// its JSON.
func fieldPath(doc map[string]any, path string) (string, error) {
	var cur any = doc
	rest := path
	for rest != "" {
		var key string
		switch {
		case strings.HasPrefix(rest, "["):
			end := strings.Index(rest, "]")
			if end < 0 {
				return "", fmt.Errorf("has an unclosed [")
			}
			key = strings.Trim(rest[1:end], `'"`)
			rest = rest[end+1:]
		default:
			rest = strings.TrimPrefix(rest, ".")
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			key, rest = rest[:end], rest[end:]
		}
		if key == "" {
			return "", fmt.Errorf("has an empty segment")
		}
		switch v := cur.(type) {
		case map[string]any:
			x, ok := v[key]
			if !ok {
				return "", fmt.Errorf("names no field of the Rollout (%q is absent)", key)
			}
			cur = x
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(v) {
				return "", fmt.Errorf("index %q is not within the list of %d", key, len(v))
			}
			cur = v[i]
		default:
			return "", fmt.Errorf("goes past a value at %q", key)
		}
	}
	if s, ok := cur.(string); ok {
		return s, nil
	}
	b, _ := json.Marshal(cur)
	return string(b), nil
}

// saveRun creates the run (cur nil), or updates it when it changed (AnalysisRun has no status
// subresource, as in Argo Rollouts); it returns the object as stored.
func (c *Controller) saveRun(ctx context.Context, cur *unstructured.Unstructured, run *AnalysisRun) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(run)
	if err != nil {
		return nil, err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	runs := c.dyn.Resource(AnalysisRunsResource).Namespace(run.Namespace)
	if cur == nil {
		out, err := runs.Create(ctx, &u, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, fmt.Errorf("create AnalysisRun %s: %w", run.Name, err)
		}
		return out, nil
	}
	if was, _ := cur.MarshalJSON(); string(was) == string(b) {
		return cur, nil
	}
	out, err := runs.Update(ctx, &u, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("update AnalysisRun %s: %w", run.Name, err)
	}
	return out, nil
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
