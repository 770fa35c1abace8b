package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// AppLabel on a Rollout names the application whose manifests define it: the GitOps engine's
// tracking label (engine.LabelApp; a test checks they agree).
const AppLabel = "freshet.dev/app"

// The strategies as the API names them.
const (
	StrategyCanary    = "canary"
	StrategyBlueGreen = "blueGreen"
)

// List returns the Rollouts the controller manages (in its namespace, or every namespace),
// sorted by namespace and name; app, when set, keeps those of that application.
func (c *Controller) List(ctx context.Context, app string) ([]appproxyv1.Rollout, error) {
	opts := metav1.ListOptions{}
	if app != "" {
		opts.LabelSelector = AppLabel + "=" + app
	}
	list, err := c.dyn.Resource(RolloutsResource).Namespace(c.opts.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", err)
	}
	rss, err := c.kube.AppsV1().ReplicaSets(c.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: PodTemplateHashLabel})
	if err != nil {
		return nil, fmt.Errorf("list ReplicaSets: %w", err)
	}
	out := make([]appproxyv1.Rollout, 0, len(list.Items))
	for i := range list.Items {
		data, err := list.Items[i].MarshalJSON()
		if err != nil {
			return nil, err
		}
		ro, _ := Decode(data)
		if ro == nil {
			continue // not a Rollout's shape: nothing to show but its name, which kubectl shows
		}
		out = append(out, summary(ro, owned(ro, rss.Items)))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Detail returns one Rollout with its steps, revisions and analysis runs.
func (c *Controller) Detail(ctx context.Context, namespace, name string) (appproxyv1.RolloutDetail, error) {
	ro, err := c.get(ctx, namespace, name)
	if err != nil {
		return appproxyv1.RolloutDetail{}, err
	}
	rsl, err := c.kube.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: PodTemplateHashLabel})
	if err != nil {
		return appproxyv1.RolloutDetail{}, fmt.Errorf("list ReplicaSets: %w", err)
	}
	rss := owned(ro, rsl.Items)
	runs, err := c.dyn.Resource(AnalysisRunsResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return appproxyv1.RolloutDetail{}, fmt.Errorf("list AnalysisRuns: %w", err)
	}
	d := detail(ro, rss)
	for i := range runs.Items {
		u := &runs.Items[i]
		if ref := metav1.GetControllerOf(u); ref == nil || ref.UID != ro.UID {
			continue
		}
		data, err := u.MarshalJSON()
		if err != nil {
			return appproxyv1.RolloutDetail{}, err
		}
		d.AnalysisRuns = append(d.AnalysisRuns, analysisView(data, u.GetCreationTimestamp().Time))
	}
	sort.SliceStable(d.AnalysisRuns, func(i, j int) bool { return d.AnalysisRuns[i].StartedAt.After(d.AnalysisRuns[j].StartedAt) })
	return d, nil
}

