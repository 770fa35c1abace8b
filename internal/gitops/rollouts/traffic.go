package rollouts

import (
	"fmt"
	"math"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// The NGINX Ingress controller's default annotation prefix, and the suffix of a canary
// Ingress's name (`ROLLOUT-STABLEINGRESS-canary`, as Argo Rollouts names it).
const (
	defaultNginxPrefix  = "nginx.ingress.kubernetes.io"
	canaryIngressSuffix = "-canary"
	// gatewayInProgressLabel marks an HTTPRoute while its canary weight is above 0 (the Gateway
	// API plugin's default label).
	gatewayInProgressLabel = "rollouts.argoproj.io/gatewayapi-canary"
	gatewayInProgressValue = "in-progress"
)

// trafficPlan is the weight a reconcile writes to the Rollout's traffic routers.
type trafficPlan struct {
	weight                 int32 // the canary's share, 0–100; the stable Service gets the rest
	canaryHash, stableHash string
}

func annotationPrefix(n *NginxTrafficRouting) string {
	if n.AnnotationPrefix != "" {
		return n.AnnotationPrefix
	}
	return defaultNginxPrefix
}

// prefixed puts an additionalIngressAnnotations key under the prefix unless it has it already
// (as Argo Rollouts does: "canary-by-header" → "nginx.ingress.kubernetes.io/canary-by-header").
func prefixed(prefix, k string) string {
	if strings.HasPrefix(k, prefix) {
		return k
	}
	return prefix + "/" + k
}

// CanaryIngressName is the name of the canary Ingress for a stable Ingress, as Argo Rollouts
// names it: ROLLOUT-STABLEINGRESS-canary, the prefix cut to fit 253 characters.
func CanaryIngressName(rollout, stableIngress string) string {
	prefix := rollout + "-" + stableIngress
	if len(prefix) > 253-len(canaryIngressSuffix) {
		prefix = prefix[:253-len(canaryIngressSuffix)]
	}
	return prefix + canaryIngressSuffix
}

// weightReplicas is the number of replicas that carries weight % of the traffic, rounded up.
func weightReplicas(replicas, weight int32) int32 {
	return int32(math.Ceil(float64(weight) * float64(replicas) / 100))
}

// abortDelay is the canary's abortScaleDownDelaySeconds with traffic routing (30 by default);
// ok false: explicitly 0, the canary is not scaled down by a delay.
func abortDelay(c *CanaryStrategy) (d time.Duration, ok bool) {
	if c.AbortScaleDownDelaySeconds == nil {
		return time.Duration(DefaultAbortScaleDownDelaySeconds) * time.Second, true
	}
	if *c.AbortScaleDownDelaySeconds == 0 {
		return 0, false
	}
	return time.Duration(*c.AbortScaleDownDelaySeconds) * time.Second, true
}

// delaysAbortScaleDown is Argo Rollouts' shouldDelayScaleDownOnAbort for a routed canary: the
// aborted canary keeps its pods until a deadline, unless abortScaleDownDelaySeconds is 0 or
// dynamicStableScale drains it as traffic leaves (and no delay was asked for explicitly).
func delaysAbortScaleDown(c *CanaryStrategy) bool {
	if _, ok := abortDelay(c); !ok {
		return false
	}
	return !c.DynamicStableScale || c.AbortScaleDownDelaySeconds != nil
}

// setCanaryScaleInForce is the setCanaryScale step in force at idx (the last one at or before
// it), unless a later matchTrafficWeight ended it or an abort with a scale-down delay ignores
// it (Argo Rollouts' UseSetCanaryScale).
func setCanaryScaleInForce(c *CanaryStrategy, st *RolloutStatus, idx int32) *SetCanaryScale {
	if st.Abort {
		if _, ok := abortDelay(c); ok {
			return nil
		}
	}
	if idx >= int32(len(c.Steps)) {
		return nil
	}
	for i := idx; i >= 0; i-- {
		if s := c.Steps[i].SetCanaryScale; s != nil {
			if s.MatchTrafficWeight {
				return nil
			}
			return s
		}
	}
	return nil
}

// routedCounts is Argo Rollouts' CalculateReplicaCountsForTrafficRoutedCanary: the canary is
// scaled to carry its weight (or to setCanaryScale); the stable revision stays at full scale,
// or with dynamicStableScale carries the larger of its desired and its current traffic share.
func routedCounts(c *CanaryStrategy, st *RolloutStatus, idx, want int32, prev *TrafficWeights) (int32, int32) {
	var canary int32
	weight := int32(100)
	switch {
	case st.PromoteFull:
	case st.Abort:
		weight = 0
	default:
		weight = currentWeight(c.Steps, idx)
	}
	scs := setCanaryScaleInForce(c, st, idx)
	switch {
	case scs != nil && scs.Replicas != nil && !st.PromoteFull:
		canary = *scs.Replicas
	case scs != nil && scs.Weight != nil && !st.PromoteFull:
		weight = *scs.Weight
		canary = weightReplicas(want, weight)
	default:
		canary = weightReplicas(want, weight)
	}
	if !c.DynamicStableScale {
		return canary, want
	}
	stable := weightReplicas(want, 100-weight)
	if prev != nil {
		stable = max(stable, weightReplicas(want, prev.Stable.Weight))
		if st.Abort {
			// The canary drains only as its traffic leaves.
			canary = max(canary, weightReplicas(want, prev.Canary.Weight))
		}
	}
	return canary, stable
}

// routedWeight is the canary weight this reconcile writes (Argo Rollouts' reconcileTrafficRouting):
// 0 once promoted, after an abort (with dynamicStableScale: as fast as the stable revision's
// available pods can take the traffic back) and while the canary has no available pod; the
// previous step's weight until the canary is at its scale; the step's weight; 100 after the
// last step. A weight the stable revision cannot carry yet is not written.
func routedWeight(c *CanaryStrategy, st *RolloutStatus, newRS, stableRS *appsv1.ReplicaSet, idx, want int32, atCounts, fully bool, prev *TrafficWeights) int32 {
	prevWeight := int32(0)
	if prev != nil {
		prevWeight = prev.Canary.Weight
	}
	var w int32
	switch {
	case fully:
		return 0
	case st.Abort:
		if !c.DynamicStableScale || stableRS == nil || want == 0 {
			return 0
		}
		covered := int32(100)
		if stableRS.Status.AvailableReplicas < want {
			covered = stableRS.Status.AvailableReplicas * 100 / want
		}
		return min(prevWeight, 100-covered)
	case newRS.Status.AvailableReplicas == 0:
		w = 0
	case st.PromoteFull:
		w = prevWeight
	case !atCounts:
		for i := idx - 1; i >= 0; i-- {
			if s := c.Steps[i].SetWeight; s != nil {
				w = *s
				break
			}
		}
	case idx < int32(len(c.Steps)):
		w = currentWeight(c.Steps, idx)
	default:
		w = 100
	}
	// checkReplicasAvailable: the stable side must be able to carry the rest.
	if stableRS != nil && stableRS != newRS && stableRS.Status.AvailableReplicas < weightReplicas(want, 100-w) {
		return prevWeight
	}
	return w
}

// computeRouted scales a canary with traffic routing and decides its weight. It returns the
// counts it asked for and whether both revisions are at them (Argo's
// AtDesiredReplicaCountsForCanary).
func computeRouted(w world, p *plan, st *RolloutStatus, others []*appsv1.ReplicaSet, idx, want int32, fully bool) (int32, int32, bool) {
	c := w.ro.Spec.Strategy.Canary
	newRS, stableRS := p.newRS, p.stableRS
	prev := w.ro.Status.Canary.Weights
	var desiredNew, desiredStable int32
	if fully {
		desiredNew = want
	} else {
		desiredNew, desiredStable = routedCounts(c, st, idx, want, prev)
	}
	if !st.Abort {
		p.setAnnotation(newRS, ScaleDownDeadlineAnnotation, nil)
	}
	newCount := desiredNew
	if st.Abort && !fully && delaysAbortScaleDown(c) {
		// The aborted canary keeps its pods until its deadline, set once the stable revision is
		// at full scale again (scaleDownDelayed scales it to zero then).
		newCount = specReplicas(newRS)
		_, pending := p.annotate[newRS.Name][ScaleDownDeadlineAnnotation]
		if _, has := newRS.Annotations[ScaleDownDeadlineAnnotation]; !has && !pending && newCount > 0 &&
			stableRS != nil && stableRS.Status.AvailableReplicas >= want {
			d, _ := abortDelay(c)
			v := w.now.Add(d).UTC().Format(time.RFC3339)
			p.setAnnotation(newRS, ScaleDownDeadlineAnnotation, &v)
		}
	}
	p.setScale(newRS, newCount)
	if !fully && stableRS != nil {
		p.setScale(stableRS, desiredStable)
		p.setAnnotation(stableRS, ScaleDownDeadlineAnnotation, nil)
	}
	at := p.create != newRS && specReplicas(newRS) == desiredNew && newRS.Status.AvailableReplicas >= desiredNew
	if !fully && stableRS != nil {
		at = at && specReplicas(stableRS) == desiredStable && stableRS.Status.AvailableReplicas >= desiredStable
	}
	at = at && replicasOf(others, p) == 0

	weight := routedWeight(c, st, newRS, stableRS, idx, want, at, fully, prev)
	stableHash := st.StableRS
	canaryHash := hashOf(newRS)
	if st.Abort || fully {
		canaryHash = stableHash
	}
	p.traffic = &trafficPlan{weight: weight, canaryHash: canaryHash, stableHash: stableHash}
	st.Canary.Weights = &TrafficWeights{
		Canary: WeightDestination{Weight: weight, ServiceName: c.CanaryService, PodTemplateHash: canaryHash},
		Stable: WeightDestination{Weight: 100 - weight, ServiceName: c.StableService, PodTemplateHash: stableHash},
	}
	if prev == nil || prev.Canary.Weight != weight {
		p.events = append(p.events, fmt.Sprintf("traffic weight %d%% to %s", weight, c.CanaryService))
	}
	return desiredNew, desiredStable, at
}

// scaleDownDelay is the canary's scaleDownDelaySeconds with traffic routing (30 by default).
func scaleDownDelay(c *CanaryStrategy) time.Duration {
	if c.ScaleDownDelaySeconds != nil {
		return time.Duration(*c.ScaleDownDelaySeconds) * time.Second
	}
	if c.DynamicStableScale {
		return 0
	}
	return time.Duration(DefaultScaleDownDelaySeconds) * time.Second
}
