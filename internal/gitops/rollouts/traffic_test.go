package rollouts

import (
	"errors"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

const routedYAML = `
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
      trafficRouting:
        nginx: {stableIngress: web}
      steps:
      - setWeight: 20
      - pause: {}
      - setCanaryScale: {replicas: 3}
      - pause: {}
      - setWeight: 60
      - setCanaryScale: {matchTrafficWeight: true}
      - pause: {}
`

func routedSim(t *testing.T, edit func(*CanaryStrategy)) *sim {
	t.Helper()
	ro, err := decodeYAML(t, routedYAML)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ro.Spec.Strategy.Canary)
		if err := Validate(&ro.Spec); err != nil {
			t.Fatal(err)
		}
	}
	return &sim{ro: ro, svc: map[string]string{}}
}

func weightOf(st RolloutStatus) int32 {
	if st.Canary.Weights == nil {
		return -1
	}
	return st.Canary.Weights.Canary.Weight
}

// promote clears the pause conditions, as `kubectl argo rollouts promote` does.
func (s *sim) promote(now time.Time) { s.ro.Status.PauseConditions = nil; s.settle(now) }

func TestRoutedCanaryWeightsAndScale(t *testing.T) {
	s := routedSim(t, nil)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	if s.counts() != "1=4" || weightOf(s.ro.Status) != 0 || s.ro.Status.Phase != PhaseHealthy {
		t.Fatalf("first revision: %s weight %d phase %s", s.counts(), weightOf(s.ro.Status), s.ro.Status.Phase)
	}
	stable := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"

	// The canary is created and scaled to carry 20 % (1 of 4); the weight stays 0 until it has
	// an available pod.
	p := s.step(now)
	if p.traffic == nil || p.traffic.weight != 0 {
		t.Fatalf("weight before the canary runs: %+v", p.traffic)
	}
	if s.counts() != "1=4 2=1" {
		t.Fatalf("canary created: %s", s.counts())
	}
	s.rss[1].Status.AvailableReplicas = 0 // not yet available
	if p = compute(world{ro: s.ro, rss: s.rss, now: now}); p.traffic.weight != 0 || p.advanced {
		t.Fatalf("canary not available: weight %d, advanced %v", p.traffic.weight, p.advanced)
	}
	s.ready()
	s.settle(now)
	newHash := s.ro.Status.CurrentPodHash
	if idx(s.ro.Status) != 1 || weightOf(s.ro.Status) != 20 || s.counts() != "1=4 2=1" {
		t.Fatalf("setWeight 20: step %d weight %d %s", idx(s.ro.Status), weightOf(s.ro.Status), s.counts())
	}
	w := s.ro.Status.Canary.Weights
	if w.Canary.PodTemplateHash != newHash || w.Stable.PodTemplateHash != stable || w.Stable.Weight != 80 || w.Canary.ServiceName != "web-canary" {
		t.Fatalf("status weights %+v", w)
	}
	if s.svc["web-canary"] != newHash || s.svc["web-stable"] != stable {
		t.Fatalf("services %v", s.svc)
	}
	// setCanaryScale replicas: 3 canary pods, the weight unchanged, stable full.
	s.promote(now)
	if idx(s.ro.Status) != 3 || s.counts() != "1=4 2=3" || weightOf(s.ro.Status) != 20 {
		t.Fatalf("setCanaryScale 3: step %d %s weight %d", idx(s.ro.Status), s.counts(), weightOf(s.ro.Status))
	}
	// setWeight 60 with the explicit scale still in force: 3 pods, 60 %; then matchTrafficWeight.
	s.promote(now)
	if idx(s.ro.Status) != 6 || s.counts() != "1=4 2=3" || weightOf(s.ro.Status) != 60 {
		t.Fatalf("setWeight 60 + matchTrafficWeight: step %d %s weight %d", idx(s.ro.Status), s.counts(), weightOf(s.ro.Status))
	}
	// Promotion: the canary at full scale, then stable; weight back to 0 and the old stable
	// revision kept for scaleDownDelaySeconds (30 by default).
	s.promote(now)
	if s.ro.Status.StableRS != newHash || weightOf(s.ro.Status) != 0 || s.counts() != "1=4 2=4" {
		t.Fatalf("promoted: stable %s weight %d %s", s.ro.Status.StableRS, weightOf(s.ro.Status), s.counts())
	}
	if s.svc["web-stable"] != newHash || s.svc["web-canary"] != newHash {
		t.Fatalf("services after promotion %v", s.svc)
	}
	s.settle(now.Add(29 * time.Second))
	if s.counts() != "1=4 2=4" {
		t.Fatalf("old stable scaled down before scaleDownDelaySeconds: %s", s.counts())
	}
	s.settle(now.Add(30 * time.Second))
	if s.counts() != "1=0 2=4" || s.ro.Status.Phase != PhaseHealthy {
		t.Fatalf("after scaleDownDelaySeconds: %s phase %s %q", s.counts(), s.ro.Status.Phase, s.ro.Status.Message)
	}
}

