package workflows_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// grantConfigMaps makes service account sa, which may do anything with ConfigMaps in the
// namespace and nothing else.
func (e *env) grantConfigMaps(sa string) {
	e.t.Helper()
	if _, err := e.c.Client.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitNodeMessage waits for node name of workflow wf to be Running with a message holding msg.
func (e *env) waitNodeMessage(wf, name, msg string) {
	e.t.Helper()
	e.waitFor(name+" waiting", 30*time.Second, func() (bool, string) {
		w := e.workflow(wf)
		for _, n := range w.Status.Nodes {
			if n.Name == name && n.Phase == workflows.NodeRunning && strings.Contains(n.Message, msg) {
				return true, ""
			}
		}
		return false, dump(w)
	})
}

func (e *env) patchConfigMap(name, patch string) {
	e.t.Helper()
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func output(t *testing.T, n workflows.NodeStatus, name string) string {
	t.Helper()
	if n.Outputs != nil {
		for _, p := range n.Outputs.Parameters {
			if p.Name == name && p.Value != nil {
				return string(*p.Value)
			}
		}
	}
	t.Fatalf("node %s has no output %s: %+v", n.Name, name, n.Outputs)
	return ""
}

// TestResourceActionsOnCluster: every resource action as the workflow's service account on the
// loopback cluster — a create (generateName, owned by the Workflow) that waits for its
// successCondition until the test changes the object; get with jsonPath and jqFilter outputs a
// next step uses; merge, json and strategic patches; replace; delete by name and by selector.
func TestResourceActionsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{ResourceCheckInterval: 200 * time.Millisecond})
	e.grantConfigMaps("robot")
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: res}
spec:
  entrypoint: main
  serviceAccountName: robot
  templates:
  - name: main
    steps:
    - - {name: make, template: make}
    - - name: read
        template: read
        arguments: {parameters: [{name: cm, value: "{{steps.make.outputs.parameters.name}}"}]}
    - - name: use
        template: use
        arguments:
          parameters:
          - {name: state, value: "{{steps.read.outputs.parameters.state}}"}
          - {name: owner, value: "{{steps.read.outputs.parameters.owner}}"}
    - - {name: merge, template: merge}
    - - {name: json, template: json}
    - - {name: strategic, template: strategic}
    - - {name: patched, template: get-used}
    - - {name: replace, template: replace}
    - - {name: replaced, template: get-used}
    - - {name: delete, template: delete}
    - - {name: delete-selected, template: delete-selected}
  - name: make
    resource:
      action: create
      setOwnerReference: true
      successCondition: data.state == done
      failureCondition: data.state in (failed, error)
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata:
          generateName: made-
          labels: {made-by: "{{workflow.name}}"}
        data: {state: starting}
    outputs:
      parameters:
      - {name: name, valueFrom: {jsonPath: "{.metadata.name}"}}
  - name: read
    inputs: {parameters: [{name: cm}]}
    resource:
      action: get
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{inputs.parameters.cm}}"}
    outputs:
      parameters:
      - {name: state, valueFrom: {jsonPath: "{.data.state}"}}
      - {name: owner, valueFrom: {jqFilter: ".metadata.ownerReferences[0] | .kind + \"/\" + .name"}}
  - name: use
    inputs: {parameters: [{name: state}, {name: owner}]}
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: used}
        data: {state: "{{inputs.parameters.state}}", owner: "{{inputs.parameters.owner}}"}
  - name: merge
    resource:
      action: patch
      mergeStrategy: merge
      flags: [configmap, used]
      manifest: |
        data: {merged: "yes"}
  - name: json
    resource:
      action: patch
      mergeStrategy: json
      flags: [configmaps/used]
      manifest: |
        - {op: add, path: /data/json, value: "yes"}
        - {op: remove, path: /data/owner}
  - name: strategic
    resource:
      action: patch
      setOwnerReference: true
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: used}
        data: {strategic: "yes"}
  - name: get-used
    resource:
      action: get
      flags: [cm, used]
    outputs:
      parameters:
      - {name: data, valueFrom: {jqFilter: ".data"}}
      - {name: owners, valueFrom: {jqFilter: "[.metadata.ownerReferences[]?.kind] | join(\",\")"}}
  - name: replace
    resource:
      action: replace
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: used}
        data: {replaced: "yes"}
  - name: delete
    resource:
      action: delete
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: used}
  - name: delete-selected
    resource:
      action: delete
      flags: [configmap, --selector, "made-by={{workflow.name}}"]
