package rollouts_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
)

// rateServer serves {"data":{"successRate": rate}} for web metrics; set changes the rate.
func rateServer(t *testing.T, rate float64) (url string, set func(float64)) {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, `{"data": {"successRate": %v}}`, rate)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(v float64) { mu.Lock(); rate = v; mu.Unlock() }
}

func (e *env) create(res, y string) {
	e.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		e.t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		e.t.Fatal(err)
	}
	r := rollouts.AnalysisTemplatesResource
	if u.GetKind() == "Experiment" {
		r = rollouts.ExperimentsResource
	}
	if _, err := e.c.Dynamic.Resource(r).Namespace(e.ns).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create %s: %v", res, err)
	}
}

func (e *env) experiment(name string) *rollouts.Experiment {
	e.t.Helper()
	u, err := e.c.Dynamic.Resource(rollouts.ExperimentsResource).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	b, _ := u.MarshalJSON()
	ex, _ := rollouts.DecodeExperiment(b)
	return ex
}

func (e *env) waitExperiment(name string, phase rollouts.AnalysisPhase) *rollouts.Experiment {
	e.t.Helper()
	var ex *rollouts.Experiment
	e.waitFor("experiment "+name+" "+string(phase), 60*time.Second, func() (bool, string) {
		ex = e.experiment(name)
		if ex == nil {
			return false, "absent"
		}
		return ex.Status.Phase == phase, fmt.Sprintf("%s %q %+v", ex.Status.Phase, ex.Status.Message, ex.Status.TemplateStatuses)
	})
	return ex
}

func (e *env) rs(name string) *appsv1.ReplicaSet {
	e.t.Helper()
	rs, err := e.c.Client.AppsV1().ReplicaSets(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("ReplicaSet %s: %v", name, err)
	}
	return rs
}

func (e *env) successRateTemplate(url string) {
	e.create("AnalysisTemplate", `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: success-rate}
spec:
  args: [{name: threshold, value: "0.95"}]
  metrics:
  - name: success-rate
    interval: 200ms
    count: 2
    successCondition: "result >= {{args.threshold}}"
    provider: {web: {url: "`+url+`/rate", jsonPath: "{$.data.successRate}"}}
`)
}

func experimentRollout(image, analyses string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: exp}
spec:
  replicas: 2
  selector: {matchLabels: {app: exp}}
  template:
    metadata: {labels: {app: exp}}
    spec: {containers: [{name: exp, image: "` + image + `"}]}
  strategy:
    canary:
      maxSurge: 1
      maxUnavailable: 0
      steps:
      - setWeight: 50
      - experiment:
          duration: 2s
          templates:
          - {name: baseline, specRef: stable}
          - {name: canary, specRef: canary, replicas: 2}
` + analyses + `
      - setWeight: 100
