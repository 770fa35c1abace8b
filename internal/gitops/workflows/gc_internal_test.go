package workflows

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func i32(v int32) *int32 { return &v }

// TestTTLDeadline: the phase picks secondsAfterSuccess or secondsAfterFailure, falling back to
// secondsAfterCompletion; a running workflow has none.
func TestTTLDeadline(t *testing.T) {
	end := time.Unix(1e9, 0)
	for _, tc := range []struct {
		ttl   TTLStrategy
		phase WorkflowPhase
		want  time.Duration // -1: none
	}{
		{TTLStrategy{SecondsAfterCompletion: i32(10)}, WorkflowSucceeded, 10 * time.Second},
		{TTLStrategy{SecondsAfterCompletion: i32(10), SecondsAfterSuccess: i32(3)}, WorkflowSucceeded, 3 * time.Second},
		{TTLStrategy{SecondsAfterCompletion: i32(10), SecondsAfterSuccess: i32(3)}, WorkflowFailed, 10 * time.Second},
		{TTLStrategy{SecondsAfterFailure: i32(0)}, WorkflowError, 0},
		{TTLStrategy{SecondsAfterFailure: i32(0)}, WorkflowSucceeded, -1},
		{TTLStrategy{SecondsAfterCompletion: i32(1)}, WorkflowRunning, -1},
	} {
		st := WorkflowStatus{Phase: tc.phase, FinishedAt: metav1.NewTime(end)}
		at, ok := ttlDeadline(&WorkflowSpec{TTLStrategy: &tc.ttl}, &st)
		if (tc.want < 0) == ok || (ok && at.Sub(end) != tc.want) {
			t.Errorf("%+v %s: got %v %v, want %v", tc.ttl, tc.phase, at.Sub(end), ok, tc.want)
		}
	}
}

// TestPodGCDue: which finished pods each strategy deletes, and the delay.
func TestPodGCDue(t *testing.T) {
	end := time.Unix(1e9, 0)
	pod := func(name, node string, phase corev1.PodPhase, lbl map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl, Annotations: map[string]string{AnnotationNodeID: node}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []*corev1.Pod{pod("ok", "n1", corev1.PodSucceeded, map[string]string{"gc": "yes"}), pod("bad", "n2", corev1.PodFailed, map[string]string{"gc": "no"}),
		pod("run", "n3", corev1.PodRunning, nil)}
	gcYes := &metav1.LabelSelector{MatchLabels: map[string]string{"gc": "yes"}}
	gcAny := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "gc", Operator: metav1.LabelSelectorOpExists}}}
	st := WorkflowStatus{Phase: WorkflowRunning, Nodes: map[string]NodeStatus{
		"n1": {Phase: NodeSucceeded, FinishedAt: metav1.NewTime(end)},
		"n2": {Phase: NodeFailed, FinishedAt: metav1.NewTime(end)},
		"n3": {Phase: NodeRunning},
	}}
	names := func(ps []*corev1.Pod) string {
		s := ""
		for _, p := range ps {
			s += p.Name + " "
		}
		return s
	}
	delay := intstr.FromString("30s")
	for _, tc := range []struct {
		gc    PodGC
		phase WorkflowPhase
		now   time.Duration
		want  string
		wait  time.Duration
	}{
		{PodGC{Strategy: PodGCOnPodCompletion}, WorkflowRunning, 0, "ok bad ", 0},
		{PodGC{Strategy: PodGCOnPodSuccess}, WorkflowRunning, 0, "ok ", 0},
		{PodGC{Strategy: PodGCOnPodSuccess, DeleteDelayDuration: &delay}, WorkflowRunning, 10 * time.Second, "", 20 * time.Second},
		{PodGC{Strategy: PodGCOnWorkflowCompletion}, WorkflowRunning, 0, "", 0},
		{PodGC{Strategy: PodGCOnWorkflowCompletion}, WorkflowFailed, 0, "ok bad run ", 0},
		{PodGC{Strategy: PodGCOnWorkflowSuccess}, WorkflowFailed, 0, "", 0},
		{PodGC{Strategy: PodGCOnWorkflowSuccess, DeleteDelayDuration: &delay}, WorkflowSucceeded, 31 * time.Second, "ok bad run ", 0},
		// labelSelector: only the pods it matches.
		{PodGC{Strategy: PodGCOnPodCompletion, LabelSelector: gcYes}, WorkflowRunning, 0, "ok ", 0},
		{PodGC{Strategy: PodGCOnWorkflowCompletion, LabelSelector: gcAny}, WorkflowFailed, 0, "ok bad ", 0},
		{PodGC{Strategy: PodGCOnWorkflowCompletion, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gc": "maybe"}}}, WorkflowFailed, 0, "", 0},
	} {
		s := st
		s.Phase = tc.phase
		if tc.phase.Completed() {
			s.FinishedAt = metav1.NewTime(end)
		}
		got, wait := podGCDue(&WorkflowSpec{PodGC: &tc.gc}, &s, pods, end.Add(tc.now))
		if names(got) != tc.want || wait != tc.wait {
			t.Errorf("%+v %s +%v: got %q wait %v, want %q wait %v", tc.gc, tc.phase, tc.now, names(got), wait, tc.want, tc.wait)
		}
	}
}
