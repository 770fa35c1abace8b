package host

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/crd"
)

// ClusterAppsFieldManager is the server-side apply field manager of the Argo CD CRDs and the
// field manager of the status the runtime writes to Application resources.
const ClusterAppsFieldManager = "freshet-gitops"

// Resources of Argo CD's kinds, watched with Options.ClusterApps.
var (
	ApplicationsResource    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectsResource     = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	ApplicationSetsResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
)

type argoCRD struct {
	kind, plural string
	short        []any
	columns      []any
}

var argoCRDs = []argoCRD{
	{kind: "Application", plural: "applications", short: []any{"app", "apps"}, columns: []any{
		map[string]any{"name": "Sync Status", "type": "string", "jsonPath": ".status.sync.status"},
		map[string]any{"name": "Health Status", "type": "string", "jsonPath": ".status.health.status"},
		map[string]any{"name": "Revision", "type": "string", "jsonPath": ".status.sync.revision", "priority": int64(10)},
		map[string]any{"name": "Project", "type": "string", "jsonPath": ".spec.project", "priority": int64(10)},
	}},
	{kind: "AppProject", plural: "appprojects", short: []any{"appproj", "appprojs"}},
	{kind: "ApplicationSet", plural: "applicationsets", short: []any{"appset", "appsets"}},
}

// ArgoCDCRDs returns CustomResourceDefinitions of Argo CD's Application, AppProject and
// ApplicationSet with Argo CD's names, short names and printer columns and a status
// subresource, so Argo CD's YAML applies as is and `kubectl get app` prints the same columns.
// The schemas keep every field: the runtime decodes the spec itself and reports the first bad
// field in the resource's status conditions (Argo CD's own CRDs validate in the API server).
func ArgoCDCRDs() []map[string]any {
	var out []map[string]any
	for _, k := range argoCRDs {
		obj := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		props := map[string]any{
			"apiVersion": map[string]any{"type": "string"},
			"kind":       map[string]any{"type": "string"},
			"metadata":   map[string]any{"type": "object"},
			"spec":       obj,
			"status":     obj,
		}
		if k.kind == "Application" {
			props["operation"] = obj
		}
		cols := append(append([]any{}, k.columns...),
			map[string]any{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
		version := map[string]any{"name": "v1alpha1", "served": true, "storage": true,
			"schema":                   map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": props, "required": []any{"spec"}}},
			"subresources":             map[string]any{"status": map[string]any{}},
			"additionalPrinterColumns": cols}
		out = append(out, map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.plural + ".argoproj.io",
				"labels": map[string]any{"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/managed-by": "freshet"}},
			"spec": map[string]any{
				"group": "argoproj.io", "scope": "Namespaced",
				"names": map[string]any{"kind": k.kind, "listKind": k.kind + "List", "plural": k.plural,
					"singular": lowerASCII(k.kind), "shortNames": k.short},
				"versions": []any{version},
			},
		})
	}
	return out
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// EnsureArgoCDCRDs server-side applies ArgoCDCRDs and waits until the API server serves them. A
// cluster that already has Argo CD's own CRDs keeps them (a CRD another manager owns is left
// as it is: both serve the same kinds).
func EnsureArgoCDCRDs(ctx context.Context, dyn dynamic.Interface) error {
	return crd.Ensure(ctx, dyn, ClusterAppsFieldManager, ArgoCDCRDs())
}
