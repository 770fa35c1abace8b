package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/tlog"
)

// TestMain stops the clusters, then the registry (the real-node test's images).
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// env is one test's namespace on the shared loopback cluster (kube-apiserver, kwok making pods
// Running) with a workflow controller watching that namespace.
type env struct {
	t    *testing.T
	c    *kube.Cluster
	ns   string
	ctrl *workflows.Controller
	ctx  context.Context
}

func newEnv(t *testing.T, opts workflows.Options) *env {
	t.Helper()
	c := kube.Shared(t)
	return startEnv(t, c, opts)
}

func startEnv(t *testing.T, c *kube.Cluster, opts workflows.Options) *env {
	t.Helper()
	ns := c.Namespace(t)
	opts.Namespace = ns
	if opts.ConfigNamespace == "" {
		opts.ConfigNamespace = ns // the runtime's own ConfigMaps (workflow-controller-configmap)
	}
	opts.Logger = slog.New(slog.NewTextHandler(tlog.New(t), nil))
	ctrl, err := workflows.New(c.RESTConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	e := &env{t: t, c: c, ns: ns, ctrl: ctrl, ctx: ctx}
	e.waitFor("controller started", 60*time.Second, func() (bool, string) { return ctrl.Healthy(), "" })
	return e
}

func (e *env) waitFor(what string, d time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("timed out after %v waiting for %s; last: %s", d, what, last)
}

// create creates an object of Argo's kinds from YAML in the test's namespace.
func (e *env) create(res schema.GroupVersionResource, y string) {
	e.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		e.t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		e.t.Fatal(err)
	}
	ri := e.c.Dynamic.Resource(res)
	if res == workflows.ClusterWorkflowTemplatesResource {
		if _, err := ri.Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create: %v", err)
		}
		e.t.Cleanup(func() { _ = ri.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
		return
	}
	if _, err := ri.Namespace(e.ns).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create: %v", err)
	}
}

func (e *env) workflow(name string) *workflows.Workflow {
	e.t.Helper()
	u, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := u.MarshalJSON()
	var wf workflows.Workflow
	if err := json.Unmarshal(b, &wf); err != nil {
		e.t.Fatal(err)
	}
	return &wf
}

func dump(wf *workflows.Workflow) string {
	var lines []string
	for _, n := range wf.Status.Nodes {
		lines = append(lines, fmt.Sprintf("%s [%s] %s %s", n.Name, n.Type, n.Phase, n.Message))
	}
	slices.Sort(lines)
	return fmt.Sprintf("%s %q\n  %s", wf.Status.Phase, wf.Status.Message, strings.Join(lines, "\n  "))
}

// finished waits for the workflow to end and returns it.
func (e *env) finished(name string, d time.Duration) *workflows.Workflow {
	e.t.Helper()
	var wf *workflows.Workflow
	e.waitFor("workflow "+name+" to finish", d, func() (bool, string) {
		wf = e.workflow(name)
		return wf.Status.Phase.Completed(), dump(wf)
	})
	return wf
}

func node(t *testing.T, wf *workflows.Workflow, name string) workflows.NodeStatus {
	t.Helper()
	for _, n := range wf.Status.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s: %s", name, dump(wf))
	return workflows.NodeStatus{}
}

