package rollouts

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as Argo Rollouts writes them.
const (
	reasonInvalidSpec    = "InvalidSpec"
	reasonAvailable      = "AvailableReason"
	reasonNewRSCreated   = "NewReplicaSetCreated"
	reasonRSUpdated      = "ReplicaSetUpdated"
	reasonNewRSAvailable = "NewReplicaSetAvailable"
	reasonPaused         = "RolloutPaused"
	reasonResumed        = "RolloutResumed"
	reasonAborted        = "RolloutAborted"
	reasonTimedOut       = "ProgressDeadlineExceeded"
	reasonCompleted      = "RolloutCompleted"
	reasonNotCompleted   = "RolloutNotCompleted"
	reasonHealthy        = "RolloutHealthy"
	reasonReconcileError = "ReconciliationError"
	messageHealthy       = "Rollout is healthy"
	messageNotHealthy    = "Rollout is not healthy"
	messageAvailable     = "Rollout has minimum availability"
	messageNotAvailable  = "Rollout does not have minimum availability"
	messagePaused        = "Rollout is paused"
	messageResumed       = "Rollout is resumed"
)

// getCondition returns the condition of type t, or nil.
func getCondition(st *RolloutStatus, t ConditionType) *Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition sets a condition, keeping its transition time when the status does not change
// and its update time when nothing changes at all.
func setCondition(st *RolloutStatus, now time.Time, t ConditionType, status corev1.ConditionStatus, reason, msg string) {
	ts := metav1.NewTime(now.Truncate(time.Second))
	if c := getCondition(st, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return
		}
		if c.Status != status {
			c.LastTransitionTime = ts
		}
		c.Status, c.Reason, c.Message, c.LastUpdateTime = status, reason, msg, ts
		return
	}
	st.Conditions = append(st.Conditions, Condition{Type: t, Status: status, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts})
}

