package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HTTPRoutesResource is the Gateway API's HTTPRoute.
var HTTPRoutesResource = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// routerWrite is one router object to write once the ReplicaSets and Services are in place.
type routerWrite func(ctx context.Context) error

// prepareRouters reads every router object the Rollout names and computes what to write for
// the plan's weight. A missing or unusable object is an error naming the field, found before
// anything is changed.
func (c *Controller) prepareRouters(ctx context.Context, ro *Rollout, p *plan) ([]routerWrite, error) {
	if p.traffic == nil {
		return nil, nil
	}
	cs := ro.Spec.Strategy.Canary
	tr := cs.TrafficRouting
	var out []routerWrite
	if n := tr.Nginx; n != nil {
		for _, name := range nginxIngresses(n) {
			w, err := c.prepareIngress(ctx, ro, n, name, p.traffic.weight)
			if err != nil {
				return nil, err
			}
			if w != nil {
				out = append(out, w)
			}
		}
	}
	if raw, ok := tr.Plugins[GatewayAPIPlugin]; ok {
		g, err := gatewayConfig(raw)
		if err != nil {
			return nil, err
		}
		ns := g.Namespace
		if ns == "" {
			ns = ro.Namespace
		}
		for _, name := range httpRouteNames(g) {
			w, err := c.prepareHTTPRoute(ctx, ro, ns, name, p.traffic.weight)
			if err != nil {
				return nil, err
			}
			if w != nil {
				out = append(out, w)
			}
		}
	}
	return out, nil
}

// desiredCanaryIngress is Argo Rollouts' canary Ingress for a stable Ingress: its TLS, class and
// the rules that route to the stable Service, pointed at the canary Service, with the canary
// annotations under the prefix.
func desiredCanaryIngress(ro *Rollout, n *NginxTrafficRouting, stable *networkingv1.Ingress, weight int32) (*networkingv1.Ingress, error) {
	cs := ro.Spec.Strategy.Canary
	prefix := annotationPrefix(n)
	yes := true
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name: CanaryIngressName(ro.Name, stable.Name), Namespace: ro.Namespace, Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: Group + "/" + Version, Kind: "Rollout", Name: ro.Name, UID: ro.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{}},
	}
	for _, t := range stable.Spec.TLS {
		ing.Spec.TLS = append(ing.Spec.TLS, *t.DeepCopy())
	}
	ing.Spec.IngressClassName = stable.Spec.IngressClassName
	if v, ok := stable.Annotations["kubernetes.io/ingress.class"]; ok {
		ing.Annotations["kubernetes.io/ingress.class"] = v
	}
	for _, r := range stable.Spec.Rules {
		rule := r.DeepCopy()
		if rule.HTTP == nil {
			continue
		}
		has := false
		for i := range rule.HTTP.Paths {
			if b := rule.HTTP.Paths[i].Backend.Service; b != nil && b.Name == cs.StableService {
				b.Name = cs.CanaryService
				has = true
			}
		}
		if has {
			ing.Spec.Rules = append(ing.Spec.Rules, *rule)
		}
	}
	if len(ing.Spec.Rules) == 0 {
		return nil, fmt.Errorf("ingress %q (spec.strategy.canary.trafficRouting.nginx) has no rule with a backend to stableService %q", stable.Name, cs.StableService)
	}
	for k, v := range n.AdditionalIngressAnnotations {
		ing.Annotations[prefixed(prefix, k)] = v
	}
	for k, v := range n.CanaryIngressAnnotations {
		ing.Annotations[k] = v
	}
	ing.Annotations[prefix+"/canary"] = "true"
	ing.Annotations[prefix+"/canary-weight"] = fmt.Sprint(weight)
	return ing, nil
}

