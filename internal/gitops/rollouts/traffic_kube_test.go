package rollouts_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installHTTPRouteCRD installs testdata's HTTPRoute CRD (once per cluster) and waits until the
// API server serves HTTPRoutes.
func (e *env) installHTTPRouteCRD() {
	e.t.Helper()
	y, err := os.ReadFile("testdata/httproute-crd.yaml")
	if err != nil {
		e.t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(y, &u.Object); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Dynamic.Resource(crdGVR).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	e.waitFor("HTTPRoutes served", 30*time.Second, func() (bool, string) {
		_, err := e.c.Dynamic.Resource(rollouts.HTTPRoutesResource).Namespace(e.ns).List(e.ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func (e *env) stableIngress(name, svc string) {
	e.t.Helper()
	pt := networkingv1.PathTypePrefix
	class := "nginx"
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kubernetes.io/ingress.class": "nginx"}},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: "web.example",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
	}
	if _, err := e.c.Client.NetworkingV1().Ingresses(e.ns).Create(e.ctx, ing, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) httpRoute(name string) {
	e.t.Helper()
	y := `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ` + name + `}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs:
    - {name: web-stable, port: 80}
    - {name: web-canary, port: 80, weight: 0}
`
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Dynamic.Resource(rollouts.HTTPRoutesResource).Namespace(e.ns).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// traffic reads the real router objects: the canary Ingress's weight annotation ("none" when
// it does not exist) and the HTTPRoute's canary/stable backendRef weights.
func (e *env) traffic(rollout, ingress, route string) string {
	e.t.Helper()
	ing := "none"
	if got, err := e.c.Client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, rollouts.CanaryIngressName(rollout, ingress), metav1.GetOptions{}); err == nil {
		ing = got.Annotations["nginx.ingress.kubernetes.io/canary"] + "/" + got.Annotations["nginx.ingress.kubernetes.io/canary-weight"]
	} else if !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	r, err := e.c.Dynamic.Resource(rollouts.HTTPRoutesResource).Namespace(e.ns).Get(e.ctx, route, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
	w := map[string]any{}
	for _, b := range rules[0].(map[string]any)["backendRefs"].([]any) {
		ref := b.(map[string]any)
		w[ref["name"].(string)] = ref["weight"]
	}
	return fmt.Sprintf("ingress=%s route=%v/%v", ing, w["web-canary"], w["web-stable"])
}

func (e *env) waitTraffic(want string) {
	e.t.Helper()
	e.waitFor("traffic "+want, 60*time.Second, func() (bool, string) {
		got := e.traffic("web", "web", "web")
		return got == want, got
	})
}

func routedCanary(image string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 4
  progressDeadlineSeconds: 120
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      abortScaleDownDelaySeconds: 2
      scaleDownDelaySeconds: 2
      trafficRouting:
        nginx:
          stableIngress: web
          additionalIngressAnnotations: {canary-by-header: X-Canary}
        plugins:
          argoproj-labs/gatewayAPI: {httpRoute: web}
      steps:
      - setWeight: 25
      - pause: {}
      - setCanaryScale: {replicas: 3}
      - setWeight: 50
      - pause: {}
`
}

func TestTrafficRoutingOnAPIServer(t *testing.T) {
	e := newEnv(t)
	e.installHTTPRouteCRD()
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.stableIngress("web", "web-stable")
	e.httpRoute("web")
	e.apply(routedCanary("registry.local/web:1"))
	stable := e.waitPhase("web", rollouts.PhaseHealthy, 5).Status.StableRS
	e.waitRS("web", "1:4/4")
	e.waitTraffic("ingress=true/0 route=0/100")
	ing, err := e.c.Client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, "web-web-canary", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Annotations["nginx.ingress.kubernetes.io/canary-by-header"] != "X-Canary" || ing.Annotations["kubernetes.io/ingress.class"] != "nginx" ||
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != "web-canary" || *ing.Spec.IngressClassName != "nginx" {
		t.Fatalf("canary ingress %+v", ing)
	}
	if ref := metav1.GetControllerOf(ing); ref == nil || ref.Kind != "Rollout" || ref.Name != "web" {
		t.Fatalf("canary ingress owner %+v", ing.OwnerReferences)
	}

	// setWeight 25: one canary pod, stable at full scale, a quarter of the traffic.
	e.apply(routedCanary("registry.local/web:2"))
	ro := e.waitPhase("web", rollouts.PhasePaused, 1)
	canaryHash := ro.Status.CurrentPodHash
	e.waitRS("web", "1:4/4 2:1/1")
	e.waitTraffic("ingress=true/25 route=25/75")
	if w := ro.Status.Canary.Weights; w == nil || w.Canary.Weight != 25 || w.Canary.PodTemplateHash != canaryHash || w.Stable.Weight != 75 || w.Stable.PodTemplateHash != stable {
		t.Fatalf("status weights %+v", ro.Status.Canary.Weights)
	}
	if e.selector("web-canary") != canaryHash || e.selector("web-stable") != stable {
		t.Fatal("services not at their revisions")
	}
	// setCanaryScale 3, then setWeight 50 with 3 canary pods.
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", false); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhasePaused, 4)
	e.waitRS("web", "1:4/4 2:3/3")
	e.waitTraffic("ingress=true/50 route=50/50")

	// Abort: traffic back to stable at once, the canary's pods kept for abortScaleDownDelaySeconds.
	if err := e.ctrl.Abort(e.ctx, e.ns, "web"); err != nil {
		t.Fatal(err)
	}
	e.waitTraffic("ingress=true/0 route=0/100")
	if e.selector("web-canary") != stable {
		t.Fatal("aborted: canary service not back at stable")
	}
	e.waitPhase("web", rollouts.PhaseDegraded, 0)
	e.waitRS("web", "1:4/4 2:0/0")

	// Retry, then promote fully: the new revision is stable, the weight back to 0, the old
	// revision scaled down after scaleDownDelaySeconds.
	if err := e.ctrl.Retry(e.ctx, e.ns, "web"); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhasePaused, 1)
	e.waitTraffic("ingress=true/25 route=25/75")
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhaseHealthy, 5)
	e.waitTraffic("ingress=true/0 route=0/100")
	e.waitRS("web", "1:0/0 2:4/4")
	if e.selector("web-stable") != canaryHash || e.selector("web-canary") != canaryHash {
		t.Fatal("promoted: services not at the new revision")
	}
	r, _ := e.c.Dynamic.Resource(rollouts.HTTPRoutesResource).Namespace(e.ns).Get(e.ctx, "web", metav1.GetOptions{})
	if _, has := r.GetLabels()["rollouts.argoproj.io/gatewayapi-canary"]; has {
		t.Fatal("the HTTPRoute keeps its in-progress label at weight 0")
	}
}

// A router object that is missing stops the Rollout before anything is written, with a
// message naming the field; creating it lets the Rollout go on.
func TestTrafficRoutingMissingRouter(t *testing.T) {
	e := newEnv(t)
	e.installHTTPRouteCRD()
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.stableIngress("web", "web-stable")
	e.apply(routedCanary("registry.local/web:1"))
	e.waitFor("a message naming the HTTPRoute", 60*time.Second, func() (bool, string) {
		ro := e.rollout("web")
		return strings.Contains(ro.Status.Message, `HTTPRoute `+e.ns+`/web (spec.strategy.canary.trafficRouting.plugins[argoproj-labs/gatewayAPI].httpRoute) does not exist`), ro.Status.Message
	})
	if got, _ := e.replicaSets("web"); got != "" {
		t.Fatalf("ReplicaSets %s created while the HTTPRoute is missing", got)
	}
	if _, err := e.c.Client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, "web-web-canary", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("canary ingress written while the HTTPRoute is missing: %v", err)
	}
	e.httpRoute("web")
	e.waitPhase("web", rollouts.PhaseHealthy, 5)
	e.waitTraffic("ingress=true/0 route=0/100")

	// An invalid weight is refused by name and changes nothing.
	e.apply(strings.Replace(routedCanary("registry.local/web:2"), "setWeight: 50", "setWeight: 150", 1))
	e.waitFor("InvalidSpec", 60*time.Second, func() (bool, string) {
		ro := e.rollout("web")
		return ro.Status.Phase == rollouts.PhaseDegraded && strings.Contains(ro.Status.Message, "spec.strategy.canary.steps[3].setWeight"), ro.Status.Message
	})
	e.waitRS("web", "1:4/4")
	e.waitTraffic("ingress=true/0 route=0/100")
}

// dynamicStableScale through the Gateway API alone: the stable revision gives up pods only as
// the canary takes traffic, and takes them back on abort before the canary drains.
func TestDynamicStableScaleOnAPIServer(t *testing.T) {
	e := newEnv(t)
	e.installHTTPRouteCRD()
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.httpRoute("web")
	ro := func(image string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      dynamicStableScale: true
      trafficRouting:
        plugins:
          argoproj-labs/gatewayAPI: {httpRoute: web}
      steps:
      - setWeight: 50
      - pause: {}
`
	}
	e.apply(ro("registry.local/web:1"))
	e.waitPhase("web", rollouts.PhaseHealthy, 2)
	e.waitTraffic("ingress=none route=0/100")
	e.apply(ro("registry.local/web:2"))
	e.waitPhase("web", rollouts.PhasePaused, 1)
	e.waitTraffic("ingress=none route=50/50")
	e.waitRS("web", "1:2/2 2:2/2")
	if err := e.ctrl.Abort(e.ctx, e.ns, "web"); err != nil {
		t.Fatal(err)
	}
	e.waitTraffic("ingress=none route=0/100")
	e.waitRS("web", "1:4/4 2:0/0")
	e.waitPhase("web", rollouts.PhaseDegraded, 0)
}