// kubelet stands in for a kubelet that runs the emissary: once kwok has made a workflow pod
// Running, it ends the pod's main container as fn says, termination message included — what
// the emissary writes on a real node. Pods annotated with kwok's exit code are kwok's.
func (e *env) kubelet(fn func(*corev1.Pod) (int32, emissary.Outputs)) {
	w, err := e.c.Client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow})
	if err != nil {
		e.t.Fatal(err)
	}
	var wg sync.WaitGroup
	e.t.Cleanup(wg.Wait) // after the watch stops (cleanups run last first)
	e.t.Cleanup(w.Stop)
	wg.Go(func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.Annotations[kube.AnnotationExitCode] != "" {
				continue
			}
			code, out := fn(p)
			msg, _ := json.Marshal(out)
			now := metav1.Now()
			for range 10 {
				cur, err := e.c.Client.CoreV1().Pods(e.ns).Get(e.ctx, p.Name, metav1.GetOptions{})
				if err != nil || cur.Status.Phase != corev1.PodRunning {
					break
				}
				cur.Status.Phase = corev1.PodSucceeded
				reason := "Completed"
				if code != 0 {
					cur.Status.Phase, reason = corev1.PodFailed, "Error"
				}
				cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: cur.Spec.Containers[0].Image,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
						Message: string(msg), StartedAt: now, FinishedAt: now}}}}
				if _, err := e.c.Client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
					break
				}
			}
		}
	})
}

// userCommand is the user's command in a workflow pod: after the emissary's "--".
func userCommand(p *corev1.Pod) []string {
	c := p.Spec.Containers[0].Command
	return c[slices.Index(c, "--")+1:]
}

// TestStepsOnCluster: a script's stdout becomes the next step's parameter, a loop fans out,
// an output parameter flows from a file, and the status reads as Argo's.
func TestStepsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.kubelet(func(p *corev1.Pod) (int32, emissary.Outputs) {
		c := userCommand(p)
		var out emissary.Outputs
		switch c[0] {
		case "sh": // the script: its source is in the pod, projected from an annotation
			r := "from script: " + strings.Fields(p.Annotations["workflows.freshet.dev/script"])[1]
			out.Result = &r
		case "echo":
			r := strings.Join(c[1:], " ")
			out.Result = &r
			out.Parameters = map[string]string{"upper": strings.ToUpper(r)}
		}
		return 0, out
	})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: hello}
spec:
  entrypoint: main
  arguments: {parameters: [{name: word, value: freshet}]}
  templates:
  - name: main
    steps:
    - - name: gen
        template: gen
    - - name: say
        template: say
        arguments: {parameters: [{name: msg, value: "{{steps.gen.outputs.result}}"}]}
      - name: each
        template: say
        withItems: [a, b]
        arguments: {parameters: [{name: msg, value: "{{item}}"}]}
    - - name: last
        template: say
        arguments: {parameters: [{name: msg, value: "{{steps.say.outputs.parameters.upper}}"}]}
  - name: gen
    script:
      image: alpine:3
      command: [sh]
      source: echo {{workflow.parameters.word}}
  - name: say
    inputs: {parameters: [{name: msg}]}
    outputs: {parameters: [{name: upper, valueFrom: {path: /tmp/upper}}]}
    container: {image: alpine:3, command: [echo, "{{inputs.parameters.msg}}"]}