func TestRoutedCanaryAbort(t *testing.T) {
	s := routedSim(t, nil)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	stable := s.ro.Status.StableRS
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	s.settle(now)
	s.promote(now) // 3 canary pods at 20 %
	s.ro.Status.Abort = true
	s.settle(now)
	if weightOf(s.ro.Status) != 0 || s.svc["web-canary"] != stable || s.ro.Status.Canary.Weights.Canary.PodTemplateHash != stable {
		t.Fatalf("aborted: weight %d services %v", weightOf(s.ro.Status), s.svc)
	}
	// abortScaleDownDelaySeconds (30): the canary keeps its pods until then, stable is full.
	if s.counts() != "1=4 2=3" || s.rss[1].Annotations[ScaleDownDeadlineAnnotation] != now.Add(30*time.Second).Format(time.RFC3339) {
		t.Fatalf("aborted: %s, deadline %q", s.counts(), s.rss[1].Annotations[ScaleDownDeadlineAnnotation])
	}
	s.settle(now.Add(30 * time.Second))
	if s.counts() != "1=4 2=0" || s.ro.Status.Phase != PhaseDegraded {
		t.Fatalf("after the abort delay: %s phase %s", s.counts(), s.ro.Status.Phase)
	}
	// Retry: the deadline is gone and the steps start over.
	s.ro.Status.Abort = false
	s.settle(now.Add(time.Minute))
	if idx(s.ro.Status) != 1 || weightOf(s.ro.Status) != 20 || s.counts() != "1=4 2=1" {
		t.Fatalf("retried: step %d weight %d %s", idx(s.ro.Status), weightOf(s.ro.Status), s.counts())
	}
	if _, has := s.rss[1].Annotations[ScaleDownDeadlineAnnotation]; has {
		t.Fatal("retried canary still has its scale-down deadline")
	}
}

func TestRoutedCanaryAbortDelayZeroKeepsSetCanaryScale(t *testing.T) {
	zero := int32(0)
	s := routedSim(t, func(c *CanaryStrategy) { c.AbortScaleDownDelaySeconds = &zero })
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	s.settle(now)
	s.ro.Status.Abort = true
	s.settle(now)
	// No setCanaryScale in force at step 0: weight 0 scales the canary to 0 at once.
	if s.counts() != "1=4 2=0" || weightOf(s.ro.Status) != 0 {
		t.Fatalf("abort with delay 0: %s weight %d", s.counts(), weightOf(s.ro.Status))
	}
}

