package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// TTLStrategy is Argo's spec.ttlStrategy: how long a finished Workflow is kept.
type TTLStrategy struct {
	SecondsAfterCompletion *int32 `json:"secondsAfterCompletion,omitempty"`
	SecondsAfterSuccess    *int32 `json:"secondsAfterSuccess,omitempty"`
	SecondsAfterFailure    *int32 `json:"secondsAfterFailure,omitempty"`
}

// PodGC is Argo's spec.podGC: when the Workflow's pods are deleted.
type PodGC struct {
	Strategy            string                `json:"strategy,omitempty"`
	DeleteDelayDuration *intstr.IntOrString   `json:"deleteDelayDuration,omitempty"`
	LabelSelector       *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// Pod GC strategies.
const (
	PodGCOnPodCompletion      = "OnPodCompletion"
	PodGCOnPodSuccess         = "OnPodSuccess"
	PodGCOnWorkflowCompletion = "OnWorkflowCompletion"
	PodGCOnWorkflowSuccess    = "OnWorkflowSuccess"
)

func validateGC(s *WorkflowSpec, path string) error {
	if t := s.TTLStrategy; t != nil {
		for _, f := range []struct {
			name string
			v    *int32
		}{{"secondsAfterCompletion", t.SecondsAfterCompletion}, {"secondsAfterSuccess", t.SecondsAfterSuccess}, {"secondsAfterFailure", t.SecondsAfterFailure}} {
			if f.v != nil && *f.v < 0 {
				return errdefs.Invalid(path+".ttlStrategy."+f.name, fmt.Sprint(*f.v), "must be 0 or more seconds")
			}
		}
	}
	if g := s.PodGC; g != nil {
		switch g.Strategy {
		case "", PodGCOnPodCompletion, PodGCOnPodSuccess, PodGCOnWorkflowCompletion, PodGCOnWorkflowSuccess:
		default:
			return errdefs.Invalid(path+".podGC.strategy", g.Strategy, "must be OnPodCompletion, OnPodSuccess, OnWorkflowCompletion or OnWorkflowSuccess")
		}
		if g.DeleteDelayDuration != nil {
			if _, err := parseDuration(g.DeleteDelayDuration); err != nil {
				return errdefs.Invalid(path+".podGC.deleteDelayDuration", g.DeleteDelayDuration.String(), err.Error())
			}
		}
		if g.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(g.LabelSelector); err != nil {
				b, _ := json.Marshal(g.LabelSelector)
				return errdefs.Invalid(path+".podGC.labelSelector", string(b), "is not a label selector: "+err.Error())
			}
		}
	}
	return nil
}

// ttlDeadline is when a finished Workflow is to be deleted by its ttlStrategy, if it is.
func ttlDeadline(spec *WorkflowSpec, st *WorkflowStatus) (time.Time, bool) {
	t := spec.TTLStrategy
	if t == nil || !st.Phase.Completed() {
		return time.Time{}, false
	}
	secs := t.SecondsAfterCompletion
	switch {
	case st.Phase == WorkflowSucceeded && t.SecondsAfterSuccess != nil:
		secs = t.SecondsAfterSuccess
	case st.Phase != WorkflowSucceeded && t.SecondsAfterFailure != nil:
		secs = t.SecondsAfterFailure
	}
	if secs == nil {
		return time.Time{}, false
	}
	return st.FinishedAt.Add(time.Duration(*secs) * time.Second), true
}

// podGCDue returns, of the Workflow's pods, those its podGC deletes now, and how long until
// the next one is due (0: none).
func podGCDue(spec *WorkflowSpec, st *WorkflowStatus, pods []*corev1.Pod, now time.Time) ([]*corev1.Pod, time.Duration) {
	g := spec.PodGC
	if g == nil || g.Strategy == "" {
		return nil, 0
	}
	var delay time.Duration
	if g.DeleteDelayDuration != nil {
		delay, _ = parseDuration(g.DeleteDelayDuration)
	}
	// Only the pods labelSelector matches are collected (Argo's); nil matches every pod.
	sel := labels.Everything()
	if g.LabelSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(g.LabelSelector); err != nil {
			return nil, 0 // refused by lint; a selector that does not parse deletes nothing
		}
	}
	var out []*corev1.Pod
	var wait time.Duration
	consider := func(p *corev1.Pod, at time.Time) {
		if d := at.Add(delay).Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			return
		}
		out = append(out, p)
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		switch g.Strategy {
		case PodGCOnWorkflowCompletion, PodGCOnWorkflowSuccess:
			if st.Phase.Completed() && (g.Strategy == PodGCOnWorkflowCompletion || st.Phase == WorkflowSucceeded) {
				consider(p, st.FinishedAt.Time)
			}
		default:
			// A pod goes once its node's end is written in the status (the engine no longer
			// reads it), or once the workflow ended.
			n, ok := st.Nodes[p.Annotations[AnnotationNodeID]]
			done := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			switch {
			case ok && n.Phase.Fulfilled() && done:
				if g.Strategy == PodGCOnPodCompletion || n.Phase == NodeSucceeded {
					consider(p, n.FinishedAt.Time)
				}
			case st.Phase.Completed() && done && g.Strategy == PodGCOnPodCompletion:
				consider(p, st.FinishedAt.Time)
			}
		}
	}
	return out, wait
}

// archiveWait is how often a Workflow its ttlStrategy has made due is looked at again while its
// record has not reached the archive (Options.Archived).
const archiveWait = 2 * time.Second

// collect deletes what the Workflow's podGC and ttlStrategy say is due, after the status was
// written (and, for the TTL, once Options.Archived says its record reached the archive). It returns when to look
// again (0: nothing pending) and whether the Workflow was deleted.
func (c *Controller) collect(ctx context.Context, wf *Workflow, spec *WorkflowSpec, st *WorkflowStatus, pods []*corev1.Pod, now time.Time) (time.Duration, bool, error) {
	var owned []*corev1.Pod
	for _, p := range pods {
		if metav1.IsControlledBy(p, wf) {
			owned = append(owned, p)
		}
	}
	del, wait := podGCDue(spec, st, owned, now)
	for _, p := range del {
		if err := c.deletePod(ctx, p.Namespace, p.Name); err != nil {
			return 0, false, fmt.Errorf("pod GC: %w", err)
		}
	}
	if at, ok := ttlDeadline(spec, st); ok {
		if d := at.Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			return wait, false, nil
		}
		if c.opts.Archived != nil && !c.opts.Archived(string(wf.UID), st.FinishedAt.Time) {
			// Due, but its record has not reached the archive yet: look again shortly.
			return archiveWait, false, nil
		}
		bg := metav1.DeletePropagationBackground
		err := c.dyn.Resource(WorkflowsResource).Namespace(wf.Namespace).Delete(ctx, wf.Name,
			metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &wf.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, false, fmt.Errorf("ttl: delete workflow: %w", err)
		}
		c.log.Info("workflow deleted by its ttlStrategy", logWorkflow, wf.Namespace+"/"+wf.Name)
		return 0, true, nil
	}
	return wait, false, nil
}
