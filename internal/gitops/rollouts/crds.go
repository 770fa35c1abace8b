package rollouts

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/crd"
)

// FieldManager is the server-side apply field manager of the CRDs and of the objects the
// controller writes.
const FieldManager = "freshet-rollouts"

// Resources of Argo Rollouts' kinds.
var (
	RolloutsResource                 = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "rollouts"}
	AnalysisTemplatesResource        = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "analysistemplates"}
	ClusterAnalysisTemplatesResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "clusteranalysistemplates"}
	AnalysisRunsResource             = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "analysisruns"}
	ExperimentsResource              = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "experiments"}
)

type crdKind struct {
	kind, plural, short, scope, statusCol string
	scale                                 bool
}

var crdKinds = []crdKind{
	{kind: "Rollout", plural: "rollouts", short: "ro", scope: "Namespaced", scale: true},
	{kind: "AnalysisTemplate", plural: "analysistemplates", short: "at", scope: "Namespaced"},
	{kind: "ClusterAnalysisTemplate", plural: "clusteranalysistemplates", short: "cat", scope: "Cluster"},
	{kind: "AnalysisRun", plural: "analysisruns", short: "ar", scope: "Namespaced", statusCol: ".status.phase"},
	{kind: "Experiment", plural: "experiments", short: "exp", scope: "Namespaced", statusCol: ".status.phase"},
}

// CRDs returns the CustomResourceDefinitions of Argo Rollouts' kinds, with the names, short
// names, scopes, printer columns and subresources Argo Rollouts gives them, so its YAML applies
// as is and `kubectl get rollout` prints the same columns. The schemas keep every field (Argo
// Rollouts' own CRDs validate fields in the API server; this controller validates what it runs
// and reports the first bad field in the InvalidSpec condition).
func CRDs() []map[string]any {
	var out []map[string]any
	for _, k := range crdKinds {
		obj := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		props := map[string]any{
			"apiVersion": map[string]any{"type": "string"},
			"kind":       map[string]any{"type": "string"},
			"metadata":   map[string]any{"type": "object"},
			"spec":       obj,
			"status":     obj,
		}
		schemaDoc := map[string]any{"type": "object", "properties": props}
		if k.kind != "ClusterAnalysisTemplate" && k.kind != "AnalysisTemplate" {
			schemaDoc["required"] = []any{"spec"}
		}
		version := map[string]any{"name": Version, "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": schemaDoc}}
		age := map[string]any{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "Time since resource was created"}
		switch {
		case k.scale:
			version["additionalPrinterColumns"] = []any{
				map[string]any{"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas", "description": "Number of desired pods"},
				map[string]any{"name": "Current", "type": "integer", "jsonPath": ".status.replicas", "description": "Total number of non-terminated pods targeted by this rollout"},
				map[string]any{"name": "Up-to-date", "type": "integer", "jsonPath": ".status.updatedReplicas", "description": "Total number of non-terminated pods targeted by this rollout that have the desired template spec"},
				map[string]any{"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas", "description": "Total number of available pods (ready for at least minReadySeconds) targeted by this rollout"},
				age,
			}
			version["subresources"] = map[string]any{"status": map[string]any{}, "scale": map[string]any{
				"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.HPAReplicas", "labelSelectorPath": ".status.selector"}}
		case k.statusCol != "":
			version["additionalPrinterColumns"] = []any{
				map[string]any{"name": "Status", "type": "string", "jsonPath": k.statusCol, "description": k.kind + " status"}, age}
		default:
			version["additionalPrinterColumns"] = []any{age}
		}
		out = append(out, map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.plural + "." + Group,
				"labels": map[string]any{"app.kubernetes.io/part-of": "argo-rollouts", "app.kubernetes.io/managed-by": "freshet"}},
			"spec": map[string]any{
				"group": Group, "scope": k.scope,
				"names": map[string]any{"kind": k.kind, "listKind": k.kind + "List", "plural": k.plural,
					"singular": lower(k.kind), "shortNames": []any{k.short}},
				"versions": []any{version},
			},
		})
	}
	return out
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// EnsureCRDs server-side applies the CRDs and waits until the API server serves them. A
// cluster that already has Argo Rollouts' own CRDs keeps them: a CRD another manager owns is
// left as it is (both serve the same kinds).
func EnsureCRDs(ctx context.Context, dyn dynamic.Interface) error {
	return crd.Ensure(ctx, dyn, FieldManager, CRDs())
}
