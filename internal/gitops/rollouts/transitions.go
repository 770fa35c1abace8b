package rollouts

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/freshet-dev/freshet/api/runtimev1"
)

// Transition is a change of an application's Rollout that the runtime reports to the control
// plane (runtimev1.RolloutChanged).
type Transition struct {
	App    string
	At     time.Time
	Record runtimev1.RolloutRecord
}

// transitions compares two states of a Rollout, as its status went from prev to next, and
// returns what changed: an update started (or restarted by a retry), a step reached, a phase
// changed, the update completed or was aborted. Rollouts no application defines (AppLabel) have
// none. Revision numbers are left for the caller to fill in.
func transitions(prev, next *Rollout) []runtimev1.RolloutRecord {
	if next.Labels[AppLabel] == "" {
		return nil
	}
	p, n := prev.Status, next.Status
	base := runtimev1.RolloutRecord{Namespace: next.Namespace, Name: next.Name, Phase: string(n.Phase), Message: n.Message, PodHash: n.CurrentPodHash}
	if cs := next.Spec.Strategy.Canary; cs != nil {
		base.Strategy, base.Steps = StrategyCanary, int32(len(cs.Steps))
		if n.CurrentStepIndex != nil {
			v := *n.CurrentStepIndex
			base.Step = &v
		}
	} else if next.Spec.Strategy.BlueGreen != nil {
		base.Strategy = StrategyBlueGreen
	}
	with := func(kind string) runtimev1.RolloutRecord {
		r := base
		r.Kind = kind
		return r
	}
	var out []runtimev1.RolloutRecord
	updating := n.CurrentPodHash != "" && n.CurrentPodHash != n.StableRS && !n.Abort
	if updating && p.StableRS != "" && (n.CurrentPodHash != p.CurrentPodHash || p.Abort) {
		out = append(out, with(runtimev1.RolloutUpdateStarted))
	}
	if base.Strategy == StrategyCanary && !sameStep(p.CurrentStepIndex, n.CurrentStepIndex) && n.CurrentStepIndex != nil {
		out = append(out, with(runtimev1.RolloutStepChanged))
	}
	if p.Phase != n.Phase && n.Phase != "" {
		r := with(runtimev1.RolloutPhaseChanged)
		r.PhaseFrom = string(p.Phase)
		out = append(out, r)
	}
	if n.Abort && !p.Abort {
		out = append(out, with(runtimev1.RolloutAborted))
	}
	if p.StableRS != "" && n.StableRS != p.StableRS && n.StableRS == n.CurrentPodHash && !n.Abort {
		out = append(out, with(runtimev1.RolloutCompleted))
	}
	return out
}

func sameStep(a, b *int32) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// WatchTransitions watches the Rollouts the controller manages and calls fn with each
// transition of a Rollout an application defines, until ctx ends. It reads the Rollouts on
// its own watch, so the controller's reconciles do not wait for it; fn must not block long.
func (c *Controller) WatchTransitions(ctx context.Context, fn func(Transition)) error {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, c.opts.Resync, c.opts.Namespace, nil)
	inf := f.ForResource(RolloutsResource).Informer()
	w := &transitionWatch{c: c, fn: fn, started: map[string]time.Time{}}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) { w.update(ctx, o, n) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	<-ctx.Done()
	return nil
}

type transitionWatch struct {
	c  *Controller
	fn func(Transition)

	mu      sync.Mutex
	started map[string]time.Time // ns/name/hash → when its update started, as seen here
}

func decodeObj(obj any) *Rollout {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil
	}
	ro, _ := Decode(data)
	return ro
}

func (w *transitionWatch) update(ctx context.Context, o, n any) {
	prev, next := decodeObj(o), decodeObj(n)
	if prev == nil || next == nil {
		return
	}
	recs := transitions(prev, next)
	if len(recs) == 0 {
		return
	}
	now := w.c.opts.Now().UTC()
	revs := w.revisions(ctx, next)
	key := fmt.Sprintf("%s/%s/%s", next.Namespace, next.Name, next.Status.CurrentPodHash)
	for _, r := range recs {
		r.Revision, r.StableRevision = revs[r.PodHash], revs[next.Status.StableRS]
		w.mu.Lock()
		switch r.Kind {
		case runtimev1.RolloutUpdateStarted:
			w.started[key] = now
			r.StartedAt = now
		case runtimev1.RolloutCompleted, runtimev1.RolloutAborted:
			r.StartedAt = w.started[key]
			delete(w.started, key)
		default:
			r.StartedAt = w.started[key]
		}
		w.mu.Unlock()
		w.fn(Transition{App: next.Labels[AppLabel], At: now, Record: r})
	}
}

// revisions maps the Rollout's ReplicaSets' pod-template hashes to their revision numbers.
func (w *transitionWatch) revisions(ctx context.Context, ro *Rollout) map[string]int64 {
	out := map[string]int64{}
	list, err := w.c.kube.AppsV1().ReplicaSets(ro.Namespace).List(ctx, metav1.ListOptions{LabelSelector: PodTemplateHashLabel})
	if err != nil {
		return out // reported without numbers rather than not at all
	}
	for _, rs := range owned(ro, list.Items) {
		out[rs.Labels[PodTemplateHashLabel]] = revisionOf(rs)
	}
	return out
}
