package rollouts

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// computeCanary scales the new and stable ReplicaSets to the current step's share (the weight
// is the share of replicas: there is no traffic router), points the canary and stable Services
// at their revisions, and moves through the steps.
func computeCanary(w world, p *plan, st *RolloutStatus, all []*appsv1.ReplicaSet, want int32) {
	ro := w.ro
	c := ro.Spec.Strategy.Canary
	steps := c.Steps
	n := int32(len(steps))
	newRS, stableRS := p.newRS, p.stableRS
	newHash := hashOf(newRS)

	if st.PromoteFull && st.StableRS != newHash {
		st.PauseConditions, st.Abort, st.AbortedAt = nil, false, nil
		if n > 0 {
			st.CurrentStepIndex = &n
		}
	}
	backgroundAnalysis(w, p, st) // a failed background analysis aborts, from here on
	idx := n
	if st.CurrentStepIndex != nil {
		idx = min(*st.CurrentStepIndex, n)
	}
	if st.Abort && st.StableRS != newHash && n > 0 {
		zero := int32(0)
		st.CurrentStepIndex, idx = &zero, 0
	}
	// Every step done: the new revision becomes stable (with a traffic router, once it runs at
	// full scale: the stable Service is switched to it and the canary weight goes back to 0).
	routed := c.TrafficRouting != nil
	if !st.Abort && (idx >= n || st.PromoteFull) && st.StableRS != newHash &&
		(!routed || (p.create != newRS && specReplicas(newRS) == want && newRS.Status.AvailableReplicas >= want)) {
		old := stableRS
		st.StableRS, stableRS, p.stableRS = newHash, newRS, newRS
		st.PromoteFull = false
		p.events = append(p.events, fmt.Sprintf("revision %d promoted to stable", revisionOf(newRS)))
		if routed && old != nil && old != newRS && specReplicas(old) > 0 {
			// The previous stable revision serves until the routers have let go of it.
			if d := scaleDownDelay(c); d > 0 {
				v := w.now.Add(d).UTC().Format(time.RFC3339)
				p.setAnnotation(old, ScaleDownDeadlineAnnotation, &v)
			} else {
				p.setScale(old, 0)
			}
		}
	}
	fully := st.StableRS == newHash

	surge, _ := scaled(c.MaxSurge, defaultMaxSurge, want, true, "")
	unavail, _ := scaled(c.MaxUnavailable, defaultMaxUnavailable, want, false, "")
	var others []*appsv1.ReplicaSet
	for _, rs := range all {
		if rs != newRS && rs != stableRS {
			others = append(others, rs)
		}
	}
	desiredNew, desiredStable := want, int32(0)
	var newCount, stableCount int32
	atCounts := false
	if routed {
		desiredNew, desiredStable, atCounts = computeRouted(w, p, st, others, idx, want, fully)
		newCount, stableCount = desiredNew, desiredStable
	} else {
		st.Canary.Weights = nil // written with traffic routing only
		if !fully {
			desiredNew, desiredStable = canaryCounts(ro, st, idx, want)
		}
		newCount, stableCount = canaryScale(newRS, stableRS, others, p, want, surge, unavail, desiredNew, desiredStable, fully)
		p.setScale(newRS, newCount)
		if !fully {
			p.setScale(stableRS, stableCount)
		}
	}
	scaleDownOthers(p, others, all, want, unavail)

	// Services: canary at the new revision while an update runs, both at stable otherwise.
	canaryHash := newHash
	if st.Abort {
		canaryHash = st.StableRS
	}
	if c.CanaryService != "" {
		p.services = append(p.services, serviceSwitch{c.CanaryService, canaryHash, "canary.canaryService"})
	}
	if c.StableService != "" {
		p.services = append(p.services, serviceSwitch{c.StableService, st.StableRS, "canary.stableService"})
	}

	if fully || st.Abort || ro.Spec.Paused || idx >= n {
		removePause(st, PauseReasonCanaryPauseStep)
		if fully || st.Abort {
			st.ControllerPause = false
			removePause(st, PauseReasonInconclusiveExperiment)
		}
		if fully {
			st.Canary.CurrentExperiment = ""
		}
		return
	}
	step := steps[idx]
	done := false
	switch {
	case step.Analysis != nil:
		a := w.analysis
		st.Canary.CurrentStepAnalysisRunStatus = a
		switch {
		case a == nil:
		case a.Status == AnalysisSuccessful:
			done = true
		case a.Status == AnalysisFailed || a.Status == AnalysisError:
			st.Abort = true // the next reconcile returns scale and traffic to stable
			p.events = append(p.events, fmt.Sprintf("analysis %s %s: aborting", a.Name, a.Status))
			p.after(time.Millisecond)
		case a.Status == AnalysisInconclusive:
			_, has := hasPause(st, PauseReasonInconclusive)
			switch {
			case !has && st.ControllerPause:
				done = true // promoted past the inconclusive run
			case !has:
				st.PauseConditions = append(st.PauseConditions, PauseCondition{Reason: PauseReasonInconclusive, StartTime: metav1.NewTime(w.now)})
				st.ControllerPause = true
			}
		}
	case step.Experiment != nil:
		done = experimentStep(w, p, st)
	case step.Pause != nil:
		d, _ := pauseDuration(step.Pause)
		pc, has := hasPause(st, PauseReasonCanaryPauseStep)
		switch {
		case !has && st.ControllerPause:
			done = true // promoted: the pause condition was cleared
		case !has:
			st.PauseConditions = append(st.PauseConditions, PauseCondition{Reason: PauseReasonCanaryPauseStep, StartTime: metav1.NewTime(w.now)})
			st.ControllerPause = true
			if d >= 0 {
				p.after(d)
			}
		case d >= 0:
			if end := pc.StartTime.Add(d); !w.now.Before(end) {
				done = true
			} else {
				p.after(end.Sub(w.now))
			}
		}
	case routed && step.SetWeight != nil: // done once the counts are reached and the weight is written
		done = atCounts && p.traffic.weight == *step.SetWeight
	case step.SetCanaryScale != nil:
		done = atCounts
	default: // setWeight: done once both sides are at their counts and available
		done = newCount == desiredNew && specReplicas(newRS) == desiredNew && newRS.Status.AvailableReplicas >= desiredNew &&
			(stableRS == nil || (stableCount == desiredStable && specReplicas(stableRS) == desiredStable && stableRS.Status.AvailableReplicas >= desiredStable)) &&
			replicasOf(others, p) == 0
		if p.create == newRS {
			done = desiredNew == 0 && done
		}
	}
	if done {
		idx++
		st.CurrentStepIndex = &idx
		removePause(st, PauseReasonCanaryPauseStep)
		removePause(st, PauseReasonInconclusive)
		st.ControllerPause = false
		st.Canary.CurrentStepAnalysisRunStatus = nil
		st.Canary.CurrentExperiment = ""
		removePause(st, PauseReasonInconclusiveExperiment)
		p.events = append(p.events, fmt.Sprintf("step %d/%d completed (%s)", idx, n, stepString(step)))
		p.advanced = true
		p.after(time.Millisecond) // the next step's objects, at once
	}
}

