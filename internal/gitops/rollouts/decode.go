package rollouts

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Decode reads a Rollout from its JSON (as the API server serves it) and validates its spec. A
// document that is not a Rollout, or does not decode, is an error naming the field; a Rollout
// that decodes but asks for something invalid is returned together with a *errdefs.FieldError
// naming the field, the value and what is valid (the controller writes it as the InvalidSpec
// condition and leaves the cluster as it is).
func Decode(data []byte) (*Rollout, error) {
	var ro Rollout
	if err := json.Unmarshal(data, &ro); err != nil {
		return nil, decodeError(err)
	}
	if ro.APIVersion != Group+"/"+Version || ro.Kind != "Rollout" {
		return nil, errdefs.Invalid("apiVersion/kind", ro.APIVersion+" "+ro.Kind, "is not "+Group+"/"+Version+" Rollout")
	}
	return &ro, Validate(&ro.Spec)
}

// decodeError names the field a JSON type error is about.
func decodeError(err error) error {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		field := te.Field
		if field == "" {
			field = "rollout"
		}
		return errdefs.Invalid(field, te.Value, "is not a valid "+te.Type.String())
	}
	return errdefs.Invalid("rollout", "", "does not decode: "+err.Error())
}

// Validate checks a Rollout's spec the way Argo Rollouts' validation does, for what this
// controller supports, and refuses what it does not support yet by name.
func Validate(s *RolloutSpec) error { return validateSpec(s, false) }

