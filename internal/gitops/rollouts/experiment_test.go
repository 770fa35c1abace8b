package rollouts

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

const experimentYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Experiment
metadata: {name: trial}
spec:
  duration: 5m
  progressDeadlineSeconds: 60
  scaleDownDelaySeconds: 0
  templates:
  - name: baseline
    replicas: 1
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: web, image: "web:1"}]}
  analyses:
  - {name: rate, templateName: success-rate, args: [{name: t, value: "0.9"}], requiredForCompletion: true}
`

const experimentStepYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "web:1"}]}
  strategy:
    canary:
      steps:
      - experiment:
          duration: 1m
          templates: [{name: baseline, specRef: stable}, {name: canary, specRef: canary, replicas: 2}]
          analyses: [{name: a, templateName: t, args: [{name: h, valueFrom: {podTemplateHashValue: Latest}}]}]
`

func TestExperimentValidation(t *testing.T) {
	for _, tc := range []struct {
		name, doc, old, new, field string
	}{
		{"valid", experimentYAML, "", "", ""},
		{"no templates", experimentYAML, "templates:\n  - name: baseline", "templatesX:\n  - name: baseline", "spec.templates"},
		{"bad duration", experimentYAML, "duration: 5m", "duration: soon", "spec.duration"},
		{"negative replicas", experimentYAML, "replicas: 1", "replicas: -1", "spec.templates[0].replicas"},
		{"bad name", experimentYAML, "name: baseline", "name: Base_line", "spec.templates[0].name"},
		{"labels", experimentYAML, "metadata: {labels: {app: web}}", "metadata: {labels: {app: x}}", "spec.templates[0].template.metadata.labels"},
		{"analysis arg from", experimentYAML, `value: "0.9"`, `valueFrom: {podTemplateHashValue: Latest}`, "spec.analyses[0].args[0].valueFrom"},
		{"deadline", experimentYAML, "progressDeadlineSeconds: 60", "progressDeadlineSeconds: 0", "spec.progressDeadlineSeconds"},
		{"step valid", experimentStepYAML, "", "", ""},
		{"step specRef", experimentStepYAML, "specRef: stable", "specRef: old", "spec.strategy.canary.steps[0].experiment.templates[0].specRef"},
		{"step weight unrouted", experimentStepYAML, "replicas: 2}", "replicas: 2, weight: 10}", "spec.strategy.canary.steps[0].experiment.templates[1].weight"},
		{"step templates", experimentStepYAML, "templates: [", "templatesX: [", "spec.strategy.canary.steps[0].experiment.templates"},
		{"step hash value", experimentStepYAML, "Latest", "Newest", "spec.strategy.canary.steps[0].experiment.analyses[0].args[0].valueFrom.podTemplateHashValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if tc.old != "" {
				if !strings.Contains(doc, tc.old) {
					t.Fatalf("%q not in the document", tc.old)
				}
				doc = strings.Replace(doc, tc.old, tc.new, 1)
			}
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(doc, "kind: Experiment") {
				_, err = DecodeExperiment(j)
			} else {
				_, err = Decode(j)
			}
			if got := errdefs.Field(err); got != tc.field {
				t.Fatalf("error %v names %q, want %q", err, got, tc.field)
			}
		})
	}
}