func stepString(s CanaryStep) string {
	switch {
	case s.SetWeight != nil:
		return fmt.Sprintf("setWeight: %d", *s.SetWeight)
	case s.Pause != nil && s.Pause.Duration != nil:
		return "pause: " + s.Pause.Duration.String()
	case s.Pause != nil:
		return "pause"
	case s.Analysis != nil:
		return "analysis"
	case s.Experiment != nil:
		return "experiment"
	case s.SetCanaryScale != nil && s.SetCanaryScale.Replicas != nil:
		return fmt.Sprintf("setCanaryScale: replicas %d", *s.SetCanaryScale.Replicas)
	case s.SetCanaryScale != nil && s.SetCanaryScale.Weight != nil:
		return fmt.Sprintf("setCanaryScale: weight %d", *s.SetCanaryScale.Weight)
	case s.SetCanaryScale != nil:
		return "setCanaryScale: matchTrafficWeight"
	}
	return "step"
}

func replicasOf(rss []*appsv1.ReplicaSet, p *plan) int32 {
	var n int32
	for _, rs := range rss {
		n += max(p.replicasAfter(rs), rs.Status.Replicas)
	}
	return n
}

// currentWeight is the weight the steps up to idx set (the last setWeight at or before it).
func currentWeight(steps []CanaryStep, idx int32) int32 {
	if idx >= int32(len(steps)) {
		return 100
	}
	for i := idx; i >= 0; i-- {
		if w := steps[i].SetWeight; w != nil {
			return *w
		}
	}
	return 0
}

// canaryCounts is the number of new and stable replicas the current step asks for: the weight's
// share of spec.replicas for the canary (rounded up), the rest stable. An aborted update goes
// back to all stable.
func canaryCounts(ro *Rollout, st *RolloutStatus, idx, want int32) (int32, int32) {
	if st.Abort {
		return 0, want
	}
	newCount := min(int32(math.Ceil(float64(want)*float64(currentWeight(ro.Spec.Strategy.Canary.Steps, idx))/100)), want)
	return newCount, want - newCount
}