`)
	e.waitNodeMessage("res", "res[0].make", "waiting for its success or failure condition")
	cms, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "made-by=res"})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("made: %v %v", cms, err)
	}
	made := cms.Items[0]
	if !strings.HasPrefix(made.Name, "made-") || len(made.OwnerReferences) != 1 || made.OwnerReferences[0].Kind != "Workflow" ||
		made.OwnerReferences[0].Name != "res" || made.OwnerReferences[0].Controller == nil || !*made.OwnerReferences[0].Controller {
		t.Fatalf("made: %+v", made.ObjectMeta)
	}
	e.patchConfigMap(made.Name, `{"data":{"state":"still"}}`)
	time.Sleep(time.Second) // checked several times: neither condition holds
	e.waitNodeMessage("res", "res[0].make", "waiting")
	e.patchConfigMap(made.Name, `{"data":{"state":"done"}}`)
	wf := e.finished("res", 60*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	mk := node(t, wf, "res[0].make")
	if mk.Message != "created configmap/"+made.Name+"; success condition 'data.state == done' evaluated true" || output(t, mk, "name") != made.Name {
		t.Fatalf("make: %+v", mk)
	}
	rd := node(t, wf, "res[1].read")
	if output(t, rd, "state") != "done" || output(t, rd, "owner") != "Workflow/res" {
		t.Fatalf("read: %+v", rd.Outputs)
	}
	if got := output(t, node(t, wf, "res[6].patched"), "data"); got != `{"json":"yes","merged":"yes","state":"done","strategic":"yes"}` {
		t.Fatalf("patched: %s", got)
	}
	if got := output(t, node(t, wf, "res[6].patched"), "owners"); got != "Workflow" {
		t.Fatalf("patched with setOwnerReference: owners %q", got)
	}
	if got := output(t, node(t, wf, "res[8].replaced"), "data"); got != `{"replaced":"yes"}` {
		t.Fatalf("replaced: %s", got)
	}
	if got := output(t, node(t, wf, "res[8].replaced"), "owners"); got != "" {
		t.Fatalf("replaced: owners %q", got)
	}
	if m := node(t, wf, "res[10].delete-selected").Message; m != "deleted 1 objects of kind ConfigMap (selector made-by=res)" {
		t.Fatalf("delete-selected: %s", m)
	}
	left, _ := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{})
	for _, cm := range left.Items {
		if cm.Name == "used" || cm.Name == made.Name {
			t.Fatalf("%s not deleted", cm.Name)
		}
	}
}

// TestResourceConditionsOnCluster: a failureCondition that comes to hold fails its node with
// the condition in the message (and wins over the success condition); a condition that never
// holds ends at the template's timeout; a forbidden read fails the node.
func TestResourceConditionsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{ResourceCheckInterval: 200 * time.Millisecond})
	e.grantConfigMaps("robot")
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: conds}
spec:
  entrypoint: main
  serviceAccountName: robot
  templates:
  - name: main
    steps:
    - - {name: watch, template: watch, continueOn: {failed: true}}
      - {name: never, template: never, continueOn: {failed: true}}
      - {name: secret, template: secret, continueOn: {failed: true}}
  - name: watch
    resource:
      action: create
      successCondition: data.state == done
      failureCondition: data.state in (failed, error)
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: watched}
        data: {state: starting}
  - name: never
    timeout: 2s
    resource:
      action: apply
      successCondition: data.state == done
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: never}
        data: {state: starting}
  - name: secret
    resource:
      action: get
      manifest: |
        apiVersion: v1
        kind: Secret
        metadata: {name: nope}
`)
	e.waitNodeMessage("conds", "conds[0].watch", "waiting")
	e.patchConfigMap("watched", `{"data":{"state":"failed"}}`)
	wf := e.finished("conds", 60*time.Second)
	w := node(t, wf, "conds[0].watch")
	if w.Phase != workflows.NodeFailed || w.Message != "created configmap/watched; failure condition 'data.state in (error,failed)' evaluated true" {
		t.Fatalf("watch: %+v\n%s", w, dump(wf))
	}
	n := node(t, wf, "conds[0].never")
	if n.Phase != workflows.NodeFailed || n.Message != "Step exceeded its deadline" || n.FinishedAt.Sub(n.StartedAt.Time) < 2*time.Second {
		t.Fatalf("never: %+v", n)
	}
	s := node(t, wf, "conds[0].secret")
	if s.Phase != workflows.NodeFailed || !strings.Contains(s.Message, "forbidden") {
		t.Fatalf("secret: %+v", s)
	}
}