func TestDynamicStableScale(t *testing.T) {
	s := routedSim(t, func(c *CanaryStrategy) {
		c.DynamicStableScale = true
		w := int32(50)
		c.Steps = []CanaryStep{{SetWeight: &w}, {Pause: &RolloutPause{}}}
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.settle(now)
	s.ro.Spec.Template.Spec.Containers[0].Image = "web:2"
	// The canary comes up to 2 first; stable gives up pods only once the weight has moved.
	s.step(now)
	s.step(now)
	if s.counts() != "1=4 2=2" || weightOf(s.ro.Status) != 50 {
		t.Fatalf("before the weight moves: %s weight %d", s.counts(), weightOf(s.ro.Status))
	}
	s.settle(now)
	if s.counts() != "1=2 2=2" || weightOf(s.ro.Status) != 50 || idx(s.ro.Status) != 1 {
		t.Fatalf("at 50 %%: %s weight %d step %d", s.counts(), weightOf(s.ro.Status), idx(s.ro.Status))
	}
	// Abort: stable back to 4 first; the weight drains as it becomes available; the canary
	// keeps its pods until its traffic is gone.
	s.ro.Status.Abort = true
	s.rss[0].Spec.Replicas = new(int32(2)) // the sim made it available at once; hold it
	p := s.step(now)
	if p.scale[s.rss[0].Name] != 4 || weightOf(s.ro.Status) != 50 || specReplicas(s.rss[1]) != 2 {
		t.Fatalf("abort, stable not yet available: scale %v weight %d canary %d", p.scale, weightOf(s.ro.Status), specReplicas(s.rss[1]))
	}
	s.settle(now)
	if s.counts() != "1=4 2=0" || weightOf(s.ro.Status) != 0 {
		t.Fatalf("aborted: %s weight %d", s.counts(), weightOf(s.ro.Status))
	}
}

func TestCanaryIngressAsArgoWritesIt(t *testing.T) {
	ro, err := decodeYAML(t, routedYAML)
	if err != nil {
		t.Fatal(err)
	}
	n := ro.Spec.Strategy.Canary.TrafficRouting.Nginx
	n.AnnotationPrefix = "custom.nginx.io"
	n.AdditionalIngressAnnotations = map[string]string{"canary-by-header": "X-Canary", "custom.nginx.io/canary-by-cookie": "c"}
	class := "nginx"
	pt := networkingv1.PathTypePrefix
	backend := func(svc string) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}
	}
	stable := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"kubernetes.io/ingress.class": "nginx", "other": "x"}},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example"}}}, Rules: []networkingv1.IngressRule{
			{Host: "web.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt, Backend: backend("web-stable")}}}}},
			{Host: "other.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt, Backend: backend("other")}}}}},
		}},
	}
	ing, err := desiredCanaryIngress(ro, n, stable, 40)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kubernetes.io/ingress.class": "nginx", "custom.nginx.io/canary": "true", "custom.nginx.io/canary-weight": "40",
		"custom.nginx.io/canary-by-header": "X-Canary", "custom.nginx.io/canary-by-cookie": "c"}
	if ing.Name != "web-web-canary" || len(ing.Annotations) != len(want) {
		t.Fatalf("name %s annotations %v", ing.Name, ing.Annotations)
	}
	for k, v := range want {
		if ing.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, ing.Annotations[k], v)
		}
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "web-canary" || *ing.Spec.IngressClassName != "nginx" || len(ing.Spec.TLS) != 1 {
		t.Fatalf("spec %+v", ing.Spec)
	}
	if ref := metav1.GetControllerOf(ing); ref == nil || ref.Kind != "Rollout" || ref.Name != "web" {
		t.Fatalf("owner %+v", ing.OwnerReferences)
	}
	if stable.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "web-stable" {
		t.Fatal("the stable Ingress was changed")
	}
	stable.Spec.Rules = stable.Spec.Rules[1:]
	if _, err := desiredCanaryIngress(ro, n, stable, 40); err == nil || !strings.Contains(err.Error(), `no rule with a backend to stableService "web-stable"`) {
		t.Fatalf("no stable backend: %v", err)
	}
	if got := CanaryIngressName(strings.Repeat("r", 200), strings.Repeat("i", 100)); len(got) != 253 || !strings.HasSuffix(got, "-canary") {
		t.Fatalf("long name %d %q", len(got), got)
	}
}

