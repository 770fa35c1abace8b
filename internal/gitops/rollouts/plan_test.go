package rollouts

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func decodeYAML(t *testing.T, y string) (*Rollout, error) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return Decode(j)
}

const canaryYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: ns, uid: u1, generation: 1}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "web:1"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      maxSurge: 1
      maxUnavailable: 0
      steps:
      - setWeight: 25
      - pause: {duration: 10m}
      - setWeight: 50
      - pause: {}
`

// sim applies plans to ReplicaSets held in memory, every pod available at once: it checks the
// decisions (counts, steps, selectors), not Kubernetes (the controller tests do that).
type sim struct {
	ro  *Rollout
	rss []*appsv1.ReplicaSet
	svc map[string]string
}

func (s *sim) step(now time.Time) *plan {
	p := compute(world{ro: s.ro, rss: s.rss, now: now})
	if p.create != nil {
		s.rss = append(s.rss, p.create)
	}
	for _, rs := range s.rss {
		if n, ok := p.scale[rs.Name]; ok {
			rs.Spec.Replicas = &n
		}
		for k, v := range p.annotate[rs.Name] {
			if v == nil {
				delete(rs.Annotations, k)
			} else {
				rs.Annotations[k] = *v
			}
		}
	}
	for _, sw := range p.services {
		s.svc[sw.name] = sw.hash
	}
	s.ro.Status = p.status
	s.ready()
	return p
}

func (s *sim) ready() {
	for _, rs := range s.rss {
		n := specReplicas(rs)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n}
	}
}

func (s *sim) counts() string {
	var parts []string
	for _, rs := range s.rss {
		parts = append(parts, fmt.Sprintf("%s=%d", rs.Annotations[RevisionAnnotation], specReplicas(rs)))
	}
	return strings.Join(parts, " ")
}

// settle runs reconciles at now until nothing changes, at most 20.
func (s *sim) settle(now time.Time) *plan {
	var p *plan
	for range 20 {
		before := s.counts() + fmt.Sprint(s.ro.Status.CurrentStepIndex, s.ro.Status.StableRS, len(s.ro.Status.PauseConditions), s.svc)
		p = s.step(now)
		if s.counts()+fmt.Sprint(s.ro.Status.CurrentStepIndex, s.ro.Status.StableRS, len(s.ro.Status.PauseConditions), s.svc) == before {
			return p
		}
	}
	return p
}

func idx(st RolloutStatus) int32 {
	if st.CurrentStepIndex == nil {
		return -1
	}
	return *st.CurrentStepIndex
}

func TestCanaryStepsByReplicaShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ro, err := decodeYAML(t, canaryYAML)
		if err != nil {
			t.Fatal(err)
		}
		s := &sim{ro: ro, svc: map[string]string{}}
		s.settle(time.Now())
		if s.ro.Status.Phase != PhaseHealthy || s.counts() != "1=4" {
			t.Fatalf("first revision: phase %s %q, counts %s", s.ro.Status.Phase, s.ro.Status.Message, s.counts())
		}
		stable := s.ro.Status.StableRS
		if s.svc["web-canary"] != stable || s.svc["web-stable"] != stable {
			t.Fatalf("services %v, want both at %s", s.svc, stable)
		}

		// A new image: 25 % is one of four replicas, with one surge pod and none unavailable.
		s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
		s.ro.Generation = 2
		s.step(time.Now())
		if s.counts() != "1=4 2=1" {
			t.Fatalf("first scale-up: %s", s.counts())
		}
		p := s.settle(time.Now())
		if got := idx(s.ro.Status); got != 1 || s.counts() != "1=3 2=1" || s.ro.Status.Phase != PhasePaused {
			t.Fatalf("at the pause: step %d, %s, phase %s", got, s.counts(), s.ro.Status.Phase)
		}
		newHash := s.ro.Status.CurrentPodHash
		if s.svc["web-canary"] != newHash || s.svc["web-stable"] != stable {
			t.Fatalf("services %v: canary should select %s, stable %s", s.svc, newHash, stable)
		}
		// The pause asks to be woken when it ends, and ends then, not before.
		if p.requeue != 10*time.Minute {
			t.Fatalf("requeue %v, want 10m", p.requeue)
		}
		time.Sleep(10*time.Minute - time.Second)
		s.settle(time.Now())
		if idx(s.ro.Status) != 1 {
			t.Fatalf("the pause ended early: step %d", idx(s.ro.Status))
		}
		time.Sleep(time.Second)
		s.settle(time.Now())
		if got := idx(s.ro.Status); got != 3 || s.counts() != "1=2 2=2" {
			t.Fatalf("after the pause: step %d, %s", got, s.counts())
		}
		if s.ro.Status.Phase != PhasePaused || s.ro.Status.Message != string(PauseReasonCanaryPauseStep) {
			t.Fatalf("indefinite pause: phase %s %q", s.ro.Status.Phase, s.ro.Status.Message)
		}
		// Promote clears the pause condition: the last step completes and the revision is stable.
		s.ro.Status.PauseConditions = nil
		s.settle(time.Now())
		if s.ro.Status.StableRS != newHash || s.counts() != "1=0 2=4" || s.ro.Status.Phase != PhaseHealthy {
			t.Fatalf("promoted: stable %s (new %s), %s, phase %s %q", s.ro.Status.StableRS, newHash, s.counts(), s.ro.Status.Phase, s.ro.Status.Message)
		}
		if s.svc["web-canary"] != newHash || s.svc["web-stable"] != newHash {
			t.Fatalf("services %v after promotion", s.svc)
		}
	})
}

func TestCanaryAbortReturnsToStable(t *testing.T) {
	ro, _ := decodeYAML(t, canaryYAML)
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	stable := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	s.settle(now)
	s.ro.Status.Abort = true
	s.settle(now)
	if s.counts() != "1=4 2=0" || s.svc["web-canary"] != stable || s.ro.Status.StableRS != stable {
		t.Fatalf("aborted: %s, services %v", s.counts(), s.svc)
	}
	if s.ro.Status.Phase != PhaseDegraded || !strings.HasPrefix(s.ro.Status.Message, "RolloutAborted: Rollout aborted update to revision 2") {
		t.Fatalf("aborted: phase %s %q", s.ro.Status.Phase, s.ro.Status.Message)
	}
	if idx(s.ro.Status) != 0 || s.ro.Status.AbortedAt == nil {
		t.Fatalf("aborted: step %d, abortedAt %v", idx(s.ro.Status), s.ro.Status.AbortedAt)
	}
	// Retry: from the first step again.
	s.ro.Status.Abort = false
	s.settle(now)
	if idx(s.ro.Status) != 1 || s.counts() != "1=3 2=1" {
		t.Fatalf("retried: step %d, %s", idx(s.ro.Status), s.counts())
	}
}

const blueGreenYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop, namespace: ns, uid: u2, generation: 1}
spec:
  replicas: 3
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: shop, image: "shop:1"}]}
  strategy:
    blueGreen:
      activeService: shop-active
      previewService: shop-preview
      autoPromotionEnabled: false
      previewReplicaCount: 1
      scaleDownDelaySeconds: 30
`