func removeCondition(st *RolloutStatus, t ConditionType) {
	out := st.Conditions[:0:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// conditions sets Progressing, Available, Paused, Completed and Healthy from the new status,
// and enforces progressDeadlineSeconds.
func conditions(w world, p *plan, st *RolloutStatus, prev RolloutStatus, created bool, want int32) {
	ro, now := w.ro, w.now
	removeCondition(st, ConditionInvalidSpec)
	newName := p.newRS.Name
	complete := st.StableRS == st.CurrentPodHash && st.UpdatedReplicas == want && st.AvailableReplicas >= want &&
		(ro.Spec.Strategy.BlueGreen != nil && st.BlueGreen.ActiveSelector == st.CurrentPodHash ||
			ro.Spec.Strategy.Canary != nil && st.Replicas == want)
	isPaused := paused(ro, st)
	// Progress, for progressDeadlineSeconds: a new revision, a scale decision, a step, a change
	// of availability. Pods that fail and are replaced change the other counts without progress.
	moved := created || prev.CurrentPodHash != st.CurrentPodHash || prev.AvailableReplicas != st.AvailableReplicas ||
		!equalIndex(prev.CurrentStepIndex, st.CurrentStepIndex) || len(p.scale) > 0 || prev.StableRS != st.StableRS
	prog := getCondition(st, ConditionProgressing)
	switch {
	case st.Abort:
		msg := fmt.Sprintf("Rollout aborted update to revision %d", revisionOf(p.newRS))
		if a := abortingRun(st); a != nil && a.Message != "" {
			msg += ": " + a.Message
		} else if e := w.experiment; e != nil && (e.Phase == AnalysisFailed || e.Phase == AnalysisError) {
			msg += fmt.Sprintf(": Experiment %q %s", e.Name, e.Phase)
			if e.Message != "" {
				msg += ": " + e.Message
			}
		}
		setCondition(st, now, ConditionProgressing, corev1.ConditionFalse, reasonAborted, msg)
	case isPaused:
		setCondition(st, now, ConditionProgressing, corev1.ConditionUnknown, reasonPaused, messagePaused)
	case complete:
		setCondition(st, now, ConditionProgressing, corev1.ConditionTrue, reasonNewRSAvailable, fmt.Sprintf("ReplicaSet %q has successfully progressed.", newName))
	case prog != nil && prog.Reason == reasonTimedOut && !moved:
		// stays timed out until something moves
	case created:
		setCondition(st, now, ConditionProgressing, corev1.ConditionTrue, reasonNewRSCreated, fmt.Sprintf("Created new replica set %q", newName))
	default:
		msg := fmt.Sprintf("ReplicaSet %q is progressing.", newName)
		prog = getCondition(st, ConditionProgressing)
		if moved || prog == nil || prog.Reason == reasonPaused || prog.Reason == reasonNewRSAvailable || prog.Reason == reasonAborted || prog.Reason == reasonReconcileError {
			setCondition(st, now, ConditionProgressing, corev1.ConditionTrue, reasonRSUpdated, msg)
			if c := getCondition(st, ConditionProgressing); c != nil && moved {
				c.LastUpdateTime = metav1.NewTime(now.Truncate(time.Second))
			}
		}
		// progressDeadlineSeconds: no progress for that long is a timeout.
		deadline := time.Duration(DefaultProgressDeadlineSeconds) * time.Second
		if ro.Spec.ProgressDeadlineSeconds != nil {
			deadline = time.Duration(*ro.Spec.ProgressDeadlineSeconds) * time.Second
		}
		if c := getCondition(st, ConditionProgressing); c != nil {
			if end := c.LastUpdateTime.Add(deadline); !now.Before(end) {
				setCondition(st, now, ConditionProgressing, corev1.ConditionFalse, reasonTimedOut, fmt.Sprintf("ReplicaSet %q has timed out progressing.", newName))
				p.events = append(p.events, "progress deadline exceeded")
				if ro.Spec.ProgressDeadlineAbort && st.StableRS != st.CurrentPodHash {
					st.Abort = true // the next reconcile scales back to stable
					p.after(time.Millisecond)
				}
			} else {
				p.after(end.Sub(now))
			}
		}
	}

	if st.AvailableReplicas >= want {
		setCondition(st, now, ConditionAvailable, corev1.ConditionTrue, reasonAvailable, messageAvailable)
	} else {
		setCondition(st, now, ConditionAvailable, corev1.ConditionFalse, reasonAvailable, messageNotAvailable)
	}
	if isPaused {
		setCondition(st, now, ConditionPaused, corev1.ConditionTrue, reasonPaused, messagePaused)
	} else if getCondition(st, ConditionPaused) != nil {
		setCondition(st, now, ConditionPaused, corev1.ConditionFalse, reasonResumed, messageResumed)
	}
	rev := revisionOf(p.newRS)
	if complete {
		setCondition(st, now, ConditionCompleted, corev1.ConditionTrue, reasonCompleted,
			fmt.Sprintf("Rollout completed update to revision %d (%s): %s", rev, st.CurrentPodHash, messageHealthy))
		setCondition(st, now, ConditionHealthy, corev1.ConditionTrue, reasonHealthy, messageHealthy)
	} else {
		setCondition(st, now, ConditionCompleted, corev1.ConditionFalse, reasonNotCompleted,
			fmt.Sprintf("Rollout not completed, started update to revision %d (%s)", rev, st.CurrentPodHash))
		setCondition(st, now, ConditionHealthy, corev1.ConditionFalse, reasonHealthy, messageNotHealthy)
	}
}

func equalIndex(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Calculate returns the phase and message Argo Rollouts derives from a Rollout's spec and status
// (its CalculateRolloutPhase): what `kubectl get rollout`, the Argo Rollouts plugin and Argo CD's
// health check read.
func Calculate(spec *RolloutSpec, st *RolloutStatus) (Phase, string) {
	for _, c := range st.Conditions {
		if c.Type == ConditionInvalidSpec {
			return PhaseDegraded, fmt.Sprintf("%s: %s", ConditionInvalidSpec, c.Message)
		}
		switch c.Reason {
		case reasonAborted, reasonTimedOut:
			return PhaseDegraded, fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	if spec.Paused {
		return PhasePaused, "manually paused"
	}
	for _, pc := range st.PauseConditions {
		return PhasePaused, string(pc.Reason)
	}
	if spec.RestartAt != nil && (st.RestartedAt == nil || !spec.RestartAt.Equal(st.RestartedAt)) {
		return PhaseProgressing, "rollout is restarting"
	}
	if st.UpdatedReplicas < replicas(spec) {
		return PhaseProgressing, "more replicas need to be updated"
	}
	if st.AvailableReplicas < st.UpdatedReplicas {
		return PhaseProgressing, "updated replicas are still becoming available"
	}
	if spec.Strategy.BlueGreen != nil {
		if st.BlueGreen.ActiveSelector == "" || st.BlueGreen.ActiveSelector != st.CurrentPodHash {
			return PhaseProgressing, "active service cutover pending"
		}
		if st.StableRS == "" || st.StableRS != st.CurrentPodHash {
			return PhaseProgressing, "waiting for post-promotion verification to complete"
		}
	} else if spec.Strategy.Canary != nil {
		if st.Replicas > st.UpdatedReplicas {
			return PhaseProgressing, "old replicas are pending termination"
		}
		if st.StableRS == "" || st.StableRS != st.CurrentPodHash {
			return PhaseProgressing, "waiting for all steps to complete"
		}
	}
	return PhaseHealthy, ""
}
