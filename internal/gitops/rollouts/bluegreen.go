package rollouts

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// computeBlueGreen runs the new revision beside the active one (at previewReplicaCount when
// set), points the preview Service at it once it is available, and at promotion — automatic,
// after autoPromotionSeconds, or by Promote — switches the active Service to it; the previous
// active revision is scaled down scaleDownDelaySeconds later.
func computeBlueGreen(w world, p *plan, st *RolloutStatus, all []*appsv1.ReplicaSet, want int32) {
	ro := w.ro
	bg := ro.Spec.Strategy.BlueGreen
	newRS := p.newRS
	newHash := hashOf(newRS)
	if st.BlueGreen.ActiveSelector == "" {
		// The first revision: active at once (nothing to protect yet).
		st.BlueGreen.ActiveSelector = newHash
		st.StableRS = newHash
		p.stableRS = newRS
	}
	active := st.BlueGreen.ActiveSelector
	var activeRS *appsv1.ReplicaSet
	for _, rs := range all {
		if hashOf(rs) == active {
			activeRS = rs
		}
	}
	p.services = append(p.services, serviceSwitch{bg.ActiveService, active, "blueGreen.activeService"})
	delay := DefaultScaleDownDelaySeconds
	if bg.ScaleDownDelaySeconds != nil {
		delay = *bg.ScaleDownDelaySeconds
	}

	if active == newHash {
		if !postPromotion(w, p, st, all, want) {
			return // the previous revision stays stable until post-promotion analysis passes
		}
		st.PauseConditions, st.ControllerPause, st.PromoteFull = nil, false, false
		st.BlueGreen.ScaleUpPreviewCheckPoint = false
		p.setScale(newRS, want)
		p.setAnnotation(newRS, ScaleDownDeadlineAnnotation, nil)
		if bg.PreviewService != "" {
			p.services = append(p.services, serviceSwitch{bg.PreviewService, newHash, "blueGreen.previewService"})
			st.BlueGreen.PreviewSelector = newHash
		}
		// Every other revision still running goes after the delay.
		for _, rs := range all {
			if rs != newRS && specReplicas(rs) > 0 && rs.Annotations[ScaleDownDeadlineAnnotation] == "" {
				v := w.now.Add(time.Duration(delay) * time.Second).UTC().Format(time.RFC3339)
				p.setAnnotation(rs, ScaleDownDeadlineAnnotation, &v)
			}
		}
		return
	}

	// An update is under way; the active revision keeps its full scale.
	if activeRS != nil {
		p.setScale(activeRS, want)
		p.setAnnotation(activeRS, ScaleDownDeadlineAnnotation, nil)
	}
	for _, rs := range all {
		if rs != newRS && rs != activeRS && specReplicas(rs) > 0 && rs.Annotations[ScaleDownDeadlineAnnotation] == "" {
			p.setScale(rs, 0) // neither active nor current: an abandoned preview
		}
	}
	if st.Abort {
		st.PauseConditions, st.ControllerPause = nil, false
		abortDelay := DefaultAbortScaleDownDelaySeconds
		if bg.AbortScaleDownDelaySeconds != nil {
			abortDelay = *bg.AbortScaleDownDelaySeconds
		}
		if specReplicas(newRS) > 0 && newRS.Annotations[ScaleDownDeadlineAnnotation] == "" {
			if abortDelay == 0 {
				p.setScale(newRS, 0)
			} else {
				v := w.now.Add(time.Duration(abortDelay) * time.Second).UTC().Format(time.RFC3339)
				p.setAnnotation(newRS, ScaleDownDeadlineAnnotation, &v)
			}
		}
		if bg.PreviewService != "" {
			p.services = append(p.services, serviceSwitch{bg.PreviewService, active, "blueGreen.previewService"})
			st.BlueGreen.PreviewSelector = active
		}
		return
	}
	p.setAnnotation(newRS, ScaleDownDeadlineAnnotation, nil)
	desired := want
	if bg.PreviewReplicaCount != nil && !st.BlueGreen.ScaleUpPreviewCheckPoint && !st.PromoteFull {
		desired = *bg.PreviewReplicaCount
	}
	p.setScale(newRS, desired)
	ready := p.create != newRS && specReplicas(newRS) == desired && newRS.Status.AvailableReplicas >= desired
	if !ready {
		return
	}
	if bg.PreviewService != "" {
		p.services = append(p.services, serviceSwitch{bg.PreviewService, newHash, "blueGreen.previewService"})
		st.BlueGreen.PreviewSelector = newHash
	}
	preOK := prePromotion(w, p, st)
	if ro.Spec.Paused || st.Abort {
		return
	}
	promote := st.PromoteFull || st.BlueGreen.ScaleUpPreviewCheckPoint
	if !promote {
		auto := bg.AutoPromotionEnabled == nil || *bg.AutoPromotionEnabled
		pc, has := hasPause(st, PauseReasonBlueGreenPause)
		switch {
		case !has && st.ControllerPause:
			promote = true // promoted by hand: the pause condition was cleared
		case auto && bg.AutoPromotionSeconds == 0:
			promote = true
		case !has:
			st.PauseConditions = append(st.PauseConditions, PauseCondition{Reason: PauseReasonBlueGreenPause, StartTime: metav1.NewTime(w.now)})
			st.ControllerPause = true
			if auto {
				p.after(time.Duration(bg.AutoPromotionSeconds) * time.Second)
			}
		case auto:
			if end := pc.StartTime.Add(time.Duration(bg.AutoPromotionSeconds) * time.Second); !w.now.Before(end) {
				promote = true
			} else {
				p.after(end.Sub(w.now))
			}
		}
	}
	if !promote || !preOK {
		return
	}
	removePause(st, PauseReasonBlueGreenPause)
	st.ControllerPause = false
	if desired < want {
		// A preview at previewReplicaCount comes up to full scale before it takes traffic.
		st.BlueGreen.ScaleUpPreviewCheckPoint = true
		p.setScale(newRS, want)
		p.after(time.Millisecond)
		return
	}
	st.BlueGreen.ActiveSelector = newHash
	post := bg.PostPromotionAnalysis != nil && !st.PromoteFull
	if !post {
		st.StableRS, p.stableRS = newHash, newRS
	}
	st.BlueGreen.ScaleUpPreviewCheckPoint, st.PromoteFull = false, false
	p.services[0] = serviceSwitch{bg.ActiveService, newHash, "blueGreen.activeService"}
	if post {
		p.after(time.Millisecond) // post-promotion analysis starts
	} else if activeRS != nil {
		v := w.now.Add(time.Duration(delay) * time.Second).UTC().Format(time.RFC3339)
		p.setAnnotation(activeRS, ScaleDownDeadlineAnnotation, &v)
		p.after(time.Duration(delay) * time.Second)
	}
	p.events = append(p.events, fmt.Sprintf("revision %d promoted: %s now selects it", revisionOf(newRS), bg.ActiveService))
}
