package rollouts

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
)

// plan is what one reconcile decides, computed without I/O from the Rollout, its ReplicaSets and
// the time: the controller applies it, then writes Status once.
type plan struct {
	create   *appsv1.ReplicaSet            // the new revision's ReplicaSet, to be created
	scale    map[string]int32              // ReplicaSet name → spec.replicas
	annotate map[string]map[string]*string // ReplicaSet name → annotations to set (nil value: remove)
	remove   []string                      // ReplicaSets beyond revisionHistoryLimit
	services []serviceSwitch               // Service selectors to point at a revision
	traffic  *trafficPlan                  // the weight for the traffic routers (routed canary only)
	restart  bool                          // restartAt is due: the controller restarts pods
	status   RolloutStatus
	requeue  time.Duration // when a timer (pause, deadline, delay) needs another look; 0: none
	events   []string      // step transitions and phase changes, for logs and reports
	advanced bool          // a canary step completed
	newRS    *appsv1.ReplicaSet
	stableRS *appsv1.ReplicaSet
}

type serviceSwitch struct {
	name, hash, role string // role: canaryService, stableService, activeService, previewService
}

// world is a Rollout's observed state.
type world struct {
	ro  *Rollout
	rss []*appsv1.ReplicaSet // owned by ro
	now time.Time
	// analysis is the current analysis step's run, as the controller last advanced it (nil: not
	// started or not an analysis step).
	analysis *RolloutAnalysisRunStatus
	// experiment is the current experiment step's Experiment (nil: not created yet or not an
	// experiment step).
	experiment *RolloutExperimentStatus
	// runs are the background and blue-green promotion analyses (analysisstrategy.go).
	runs strategyRuns
}

func (p *plan) after(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond
	}
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

// setScale plans rs's spec.replicas; the last call for a ReplicaSet wins (one back to its
// current count cancels an earlier one).
func (p *plan) setScale(rs *appsv1.ReplicaSet, n int32) {
	if rs == nil {
		return
	}
	if specReplicas(rs) == n {
		delete(p.scale, rs.Name)
		return
	}
	if p.create == rs {
		rs.Spec.Replicas = &n
		return
	}
	p.scale[rs.Name] = n
}

// setAnnotation plans an annotation of rs (nil: removed); the last call for a key wins (one
// back to the current value cancels an earlier one).
func (p *plan) setAnnotation(rs *appsv1.ReplicaSet, key string, v *string) {
	cur, has := rs.Annotations[key]
	if (v == nil && !has) || (v != nil && has && cur == *v) {
		if p.create != rs {
			delete(p.annotate[rs.Name], key)
		}
		return
	}
	if p.create == rs {
		if v == nil {
			delete(rs.Annotations, key)
		} else {
			rs.Annotations[key] = *v
		}
		return
	}
	if p.annotate[rs.Name] == nil {
		p.annotate[rs.Name] = map[string]*string{}
	}
	p.annotate[rs.Name][key] = v
}

// replicasAfter is a ReplicaSet's spec.replicas once the plan is applied.
func (p *plan) replicasAfter(rs *appsv1.ReplicaSet) int32 {
	if n, ok := p.scale[rs.Name]; ok {
		return n
	}
	return specReplicas(rs)
}

