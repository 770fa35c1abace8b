package engine

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LinkAnnotationPrefix is Argo CD's prefix of annotations whose values are external links
// (link.argocd.argoproj.io/external-link: https://...), on the Application or a resource.
const LinkAnnotationPrefix = "link.argocd.argoproj.io/"

// Summary is what Argo CD's status.summary shows of an application's live resources: the
// container images its workloads run and its external URLs, each sorted and without
// duplicates.
type Summary struct {
	Images       []string
	ExternalURLs []string
}

// Summary returns an application's summary as of its last comparison (empty before one).
func (e *Engine) Summary(name string) (Summary, error) {
	st, err := e.get(name)
	if err != nil {
		return Summary{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return Summary{Images: slices.Clone(st.summary.Images), ExternalURLs: slices.Clone(st.summary.ExternalURLs)}, nil
}

// summarize collects the images of the live workloads' pod templates (Pods, Deployments,
// StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs: the images their Pods run), the URLs
// of live Ingresses (scheme by TLS, host — else the load balancer's address — and path),
// and the link annotations of the app and its live resources.
func summarize(appAnnotations map[string]string, results []*resResult) Summary {
	images, urls := map[string]bool{}, map[string]bool{}
	links := func(ann map[string]string) {
		for k, v := range ann {
			if strings.HasPrefix(k, LinkAnnotationPrefix) && v != "" {
				urls[v] = true
			}
		}
	}
	links(appAnnotations)
	for _, r := range results {
		obj := r.live
		if obj == nil || r.d == nil {
			continue
		}
		links(obj.GetAnnotations())
		gvk := obj.GroupVersionKind()
		var podSpec []string
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			podSpec = []string{"spec"}
		case gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet" || gvk.Kind == "ReplicaSet"),
			gvk.Group == "batch" && gvk.Kind == "Job":
			podSpec = []string{"spec", "template", "spec"}
		case gvk.Group == "batch" && gvk.Kind == "CronJob":
			podSpec = []string{"spec", "jobTemplate", "spec", "template", "spec"}
		case gvk.Group == "networking.k8s.io" && gvk.Kind == "Ingress":
			for _, u := range ingressURLs(obj) {
				urls[u] = true
			}
		}
		if podSpec != nil {
			for _, list := range []string{"initContainers", "containers"} {
				cs, _, _ := unstructured.NestedSlice(obj.Object, append(slices.Clone(podSpec), list)...)
				for _, c := range cs {
					if m, ok := c.(map[string]any); ok {
						if img, ok := m["image"].(string); ok && img != "" {
							images[img] = true
						}
					}
				}
			}
		}
	}
	var s Summary
	for img := range images {
		s.Images = append(s.Images, img)
	}
	for u := range urls {
		s.ExternalURLs = append(s.ExternalURLs, u)
	}
	slices.Sort(s.Images)
	slices.Sort(s.ExternalURLs)
	return s
}

// ingressURLs are an Ingress's URLs as Argo CD shows them: https when a TLS entry names the
// host, the rule's host or else the load balancer's hostnames and IPs, and each path.
func ingressURLs(obj *unstructured.Unstructured) []string {
	tlsHosts := map[string]bool{}
	tls, _, _ := unstructured.NestedSlice(obj.Object, "spec", "tls")
	for _, t := range tls {
		m, _ := t.(map[string]any)
		hosts, _ := m["hosts"].([]any)
		for _, h := range hosts {
			if s, ok := h.(string); ok {
				tlsHosts[s] = true
			}
		}
	}
	var lb []string
	ings, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	for _, i := range ings {
		m, _ := i.(map[string]any)
		if h, ok := m["hostname"].(string); ok && h != "" {
			lb = append(lb, h)
		} else if ip, ok := m["ip"].(string); ok && ip != "" {
			lb = append(lb, ip)
		}
	}
	var out []string
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	for _, r := range rules {
		m, _ := r.(map[string]any)
		host, _ := m["host"].(string)
		if strings.Contains(host, "*") {
			continue // a wildcard host is no URL
		}
		hosts := []string{host}
		if host == "" {
			hosts = lb
		}
		var paths []string
		ps, _, _ := unstructured.NestedSlice(m, "http", "paths")
		for _, p := range ps {
			pm, _ := p.(map[string]any)
			path, _ := pm["path"].(string)
			paths = append(paths, path)
		}
		if len(paths) == 0 {
			paths = []string{""}
		}
		for _, h := range hosts {
			scheme := "http"
			if tlsHosts[h] {
				scheme = "https"
			}
			for _, p := range paths {
				out = append(out, scheme+"://"+h+p)
			}
		}
	}
	return out
}
