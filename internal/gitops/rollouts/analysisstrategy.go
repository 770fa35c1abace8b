package rollouts

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// strategyRuns are the analyses a strategy runs besides canary analysis steps: background
// analysis (strategy.canary.analysis) and blue-green pre- and post-promotion analysis, as the
// controller last advanced them (nil: not running).
type strategyRuns struct {
	background, pre, post *RolloutAnalysisRunStatus
}

// strategyRunName is the run of a revision's background, pre- or post-promotion analysis.
func strategyRunName(ro *Rollout, hash, suffix string) string {
	n := fmt.Sprintf("%s-%s-%s", ro.Name, hash, suffix)
	if len(n) > 253 {
		n = n[:240] + "-" + suffix
	}
	return n
}

// runStrategyAnalyses creates or advances the runs the Rollout's strategy wants now, and
// terminates those its status names that it no longer wants (the update completed or aborted).
//   - background: while an update runs, from startingStep on;
//   - prePromotionAnalysis: once the preview is up (previewSelector at the new revision), until
//     promotion (promote --full skips it);
//   - postPromotionAnalysis: once the active Service selects the new revision and before it is
//     stable.
func (c *Controller) runStrategyAnalyses(ctx context.Context, ro *Rollout, now time.Time) (strategyRuns, time.Duration, error) {
	var out strategyRuns
	st := ro.Status
	hash := PodTemplateHash(&ro.Spec.Template, st.CollisionCount)
	updating := !st.Abort && st.CurrentPodHash == hash && st.StableRS != "" && st.StableRS != hash
	var next time.Duration
	run := func(want bool, a *RolloutAnalysis, cur *RolloutAnalysisRunStatus, suffix, kind string) (*RolloutAnalysisRunStatus, error) {
		if want {
			s, n, err := c.advanceRun(ctx, ro, hash, strategyRunName(ro, hash, suffix), kind, a, now)
			if n > 0 && (next == 0 || n < next) {
				next = n
			}
			return s, err
		}
		if cur != nil && !terminalPhase(cur.Status) {
			if err := c.terminateRun(ctx, ro.Namespace, cur.Name); err != nil {
				return nil, err
			}
			return &RolloutAnalysisRunStatus{Name: cur.Name, Status: AnalysisSuccessful, Message: "Run Terminated"}, nil
		}
		return nil, nil
	}
	var err error
	if cs := ro.Spec.Strategy.Canary; cs != nil {
		idx, start := int32(0), int32(0)
		if st.CurrentStepIndex != nil {
			idx = *st.CurrentStepIndex
		}
		if cs.Analysis != nil && cs.Analysis.StartingStep != nil {
			start = *cs.Analysis.StartingStep
		}
		want := cs.Analysis != nil && updating && idx >= start
		if out.background, err = run(want, cs.Analysis, st.Canary.CurrentBackgroundAnalysisRunStatus, "background", "Background"); err != nil {
			return out, 0, err
		}
	}
	if bg := ro.Spec.Strategy.BlueGreen; bg != nil {
		pre := bg.PrePromotionAnalysis != nil && updating && !st.PromoteFull && st.BlueGreen.ActiveSelector != hash && st.BlueGreen.PreviewSelector == hash
		if out.pre, err = run(pre, bg.PrePromotionAnalysis, st.BlueGreen.PrePromotionAnalysisRunStatus, "pre", "PrePromotion"); err != nil {
			return out, 0, err
		}
		post := bg.PostPromotionAnalysis != nil && updating && st.BlueGreen.ActiveSelector == hash
		if out.post, err = run(post, bg.PostPromotionAnalysis, st.BlueGreen.PostPromotionAnalysisRunStatus, "post", "PostPromotion"); err != nil {
			return out, 0, err
		}
	}
	return out, next, nil
}

func failedPhase(p AnalysisPhase) bool { return p == AnalysisFailed || p == AnalysisError }

// backgroundAnalysis records the background run in the status; a failed one aborts the update
// (scale and Services back to stable in this same decision), an inconclusive one pauses it.
func backgroundAnalysis(w world, p *plan, st *RolloutStatus) {
	a := w.runs.background
	if a == nil {
		return
	}
	st.Canary.CurrentBackgroundAnalysisRunStatus = a
	if st.Abort || st.StableRS == hashOf(p.newRS) {
		return
	}
	switch {
	case failedPhase(a.Status):
		st.Abort = true
		p.events = append(p.events, fmt.Sprintf("background analysis %s %s: aborting", a.Name, a.Status))
		p.after(time.Millisecond)
	case a.Status == AnalysisInconclusive:
		if _, has := hasPause(st, PauseReasonInconclusive); !has && !st.ControllerPause {
			st.PauseConditions = append(st.PauseConditions, PauseCondition{Reason: PauseReasonInconclusive, StartTime: metav1.NewTime(w.now)})
			st.ControllerPause = true
		}
	}
}

