package workflows_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// records collects what the controller reports finished.
type records struct {
	mu  sync.Mutex
	got []runtimev1.WorkflowRecord
}

func (r *records) add(rec runtimev1.WorkflowRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
}

func (r *records) of(name string) []runtimev1.WorkflowRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runtimev1.WorkflowRecord
	for _, x := range r.got {
		if x.Name == name {
			out = append(out, x)
		}
	}
	return out
}

func jsonOf(t *testing.T, y string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// robot is a service account that may create and read ConfigMaps in the test's namespace:
// resource steps run as it.
func (e *env) robot() {
	e.t.Helper()
	if _, err := e.c.Client.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "get"}}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot", Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitNode waits until the workflow has a node of type typ in phase.
func (e *env) waitNode(name string, typ workflows.NodeType, phase workflows.NodePhase) {
	e.t.Helper()
	e.waitFor(name+": a "+string(typ)+" node "+string(phase), 30*time.Second, func() (bool, string) {
		wf := e.workflow(name)
		for _, n := range wf.Status.Nodes {
			if n.Type == typ && n.Phase == phase {
				return true, ""
			}
		}
		return false, dump(wf)
	})
}

// TestOperationsOnCluster: what the app-proxy does to Workflows, on the loopback cluster with
// suspend and resource templates (no pod runs): a submit refused as argo lint refuses it with
// nothing created; a submit from a WorkflowTemplate with a parameter, suspended and resumed to
// the end; terminate and stop; a failed workflow retried from its failed node after the cause
// is gone; a resubmit; the templates listed; and every finish reported once, with who
// triggered it.
func TestOperationsOnCluster(t *testing.T) {
	var recs records
	e := newEnv(t, workflows.Options{OnFinished: recs.add})
	e.robot()
	by := workflows.Submitter{User: "usr_1", Email: "ann@example.test"}

	// Refused before anything is created: the field is named, as argo lint names it.
	_, err := e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, By: by, Manifest: jsonOf(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: cyclic}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: w, dependencies: [B]}
      - {name: B, template: w, dependencies: [A]}
  - name: w
    suspend: {duration: "1"}
`)})
	var fe *errdefs.FieldError
	if !errors.As(err, &fe) || fe.Field != "spec.templates[0].dag.tasks" || !strings.Contains(err.Error(), "invalid spec: ") || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cyclic DAG: %v", err)
	}
	if _, err := e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, From: "workflowtemplate/absent", By: by}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("a missing template: %v", err)
	}
	if _, err := e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, From: "pipeline/x"}); !errors.As(err, &fe) || fe.Field != "from" {
		t.Fatalf("a bad --from: %v", err)
	}
	if l, err := e.ctrl.List(e.ctx, e.ns); err != nil || len(l) != 0 {
		t.Fatalf("after refused submits: %v, %v", l, err)
	}

	e.create(workflows.WorkflowTemplatesResource, `
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata: {name: release}
spec:
  entrypoint: main
  serviceAccountName: robot
  arguments: {parameters: [{name: version, value: "0.0.0", description: the version to release}]}
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
    - - {name: record, template: record}
  - name: approve
    suspend: {}
  - name: record
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{workflow.name}}"}
        data: {version: "{{workflow.parameters.version}}"}