func (c *Controller) prepareIngress(ctx context.Context, ro *Rollout, n *NginxTrafficRouting, name string, weight int32) (routerWrite, error) {
	ic := c.kube.NetworkingV1().Ingresses(ro.Namespace)
	stable, err := ic.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("ingress %q (spec.strategy.canary.trafficRouting.nginx.stableIngress) does not exist", name)
	}
	if err != nil {
		return nil, fmt.Errorf("read ingress %s: %w", name, err)
	}
	want, err := desiredCanaryIngress(ro, n, stable, weight)
	if err != nil {
		return nil, err
	}
	cur, err := ic.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return func(ctx context.Context) error {
			if _, err := ic.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
				return fmt.Errorf("create canary ingress %s: %w", want.Name, err)
			}
			return nil
		}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read canary ingress %s: %w", want.Name, err)
	}
	if ref := metav1.GetControllerOf(cur); ref == nil || ref.UID != ro.UID {
		return nil, fmt.Errorf("canary ingress %q is controlled by another object: delete it or rename spec.strategy.canary.trafficRouting.nginx.stableIngress", want.Name)
	}
	// Annotations other controllers added are kept; the desired ones win.
	for k, v := range cur.Annotations {
		if _, ok := want.Annotations[k]; !ok {
			want.Annotations[k] = v
		}
	}
	if reflect.DeepEqual(cur.Annotations, want.Annotations) && reflect.DeepEqual(cur.Spec, want.Spec) {
		return nil, nil
	}
	upd := cur.DeepCopy()
	upd.Annotations, upd.Spec = want.Annotations, want.Spec
	return func(ctx context.Context) error {
		if _, err := ic.Update(ctx, upd, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update canary ingress %s: %w", upd.Name, err)
		}
		return nil
	}, nil
}

// prepareHTTPRoute sets the weights of the route's backendRefs to the canary (weight) and the
// stable Service (100 - weight) in every rule, as the Gateway API plugin does, and labels the
// route while the canary has traffic.
func (c *Controller) prepareHTTPRoute(ctx context.Context, ro *Rollout, ns, name string, weight int32) (routerWrite, error) {
	const field = "spec.strategy.canary.trafficRouting.plugins[" + GatewayAPIPlugin + "].httpRoute"
	cs := ro.Spec.Strategy.Canary
	rc := c.dyn.Resource(HTTPRoutesResource).Namespace(ns)
	route, err := rc.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("HTTPRoute %s/%s (%s) does not exist", ns, name, field)
	}
	if err != nil {
		return nil, fmt.Errorf("read HTTPRoute %s/%s (%s): %w", ns, name, field, err)
	}
	upd := route.DeepCopy()
	rules, _, _ := unstructured.NestedSlice(upd.Object, "spec", "rules")
	canaryFound, stableFound := false, false
	for i, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok {
			continue
		}
		refs, _ := rule["backendRefs"].([]any)
		for j, b := range refs {
			ref, ok := b.(map[string]any)
			if !ok {
				continue
			}
			if kind, _ := ref["kind"].(string); kind != "" && kind != "Service" {
				continue
			}
			switch ref["name"] {
			case cs.CanaryService:
				ref["weight"] = int64(weight)
				canaryFound = true
			case cs.StableService:
				ref["weight"] = int64(100 - weight)
				stableFound = true
			}
			refs[j] = ref
		}
		rule["backendRefs"] = refs
		rules[i] = rule
	}
	switch {
	case !canaryFound:
		return nil, fmt.Errorf("HTTPRoute %s/%s (%s) has no backendRef to canaryService %q", ns, name, field, cs.CanaryService)
	case !stableFound:
		return nil, fmt.Errorf("HTTPRoute %s/%s (%s) has no backendRef to stableService %q", ns, name, field, cs.StableService)
	}
	if err := unstructured.SetNestedSlice(upd.Object, rules, "spec", "rules"); err != nil {
		return nil, fmt.Errorf("HTTPRoute %s/%s: %w", ns, name, err)
	}
	labels := upd.GetLabels()
	if weight > 0 {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[gatewayInProgressLabel] = gatewayInProgressValue
	} else {
		delete(labels, gatewayInProgressLabel)
	}
	upd.SetLabels(labels)
	a, _ := json.Marshal(route.Object)
	b, _ := json.Marshal(upd.Object)
	if string(a) == string(b) {
		return nil, nil
	}
	return func(ctx context.Context) error {
		if _, err := rc.Update(ctx, upd, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update HTTPRoute %s/%s: %w", ns, name, err)
		}
		return nil
	}, nil
}
