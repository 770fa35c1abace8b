package rollouts

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Experiment is Argo Rollouts' Experiment: ReplicaSets run from pod templates for a while (or
// until their analyses finish), with AnalysisRuns judging them. A Rollout's `experiment` step
// creates one; it may also be applied on its own.
type Experiment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ExperimentSpec   `json:"spec"`
	Status            ExperimentStatus `json:"status,omitempty"`
}

// ExperimentSpec is the desired state.
type ExperimentSpec struct {
	Templates               []ExperimentTemplate `json:"templates"`
	Duration                string               `json:"duration,omitempty"`
	ProgressDeadlineSeconds *int32               `json:"progressDeadlineSeconds,omitempty"`
	Terminate               bool                 `json:"terminate,omitempty"`
	Analyses                []ExperimentAnalysis `json:"analyses,omitempty"`
	ScaleDownDelaySeconds   *int32               `json:"scaleDownDelaySeconds,omitempty"`
	DryRun                  []any                `json:"dryRun,omitempty"`
	MeasurementRetention    []any                `json:"measurementRetention,omitempty"`
}

// ExperimentTemplate is one pod template run as the ReplicaSet `<experiment>-<name>`.
type ExperimentTemplate struct {
	Name            string                 `json:"name"`
	Replicas        *int32                 `json:"replicas,omitempty"`
	MinReadySeconds int32                  `json:"minReadySeconds,omitempty"`
	Selector        *metav1.LabelSelector  `json:"selector,omitempty"`
	Template        corev1.PodTemplateSpec `json:"template"`
	// Service: recognised, not built (refused by name).
	Service map[string]any `json:"service,omitempty"`
}

// ExperimentAnalysis is one AnalysisRun of the experiment.
type ExperimentAnalysis struct {
	Name                  string        `json:"name"`
	TemplateName          string        `json:"templateName"`
	ClusterScope          bool          `json:"clusterScope,omitempty"`
	Args                  []AnalysisArg `json:"args,omitempty"`
	RequiredForCompletion bool          `json:"requiredForCompletion,omitempty"`
}

// ExperimentStatus is what the controller writes, field for field as Argo Rollouts does.
type ExperimentStatus struct {
	Phase            AnalysisPhase                 `json:"phase,omitempty"`
	Message          string                        `json:"message,omitempty"`
	TemplateStatuses []ExperimentTemplateStatus    `json:"templateStatuses,omitempty"`
	AvailableAt      *metav1.Time                  `json:"availableAt,omitempty"`
	Conditions       []ExperimentCondition         `json:"conditions,omitempty"`
	AnalysisRuns     []ExperimentAnalysisRunStatus `json:"analysisRuns,omitempty"`
}

// ExperimentTemplateStatus is one template's ReplicaSet, as status.templateStatuses.
type ExperimentTemplateStatus struct {
	Name               string        `json:"name"`
	Replicas           int32         `json:"replicas"`
	UpdatedReplicas    int32         `json:"updatedReplicas"`
	ReadyReplicas      int32         `json:"readyReplicas"`
	AvailableReplicas  int32         `json:"availableReplicas"`
	CollisionCount     *int32        `json:"collisionCount,omitempty"`
	Status             TemplateState `json:"status,omitempty"`
	Message            string        `json:"message,omitempty"`
	LastTransitionTime *metav1.Time  `json:"lastTransitionTime,omitempty"`
	PodTemplateHash    string        `json:"podTemplateHash,omitempty"`
}

// TemplateState is a template's status.
type TemplateState string

// The template states, as Argo Rollouts names them.
const (
	TemplateProgressing TemplateState = "Progressing"
	TemplateRunning     TemplateState = "Running"
	TemplateSuccessful  TemplateState = "Successful"
	TemplateFailed      TemplateState = "Failed"
	TemplateError       TemplateState = "Error"
)

// ExperimentAnalysisRunStatus is one analysis's run, as status.analysisRuns.
type ExperimentAnalysisRunStatus struct {
	Name        string        `json:"name"`
	AnalysisRun string        `json:"analysisRun"`
	Phase       AnalysisPhase `json:"phase"`
	Message     string        `json:"message,omitempty"`
}

