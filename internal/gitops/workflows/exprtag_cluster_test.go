package workflows_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// TestExpressionTagsAndGlobalOutputsOnCluster: on the loopback cluster, a step's output with a
// globalName and {{=…}} tags (sprig, asInt, jsonpath over a step's result) reach a later
// resource template's manifest and the workflow's status.outputs; a steps template's output
// comes from valueFrom.expression.
func TestExpressionTagsAndGlobalOutputsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.kubelet(func(p *corev1.Pod) (int32, emissary.Outputs) {
		r := `{"build": {"id": 41}}`
		return 0, emissary.Outputs{Result: &r, Parameters: map[string]string{"version": "v1.2"}}
	})
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: expr}
spec:
  entrypoint: main
  arguments: {parameters: [{name: env, value: staging}]}
  templates:
  - name: main
    steps:
    - - name: build
        template: build
    - - name: record
        template: record
        arguments: {parameters: [{name: id, value: "{{=asInt(jsonpath(steps.build.outputs.result, '$.build.id')) + 1}}"}]}
    outputs:
      parameters:
      - name: summary
        globalName: summary
        valueFrom: {expression: "steps.record.status == 'Succeeded' ? 'recorded ' + workflow.outputs.parameters.version : 'not recorded'"}
  - name: build
    container: {image: alpine:3, command: [sh, -c, "build"]}
    outputs:
      parameters:
      - {name: version, globalName: version, valueFrom: {path: /tmp/version}}
  - name: record
    inputs: {parameters: [{name: id}]}
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{=sprig.lower(workflow.parameters.env)}}-{{inputs.parameters.id}}"}
        data: {version: "{{workflow.outputs.parameters.version}}", env: "{{=sprig.upper(workflow.parameters['env'])}}"}
`)
	wf := e.finished("expr", 90*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "staging-42", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ConfigMap the expression named: %v\n%s", err, dump(wf))
	}
	if cm.Data["version"] != "v1.2" || cm.Data["env"] != "STAGING" {
		t.Fatalf("ConfigMap data %v", cm.Data)
	}
	got := map[string]string{}
	if wf.Status.Outputs != nil {
		for _, p := range wf.Status.Outputs.Parameters {
			got[p.Name] = string(*p.Value)
		}
	}
	if got["version"] != "v1.2" || got["summary"] != "recorded v1.2" || len(got) != 2 {
		t.Fatalf("status.outputs.parameters %v: %s", got, dump(wf))
	}
	if !strings.Contains(node(t, wf, "expr[1].record").Message, "staging-42") {
		t.Fatalf("record: %s", node(t, wf, "expr[1].record").Message)
	}
}