`
}

// TestRolloutExperimentStep: the experiment step creates the Experiment, which runs the stable
// and the canary pod templates as ReplicaSets of its own until its duration has passed after
// both are available; then the Rollout goes on.
func TestRolloutExperimentStep(t *testing.T) {
	e := newEnv(t)
	e.apply(experimentRollout("registry.local/exp:1", ""))
	v1 := e.waitPhase("exp", rollouts.PhaseHealthy, 3)
	e.apply(experimentRollout("registry.local/exp:2", ""))
	var name string
	e.waitFor("the experiment step", 60*time.Second, func() (bool, string) {
		ro := e.rollout("exp")
		name = ro.Status.Canary.CurrentExperiment
		return name != "" && e.experiment(name) != nil, fmt.Sprintf("%+v", ro.Status.Canary)
	})
	ro := e.rollout("exp")
	if want := "exp-" + ro.Status.CurrentPodHash + "-1"; name != want {
		t.Fatalf("currentExperiment %q, want %q", name, want)
	}
	// Its ReplicaSets: owned by the Experiment, a hash of their own, the templates' images.
	for tmpl, image := range map[string]string{"baseline": "registry.local/exp:1", "canary": "registry.local/exp:2"} {
		rs := e.rs(name + "-" + tmpl)
		ref := metav1.GetControllerOf(rs)
		h := rs.Labels[rollouts.PodTemplateHashLabel]
		if ref == nil || ref.Kind != "Experiment" || ref.Name != name || h == "" || h == v1.Status.StableRS || h == ro.Status.CurrentPodHash {
			t.Fatalf("ReplicaSet %s: owner %+v, hash %q", rs.Name, ref, h)
		}
		if got := rs.Spec.Template.Spec.Containers[0].Image; got != image || rs.Spec.Template.Labels[rollouts.PodTemplateHashLabel] != h {
			t.Fatalf("ReplicaSet %s runs %s (labels %v), want %s", rs.Name, got, rs.Spec.Template.Labels, image)
		}
	}
	e.waitFor("experiment pods ready", 60*time.Second, func() (bool, string) {
		b, c := e.readyPods(e.rs(name + "-baseline").Labels[rollouts.PodTemplateHashLabel]), e.readyPods(e.rs(name + "-canary").Labels[rollouts.PodTemplateHashLabel])
		return b == 1 && c == 2, fmt.Sprintf("baseline %d canary %d", b, c)
	})
	done := e.waitPhase("exp", rollouts.PhaseHealthy, 3)
	if done.Status.Canary.CurrentExperiment != "" {
		t.Errorf("currentExperiment %q after the step", done.Status.Canary.CurrentExperiment)
	}
	ex := e.waitExperiment(name, rollouts.AnalysisSuccessful)
	if ex.Status.AvailableAt == nil || len(ex.Status.TemplateStatuses) != 2 {
		t.Fatalf("experiment status %+v", ex.Status)
	}
	for _, ts := range ex.Status.TemplateStatuses {
		if ts.Status != rollouts.TemplateSuccessful {
			t.Errorf("template %s: %s", ts.Name, ts.Status)
		}
	}
	if c := ex.Status.Conditions; len(c) != 1 || c[0].Type != "Progressing" || c[0].Reason != "ExperimentCompleted" {
		t.Errorf("conditions %+v", c)
	}
	if !e.log.saw("exp Progressing step=1") {
		t.Errorf("the rollout never showed the experiment step:\n  %s", e.log)
	}
}

// TestRolloutExperimentAnalysisFails: the experiment's analysis fails, the Experiment ends
// Failed and the Rollout is aborted back to stable, naming the experiment.
func TestRolloutExperimentAnalysisFails(t *testing.T) {
	e := newEnv(t)
	url, _ := rateServer(t, 0.5)
	e.successRateTemplate(url)
	analyses := `          analyses:
          - {name: rate, templateName: success-rate, args: [{name: threshold, value: "0.9"}]}`
	e.apply(experimentRollout("registry.local/exp:1", analyses))
	e.waitPhase("exp", rollouts.PhaseHealthy, 3)
	e.apply(experimentRollout("registry.local/exp:2", analyses))
	failed := e.waitPhase("exp", rollouts.PhaseDegraded, 0)
	name := failed.Status.Canary.CurrentExperiment
	if name == "" || !strings.Contains(failed.Status.Message, fmt.Sprintf(`RolloutAborted: Rollout aborted update to revision 2: Experiment %q Failed`, name)) {
		t.Fatalf("aborted: %q (experiment %q)", failed.Status.Message, name)
	}
	e.waitRS("exp", "1:2/2 2:0/0")
	ex := e.experiment(name)
	if ex.Status.Phase != rollouts.AnalysisFailed || len(ex.Status.AnalysisRuns) != 1 || ex.Status.AnalysisRuns[0].Phase != rollouts.AnalysisFailed ||
		ex.Status.AnalysisRuns[0].AnalysisRun != name+"-rate" {
		t.Fatalf("experiment status %+v", ex.Status)
	}
	run, err := e.c.Dynamic.Resource(rollouts.AnalysisRunsResource).Namespace(e.ns).Get(e.ctx, name+"-rate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(run); ref == nil || ref.Kind != "Experiment" || ref.Name != name {
		t.Fatalf("AnalysisRun owner %+v", ref)
	}
}

// TestStandaloneExperiment: without a duration an Experiment runs until the analysis it
// requires succeeds; then its ReplicaSets are scaled to zero after scaleDownDelaySeconds.
func TestStandaloneExperiment(t *testing.T) {
	e := newEnv(t)
	url, _ := rateServer(t, 0.99)
	e.successRateTemplate(url)
	e.create("Experiment", `
apiVersion: argoproj.io/v1alpha1
kind: Experiment
metadata: {name: trial}
spec:
  scaleDownDelaySeconds: 1
  templates:
  - name: a
    replicas: 2
    selector: {matchLabels: {app: trial}}
    template:
      metadata: {labels: {app: trial}}
      spec: {containers: [{name: c, image: "registry.local/trial:1"}]}
  analyses:
  - {name: rate, templateName: success-rate, requiredForCompletion: true}