func TestBlueGreenPreviewPromoteScaleDownDelay(t *testing.T) {
	ro, err := decodeYAML(t, blueGreenYAML)
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	blue := s.ro.Status.StableRS
	if s.svc["shop-active"] != blue || s.ro.Status.Phase != PhaseHealthy || s.counts() != "1=3" {
		t.Fatalf("first revision: %v, %s %q, %s", s.svc, s.ro.Status.Phase, s.ro.Status.Message, s.counts())
	}
	s.ro.Spec.Template.Spec.Containers[0].Image = "shop:2"
	s.settle(now)
	green := s.ro.Status.CurrentPodHash
	if s.counts() != "1=3 2=1" || s.svc["shop-active"] != blue || s.svc["shop-preview"] != green {
		t.Fatalf("preview: %s, services %v", s.counts(), s.svc)
	}
	if s.ro.Status.Phase != PhasePaused || s.ro.Status.Message != string(PauseReasonBlueGreenPause) {
		t.Fatalf("preview: phase %s %q", s.ro.Status.Phase, s.ro.Status.Message)
	}
	// Promote: the preview comes to full scale, then the active Service switches.
	s.ro.Status.PauseConditions = nil
	p := s.settle(now)
	if s.counts() != "1=3 2=3" || s.svc["shop-active"] != green || s.ro.Status.StableRS != green {
		t.Fatalf("promoted: %s, services %v", s.counts(), s.svc)
	}
	if p.requeue != 30*time.Second || s.ro.Status.Phase != PhaseHealthy {
		t.Fatalf("promoted: requeue %v, phase %s %q", p.requeue, s.ro.Status.Phase, s.ro.Status.Message)
	}
	s.settle(now.Add(29 * time.Second))
	if s.counts() != "1=3 2=3" {
		t.Fatalf("scaled down before the delay: %s", s.counts())
	}
	s.settle(now.Add(30 * time.Second))
	if s.counts() != "1=0 2=3" {
		t.Fatalf("after the delay: %s", s.counts())
	}
}