`)
	wf := e.finished("hello", 60*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded || wf.Status.FinishedAt.IsZero() || wf.Status.StartedAt.IsZero() {
		t.Fatal(dump(wf))
	}
	if got := *node(t, wf, "hello[2].last").Outputs.Result; got != "FROM SCRIPT: FRESHET" {
		t.Fatalf("last step got %q: %s", got, dump(wf))
	}
	if n := node(t, wf, "hello[1].each(1:b)"); n.Phase != workflows.NodeSucceeded || n.DisplayName != "each(1:b)" || n.Type != workflows.NodeTypePod {
		t.Fatalf("%+v", n)
	}
	if wf.Status.Progress != "5/5" || wf.Labels[workflows.LabelCompleted] != "true" {
		t.Fatalf("progress %q labels %v", wf.Status.Progress, wf.Labels)
	}
	// The pods: owned by the workflow, the emissary copied in by the init container.
	pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=hello"})
	if err != nil || len(pods.Items) != 5 {
		t.Fatalf("%d pods, %v", len(pods.Items), err)
	}
	p := pods.Items[0]
	if p.Spec.InitContainers[0].Image != workflows.DefaultExecutorImage || p.OwnerReferences[0].Name != "hello" || p.Annotations[workflows.AnnotationNodeName] == "" {
		t.Fatalf("pod %s: %+v", p.Name, p.Spec.InitContainers[0])
	}
	// `kubectl get wf` prints STATUS and AGE from the printer columns.
	tbl := e.table("workflows", "")
	if !strings.Contains(tbl, "hello") || !strings.Contains(tbl, "Succeeded") {
		t.Fatalf("kubectl get wf:\n%s", tbl)
	}
}

// table is what `kubectl get RESOURCE` prints (the server's Table rendering).
func (e *env) table(resource, name string) string {
	e.t.Helper()
	path := "/apis/argoproj.io/v1alpha1/namespaces/" + e.ns + "/" + resource
	raw, err := e.c.Client.CoreV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(raw, &tbl); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range tbl.ColumnDefinitions {
		fmt.Fprintf(&b, "%s\t", c.Name)
	}
	for _, r := range tbl.Rows {
		fmt.Fprintf(&b, "\n%v", r.Cells)
	}
	return b.String()
}

// TestDAGFailureRetryAndExitHandlerOnCluster: kwok ends pods with the exit code their template
// asks for; a failing task is retried, handled by a depends expression, and the exit handler
// sees the workflow's status.
func TestDAGFailureRetryAndExitHandlerOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: dag}
spec:
  entrypoint: main
  onExit: bye
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: ok}
      - {name: B, template: fails, depends: A}
      - {name: C, template: ok, depends: "B.Failed"}
  - name: ok
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0"}}
    container: {image: alpine:3, command: ["true"]}
  - name: fails
    retryStrategy: {limit: 1}
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "3"}}
    container: {image: alpine:3, command: ["false"]}
  - name: bye
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0"}}
    container: {image: alpine:3, command: [echo, "{{workflow.status}}"]}
`)
	wf := e.finished("dag", 60*time.Second)
	// C handled B's failure and is the only target: the DAG succeeds, as in Argo.
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	b := node(t, wf, "dag.B")
	if b.Type != workflows.NodeTypeRetry || b.Phase != workflows.NodeFailed || len(b.Children) != 2 || b.Message != "Error (exit code 3)" {
		t.Fatalf("B %+v\n%s", b, dump(wf))
	}
	if node(t, wf, "dag.C").Phase != workflows.NodeSucceeded || node(t, wf, "dag.onExit").Phase != workflows.NodeSucceeded {
		t.Fatal(dump(wf))
	}
	pods, _ := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=dag"})
	for _, p := range pods.Items {
		if p.Annotations[workflows.AnnotationNodeName] == "dag.onExit" && !strings.Contains(strings.Join(userCommand(&p), " "), "echo Succeeded") {
			t.Fatalf("exit handler ran %q", userCommand(&p))
		}
	}
}

// TestInvalidWorkflowOnCluster: a Workflow that does not lint ends in Error naming the field,
// and no pod is made.
func TestInvalidWorkflowOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: bad}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: t, depends: B}
      - {name: B, template: t, depends: A}
  - {name: t, container: {image: x, command: [x]}}
`)
	wf := e.finished("bad", 30*time.Second)
	want := `invalid spec: spec.templates[0].dag.tasks: "A -> B -> A" is a dependency cycle`
	if wf.Status.Phase != workflows.WorkflowError || wf.Status.Message != want {
		t.Fatalf("got %s %q, want Error %q", wf.Status.Phase, wf.Status.Message, want)
	}
	pods, _ := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Fatalf("%d pods", len(pods.Items))
	}
}

// TestTemplatesSuspendAndResourceOnCluster: a workflowTemplateRef run with a parameter
// overridden, a templateRef into a ClusterWorkflowTemplate, an indefinite suspend resumed, and
// resource templates acting as the workflow's service account (allowed, then forbidden).
func TestTemplatesSuspendAndResourceOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	cwt := "lib-" + e.ns
	e.create(workflows.ClusterWorkflowTemplatesResource, `