// canaryScale is Argo Rollouts' basic-canary arithmetic (CalculateReplicaCountsForBasicCanary):
// it moves the new and stable ReplicaSets toward their desired counts without more than
// spec.replicas+maxSurge pods, nor fewer than spec.replicas-maxUnavailable available.
func canaryScale(newRS, stableRS *appsv1.ReplicaSet, others []*appsv1.ReplicaSet, p *plan, want, surge, unavail, desiredNew, desiredStable int32, fully bool) (int32, int32) {
	newCount := specReplicas(newRS)
	var stableCount int32
	scaleStable := stableRS != nil && stableRS != newRS && !fully
	if scaleStable {
		stableCount = specReplicas(stableRS)
	} else {
		desiredNew, desiredStable = want, 0
	}
	maxTotal := want + surge
	total := newCount + stableCount
	for _, rs := range others {
		total += specReplicas(rs)
	}
	up := maxTotal - total
	if scaleStable && stableCount < desiredStable && up > 0 {
		add := min(up, desiredStable-stableCount)
		stableCount += add
		up -= add
	}
	if newCount < desiredNew && up > 0 {
		newCount += min(up, desiredNew-newCount)
	}
	for _, rs := range others {
		if specReplicas(rs) > 0 {
			return newCount, stableCount // older revisions go first
		}
	}
	minAvail := want - unavail
	increasing := desiredNew >= specReplicas(newRS)
	down := forScaleDown(newRS, !increasing)
	if scaleStable {
		down += forScaleDown(stableRS, increasing)
	}
	if down <= minAvail {
		return newCount, stableCount
	}
	excess := down - minAvail
	if !increasing {
		newCount = scaleDownTo(newRS, desiredNew, excess, newCount)
		newCount, stableCount = withinLimits(newRS, stableRS, newCount, stableCount, maxTotal, minAvail)
	} else if scaleStable {
		stableCount = scaleDownTo(stableRS, desiredStable, excess, stableCount)
		stableCount, newCount = withinLimits(stableRS, newRS, stableCount, newCount, maxTotal, minAvail)
	}
	return newCount, stableCount
}

func forScaleDown(rs *appsv1.ReplicaSet, ignoreAvailability bool) int32 {
	if rs == nil {
		return 0
	}
	if specReplicas(rs) < rs.Status.AvailableReplicas || ignoreAvailability {
		return specReplicas(rs)
	}
	return rs.Status.AvailableReplicas
}

func scaleDownTo(rs *appsv1.ReplicaSet, desired, excess, current int32) int32 {
	if specReplicas(rs) <= desired || excess <= 0 {
		return current
	}
	return max(specReplicas(rs)-excess, desired)
}

func withinLimits(drain, adjust *appsv1.ReplicaSet, drainCount, adjustCount, maxTotal, minAvail int32) (int32, int32) {
	over := max(0, adjustCount+drainCount-maxTotal)
	var avail int32
	if drain != nil {
		avail += min(drain.Status.AvailableReplicas, drainCount)
	}
	if adjust != nil {
		adjustCount -= over
		avail += min(adjust.Status.AvailableReplicas, adjustCount)
		extra := max(0, adjust.Status.AvailableReplicas-adjustCount)
		need := max(0, minAvail-avail)
		adjustCount += min(extra, need)
		over = max(0, adjustCount+drainCount-maxTotal)
		drainCount -= over
	}
	return drainCount, adjustCount
}

// scaleDownOthers scales down ReplicaSets of neither the new nor the stable revision, their
// unavailable pods first, then as many available ones as keep spec.replicas-maxUnavailable
// available.
func scaleDownOthers(p *plan, others, all []*appsv1.ReplicaSet, want, unavail int32) {
	var avail int32
	for _, rs := range all {
		avail += min(rs.Status.AvailableReplicas, p.replicasAfter(rs))
	}
	room := avail - (want - unavail)
	for _, rs := range others {
		cur := specReplicas(rs)
		if _, pending := p.annotate[rs.Name][ScaleDownDeadlineAnnotation]; cur == 0 || rs.Annotations[ScaleDownDeadlineAnnotation] != "" || pending {
			continue
		}
		unready := max(0, cur-rs.Status.AvailableReplicas)
		cut := unready
		if room > 0 {
			take := min(room, cur-unready)
			cut += take
			room -= take
		}
		p.setScale(rs, cur-cut)
	}
}
