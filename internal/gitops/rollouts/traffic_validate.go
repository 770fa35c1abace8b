package rollouts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// validateTrafficRouting checks the canary fields that only make sense with a traffic router,
// and the router configurations this controller writes (NGINX Ingress, the Gateway API plugin);
// the routers it does not build are refused by name.
func validateTrafficRouting(c *CanaryStrategy) error {
	const f = "spec.strategy.canary"
	tr := c.TrafficRouting
	if c.AbortScaleDownDelaySeconds != nil && *c.AbortScaleDownDelaySeconds < 0 {
		return errdefs.Invalid(f+".abortScaleDownDelaySeconds", strconv.Itoa(int(*c.AbortScaleDownDelaySeconds)), "must be 0 or more")
	}
	if c.ScaleDownDelaySeconds != nil && *c.ScaleDownDelaySeconds < 0 {
		return errdefs.Invalid(f+".scaleDownDelaySeconds", strconv.Itoa(int(*c.ScaleDownDelaySeconds)), "must be 0 or more")
	}
	if tr == nil {
		switch {
		case c.ScaleDownDelaySeconds != nil:
			return errdefs.Invalid(f+".scaleDownDelaySeconds", strconv.Itoa(int(*c.ScaleDownDelaySeconds)), "can only be used with trafficRouting (as in Argo Rollouts)")
		case c.DynamicStableScale:
			return errdefs.Invalid(f+".dynamicStableScale", "true", "can only be used with trafficRouting (as in Argo Rollouts)")
		}
		return nil
	}
	if c.DynamicStableScale && c.ScaleDownDelaySeconds != nil {
		return errdefs.Invalid(f+".dynamicStableScale", "true", "cannot be used with scaleDownDelaySeconds (as in Argo Rollouts)")
	}
	if c.CanaryService == "" {
		return errdefs.Invalid(f+".canaryService", "", "is required with trafficRouting (the router splits traffic between canaryService and stableService)")
	}
	if c.StableService == "" {
		return errdefs.Invalid(f+".stableService", "", "is required with trafficRouting (the router splits traffic between canaryService and stableService)")
	}
	tf := f + ".trafficRouting"
	for name, set := range map[string]bool{"istio": tr.Istio != nil, "smi": tr.SMI != nil, "alb": tr.ALB != nil,
		"ambassador": tr.Ambassador != nil, "appMesh": tr.AppMesh != nil, "traefik": tr.Traefik != nil,
		"apisix": tr.Apisix != nil, "managedRoutes": tr.ManagedRoutes != nil} {
		if set {
			return errdefs.Invalid(tf+"."+name, "", "is not supported (supported: nginx, plugins."+GatewayAPIPlugin+")")
		}
	}
	if tr.MaxTrafficWeight != nil {
		return errdefs.Invalid(tf+".maxTrafficWeight", strconv.Itoa(int(*tr.MaxTrafficWeight)), "is not supported yet: weights are percentages (of 100)")
	}
	if tr.Nginx == nil && len(tr.Plugins) == 0 {
		return errdefs.Invalid(tf, "", "names no traffic router: set nginx or plugins."+GatewayAPIPlugin)
	}
	if n := tr.Nginx; n != nil {
		nf := tf + ".nginx"
		switch {
		case n.StableIngress == "" && len(n.StableIngresses) == 0:
			return errdefs.Invalid(nf+".stableIngress", "", "is required (or stableIngresses): the Ingress whose canary copy carries the weight")
		case n.StableIngress != "" && len(n.StableIngresses) > 0:
			return errdefs.Invalid(nf+".stableIngresses", fmt.Sprint(n.StableIngresses), "cannot be set together with stableIngress")
		}
		for i, name := range nginxIngresses(n) {
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				field := nf + ".stableIngress"
				if len(n.StableIngresses) > 0 {
					field = fmt.Sprintf("%s.stableIngresses[%d]", nf, i)
				}
				return errdefs.Invalid(field, name, "is not an Ingress name: "+errs[0])
			}
		}
		if p := n.AnnotationPrefix; p != "" {
			if errs := validation.IsDNS1123Subdomain(p); len(errs) > 0 {
				return errdefs.Invalid(nf+".annotationPrefix", p, "is not an annotation prefix: "+errs[0])
			}
		}
		prefix := annotationPrefix(n)
		for _, m := range []struct {
			field string
			ann   map[string]string
		}{{"additionalIngressAnnotations", n.AdditionalIngressAnnotations}, {"canaryIngressAnnotations", n.CanaryIngressAnnotations}} {
			keys := make([]string, 0, len(m.ann))
			for k := range m.ann {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				key := k
				if m.field == "additionalIngressAnnotations" {
					key = prefixed(prefix, k)
				}
				if errs := validation.IsQualifiedName(key); len(errs) > 0 {
					return errdefs.Invalid(nf+"."+m.field, k, "is not an annotation key: "+errs[0])
				}
			}
		}
	}
	names := make([]string, 0, len(tr.Plugins))
	for name := range tr.Plugins {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name != GatewayAPIPlugin {
			return errdefs.Invalid(tf+".plugins", name, "is not a supported traffic router plugin (supported: "+GatewayAPIPlugin+")")
		}
		if _, err := gatewayConfig(tr.Plugins[name]); err != nil {
			return err
		}
	}
	return nil
}