apiVersion: argoproj.io/v1alpha1
kind: ClusterWorkflowTemplate
metadata: {name: `+cwt+`}
spec:
  templates:
  - name: make-cm
    inputs: {parameters: [{name: name}]}
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{inputs.parameters.name}}"}
        data: {by: "{{workflow.name}}"}
`)
	e.create(workflows.WorkflowTemplatesResource, `
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata: {name: pipeline}
spec:
  entrypoint: main
  serviceAccountName: robot
  arguments: {parameters: [{name: cm, value: default-name}]}
  templates:
  - name: main
    steps:
    - - {name: approve, template: approve}
    - - name: cm
        templateRef: {name: `+cwt+`, template: make-cm, clusterScope: true}
        arguments: {parameters: [{name: name, value: "{{workflow.parameters.cm}}"}]}
    - - name: secret
        template: make-secret
  - name: approve
    suspend: {}
  - name: make-secret
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: Secret
        metadata: {name: nope}
`)
	// robot may create ConfigMaps in the namespace, not Secrets.
	if _, err := e.c.Client.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot", Namespace: e.ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: from-template}
spec:
  workflowTemplateRef: {name: pipeline}
  arguments: {parameters: [{name: cm, value: chosen}]}
`)
	e.waitFor("the suspend node", 30*time.Second, func() (bool, string) {
		wf := e.workflow("from-template")
		for _, n := range wf.Status.Nodes {
			if n.Type == workflows.NodeTypeSuspend && n.Phase == workflows.NodeRunning {
				return wf.Status.Phase == workflows.WorkflowRunning, ""
			}
		}
		return false, dump(wf)
	})
	time.Sleep(500 * time.Millisecond)
	if wf := e.workflow("from-template"); wf.Status.Phase != workflows.WorkflowRunning {
		t.Fatalf("suspended workflow: %s", dump(wf))
	}
	if err := e.ctrl.Resume(e.ctx, e.ns, "from-template"); err != nil {
		t.Fatal(err)
	}
	wf := e.finished("from-template", 30*time.Second)
	cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "chosen", metav1.GetOptions{})
	if err != nil || cm.Data["by"] != "from-template" {
		t.Fatalf("configmap: %v %v\n%s", cm, err, dump(wf))
	}
	s := node(t, wf, "from-template[2].secret")
	if wf.Status.Phase != workflows.WorkflowFailed || s.Phase != workflows.NodeFailed || !strings.Contains(s.Message, "forbidden") ||
		!strings.Contains(s.Message, "system:serviceaccount:"+e.ns+":robot") {
		t.Fatalf("secret step: %+v\n%s", s, dump(wf))
	}
	if wf.Status.StoredWorkflowTemplateSpec == nil || node(t, wf, "from-template[1].cm").TemplateRef.Name != cwt {
		t.Fatal(dump(wf))
	}
}

// TestDeadlineOnCluster: activeDeadlineSeconds ends a workflow whose pod never finishes: the
// pod is deleted and the workflow fails with Argo's message.
func TestDeadlineOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: slow}
spec:
  entrypoint: main
  activeDeadlineSeconds: 2
  templates:
  - name: main
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0", devcluster.freshet.dev/run-duration: "1h"}}
    container: {image: alpine:3, command: [sleep, "3600"]}
`)
	wf := e.finished("slow", 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowFailed || wf.Status.Message != "Workflow exceeded its activeDeadlineSeconds" ||
		node(t, wf, "slow").Message != "Step exceeded its deadline" {
		t.Fatal(dump(wf))
	}
	e.waitFor("the pod deleted", 30*time.Second, func() (bool, string) {
		pods, _ := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
		return len(pods.Items) == 0, fmt.Sprint(len(pods.Items))
	})
	_ = types.MergePatchType
}
