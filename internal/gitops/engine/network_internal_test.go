package engine

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func yamlObj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// What the network view draws: a Pod's labels, a Service's selector, the Services an Ingress's
// default backend and rules name (each once, in order); nothing for other kinds or groups.
func TestNetwork(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		want      *TreeNetwork
	}{
		{"pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web, tier: fe}}", &TreeNetwork{Labels: map[string]string{"app": "web", "tier": "fe"}}},
		{"pod without labels", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}", nil},
		{"service", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: web}}", &TreeNetwork{Selector: map[string]string{"app": "web"}}},
		{"headless service without selector", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIP: None}", nil},
		{"ingress", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: i}
spec:
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}
      - {path: /static, pathType: Prefix, backend: {resource: {apiGroup: k8s.example.com, kind: Bucket, name: b}}}
  - host: b.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
  - host: c.example.com`, &TreeNetwork{Backends: []string{"fallback", "web", "api"}}},
		{"ingress of another group", "apiVersion: extensions.example.com/v1\nkind: Ingress\nmetadata: {name: i}\nspec: {defaultBackend: {service: {name: x}}}", nil},
		{"deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, labels: {app: web}}", nil},
	} {
		if got := network(yamlObj(t, tc.obj)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
