package workflows

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/gitops/crd"
)

// FieldManager is the server-side apply field manager of the CRDs and of the objects the
// controller writes.
const FieldManager = "freshet-workflows"

// Resources of Argo Workflows' kinds.
var (
	WorkflowsResource                = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "workflows"}
	WorkflowTemplatesResource        = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "workflowtemplates"}
	ClusterWorkflowTemplatesResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "clusterworkflowtemplates"}
	CronWorkflowsResource            = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "cronworkflows"}
)

type crdKind struct {
	kind, plural, short, scope string
	columns                    []any
}

func col(name, typ, path, desc string) map[string]any {
	return map[string]any{"name": name, "type": typ, "jsonPath": path, "description": desc}
}

var crdKinds = []crdKind{
	{kind: "Workflow", plural: "workflows", short: "wf", scope: "Namespaced", columns: []any{
		col("Status", "string", ".status.phase", "Status of the workflow"),
		col("Age", "date", ".status.startedAt", "When the workflow was started"),
		map[string]any{"name": "Message", "type": "string", "jsonPath": ".status.message", "description": "Human readable message indicating details about why the workflow is in this condition.", "priority": 1},
	}},
	{kind: "WorkflowTemplate", plural: "workflowtemplates", short: "wftmpl", scope: "Namespaced"},
	{kind: "ClusterWorkflowTemplate", plural: "clusterworkflowtemplates", short: "clusterwftmpl", scope: "Cluster"},
	{kind: "CronWorkflow", plural: "cronworkflows", short: "cwf", scope: "Namespaced"},
}

// CRDs returns the CustomResourceDefinitions of Argo Workflows' kinds, with the names, short
// names, scopes, printer columns and status subresource Argo Workflows gives them, so its YAML
// applies as is and `kubectl get wf` prints STATUS, AGE (and MESSAGE with -o wide). The schemas
// keep every field, as Argo's own CRDs do; the controller validates what it runs.
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
		version := map[string]any{"name": Version, "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": schemaDoc}}
		if k.columns != nil {
			version["additionalPrinterColumns"] = k.columns
			version["subresources"] = map[string]any{}
		}
		out = append(out, map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.plural + "." + Group,
				"labels": map[string]any{"app.kubernetes.io/part-of": "argo-workflows", "app.kubernetes.io/managed-by": "freshet"}},
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
// cluster that already has Argo Workflows' own CRDs keeps them (both serve the same kinds).
func EnsureCRDs(ctx context.Context, dyn dynamic.Interface) error {
	return crd.Ensure(ctx, dyn, FieldManager, CRDs())
}

// workflowKinds are Argo Workflows' kinds (those this controller runs, and the rest of its
// API group's workflow kinds).
var workflowKinds = map[string]bool{"Workflow": true, "WorkflowTemplate": true, "ClusterWorkflowTemplate": true,
	"CronWorkflow": true, "WorkflowEventBinding": true, "WorkflowTaskSet": true, "WorkflowTaskResult": true, "WorkflowArtifactGCTask": true}

// RefuseOnHosted is the GitOps engine's Refuse hook of a hosted runtime: Argo Workflows'
// kinds run on hybrid runtimes only (as in Codefresh), and a hosted runtime says so by name
// instead of applying objects nothing would run.
func RefuseOnHosted(group, kind string) error {
	if group == Group && workflowKinds[kind] {
		return fmt.Errorf("this runtime is hosted (CD only) and Argo Workflows' %s runs on hybrid runtimes only: sync it from an application of a hybrid runtime", kind)
	}
	return nil
}