`)
	ex := e.waitExperiment("trial", rollouts.AnalysisSuccessful)
	if ex.Status.AvailableAt == nil || len(ex.Status.AnalysisRuns) != 1 || ex.Status.AnalysisRuns[0].Phase != rollouts.AnalysisSuccessful {
		t.Fatalf("status %+v", ex.Status)
	}
	e.waitFor("ReplicaSet scaled to 0", 30*time.Second, func() (bool, string) {
		rs := e.rs("trial-a")
		return *rs.Spec.Replicas == 0, fmt.Sprint(*rs.Spec.Replicas, rs.Annotations)
	})

	// A template whose pods cannot be scheduled: Failed after progressDeadlineSeconds.
	e.create("Experiment", `
apiVersion: argoproj.io/v1alpha1
kind: Experiment
metadata: {name: stuck}
spec:
  progressDeadlineSeconds: 2
  scaleDownDelaySeconds: 0
  templates:
  - name: a
    selector: {matchLabels: {app: stuck}}
    template:
      metadata: {labels: {app: stuck}}
      spec: {nodeSelector: {no-such-node: "true"}, containers: [{name: c, image: "registry.local/trial:1"}]}
`)
	stuck := e.waitExperiment("stuck", rollouts.AnalysisFailed)
	if want := `Template "a" exceeded its progressDeadlineSeconds (2)`; stuck.Status.Message != want ||
		stuck.Status.TemplateStatuses[0].Status != rollouts.TemplateFailed || stuck.Status.AvailableAt != nil {
		t.Fatalf("stuck: %+v", stuck.Status)
	}
	e.waitFor("stuck ReplicaSet scaled to 0", 30*time.Second, func() (bool, string) {
		rs := e.rs("stuck-a")
		return *rs.Spec.Replicas == 0, fmt.Sprint(*rs.Spec.Replicas)
	})

	// Bad input: refused with phase Error naming the field; no ReplicaSet.
	e.create("Experiment", `
apiVersion: argoproj.io/v1alpha1
kind: Experiment
metadata: {name: bad}
spec:
  templates:
  - name: a
    selector: {matchLabels: {app: bad}}
    template:
      metadata: {labels: {app: other}}
      spec: {containers: [{name: c, image: "registry.local/trial:1"}]}
`)
	bad := e.waitExperiment("bad", rollouts.AnalysisError)
	if !strings.Contains(bad.Status.Message, "spec.templates[0].template.metadata.labels") {
		t.Fatalf("message %q", bad.Status.Message)
	}
	if _, err := e.c.Client.AppsV1().ReplicaSets(e.ns).Get(e.ctx, "bad-a", metav1.GetOptions{}); err == nil {
		t.Fatal("a ReplicaSet was made for an invalid experiment")
	}
}

// TestRolloutExperimentPromoteAndAbort: an experiment without a duration or analyses runs until
// it is terminated: promoting past the step terminates it (Successful), and so does an abort.
func TestRolloutExperimentPromoteAndAbort(t *testing.T) {
	e := newEnv(t)
	doc := func(image string) string {
		return strings.Replace(experimentRollout(image, ""), "          duration: 2s\n", "", 1)
	}
	e.apply(doc("registry.local/exp:1"))
	e.waitPhase("exp", rollouts.PhaseHealthy, 3)
	running := func() string {
		var name string
		e.waitFor("a running experiment", 60*time.Second, func() (bool, string) {
			name = e.rollout("exp").Status.Canary.CurrentExperiment
			ex := e.experiment(name)
			if ex == nil {
				return false, "none: " + name
			}
			return ex.Status.Phase == rollouts.AnalysisRunning, string(ex.Status.Phase)
		})
		return name
	}

	e.apply(doc("registry.local/exp:2"))
	name := running()
	time.Sleep(time.Second) // it stays: nothing ends it
	if ro := e.rollout("exp"); *ro.Status.CurrentStepIndex != 1 {
		t.Fatalf("step %d while the experiment runs", *ro.Status.CurrentStepIndex)
	}
	if err := e.ctrl.Promote(e.ctx, e.ns, "exp", false); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("exp", rollouts.PhaseHealthy, 3)
	ex := e.waitExperiment(name, rollouts.AnalysisSuccessful)
	if !ex.Spec.Terminate || ex.Status.Message != "Experiment terminated" {
		t.Fatalf("promoted past: terminate %v, message %q", ex.Spec.Terminate, ex.Status.Message)
	}

	e.apply(doc("registry.local/exp:3"))
	name = running()
	if err := e.ctrl.Abort(e.ctx, e.ns, "exp"); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("exp", rollouts.PhaseDegraded, 0)
	ex = e.waitExperiment(name, rollouts.AnalysisSuccessful)
	if !ex.Spec.Terminate {
		t.Fatalf("aborted: the experiment was not terminated: %+v", ex.Status)
	}
	e.waitRS("exp", "1:0/0 2:2/2 3:0/0")
}