func TestBlueGreenAutoPromotionSeconds(t *testing.T) {
	ro, _ := decodeYAML(t, blueGreenYAML)
	ro.Spec.Strategy.BlueGreen.AutoPromotionEnabled = nil
	ro.Spec.Strategy.BlueGreen.AutoPromotionSeconds = 20
	ro.Spec.Strategy.BlueGreen.PreviewReplicaCount = nil
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	blue := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "shop:2"
	p := s.settle(now)
	if s.svc["shop-active"] != blue || p.requeue != 20*time.Second {
		t.Fatalf("waiting: services %v, requeue %v", s.svc, p.requeue)
	}
	s.settle(now.Add(20 * time.Second))
	if s.svc["shop-active"] != s.ro.Status.CurrentPodHash {
		t.Fatalf("not promoted after autoPromotionSeconds: %v", s.svc)
	}
}

func TestProgressDeadline(t *testing.T) {
	ro, _ := decodeYAML(t, canaryYAML)
	pd := int32(60)
	ro.Spec.ProgressDeadlineSeconds = &pd
	ro.Spec.ProgressDeadlineAbort = true
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	s.step(now)
	// The canary's pods never become available.
	for _, rs := range s.rss {
		if rs.Annotations[RevisionAnnotation] == "2" {
			rs.Status = appsv1.ReplicaSetStatus{Replicas: 1}
		}
	}
	s.ro.Status = compute(world{ro: s.ro, rss: s.rss, now: now}).status // observed at once
	p := compute(world{ro: s.ro, rss: s.rss, now: now.Add(59 * time.Second)})
	if p.status.Phase == PhaseDegraded {
		t.Fatalf("timed out early")
	}
	p = compute(world{ro: s.ro, rss: s.rss, now: now.Add(61 * time.Second)})
	if p.status.Phase != PhaseDegraded || !strings.Contains(p.status.Message, "ProgressDeadlineExceeded") || !p.status.Abort {
		t.Fatalf("after the deadline: %s %q abort=%v", p.status.Phase, p.status.Message, p.status.Abort)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	ro, _ := decodeYAML(t, canaryYAML)
	ro.Spec.Strategy.Canary.Steps = nil
	one := int32(1)
	ro.Spec.RevisionHistoryLimit = &one
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var removed []string
	for i := 1; i <= 4; i++ {
		s.ro.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("web:%d", i)
		for range 10 {
			p := s.step(now)
			removed = append(removed, p.remove...)
			for _, n := range p.remove {
				for j, rs := range s.rss {
					if rs.Name == n {
						s.rss = append(s.rss[:j], s.rss[j+1:]...)
						break
					}
				}
			}
		}
	}
	if s.counts() != "3=0 4=4" || len(removed) != 2 {
		t.Fatalf("kept %s, removed %v", s.counts(), removed)
	}
}

func TestInvalidSpecNamesTheField(t *testing.T) {
	for _, tc := range []struct{ edit, field string }{
		{`{"op":"weight"}`, "spec.strategy.canary.steps[0].setWeight"},
		{`{"op":"unknown"}`, "spec.strategy.canary.steps[1]"},
		{`{"op":"analysis"}`, "spec.strategy.canary.steps[1].analysis.templates"},
		{`{"op":"pause"}`, "spec.strategy.canary.steps[1].pause.duration"},
		{`{"op":"selector"}`, "spec.template.metadata.labels"},
		{`{"op":"both"}`, "spec.strategy"},
		{`{"op":"canaryscale"}`, "spec.strategy.canary.steps[1].setCanaryScale"}, // needs trafficRouting
	} {
		ro, err := decodeYAML(t, canaryYAML)
		if err != nil {
			t.Fatal(err)
		}
		c := ro.Spec.Strategy.Canary
		switch {
		case strings.Contains(tc.edit, "weight"):
			w := int32(120)
			c.Steps[0].SetWeight = &w
		case strings.Contains(tc.edit, "unknown"):
			c.Steps[1] = CanaryStep{}
		case strings.Contains(tc.edit, "analysis"):
			c.Steps[1] = CanaryStep{Analysis: &RolloutAnalysis{}}
		case strings.Contains(tc.edit, "pause"):
			d := intstr.FromString("soon")
			c.Steps[1].Pause.Duration = &d
		case strings.Contains(tc.edit, "selector"):
			ro.Spec.Template.Labels = map[string]string{"app": "other"}
		case strings.Contains(tc.edit, "canaryscale"):
			two := int32(2)
			c.Steps[1] = CanaryStep{SetCanaryScale: &SetCanaryScale{Replicas: &two}}
		case strings.Contains(tc.edit, "both"):
			ro.Spec.Strategy.BlueGreen = &BlueGreenStrategy{ActiveService: "a"}
		}
		err = Validate(&ro.Spec)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: got %v (field %q), want field %s", tc.edit, err, errdefs.Field(err), tc.field)
		}
	}
}