// gatewayConfig decodes and checks the Gateway API plugin's configuration.
func gatewayConfig(raw json.RawMessage) (*GatewayAPIRouting, error) {
	gf := "spec.strategy.canary.trafficRouting.plugins[" + GatewayAPIPlugin + "]"
	var g GatewayAPIRouting
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&g); err != nil {
		return nil, errdefs.Invalid(gf, "", "does not decode: "+err.Error())
	}
	for name, set := range map[string]bool{"grpcRoute": g.GRPCRoute != "", "tcpRoute": g.TCPRoute != "", "tlsRoute": g.TLSRoute != "",
		"grpcRoutes": g.GRPCRoutes != nil, "tcpRoutes": g.TCPRoutes != nil, "tlsRoutes": g.TLSRoutes != nil, "httpRouteSelector": len(g.HTTPRouteSelector) > 0} {
		if set {
			return nil, errdefs.Invalid(gf+"."+name, "", "is not supported yet (supported: httpRoute, httpRoutes)")
		}
	}
	routes := httpRouteNames(&g)
	if len(routes) == 0 {
		return nil, errdefs.Invalid(gf+".httpRoute", "", "is required (or httpRoutes): the HTTPRoute whose backendRef weights are set")
	}
	for i, r := range routes {
		if errs := validation.IsDNS1123Subdomain(r); len(errs) > 0 {
			field := gf + ".httpRoute"
			if g.HTTPRoute == "" || i > 0 {
				field = fmt.Sprintf("%s.httpRoutes[%d].name", gf, i-boolInt(g.HTTPRoute != ""))
			}
			return nil, errdefs.Invalid(field, r, "is not an HTTPRoute name: "+errs[0])
		}
	}
	if ns := g.Namespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, errdefs.Invalid(gf+".namespace", ns, "is not a namespace name: "+errs[0])
		}
	}
	return &g, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// httpRouteNames are httpRoute then every httpRoutes name.
func httpRouteNames(g *GatewayAPIRouting) []string {
	var out []string
	if g.HTTPRoute != "" {
		out = append(out, g.HTTPRoute)
	}
	for _, r := range g.HTTPRoutes {
		out = append(out, r.Name)
	}
	return out
}

func nginxIngresses(n *NginxTrafficRouting) []string {
	if len(n.StableIngresses) > 0 {
		return n.StableIngresses
	}
	return []string{n.StableIngress}
}

// validateSetCanaryScale: exactly one of replicas, weight, matchTrafficWeight.
func validateSetCanaryScale(f string, s *SetCanaryScale, replicas int32) error {
	n := boolInt(s.Replicas != nil) + boolInt(s.Weight != nil) + boolInt(s.MatchTrafficWeight)
	switch {
	case n != 1:
		return errdefs.Invalid(f, "", "must set exactly one of replicas, weight, matchTrafficWeight")
	case s.Replicas != nil && (*s.Replicas < 0 || *s.Replicas > replicas):
		return errdefs.Invalid(f+".replicas", strconv.Itoa(int(*s.Replicas)), fmt.Sprintf("must be 0 to spec.replicas (%d)", replicas))
	case s.Weight != nil && (*s.Weight < 0 || *s.Weight > 100):
		return errdefs.Invalid(f+".weight", strconv.Itoa(int(*s.Weight)), "must be 0 to 100")
	}
	return nil
}