`)
	if _, err := e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, From: "workflowtemplate/release", Parameters: []string{"version"}}); !errors.As(err, &fe) || fe.Field != "parameters[0]" {
		t.Fatalf("a parameter without =: %v", err)
	}
	d, err := e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, From: "workflowtemplate/release", Parameters: []string{"version=1.2.3"}, By: by})
	if err != nil {
		t.Fatal(err)
	}
	name := d.Name
	if !strings.HasPrefix(name, "release-") || d.Template != "release" || d.Creator != "ann@example.test" {
		t.Fatalf("submitted: %+v", d)
	}
	wf := e.workflow(name)
	if wf.Labels[workflows.LabelWorkflowTemplate] != "release" || wf.Labels[workflows.LabelCreator] != "usr_1" || wf.Labels[workflows.LabelCreatorEmail] != "ann.at.example.test" {
		t.Fatalf("labels: %v", wf.Labels)
	}
	e.waitNode(name, workflows.NodeTypeSuspend, workflows.NodeRunning)
	if err := e.ctrl.Suspend(e.ctx, e.ns, name); err != nil {
		t.Fatal(err)
	}
	got, err := e.ctrl.Get(e.ctx, e.ns, name)
	if err != nil || !got.Suspended || got.Phase != "Running" || len(got.Nodes) == 0 {
		t.Fatalf("suspended: %+v, %v", got, err)
	}
	if len(got.Parameters) != 1 || got.Parameters[0] != (appproxyv1.WorkflowParameter{Name: "version", Value: "1.2.3"}) {
		t.Fatalf("parameters: %+v", got.Parameters)
	}
	if err := e.ctrl.Resume(e.ctx, e.ns, name); err != nil {
		t.Fatal(err)
	}
	wf = e.finished(name, 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatalf("resumed: %s", dump(wf))
	}
	cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil || cm.Data["version"] != "1.2.3" {
		t.Fatalf("the record step's ConfigMap: %v, %v", cm, err)
	}
	got, _ = e.ctrl.Get(e.ctx, e.ns, name)
	var tree []string
	for _, n := range got.Nodes {
		tree = append(tree, n.DisplayName+"="+n.Type+"="+n.Phase)
	}
	slices.Sort(tree)
	want := []string{"[0]=StepGroup=Succeeded", "[1]=StepGroup=Succeeded", "approve=Suspend=Succeeded", name + "=Steps=Succeeded", "record=Pod=Succeeded"}
	slices.Sort(want)
	if got.FinishedAt == nil || got.StartedAt == nil || !slices.Equal(tree, want) {
		t.Fatalf("node tree: %v (%+v)", tree, got)
	}
	if err := e.ctrl.Shutdown(e.ctx, e.ns, name, "Terminate"); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("terminating a finished workflow: %v", err)
	}
	e.waitFor("the finish reported", 10*time.Second, func() (bool, string) { return len(recs.of(name)) == 1, "" })
	rec := recs.of(name)[0]
	if rec.Phase != "Succeeded" || rec.Trigger != runtimev1.WorkflowTriggerSubmit || rec.TriggeredBy != "ann@example.test" || rec.Template != "release" ||
		len(rec.Nodes) != 5 || rec.UID != string(wf.UID) || rec.FinishedAt.IsZero() {
		t.Fatalf("record: %+v", rec)
	}

	// Terminate and stop a workflow waiting at its suspend.
	for _, c := range []struct{ strategy, msg string }{{"Terminate", "Stopped with strategy 'Terminate'"}, {"Stop", "Stopped with strategy 'Stop'"}} {
		d, err := e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, From: "workflowtemplate/release", By: by})
		if err != nil {
			t.Fatal(err)
		}
		e.waitNode(d.Name, workflows.NodeTypeSuspend, workflows.NodeRunning)
		if err := e.ctrl.Shutdown(e.ctx, e.ns, d.Name, c.strategy); err != nil {
			t.Fatal(err)
		}
		wf := e.finished(d.Name, 30*time.Second)
		if wf.Status.Phase != workflows.WorkflowFailed || wf.Status.Message != c.msg {
			t.Fatalf("%s: %s", c.strategy, dump(wf))
		}
		e.waitFor("the "+c.strategy+" reported", 10*time.Second, func() (bool, string) { return len(recs.of(d.Name)) == 1, "" })
	}

	// A workflow that fails (its ConfigMap exists already) is retried once the cause is gone:
	// the step that succeeded is kept, the failed one runs again.
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err = e.ctrl.Submit(e.ctx, workflows.SubmitOptions{Namespace: e.ns, By: by, Manifest: jsonOf(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: flaky}
spec:
  entrypoint: main
  serviceAccountName: robot
  templates:
  - name: main
    steps:
    - - {name: first, template: wait}
    - - {name: make, template: make, onExit: note}
  - name: wait
    suspend: {duration: "0"}
  - name: make
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: taken}
  - name: note
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {generateName: note-}
`)})
	if err != nil || d.Name != "flaky" {
		t.Fatalf("submit flaky: %+v, %v", d, err)
	}
	wf = e.finished("flaky", 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowFailed || !strings.Contains(dump(wf), "already exists") {
		t.Fatalf("flaky: %s", dump(wf))
	}
	firstStarted := node(t, wf, "flaky[0].first").StartedAt
	if err := e.c.Client.CoreV1().ConfigMaps(e.ns).Delete(e.ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.Retry(e.ctx, e.ns, "flaky"); err != nil {
		t.Fatal(err)
	}
	wf = e.finished("flaky", 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded || !firstStarted.Equal(&[]metav1.Time{node(t, wf, "flaky[0].first").StartedAt}[0]) {
		t.Fatalf("retried: %s", dump(wf))
	}
	// The failed step's exit handler ran again with it: two notes.
	if cms, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{}); err != nil ||
		len(slices.DeleteFunc(cms.Items, func(c corev1.ConfigMap) bool { return !strings.HasPrefix(c.Name, "note-") })) != 2 {
		t.Fatalf("notes: %v (%v): %s", cms, err, dump(wf))
	}
	e.waitFor("both finishes reported", 10*time.Second, func() (bool, string) { return len(recs.of("flaky")) == 2, "" })
	if r := recs.of("flaky"); r[0].Phase != "Failed" || r[1].Phase != "Succeeded" || r[0].UID != r[1].UID {
		t.Fatalf("flaky's records: %+v", r)
	}
	if err := e.ctrl.Retry(e.ctx, e.ns, "flaky"); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("retrying a succeeded workflow: %v", err)
	}

	// Resubmit: a new workflow with the same spec, labelled with where it comes from (it fails:
	// the ConfigMap exists again).
	re, err := e.ctrl.Resubmit(e.ctx, e.ns, "flaky", workflows.Submitter{Email: "bob@example.test"})
	if err != nil || !strings.HasPrefix(re.Name, "flaky-") || re.ResubmittedFrom != "flaky" {
		t.Fatalf("resubmit: %+v, %v", re, err)
	}
	wf = e.finished(re.Name, 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowFailed {
		t.Fatalf("resubmitted: %s", dump(wf))
	}
	e.waitFor("the resubmitted finish reported", 10*time.Second, func() (bool, string) { return len(recs.of(re.Name)) == 1, "" })
	if r := recs.of(re.Name)[0]; r.Trigger != runtimev1.WorkflowTriggerResubmit || r.TriggeredBy != "bob@example.test" {
		t.Fatalf("resubmitted record: %+v", r)
	}

	l, err := e.ctrl.List(e.ctx, e.ns)
	if err != nil || len(l) != 5 || !slices.ContainsFunc(l, func(w appproxyv1.Workflow) bool { return w.Name == re.Name && w.ResubmittedFrom == "flaky" }) {
		t.Fatalf("list: %+v, %v", l, err)
	}
	ts, err := e.ctrl.ListTemplates(e.ctx, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range ts {
		if x.Name == "release" && x.Kind == "WorkflowTemplate" && len(x.Parameters) == 1 && *x.Parameters[0].Value == "0.0.0" &&
			x.Parameters[0].Description == "the version to release" && strings.Join(x.Templates, ",") == "main,approve,record" {
			found = true
		}
	}
	if !found {
		t.Fatalf("templates: %+v", ts)
	}
	// Logs: a node that is not a pod has none; a workflow of resource and suspend steps writes
	// nothing.
	var buf bytes.Buffer
	if err := e.ctrl.Logs(e.ctx, e.ns, name, workflows.LogOptions{Node: name}, &buf); !errors.As(err, &fe) || fe.Field != "node" {
		t.Fatalf("log of a Steps node: %v", err)
	}
	if err := e.ctrl.Logs(e.ctx, e.ns, name, workflows.LogOptions{Follow: true}, &buf); err != nil || buf.Len() != 0 {
		t.Fatalf("log of a finished workflow without pods: %q, %v", buf.String(), err)
	}
	// A pod's log is asked of the kubelet even after the workflow finished, following or not
	// (kwok's pods have none to give: the line says why).
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: talk}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: say, template: say}]]
  - name: say
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0"}}
    container: {image: alpine:3, command: [echo, hi]}
`)
	if wf := e.finished("talk", 60*time.Second); wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	for _, o := range []workflows.LogOptions{{}, {Follow: true}, {Node: "say", Follow: true}} {
		buf.Reset()
		if err := e.ctrl.Logs(e.ctx, e.ns, "talk", o, &buf); err != nil || !strings.HasPrefix(buf.String(), "say: ") || strings.Count(buf.String(), "\n") < 1 {
			t.Fatalf("logs %+v: %q, %v", o, buf.String(), err)
		}
	}
}