func TestPodTemplateHashIsStable(t *testing.T) {
	tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	h1, h2 := PodTemplateHash(&tpl, nil), PodTemplateHash(tpl.DeepCopy(), nil)
	one := int32(1)
	if h1 != h2 || h1 == PodTemplateHash(&tpl, &one) || h1 == "" {
		t.Fatalf("hashes %s %s %s", h1, h2, PodTemplateHash(&tpl, &one))
	}
}

func TestManualPauseHoldsSteps(t *testing.T) {
	ro, err := decodeYAML(t, canaryYAML)
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	s.settle(now)
	// spec.paused holds the steps: a pause that ends meanwhile does not move it on.
	s.ro.Spec.Paused = true
	s.settle(now.Add(time.Hour))
	if idx(s.ro.Status) != 1 || s.ro.Status.Phase != PhasePaused || s.ro.Status.Message != "manually paused" {
		t.Fatalf("spec.paused: step %d, %s %q", idx(s.ro.Status), s.ro.Status.Phase, s.ro.Status.Message)
	}
	s.ro.Spec.Paused = false
	s.settle(now.Add(time.Hour))
	if idx(s.ro.Status) != 3 || s.counts() != "1=2 2=2" {
		t.Fatalf("resumed: step %d, %s", idx(s.ro.Status), s.counts())
	}
}

func TestBlueGreenAbortScalesPreviewDownAfterDelay(t *testing.T) {
	ro, _ := decodeYAML(t, blueGreenYAML)
	ro.Spec.Strategy.BlueGreen.PreviewReplicaCount = nil
	d := int32(10)
	ro.Spec.Strategy.BlueGreen.AbortScaleDownDelaySeconds = &d
	s := &sim{ro: ro, svc: map[string]string{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	blue := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "shop:2"
	s.settle(now)
	s.ro.Status.Abort = true
	p := s.settle(now)
	if s.ro.Status.Phase != PhaseDegraded || s.svc["shop-active"] != blue || s.svc["shop-preview"] != blue || p.requeue != 10*time.Second {
		t.Fatalf("aborted: %s, services %v, requeue %v", s.ro.Status.Phase, s.svc, p.requeue)
	}
	if s.counts() != "1=3 2=3" {
		t.Fatalf("the preview went before abortScaleDownDelaySeconds: %s", s.counts())
	}
	s.settle(now.Add(10 * time.Second))
	if s.counts() != "1=3 2=0" {
		t.Fatalf("after abortScaleDownDelaySeconds: %s", s.counts())
	}
}