// ExperimentCondition is a status condition (type Progressing).
type ExperimentCondition struct {
	Type               string                 `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	LastUpdateTime     metav1.Time            `json:"lastUpdateTime"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message"`
}

// Experiment annotations and labels Argo Rollouts uses.
const (
	// ExperimentNameLabel on an experiment's ReplicaSets and AnalysisRuns names the Experiment.
	ExperimentNameLabel = "experiment.argoproj.io/name"
	// ExperimentTemplateLabel on its ReplicaSets names the template.
	ExperimentTemplateLabel = "experiment.argoproj.io/template-name"
	// DefaultExperimentScaleDownDelaySeconds: an ended experiment's ReplicaSets keep their pods
	// this long (Argo Rollouts: 30).
	DefaultExperimentScaleDownDelaySeconds = int32(30)
)

// RolloutExperimentStep is a canary step's `experiment`.
type RolloutExperimentStep struct {
	Duration  string                      `json:"duration,omitempty"`
	Templates []RolloutExperimentTemplate `json:"templates"`
	Analyses  []ExperimentAnalysis        `json:"analyses,omitempty"`
}

// RolloutExperimentTemplate runs the stable or the canary pod template.
type RolloutExperimentTemplate struct {
	Name     string                `json:"name"`
	SpecRef  string                `json:"specRef"`
	Replicas *int32                `json:"replicas,omitempty"`
	Weight   *int32                `json:"weight,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	Metadata map[string]any        `json:"metadata,omitempty"`
	Service  map[string]any        `json:"service,omitempty"`
}

// DecodeExperiment reads an Experiment from its JSON and validates its spec. A document that
// does not decode is an error naming the field; one that decodes and asks for something invalid
// is returned with a *errdefs.FieldError (the controller writes it as phase Error).
func DecodeExperiment(data []byte) (*Experiment, error) {
	var ex Experiment
	if err := json.Unmarshal(data, &ex); err != nil {
		return nil, decodeError(err)
	}
	if ex.APIVersion != Group+"/"+Version || ex.Kind != "Experiment" {
		return nil, errdefs.Invalid("apiVersion/kind", ex.APIVersion+" "+ex.Kind, "is not "+Group+"/"+Version+" Experiment")
	}
	return &ex, validateExperiment(&ex.Spec)
}

// experimentDuration reads spec.duration: empty is none (-1); a number is seconds; otherwise a
// Go duration with a unit.
func experimentDuration(s string) (time.Duration, error) {
	if s == "" {
		return -1, nil
	}
	v := intstr.Parse(s)
	return pauseDuration(&RolloutPause{Duration: &v})
}

func validateExperiment(s *ExperimentSpec) error {
	const f = "spec"
	if len(s.Templates) == 0 {
		return errdefs.Invalid(f+".templates", "", "must name at least one template")
	}
	if _, err := experimentDuration(s.Duration); err != nil {
		return errdefs.Invalid(f+".duration", s.Duration, err.Error())
	}
	if pd := s.ProgressDeadlineSeconds; pd != nil && *pd <= 0 {
		return errdefs.Invalid(f+".progressDeadlineSeconds", strconv.Itoa(int(*pd)), "must be 1 or more")
	}
	if d := s.ScaleDownDelaySeconds; d != nil && *d < 0 {
		return errdefs.Invalid(f+".scaleDownDelaySeconds", strconv.Itoa(int(*d)), "must be 0 or more")
	}
	seen := map[string]bool{}
	for i, t := range s.Templates {
		tf := fmt.Sprintf("%s.templates[%d]", f, i)
		if err := validateExperimentName(tf+".name", t.Name, seen); err != nil {
			return err
		}
		if t.Replicas != nil && *t.Replicas < 0 {
			return errdefs.Invalid(tf+".replicas", strconv.Itoa(int(*t.Replicas)), "must be 0 or more")
		}
		if t.Service != nil {
			return errdefs.Invalid(tf+".service", "", "is not supported yet")
		}
		if t.Selector == nil || (len(t.Selector.MatchLabels) == 0 && len(t.Selector.MatchExpressions) == 0) {
			return errdefs.Invalid(tf+".selector", "", "is required and must not be empty")
		}
		sel, err := metav1.LabelSelectorAsSelector(t.Selector)
		if err != nil {
			return errdefs.Invalid(tf+".selector", "", err.Error())
		}
		if !sel.Matches(labelSet(t.Template.Labels)) {
			return errdefs.Invalid(tf+".template.metadata.labels", fmt.Sprint(t.Template.Labels), "must match the selector "+sel.String())
		}
		if len(t.Template.Spec.Containers) == 0 {
			return errdefs.Invalid(tf+".template.spec.containers", "", "must name at least one container")
		}
	}
	return validateExperimentAnalyses(f+".analyses", s.Analyses, false)
}

// validateExperimentAnalyses checks analyses; fromRollout: podTemplateHashValue arguments are
// allowed (the Rollout resolves them when it creates the Experiment).
func validateExperimentAnalyses(f string, as []ExperimentAnalysis, fromRollout bool) error {
	seen := map[string]bool{}
	for i, a := range as {
		af := fmt.Sprintf("%s[%d]", f, i)
		if err := validateExperimentName(af+".name", a.Name, seen); err != nil {
			return err
		}
		if a.TemplateName == "" {
			return errdefs.Invalid(af+".templateName", "", "is required")
		}
		for j, arg := range a.Args {
			gf := fmt.Sprintf("%s.args[%d]", af, j)
			switch {
			case arg.Name == "":
				return errdefs.Invalid(gf+".name", "", "is required")
			case arg.ValueFrom != nil && arg.ValueFrom.PodTemplateHashValue != nil && fromRollout:
				if v := *arg.ValueFrom.PodTemplateHashValue; v != "Stable" && v != "Latest" {
					return errdefs.Invalid(gf+".valueFrom.podTemplateHashValue", v, "must be Stable or Latest")
				}
			case arg.ValueFrom != nil:
				return errdefs.Invalid(gf+".valueFrom", "", "is not supported yet (supported: value)")
			case arg.Value == nil:
				return errdefs.Invalid(gf+".value", "", "is required")
			}
		}
	}
	return nil
}

// validateExperimentName: names become parts of object names (`<experiment>-<name>`).
func validateExperimentName(f, name string, seen map[string]bool) error {
	if name == "" {
		return errdefs.Invalid(f, "", "is required")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return errdefs.Invalid(f, name, "must be a DNS label: "+errs[0])
	}
	if seen[name] {
		return errdefs.Invalid(f, name, "is used twice")
	}
	seen[name] = true
	return nil
}

// validateExperimentStep checks a canary step's experiment.
func validateExperimentStep(f string, e *RolloutExperimentStep, routed bool) error {
	if len(e.Templates) == 0 {
		return errdefs.Invalid(f+".templates", "", "must name at least one template")
	}
	if _, err := experimentDuration(e.Duration); err != nil {
		return errdefs.Invalid(f+".duration", e.Duration, err.Error())
	}
	seen := map[string]bool{}
	for i, t := range e.Templates {
		tf := fmt.Sprintf("%s.templates[%d]", f, i)
		if err := validateExperimentName(tf+".name", t.Name, seen); err != nil {
			return err
		}
		switch {
		case t.SpecRef != "stable" && t.SpecRef != "canary":
			return errdefs.Invalid(tf+".specRef", t.SpecRef, "must be stable or canary")
		case t.Replicas != nil && *t.Replicas < 0:
			return errdefs.Invalid(tf+".replicas", strconv.Itoa(int(*t.Replicas)), "must be 0 or more")
		case t.Weight != nil && !routed:
			return errdefs.Invalid(tf+".weight", strconv.Itoa(int(*t.Weight)), "requires spec.strategy.canary.trafficRouting (as in Argo Rollouts)")
		case t.Weight != nil:
			return errdefs.Invalid(tf+".weight", strconv.Itoa(int(*t.Weight)), "is not supported yet (experiment traffic is not routed)")
		case t.Service != nil:
			return errdefs.Invalid(tf+".service", "", "is not supported yet")
		case t.Selector != nil:
			if _, err := metav1.LabelSelectorAsSelector(t.Selector); err != nil {
				return errdefs.Invalid(tf+".selector", "", err.Error())
			}
		}
	}
	return validateExperimentAnalyses(f+".analyses", e.Analyses, true)
}
