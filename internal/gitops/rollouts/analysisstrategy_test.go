package rollouts

import (
	"strings"
	"testing"
	"time"
)

// runSim is sim with the strategy's analysis runs set by the test (the controller tests run
// them for real).
type runSim struct {
	*sim
	runs strategyRuns
}

func (s *runSim) step(now time.Time) *plan {
	p := compute(world{ro: s.ro, rss: s.rss, now: now, runs: s.runs})
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

func (s *runSim) settle(now time.Time) {
	for range 20 {
		s.step(now)
	}
}

func run(name string, ph AnalysisPhase, msg string) *RolloutAnalysisRunStatus {
	return &RolloutAnalysisRunStatus{Name: name, Status: ph, Message: msg}
}

func TestBlueGreenPrePromotionBlocksAndAborts(t *testing.T) {
	y := strings.Replace(blueGreenYAML, "autoPromotionEnabled: false", "prePromotionAnalysis: {templates: [{templateName: t}]}", 1)
	ro, err := decodeYAML(t, y)
	if err != nil {
		t.Fatal(err)
	}
	s := &runSim{sim: &sim{ro: ro, svc: map[string]string{}}}
	now := time.Now()
	s.settle(now)
	v1 := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "shop:2"
	s.settle(now)
	v2 := s.ro.Status.CurrentPodHash
	// Auto-promotion, but no pre-promotion result yet: the preview waits at previewReplicaCount.
	if s.svc["shop-active"] != v1 || s.svc["shop-preview"] != v2 || s.counts() != "1=3 2=1" {
		t.Fatalf("before analysis: services %v, counts %s", s.svc, s.counts())
	}
	s.runs.pre = run("pre", AnalysisRunning, "")
	s.settle(now)
	if s.svc["shop-active"] != v1 || s.ro.Status.BlueGreen.PrePromotionAnalysisRunStatus.Name != "pre" {
		t.Fatalf("while running: services %v", s.svc)
	}
	s.runs.pre = run("pre", AnalysisFailed, `Metric "rate" assessed Failed`)
	s.settle(now)
	if !s.ro.Status.Abort || s.svc["shop-active"] != v1 || s.svc["shop-preview"] != v1 ||
		!strings.Contains(s.ro.Status.Message, `Metric "rate" assessed Failed`) || s.ro.Status.Phase != PhaseDegraded {
		t.Fatalf("failed: abort %v, services %v, %s %q", s.ro.Status.Abort, s.svc, s.ro.Status.Phase, s.ro.Status.Message)
	}
}

func TestBlueGreenPostPromotionFailureRollsBack(t *testing.T) {
	y := strings.Replace(blueGreenYAML, "autoPromotionEnabled: false", "postPromotionAnalysis: {templates: [{templateName: t}]}\n      abortScaleDownDelaySeconds: 0", 1)
	ro, err := decodeYAML(t, y)
	if err != nil {
		t.Fatal(err)
	}
	s := &runSim{sim: &sim{ro: ro, svc: map[string]string{}}}
	now := time.Now()
	s.settle(now)
	v1 := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "shop:2"
	s.settle(now)
	v2 := s.ro.Status.CurrentPodHash
	// Promoted (automatically): active at the new revision, the old one still stable at full scale.
	if s.svc["shop-active"] != v2 || s.ro.Status.StableRS != v1 || s.counts() != "1=3 2=3" {
		t.Fatalf("promoted: services %v, stable %s (v1 %s), counts %s", s.svc, s.ro.Status.StableRS, v1, s.counts())
	}
	s.runs.post = run("post", AnalysisError, `Metric "rate" assessed Error: prometheus query: connection refused`)
	s.settle(now)
	if !s.ro.Status.Abort || s.svc["shop-active"] != v1 || s.ro.Status.BlueGreen.ActiveSelector != v1 || s.counts() != "1=3 2=0" ||
		!strings.Contains(s.ro.Status.Message, "connection refused") {
		t.Fatalf("post failed: abort %v, services %v, counts %s, %q", s.ro.Status.Abort, s.svc, s.counts(), s.ro.Status.Message)
	}

	// Passing instead: the new revision becomes stable and the old one is scaled down later.
	ro2, _ := decodeYAML(t, y)
	s = &runSim{sim: &sim{ro: ro2, svc: map[string]string{}}}
	s.settle(now)
	s.ro.Spec.Template.Spec.Containers[0].Image = "shop:2"
	s.settle(now)
	s.runs.post = run("post", AnalysisSuccessful, "")
	s.settle(now)
	if s.ro.Status.StableRS != s.ro.Status.CurrentPodHash || s.ro.Status.Abort || s.ro.Status.Phase != PhaseHealthy {
		t.Fatalf("post passed: %+v", s.ro.Status)
	}
	s.settle(now.Add(31 * time.Second))
	if s.counts() != "1=0 2=3" {
		t.Fatalf("after the scale-down delay: %s", s.counts())
	}
}

func TestBackgroundAnalysisAborts(t *testing.T) {
	y := strings.Replace(canaryYAML, "      steps:", "      analysis: {templates: [{templateName: t}], startingStep: 1}\n      steps:", 1)
	ro, err := decodeYAML(t, y)
	if err != nil {
		t.Fatal(err)
	}
	s := &runSim{sim: &sim{ro: ro, svc: map[string]string{}}}
	now := time.Now()
	s.settle(now)
	stable := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	s.runs.background = run("bg", AnalysisRunning, "")
	s.settle(now)
	if idx(s.ro.Status) != 1 || s.counts() != "1=3 2=1" || s.ro.Status.Canary.CurrentBackgroundAnalysisRunStatus == nil {
		t.Fatalf("at the pause: step %d, counts %s", idx(s.ro.Status), s.counts())
	}
	s.runs.background = run("bg", AnalysisFailed, `Metric "errors" assessed Failed: 1 of 1 measurements failed`)
	s.settle(now)
	if !s.ro.Status.Abort || s.counts() != "1=4 2=0" || s.svc["web-canary"] != stable || s.svc["web-stable"] != stable ||
		!strings.Contains(s.ro.Status.Message, `Metric "errors" assessed Failed`) {
		t.Fatalf("aborted: %v, counts %s, services %v, %q", s.ro.Status.Abort, s.counts(), s.svc, s.ro.Status.Message)
	}
}

func TestStrategyAnalysisRefusals(t *testing.T) {
	for _, tc := range []struct{ y, from, to, field string }{
		{canaryYAML, "      steps:", "      analysis: {templates: [{templateName: t}], startingStep: 9}\n      steps:", "spec.strategy.canary.analysis.startingStep"},
		{canaryYAML, "      steps:", "      analysis: {templates: []}\n      steps:", "spec.strategy.canary.analysis.templates"},
		{blueGreenYAML, "autoPromotionEnabled: false", "prePromotionAnalysis: {templates: [{templateName: t}], args: [{name: a, valueFrom: {fieldRef: {}}}]}", "spec.strategy.blueGreen.prePromotionAnalysis.args[0].valueFrom.fieldRef.fieldPath"},
		{blueGreenYAML, "autoPromotionEnabled: false", "postPromotionAnalysis: {templates: [{templateName: t}], dryRun: [{metricName: ''}]}", "spec.strategy.blueGreen.postPromotionAnalysis.dryRun[0].metricName"},
	} {
		_, err := decodeYAML(t, strings.Replace(tc.y, tc.from, tc.to, 1))
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want the field %s", tc.to, err, tc.field)
		}
	}
}