// PodTemplateHash is the revision's hash of a pod template (with the collision count), as the
// value of the rollouts-pod-template-hash label.
func PodTemplateHash(t *corev1.PodTemplateSpec, collisions *int32) string {
	h := fnv.New32a()
	b, _ := json.Marshal(t) // a PodTemplateSpec always marshals
	h.Write(b)
	if collisions != nil {
		fmt.Fprintf(h, "%d", *collisions)
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

func stepHash(steps []CanaryStep) string {
	h := fnv.New32a()
	b, _ := json.Marshal(steps)
	h.Write(b)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

func specReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func hashOf(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return ""
	}
	return rs.Labels[PodTemplateHashLabel]
}

func revisionOf(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	return n
}

// newReplicaSet is the ReplicaSet of ro's current template.
func newReplicaSet(ro *Rollout, hash string, revision int64) *appsv1.ReplicaSet {
	tpl := *ro.Spec.Template.DeepCopy()
	tpl.Labels = copyLabels(tpl.Labels, PodTemplateHashLabel, hash)
	sel := ro.Spec.Selector.DeepCopy()
	sel.MatchLabels = copyLabels(sel.MatchLabels, PodTemplateHashLabel, hash)
	zero := int32(0)
	yes := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: ro.Name + "-" + hash, Namespace: ro.Namespace,
			Labels:      copyLabels(ro.Spec.Template.Labels, PodTemplateHashLabel, hash),
			Annotations: map[string]string{RevisionAnnotation: strconv.FormatInt(revision, 10)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Rollout", Name: ro.Name, UID: ro.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: ro.Spec.MinReadySeconds, Selector: sel, Template: tpl},
	}
}

func copyLabels(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// compute decides one reconcile of w. The Rollout's spec has been validated. When a step
// completes without any object to change for it (a pause ends, a promote), the next step is
// decided in the same reconcile: its objects are written at once, not one status round trip
// later.
func compute(w world) *plan {
	p := computeOnce(w)
	for range 8 {
		if !p.advanced || p.create != nil || len(p.scale) > 0 || len(p.annotate) > 0 || len(p.remove) > 0 || weightMoves(w.ro, p) {
			return p
		}
		ro := *w.ro
		ro.Status = p.status
		next := computeOnce(world{ro: &ro, rss: w.rss, now: w.now, runs: w.runs}) // a new step: no analysis run yet
		next.events = append(p.events, next.events...)
		p = next
	}
	return p
}

// weightMoves: the plan writes a new weight to the routers. The next step is decided after it
// is written, so a scale-down that depends on traffic having left (dynamicStableScale) never
// runs ahead of the router.
func weightMoves(ro *Rollout, p *plan) bool {
	if p.traffic == nil {
		return false
	}
	prev := ro.Status.Canary.Weights
	return prev == nil || prev.Canary.Weight != p.traffic.weight
}

func computeOnce(w world) *plan {
	ro := w.ro
	p := &plan{scale: map[string]int32{}, annotate: map[string]map[string]*string{}}
	prev := ro.Status
	st := prev.deepCopy()
	st.ObservedGeneration = strconv.FormatInt(ro.Generation, 10)
	st.Selector = metav1.FormatLabelSelector(ro.Spec.Selector)
	hash := PodTemplateHash(&ro.Spec.Template, st.CollisionCount)
	want := replicas(&ro.Spec)

	var maxRev int64
	for _, rs := range w.rss {
		if hashOf(rs) == hash {
			p.newRS = rs
		}
		maxRev = max(maxRev, revisionOf(rs))
	}
	created := false
	if p.newRS == nil {
		p.newRS = newReplicaSet(ro, hash, maxRev+1)
		p.create = p.newRS
		created = true
	} else if rev := revisionOf(p.newRS); rev < maxRev {
		// An earlier template is back (a rollback): it becomes the newest revision again.
		v := strconv.FormatInt(maxRev+1, 10)
		p.setAnnotation(p.newRS, RevisionAnnotation, &v)
	}
	all := append([]*appsv1.ReplicaSet(nil), w.rss...)
	if created {
		all = append(all, p.newRS)
	}

	// A changed template or steps start the update over, as Argo Rollouts' resetRolloutStatus.
	steps := canarySteps(ro)
	sh := ""
	if ro.Spec.Strategy.Canary != nil {
		sh = stepHash(steps)
	}
	if st.CurrentPodHash != hash || st.CurrentStepHash != sh {
		st.PauseConditions, st.ControllerPause, st.Abort, st.AbortedAt, st.PromoteFull = nil, false, false, nil, false
		st.BlueGreen.ScaleUpPreviewCheckPoint = false
		st.Canary.CurrentStepAnalysisRunStatus = nil
		resetStrategyRuns(&st)
		if ro.Spec.Strategy.Canary != nil && len(steps) > 0 {
			idx := int32(0)
			if hash == st.StableRS {
				idx = int32(len(steps)) // back to the stable revision: no steps
			}
			st.CurrentStepIndex = &idx
		}
		if st.CurrentPodHash != "" && st.CurrentPodHash != hash {
			p.events = append(p.events, fmt.Sprintf("update to revision %d started", revisionOrNext(p.newRS)))
		}
	}
	st.CurrentPodHash, st.CurrentStepHash = hash, sh
	if st.StableRS == "" {
		st.StableRS = hash // the first revision is stable from the start
		if ro.Spec.Strategy.Canary != nil && len(steps) > 0 {
			n := int32(len(steps))
			st.CurrentStepIndex = &n
		}
	}
	for _, rs := range all {
		if hashOf(rs) == st.StableRS {
			p.stableRS = rs
		}
	}
	if st.Abort && st.AbortedAt == nil {
		t := metav1.NewTime(w.now)
		st.AbortedAt = &t
		p.events = append(p.events, "aborted")
	}
	if !st.Abort {
		st.AbortedAt = nil
	}

	if ro.Spec.Strategy.Canary != nil {
		computeCanary(w, p, &st, all, want)
	} else {
		computeBlueGreen(w, p, &st, all, want)
	}
	scaleDownDelayed(w, p, all)
	cleanHistory(ro, p, all)

	// Counts, as the ReplicaSets report them now.
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = 0, 0, 0, 0
	for _, rs := range all {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	st.HPAReplicas = st.Replicas
	st.UpdatedReplicas = p.newRS.Status.Replicas
	if bg := ro.Spec.Strategy.BlueGreen; bg != nil {
		st.AvailableReplicas = 0
		for _, rs := range all {
			if hashOf(rs) == st.BlueGreen.ActiveSelector {
				st.AvailableReplicas = rs.Status.AvailableReplicas
			}
		}
	}

	// restartAt: due once its time has come and nothing else is moving.
	if ra := ro.Spec.RestartAt; ra != nil && (st.RestartedAt == nil || !st.RestartedAt.Equal(ra)) {
		if w.now.Before(ra.Time) {
			p.after(ra.Sub(w.now))
		} else if st.StableRS == hash && !st.Abort {
			p.restart = true
		}
	}

	conditions(w, p, &st, prev, created, want)
	st.Phase, st.Message = Calculate(&ro.Spec, &st)
	if st.Phase != prev.Phase {
		p.events = append(p.events, fmt.Sprintf("phase %s → %s", orNone(string(prev.Phase)), st.Phase))
	}
	p.status = st
	return p
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func revisionOrNext(rs *appsv1.ReplicaSet) int64 { return revisionOf(rs) }

func canarySteps(ro *Rollout) []CanaryStep {
	if ro.Spec.Strategy.Canary == nil {
		return nil
	}
	return ro.Spec.Strategy.Canary.Steps
}

// paused reports whether step progress is held: spec.paused, or a pause condition.
func paused(ro *Rollout, st *RolloutStatus) bool {
	return ro.Spec.Paused || len(st.PauseConditions) > 0
}

func hasPause(st *RolloutStatus, r PauseReason) (PauseCondition, bool) {
	for _, c := range st.PauseConditions {
		if c.Reason == r {
			return c, true
		}
	}
	return PauseCondition{}, false
}

func removePause(st *RolloutStatus, r PauseReason) {
	out := st.PauseConditions[:0:0]
	for _, c := range st.PauseConditions {
		if c.Reason != r {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	st.PauseConditions = out
}

// scaleDownDelayed scales to zero the ReplicaSets whose scale-down deadline has passed, and
// asks to be woken at the next one.
func scaleDownDelayed(w world, p *plan, all []*appsv1.ReplicaSet) {
	for _, rs := range all {
		v, ok := rs.Annotations[ScaleDownDeadlineAnnotation]
		if pending, has := p.annotate[rs.Name][ScaleDownDeadlineAnnotation]; has {
			ok = pending != nil
			if ok {
				v = *pending
			}
		}
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil || !w.now.Before(at) {
			p.setScale(rs, 0)
			p.setAnnotation(rs, ScaleDownDeadlineAnnotation, nil)
			continue
		}
		p.after(at.Sub(w.now))
	}
}

// cleanHistory deletes the oldest scaled-down ReplicaSets beyond revisionHistoryLimit.
func cleanHistory(ro *Rollout, p *plan, all []*appsv1.ReplicaSet) {
	limit := DefaultRevisionHistoryLimit
	if ro.Spec.RevisionHistoryLimit != nil {
		limit = *ro.Spec.RevisionHistoryLimit
	}
	var old []*appsv1.ReplicaSet
	for _, rs := range all {
		if rs == p.newRS || rs == p.stableRS || rs == p.create || rs.DeletionTimestamp != nil {
			continue
		}
		if p.replicasAfter(rs) == 0 && rs.Status.Replicas == 0 && rs.Annotations[ScaleDownDeadlineAnnotation] == "" {
			old = append(old, rs)
		}
	}
	sort.Slice(old, func(i, j int) bool { return revisionOf(old[i]) < revisionOf(old[j]) })
	for i := 0; i < len(old)-int(limit); i++ {
		p.remove = append(p.remove, old[i].Name)
	}
}

func (s RolloutStatus) deepCopy() RolloutStatus {
	var out RolloutStatus
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &out)
	return out
}
