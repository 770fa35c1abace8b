package events

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/crd"
)

// FieldManager is the server-side apply field manager of the CRDs and of what triggers write.
const FieldManager = "freshet-events"

// Resources of Argo Events' kinds.
var (
	EventSourcesResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "eventsources"}
	SensorsResource      = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "sensors"}
	EventBusResource     = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "eventbus"}
)

var crdKinds = []struct{ kind, plural, singular, short string }{
	{"EventSource", "eventsources", "eventsource", "es"},
	{"Sensor", "sensors", "sensor", "sn"},
	{"EventBus", "eventbus", "eventbus", "eb"},
}

// CRDs returns the CustomResourceDefinitions of Argo Events' kinds with Argo's names (the
// plural of EventBus is eventbus, as Argo's), short names (es, sn, eb) and a schema that keeps
// every field, as Argo's own CRDs do; the controller validates what it runs.
func CRDs() []map[string]any {
	var out []map[string]any
	for _, k := range crdKinds {
		obj := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		schemaDoc := map[string]any{"type": "object", "required": []any{"metadata", "spec"}, "properties": map[string]any{
			"apiVersion": map[string]any{"type": "string"},
			"kind":       map[string]any{"type": "string"},
			"metadata":   map[string]any{"type": "object"},
			"spec":       obj,
			"status":     obj,
		}}
		out = append(out, map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.plural + "." + Group,
				"labels": map[string]any{"app.kubernetes.io/part-of": "argo-events", crd.ManagedByLabel: "freshet"}},
			"spec": map[string]any{
				"group": Group, "scope": "Namespaced",
				"names": map[string]any{"kind": k.kind, "listKind": k.kind + "List", "plural": k.plural,
					"singular": k.singular, "shortNames": []any{k.short}},
				"versions": []any{map[string]any{"name": Version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": schemaDoc},
					"additionalPrinterColumns": []any{
						map[string]any{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
					}}},
			},
		})
	}
	return out
}

// EnsureCRDs server-side applies the CRDs and waits until the API server serves them. A
// cluster that already has Argo Events' own CRDs keeps them.
func EnsureCRDs(ctx context.Context, dyn dynamic.Interface) error {
	return crd.Ensure(ctx, dyn, FieldManager, CRDs())
}

var eventKinds = map[string]bool{"EventSource": true, "Sensor": true, "EventBus": true}

// RefuseOnHosted is the GitOps engine's Refuse hook of a hosted runtime: Argo Events' kinds
// run on hybrid runtimes only, as Argo Workflows' do.
func RefuseOnHosted(group, kind string) error {
	if group == Group && eventKinds[kind] {
		return fmt.Errorf("this runtime is hosted (CD only) and Argo Events' %s runs on hybrid runtimes only: sync it from an application of a hybrid runtime", kind)
	}
	return nil
}
