package rollouts

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTransitions(t *testing.T) {
	i := func(v int32) *int32 { return &v }
	ro := func(st RolloutStatus) *Rollout {
		return &Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web", Labels: map[string]string{AppLabel: "shop"}},
			Spec: RolloutSpec{Strategy: Strategy{Canary: &CanaryStrategy{Steps: make([]CanaryStep, 4)}}}, Status: st}
	}
	healthy1 := RolloutStatus{Phase: PhaseHealthy, StableRS: "aaa", CurrentPodHash: "aaa", CurrentStepIndex: i(4)}
	started := RolloutStatus{Phase: PhaseProgressing, StableRS: "aaa", CurrentPodHash: "bbb", CurrentStepIndex: i(0)}
	paused := RolloutStatus{Phase: PhasePaused, Message: "CanaryPauseStep", StableRS: "aaa", CurrentPodHash: "bbb", CurrentStepIndex: i(1)}
	aborted := RolloutStatus{Phase: PhaseDegraded, Abort: true, StableRS: "aaa", CurrentPodHash: "bbb", CurrentStepIndex: i(0)}
	done := RolloutStatus{Phase: PhaseHealthy, StableRS: "bbb", CurrentPodHash: "bbb", CurrentStepIndex: i(4)}
	first := RolloutStatus{Phase: PhaseHealthy, StableRS: "aaa", CurrentPodHash: "aaa", CurrentStepIndex: i(4)}
	for _, c := range []struct {
		name       string
		prev, next RolloutStatus
		want       string
	}{
		{"first revision: a phase, no update", RolloutStatus{}, first, "StepChanged@4 PhaseChanged:->Healthy"},
		{"a new revision", healthy1, started, "UpdateStarted@0:bbb StepChanged@0 PhaseChanged:Healthy->Progressing"},
		{"a pause step", started, paused, "StepChanged@1 PhaseChanged:Progressing->Paused"},
		{"nothing", paused, paused, ""},
		{"aborted", paused, aborted, "StepChanged@0 PhaseChanged:Paused->Degraded Aborted:bbb"},
		{"retried", aborted, started, "UpdateStarted@0:bbb PhaseChanged:Degraded->Progressing"},
		{"completed", paused, done, "StepChanged@4 PhaseChanged:Paused->Healthy Completed:bbb"},
	} {
		var got []string
		for _, r := range transitions(ro(c.prev), ro(c.next)) {
			s := r.Kind
			switch r.Kind {
			case "StepChanged":
				s += "@" + string(rune('0'+*r.Step))
			case "UpdateStarted":
				s += "@" + string(rune('0'+*r.Step)) + ":" + r.PodHash
			case "PhaseChanged":
				s += ":" + r.PhaseFrom + "->" + r.Phase
			case "Aborted", "Completed":
				s += ":" + r.PodHash
			}
			if r.Namespace != "prod" || r.Name != "web" || r.Strategy != "canary" || r.Steps != 4 {
				t.Errorf("%s: record %+v", c.name, r)
			}
			got = append(got, s)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: %q, want %q", c.name, g, c.want)
		}
	}
	// A Rollout no application defines is not reported.
	plain := ro(started)
	plain.Labels = nil
	if got := transitions(ro(healthy1), plain); len(got) != 0 {
		t.Errorf("a Rollout without an application: %+v", got)
	}
}