// validateSpec validates s; resolved: a workloadRef's template (and selector) have been copied
// into s, and are checked like a template of its own.
func validateSpec(s *RolloutSpec, resolved bool) error {
	if s.Replicas != nil && *s.Replicas < 0 {
		return errdefs.Invalid("spec.replicas", strconv.Itoa(int(*s.Replicas)), "must be 0 or more")
	}
	if s.WorkloadRef != nil && !resolved {
		// The template comes from the workload: checked once it is read (validateSpec resolved).
		if err := validateWorkloadRef(s); err != nil {
			return err
		}
		return validateStrategy(s)
	}
	if s.Selector == nil || (len(s.Selector.MatchLabels) == 0 && len(s.Selector.MatchExpressions) == 0) {
		return errdefs.Invalid("spec.selector", "", "is required and must not be empty (an empty selector selects every pod)")
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err != nil {
		return errdefs.Invalid("spec.selector", "", err.Error())
	}
	if !sel.Matches(labelSet(s.Template.Labels)) {
		return errdefs.Invalid("spec.template.metadata.labels", fmt.Sprint(s.Template.Labels), "must match spec.selector "+sel.String())
	}
	if len(s.Template.Spec.Containers) == 0 {
		return errdefs.Invalid("spec.template.spec.containers", "", "must name at least one container")
	}
	return validateStrategy(s)
}

func validateStrategy(s *RolloutSpec) error {
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 0 {
		return errdefs.Invalid("spec.revisionHistoryLimit", strconv.Itoa(int(*s.RevisionHistoryLimit)), "must be 0 or more")
	}
	if s.MinReadySeconds < 0 {
		return errdefs.Invalid("spec.minReadySeconds", strconv.Itoa(int(s.MinReadySeconds)), "must be 0 or more")
	}
	if pd := s.ProgressDeadlineSeconds; pd != nil && *pd <= s.MinReadySeconds {
		return errdefs.Invalid("spec.progressDeadlineSeconds", strconv.Itoa(int(*pd)), "must be greater than spec.minReadySeconds")
	}
	switch c, bg := s.Strategy.Canary, s.Strategy.BlueGreen; {
	case c != nil && bg != nil:
		return errdefs.Invalid("spec.strategy", "canary and blueGreen", "must name exactly one strategy")
	case c == nil && bg == nil:
		return errdefs.Invalid("spec.strategy", "", "must name a strategy: canary or blueGreen")
	case c != nil:
		return validateCanary(c, replicas(s))
	default:
		return validateBlueGreen(bg, replicas(s))
	}
}

func validateCanary(c *CanaryStrategy, replicas int32) error {
	const f = "spec.strategy.canary"
	if err := validateTrafficRouting(c); err != nil {
		return err
	}
	if c.CanaryService != "" && c.CanaryService == c.StableService {
		return errdefs.Invalid(f+".canaryService", c.CanaryService, "must differ from stableService")
	}
	surge, err := scaled(c.MaxSurge, defaultMaxSurge, replicas, true, f+".maxSurge")
	if err != nil {
		return err
	}
	unavail, err := scaled(c.MaxUnavailable, defaultMaxUnavailable, replicas, false, f+".maxUnavailable")
	if err != nil {
		return err
	}
	if surge == 0 && unavail == 0 && replicas > 0 {
		return errdefs.Invalid(f+".maxSurge", "0", "and maxUnavailable cannot both be 0")
	}
	for i, st := range c.Steps {
		if err := validateStep(fmt.Sprintf("%s.steps[%d]", f, i), st, c.TrafficRouting != nil, replicas); err != nil {
			return err
		}
	}
	if a := c.Analysis; a != nil {
		if err := validateAnalysis(f+".analysis", a); err != nil {
			return err
		}
		if s := a.StartingStep; s != nil && (*s < 0 || int(*s) > len(c.Steps)) {
			return errdefs.Invalid(f+".analysis.startingStep", strconv.Itoa(int(*s)), fmt.Sprintf("must be 0 to the number of steps (%d)", len(c.Steps)))
		}
	}
	return nil
}

func validateStep(f string, st CanaryStep, routed bool, replicas int32) error {
	var set []string
	for name, ok := range map[string]bool{"setWeight": st.SetWeight != nil, "pause": st.Pause != nil,
		"setCanaryScale": st.SetCanaryScale != nil, "analysis": st.Analysis != nil, "experiment": st.Experiment != nil,
		"setHeaderRoute": st.SetHeaderRoute != nil, "setMirrorRoute": st.SetMirrorRoute != nil, "plugin": st.Plugin != nil} {
		if ok {
			set = append(set, name)
		}
	}
	switch {
	case len(set) == 0:
		return errdefs.Invalid(f, "", "names no step: use setWeight, pause, analysis, experiment or setCanaryScale")
	case len(set) > 1:
		return errdefs.Invalid(f, strings.Join(sortedCopy(set), ", "), "must hold exactly one step")
	}
	switch {
	case st.SetWeight != nil:
		if w := *st.SetWeight; w < 0 || w > 100 {
			return errdefs.Invalid(f+".setWeight", strconv.Itoa(int(w)), "must be 0 to 100")
		}
	case st.Pause != nil:
		if _, err := pauseDuration(st.Pause); err != nil {
			return errdefs.Invalid(f+".pause.duration", st.Pause.Duration.String(), err.Error())
		}
	case st.Analysis != nil:
		a := st.Analysis
		if err := validateAnalysis(f+".analysis", a); err != nil {
			return err
		}
	case st.Experiment != nil:
		return validateExperimentStep(f+".experiment", st.Experiment, routed)
	case st.SetCanaryScale != nil:
		// As in Argo Rollouts: the canary's scale apart from its weight needs a traffic router.
		if !routed {
			return errdefs.Invalid(f+".setCanaryScale", "", "requires spec.strategy.canary.trafficRouting (as in Argo Rollouts)")
		}
		return validateSetCanaryScale(f+".setCanaryScale", st.SetCanaryScale, replicas)
	default:
		return errdefs.Invalid(f+"."+set[0], "", "is not supported yet (supported steps: setWeight, pause, analysis, experiment, setCanaryScale)")
	}
	return nil
}

func validateBlueGreen(bg *BlueGreenStrategy, replicas int32) error {
	const f = "spec.strategy.blueGreen"
	switch {
	case bg.ActiveService == "":
		return errdefs.Invalid(f+".activeService", "", "is required")
	case bg.PreviewService == bg.ActiveService:
		return errdefs.Invalid(f+".previewService", bg.PreviewService, "must differ from activeService")
	case bg.PreviewReplicaCount != nil && (*bg.PreviewReplicaCount < 0 || *bg.PreviewReplicaCount > replicas):
		return errdefs.Invalid(f+".previewReplicaCount", strconv.Itoa(int(*bg.PreviewReplicaCount)), fmt.Sprintf("must be 0 to spec.replicas (%d)", replicas))
	case bg.AutoPromotionSeconds < 0:
		return errdefs.Invalid(f+".autoPromotionSeconds", strconv.Itoa(int(bg.AutoPromotionSeconds)), "must be 0 or more")
	case bg.ScaleDownDelaySeconds != nil && *bg.ScaleDownDelaySeconds < 0:
		return errdefs.Invalid(f+".scaleDownDelaySeconds", strconv.Itoa(int(*bg.ScaleDownDelaySeconds)), "must be 0 or more")
	case bg.AbortScaleDownDelaySeconds != nil && *bg.AbortScaleDownDelaySeconds < 0:
		return errdefs.Invalid(f+".abortScaleDownDelaySeconds", strconv.Itoa(int(*bg.AbortScaleDownDelaySeconds)), "must be 0 or more")
	}
	for k, a := range map[string]*RolloutAnalysis{"prePromotionAnalysis": bg.PrePromotionAnalysis, "postPromotionAnalysis": bg.PostPromotionAnalysis} {
		if a != nil {
			if err := validateAnalysis(f+"."+k, a); err != nil {
				return err
			}
		}
	}
	if _, err := scaled(bg.MaxUnavailable, "0", replicas, false, f+".maxUnavailable"); err != nil {
		return err
	}
	return nil
}

// pauseDuration reads a pause step's duration: absent is "until promoted" (ok false); a number
// or a numeric string is seconds; otherwise a Go duration with a unit ("30s", "5m", "1h").
func pauseDuration(p *RolloutPause) (d time.Duration, err error) {
	if p.Duration == nil {
		return -1, nil
	}
	var secs int64
	if p.Duration.Type == intstr.Int {
		secs = int64(p.Duration.IntVal)
	} else if n, perr := strconv.ParseInt(p.Duration.StrVal, 10, 32); perr == nil {
		secs = n
	} else {
		d, err := time.ParseDuration(p.Duration.StrVal)
		if err != nil || d < 0 || d > 365*24*time.Hour {
			return 0, fmt.Errorf("is not a duration: seconds, or a number with a unit (30s, 5m, 1h), up to a year")
		}
		return d, nil
	}
	if secs < 0 || secs > 365*24*3600 {
		return 0, fmt.Errorf("must be 0 to a year in seconds")
	}
	return time.Duration(secs) * time.Second, nil
}

// scaled resolves maxSurge/maxUnavailable against replicas (percentages round up for surge and
// down for unavailable, as Kubernetes does).
func scaled(v *intstr.IntOrString, def string, replicas int32, roundUp bool, field string) (int32, error) {
	x := intstr.Parse(def)
	if v != nil {
		x = *v
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&x, int(replicas), roundUp)
	if err != nil || n < 0 {
		return 0, errdefs.Invalid(field, x.String(), "must be a number or a percentage, 0 or more")
	}
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return int32(n), nil
}

func replicas(s *RolloutSpec) int32 {
	if s.Replicas == nil {
		return DefaultReplicas
	}
	return *s.Replicas
}