// prePromotion records the pre-promotion run and says whether promotion may go ahead: no such
// analysis, promote --full, or the run succeeded. A failed run aborts the update.
func prePromotion(w world, p *plan, st *RolloutStatus) bool {
	bg := w.ro.Spec.Strategy.BlueGreen
	if bg.PrePromotionAnalysis == nil || st.PromoteFull {
		return true
	}
	a := w.runs.pre
	if a == nil {
		return false
	}
	st.BlueGreen.PrePromotionAnalysisRunStatus = a
	if failedPhase(a.Status) {
		st.Abort = true
		p.events = append(p.events, fmt.Sprintf("pre-promotion analysis %s %s: aborting", a.Name, a.Status))
		p.after(time.Millisecond)
	}
	return a.Status == AnalysisSuccessful
}

// postPromotion holds a promoted revision until its post-promotion analysis succeeds: the active
// Service selects it, the previous revision stays stable at full scale. Success makes it
// stable (true); failure aborts and points the active Service back at the previous revision,
// as Argo Rollouts does.
func postPromotion(w world, p *plan, st *RolloutStatus, all []*appsv1.ReplicaSet, want int32) bool {
	bg := w.ro.Spec.Strategy.BlueGreen
	newRS := p.newRS
	newHash := hashOf(newRS)
	if bg.PostPromotionAnalysis == nil || st.StableRS == newHash || st.StableRS == "" {
		return true
	}
	p.setScale(newRS, want)
	p.setAnnotation(newRS, ScaleDownDeadlineAnnotation, nil)
	for _, rs := range all {
		if hashOf(rs) == st.StableRS {
			p.setScale(rs, want)
			p.setAnnotation(rs, ScaleDownDeadlineAnnotation, nil)
		}
	}
	if bg.PreviewService != "" {
		p.services = append(p.services, serviceSwitch{bg.PreviewService, newHash, "blueGreen.previewService"})
		st.BlueGreen.PreviewSelector = newHash
	}
	a := w.runs.post
	if a == nil {
		return false
	}
	st.BlueGreen.PostPromotionAnalysisRunStatus = a
	switch {
	case a.Status == AnalysisSuccessful:
		st.StableRS, p.stableRS = newHash, newRS
		p.events = append(p.events, fmt.Sprintf("revision %d is stable: post-promotion analysis succeeded", revisionOf(newRS)))
		return true
	case failedPhase(a.Status):
		st.Abort = true
		st.BlueGreen.ActiveSelector = st.StableRS
		p.services[0] = serviceSwitch{bg.ActiveService, st.StableRS, "blueGreen.activeService"}
		if bg.PreviewService != "" {
			p.services[len(p.services)-1] = serviceSwitch{bg.PreviewService, st.StableRS, "blueGreen.previewService"}
			st.BlueGreen.PreviewSelector = st.StableRS
		}
		p.events = append(p.events, fmt.Sprintf("post-promotion analysis %s %s: active Service back to the stable revision", a.Name, a.Status))
		p.after(time.Millisecond)
	}
	return false
}

// abortingRun is the analysis run that explains an abort (the first that failed), for the
// RolloutAborted message.
func abortingRun(st *RolloutStatus) *RolloutAnalysisRunStatus {
	for _, a := range []*RolloutAnalysisRunStatus{st.Canary.CurrentStepAnalysisRunStatus, st.Canary.CurrentBackgroundAnalysisRunStatus,
		st.BlueGreen.PrePromotionAnalysisRunStatus, st.BlueGreen.PostPromotionAnalysisRunStatus} {
		if a != nil && failedPhase(a.Status) {
			return a
		}
	}
	return st.Canary.CurrentStepAnalysisRunStatus
}

// resetStrategyRuns forgets the runs of an earlier update.
func resetStrategyRuns(st *RolloutStatus) {
	st.Canary.CurrentBackgroundAnalysisRunStatus = nil
	st.BlueGreen.PrePromotionAnalysisRunStatus, st.BlueGreen.PostPromotionAnalysisRunStatus = nil, nil
}