func TestTrafficRoutingInvalidSpec(t *testing.T) {
	const tr = "spec.strategy.canary.trafficRouting"
	for _, tc := range []struct{ name, routing, extra, field string }{
		{"no stable ingress", `{nginx: {}}`, "", tr + ".nginx.stableIngress"},
		{"both ingress fields", `{nginx: {stableIngress: a, stableIngresses: [b]}}`, "", tr + ".nginx.stableIngresses"},
		{"bad ingress name", `{nginx: {stableIngress: "A_B"}}`, "", tr + ".nginx.stableIngress"},
		{"no router", `{}`, "", tr},
		{"istio", `{istio: {virtualService: {name: v}}}`, "", tr + ".istio"},
		{"max weight", `{nginx: {stableIngress: a}, maxTrafficWeight: 1000}`, "", tr + ".maxTrafficWeight"},
		{"other plugin", `{plugins: {"acme/router": {}}}`, "", tr + ".plugins"},
		{"no httpRoute", `{plugins: {"argoproj-labs/gatewayAPI": {namespace: ns}}}`, "", tr + ".plugins[argoproj-labs/gatewayAPI].httpRoute"},
		{"grpc", `{plugins: {"argoproj-labs/gatewayAPI": {grpcRoute: g}}}`, "", tr + ".plugins[argoproj-labs/gatewayAPI].grpcRoute"},
		{"bad route name", `{plugins: {"argoproj-labs/gatewayAPI": {httpRoutes: [{name: ok}, {name: "B!"}]}}}`, "", tr + ".plugins[argoproj-labs/gatewayAPI].httpRoutes[1].name"},
		{"no canary service", `{nginx: {stableIngress: a}}`, "nocanary", "spec.strategy.canary.canaryService"},
		{"scale weight", `{nginx: {stableIngress: a}}`, "scale", "spec.strategy.canary.steps[2].setCanaryScale.weight"},
		{"scale two", `{nginx: {stableIngress: a}}`, "scale2", "spec.strategy.canary.steps[2].setCanaryScale"},
		{"dynamic + delay", `{nginx: {stableIngress: a}}`, "dyn", "spec.strategy.canary.dynamicStableScale"},
		{"dynamic without routing", ``, "dynonly", "spec.strategy.canary.dynamicStableScale"},
		{"negative abort delay", `{nginx: {stableIngress: a}}`, "abort", "spec.strategy.canary.abortScaleDownDelaySeconds"},
	} {
		y := routedYAML
		if tc.routing == "" {
			y = strings.Replace(y, "      trafficRouting:\n        nginx: {stableIngress: web}\n", "", 1)
			y = strings.Replace(y, "      - setCanaryScale: {replicas: 3}\n", "", 1)
			y = strings.Replace(y, "      - setCanaryScale: {matchTrafficWeight: true}\n", "", 1)
		} else {
			y = strings.Replace(y, "nginx: {stableIngress: web}", "", 1)
			y = strings.Replace(y, "      trafficRouting:\n", "      trafficRouting: "+tc.routing+"\n", 1)
		}
		switch tc.extra {
		case "nocanary":
			y = strings.Replace(y, "canaryService: web-canary", "", 1)
		case "scale":
			y = strings.Replace(y, "{replicas: 3}", "{weight: 101}", 1)
		case "scale2":
			y = strings.Replace(y, "{replicas: 3}", "{replicas: 3, weight: 10}", 1)
		case "dyn":
			y = strings.Replace(y, "canaryService: web-canary", "canaryService: web-canary\n      dynamicStableScale: true\n      scaleDownDelaySeconds: 5", 1)
		case "dynonly":
			y = strings.Replace(y, "canaryService: web-canary", "canaryService: web-canary\n      dynamicStableScale: true", 1)
		case "abort":
			y = strings.Replace(y, "canaryService: web-canary", "canaryService: web-canary\n      abortScaleDownDelaySeconds: -1", 1)
		}
		_, err := decodeYAML(t, y)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: got %v (field %q), want field %s", tc.name, err, errdefs.Field(err), tc.field)
		}
	}
}