// FuzzDecodeExperiment: an Experiment from the cluster (written from git by anyone who can
// commit) either is refused with an error naming a field, or validates — and then the names it
// makes (ReplicaSets, AnalysisRuns) are valid object names and its hashes valid label values.
func FuzzDecodeExperiment(f *testing.F) {
	for _, y := range []string{experimentYAML, experimentStepYAML} {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Experiment","spec":{"templates":[{"name":"a","replicas":-1}]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Experiment","spec":{"duration":"1x","templates":[]}}`))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Experiment","metadata":{"name":"` + strings.Repeat("x", 250) + `"},"spec":{"templates":[{"name":"a"}]}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ex, err := DecodeExperiment(data)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		if _, err := json.Marshal(ex); err != nil {
			t.Fatalf("a decoded Experiment does not encode: %v", err)
		}
		if _, err := experimentDuration(ex.Spec.Duration); err != nil {
			t.Fatalf("accepted duration %q: %v", ex.Spec.Duration, err)
		}
		if ex.Name == "" || len(ex.Name) > 253 {
			return // the API server refuses such names
		}
		for _, tm := range ex.Spec.Templates {
			if n := ExperimentReplicaSetName(ex.Name, tm.Name); len(n) > 253 {
				t.Fatalf("ReplicaSet name %q too long", n)
			}
			if errs := validation.IsValidLabelValue(experimentHash(ex, tm)); len(errs) > 0 {
				t.Fatalf("hash: %v", errs)
			}
		}
	})
}

// TestExperimentStepDecision: Successful → the step is done; Failed/Error → abort; Inconclusive
// → paused until promoted (the pause condition cleared while controllerPause stays).
func TestExperimentStepDecision(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	decide := func(st *RolloutStatus, ph AnalysisPhase) (bool, *plan) {
		p := &plan{}
		return experimentStep(world{now: now, experiment: &RolloutExperimentStatus{Name: "x", Phase: ph}}, p, st), p
	}
	for _, ph := range []AnalysisPhase{AnalysisPending, AnalysisRunning} {
		if done, _ := decide(&RolloutStatus{}, ph); done {
			t.Errorf("%s: done", ph)
		}
	}
	if done, _ := decide(&RolloutStatus{}, AnalysisSuccessful); !done {
		t.Error("Successful: not done")
	}
	for _, ph := range []AnalysisPhase{AnalysisFailed, AnalysisError} {
		st := &RolloutStatus{}
		if done, p := decide(st, ph); done || !st.Abort || st.Canary.CurrentExperiment != "x" || len(p.events) != 1 {
			t.Errorf("%s: done %v, status %+v", ph, done, st)
		}
	}
	st := &RolloutStatus{}
	if done, _ := decide(st, AnalysisInconclusive); done || !st.ControllerPause || len(st.PauseConditions) != 1 ||
		st.PauseConditions[0].Reason != PauseReasonInconclusiveExperiment {
		t.Fatalf("Inconclusive: done %v, status %+v", done, st)
	}
	if done, _ := decide(st, AnalysisInconclusive); done {
		t.Fatal("Inconclusive: done while paused")
	}
	st.PauseConditions = nil // promoted
	if done, _ := decide(st, AnalysisInconclusive); !done {
		t.Fatal("Inconclusive, promoted: not done")
	}
}

// TestJudgeExperiment: the end of an experiment by duration, by its required analyses, by
// terminate, and by a failed run.
func TestJudgeExperiment(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	avail := metav1.NewTime(now.Add(-time.Minute))
	c := &Controller{}
	judge := func(spec ExperimentSpec, st ExperimentStatus) (ExperimentStatus, time.Duration) {
		var after time.Duration
		ex := &Experiment{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: spec}
		c.judgeExperiment(ex, &st, now, "", st.AvailableAt != nil, func(d time.Duration) { after = d })
		return st, after
	}
	if st, after := judge(ExperimentSpec{Duration: "2m"}, ExperimentStatus{AvailableAt: &avail}); st.Phase != AnalysisRunning || after != time.Minute {
		t.Errorf("duration not over: %s, again in %v", st.Phase, after)
	}
	if st, _ := judge(ExperimentSpec{Duration: "60"}, ExperimentStatus{AvailableAt: &avail}); st.Phase != AnalysisSuccessful {
		t.Errorf("duration over: %s", st.Phase)
	}
	if st, _ := judge(ExperimentSpec{Duration: "1s"}, ExperimentStatus{}); st.Phase != AnalysisPending {
		t.Errorf("not available: %s", st.Phase)
	}
	two := ExperimentSpec{Analyses: []ExperimentAnalysis{{Name: "a", RequiredForCompletion: true}, {Name: "b"}}}
	runs := func(a, b AnalysisPhase) ExperimentStatus {
		return ExperimentStatus{AvailableAt: &avail, AnalysisRuns: []ExperimentAnalysisRunStatus{{Name: "a", Phase: a}, {Name: "b", Phase: b}}}
	}
	if st, _ := judge(two, runs(AnalysisRunning, AnalysisSuccessful)); st.Phase != AnalysisRunning {
		t.Errorf("required still running: %s", st.Phase)
	}
	if st, _ := judge(two, runs(AnalysisSuccessful, AnalysisRunning)); st.Phase != AnalysisSuccessful {
		t.Errorf("required done: %s", st.Phase)
	}
	if st, _ := judge(two, runs(AnalysisSuccessful, AnalysisFailed)); st.Phase != AnalysisFailed || !strings.Contains(st.Message, "Failed") {
		t.Errorf("one failed: %s %q", st.Phase, st.Message)
	}
	none := ExperimentSpec{Analyses: []ExperimentAnalysis{{Name: "a"}, {Name: "b"}}}
	if st, _ := judge(none, runs(AnalysisSuccessful, AnalysisRunning)); st.Phase != AnalysisRunning {
		t.Errorf("none required, one running: %s", st.Phase)
	}
	if st, _ := judge(ExperimentSpec{Terminate: true}, ExperimentStatus{}); st.Phase != AnalysisSuccessful || st.Message != "Experiment terminated" {
		t.Errorf("terminated: %s %q", st.Phase, st.Message)
	}
}