// owned are the ReplicaSets ro controls, oldest revision first.
func owned(ro *Rollout, all []appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for i := range all {
		if ref := metav1.GetControllerOf(&all[i]); ref != nil && ref.UID == ro.UID {
			out = append(out, &all[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return revisionOf(out[i]) < revisionOf(out[j]) })
	return out
}

func summary(ro *Rollout, rss []*appsv1.ReplicaSet) appproxyv1.Rollout {
	s := appproxyv1.Rollout{Name: ro.Name, Namespace: ro.Namespace, App: ro.Labels[AppLabel], Phase: string(ro.Status.Phase)}
	switch {
	case ro.Spec.Strategy.Canary != nil:
		s.Strategy = StrategyCanary
		if i := ro.Status.CurrentStepIndex; i != nil {
			v := *i
			s.Step = &v
		}
	case ro.Spec.Strategy.BlueGreen != nil:
		s.Strategy = StrategyBlueGreen
	}
	for _, rs := range rss {
		rev := revisionOf(rs)
		switch hash := rs.Labels[PodTemplateHashLabel]; {
		case hash == ro.Status.StableRS && hash != "":
			s.StableRevision = &rev
		case hash == ro.Status.CurrentPodHash && hash != "":
			s.CanaryRevision = &rev
		}
	}
	return s
}

func detail(ro *Rollout, rss []*appsv1.ReplicaSet) appproxyv1.RolloutDetail {
	st := ro.Status
	d := appproxyv1.RolloutDetail{Rollout: summary(ro, rss), Message: st.Message, Paused: ro.Spec.Paused, Aborted: st.Abort,
		Replicas: st.Replicas, Ready: st.ReadyReplicas, Updated: st.UpdatedReplicas, Available: st.AvailableReplicas,
		Steps: []appproxyv1.RolloutStep{}, Revisions: []appproxyv1.RolloutRevision{}, AnalysisRuns: []appproxyv1.AnalysisRun{}}
	updating := st.CurrentPodHash != "" && st.CurrentPodHash != st.StableRS
	if cs := ro.Spec.Strategy.Canary; cs != nil {
		cur := int32(len(cs.Steps))
		if st.CurrentStepIndex != nil {
			cur = *st.CurrentStepIndex
		}
		weight := int32(100)
		if updating {
			weight = 0
		}
		for i, step := range cs.Steps {
			typ, val := stepView(step)
			status := "Pending"
			switch {
			case int32(i) < cur:
				status = "Succeeded"
				if step.SetWeight != nil && updating {
					weight = *step.SetWeight
				}
			case int32(i) == cur && st.Abort:
				status = "Aborted"
			case int32(i) == cur:
				status = "Running"
				if step.SetWeight != nil && updating {
					weight = *step.SetWeight
				}
			}
			d.Steps = append(d.Steps, appproxyv1.RolloutStep{Index: int32(i), Type: typ, Value: val, Status: status})
		}
		if st.Abort {
			weight = 0
		}
		if w := st.Canary.Weights; w != nil {
			weight = w.Canary.Weight
		}
		d.Weight = &weight
	}
	for i := len(rss) - 1; i >= 0; i-- {
		rs := rss[i]
		hash := rs.Labels[PodTemplateHashLabel]
		role := "old"
		switch {
		case hash == st.StableRS && hash != "":
			role = "stable"
		case hash == st.CurrentPodHash && hash != "":
			role = "canary"
		}
		var images []string
		for _, c := range rs.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		d.Revisions = append(d.Revisions, appproxyv1.RolloutRevision{Revision: revisionOf(rs), PodTemplateHash: hash, Role: role,
			Replicas: specReplicas(rs), Ready: rs.Status.ReadyReplicas, Images: nonNilStrings(images), CreatedAt: rs.CreationTimestamp.UTC()})
	}
	return d
}

// stepView names a step's type and what it does.
func stepView(s CanaryStep) (typ, value string) {
	switch {
	case s.SetWeight != nil:
		return "setWeight", strconv.Itoa(int(*s.SetWeight))
	case s.Pause != nil:
		if s.Pause.Duration != nil {
			return "pause", s.Pause.Duration.String()
		}
		return "pause", ""
	case s.Analysis != nil:
		var names []string
		for _, t := range s.Analysis.Templates {
			names = append(names, t.TemplateName)
		}
		return "analysis", strings.Join(names, ",")
	case s.SetCanaryScale != nil:
		switch sc := s.SetCanaryScale; {
		case sc.Replicas != nil:
			return "setCanaryScale", "replicas=" + strconv.Itoa(int(*sc.Replicas))
		case sc.Weight != nil:
			return "setCanaryScale", "weight=" + strconv.Itoa(int(*sc.Weight))
		}
		return "setCanaryScale", "matchTrafficWeight"
	case s.Experiment != nil:
		return "experiment", ""
	case s.SetHeaderRoute != nil:
		return "setHeaderRoute", ""
	case s.SetMirrorRoute != nil:
		return "setMirrorRoute", ""
	case s.Plugin != nil:
		return "plugin", ""
	}
	return "", ""
}

// argoRun is an AnalysisRun as Argo Rollouts writes it: the fields shown, read on their own so
// the view does not depend on how the controller models runs.
type argoRun struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Phase         string       `json:"phase"`
		Message       string       `json:"message"`
		StartedAt     *metav1.Time `json:"startedAt"`
		MetricResults []struct {
			Name         string `json:"name"`
			Phase        string `json:"phase"`
			Message      string `json:"message"`
			Count        int32  `json:"count"`
			Successful   int32  `json:"successful"`
			Failed       int32  `json:"failed"`
			Inconclusive int32  `json:"inconclusive"`
			Error        int32  `json:"error"`
			Measurements []struct {
				Phase      string       `json:"phase"`
				Value      string       `json:"value"`
				Message    string       `json:"message"`
				StartedAt  *metav1.Time `json:"startedAt"`
				FinishedAt *metav1.Time `json:"finishedAt"`
			} `json:"measurements"`
		} `json:"metricResults"`
	} `json:"status"`
}

func analysisView(data []byte, created time.Time) appproxyv1.AnalysisRun {
	var r argoRun
	if err := json.Unmarshal(data, &r); err != nil {
		// A run someone else wrote in a shape of their own: shown by name, with why.
		return appproxyv1.AnalysisRun{Phase: "Unknown", Message: "does not decode: " + err.Error(), StartedAt: created.UTC(), Metrics: []appproxyv1.AnalysisMetric{}}
	}
	out := appproxyv1.AnalysisRun{Name: r.Metadata.Name, Phase: r.Status.Phase, Message: r.Status.Message,
		PodTemplateHash: r.Metadata.Labels[PodTemplateHashLabel], StartedAt: created.UTC(), Metrics: []appproxyv1.AnalysisMetric{}}
	if r.Status.StartedAt != nil {
		out.StartedAt = r.Status.StartedAt.UTC()
	}
	for _, m := range r.Status.MetricResults {
		mv := appproxyv1.AnalysisMetric{Name: m.Name, Phase: m.Phase, Message: m.Message, Count: m.Count, Successful: m.Successful,
			Failed: m.Failed, Inconclusive: m.Inconclusive, Error: m.Error, Measurements: []appproxyv1.Measurement{}}
		for _, x := range m.Measurements {
			mm := appproxyv1.Measurement{Phase: x.Phase, Value: x.Value, Message: x.Message}
			if x.StartedAt != nil {
				mm.StartedAt = x.StartedAt.UTC()
			}
			if x.FinishedAt != nil {
				mm.FinishedAt = x.FinishedAt.UTC()
			}
			mv.Measurements = append(mv.Measurements, mm)
		}
		out.Metrics = append(out.Metrics, mv)
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
