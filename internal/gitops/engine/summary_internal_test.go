package engine

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSummarize(t *testing.T) {
	dep := obj(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {link.argocd.argoproj.io/grafana: "https://grafana.example.com/d/web"}}
spec: {template: {spec: {containers: [{name: a, image: "nginx:1.27"}, {name: b, image: "busybox"}]}}}
`)
	ing := obj(t, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  tls: [{hosts: [secure.example.com]}]
  rules:
  - host: secure.example.com
    http: {paths: [{path: /a}, {path: /b}]}
  - host: "*.example.com"
  - http: {paths: [{path: /lb}]}
status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}
`)
	pod := obj(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: a, image: "nginx:1.27"}]}
`)
	prune := obj(t, `apiVersion: v1
kind: Pod
metadata: {name: old}
spec: {containers: [{name: a, image: "old:1"}]}
`)
	d := &desiredObj{}
	s := summarize(map[string]string{"link.argocd.argoproj.io/docs": "https://docs.example.com", "other": "https://no"}, []*resResult{
		{d: d, live: dep}, {d: d, live: ing}, {d: d, live: pod}, {d: d}, {live: prune},
	})
	if want := []string{"busybox", "nginx:1.27"}; !slices.Equal(s.Images, want) {
		t.Errorf("images %v, want %v", s.Images, want)
	}
	want := []string{"http://10.0.0.1/lb", "https://docs.example.com", "https://grafana.example.com/d/web", "https://secure.example.com/a", "https://secure.example.com/b"}
	if !slices.Equal(s.ExternalURLs, want) {
		t.Errorf("external URLs %v, want %v", s.ExternalURLs, want)
	}
}
