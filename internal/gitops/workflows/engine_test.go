package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// fakeCluster is a hand-written cluster for unit tests of the engine: pods are kept in a map
// and "run" by the test's kubelet function between operations.
type fakeCluster struct {
	pods      map[string]*corev1.Pod
	order     []string // pod names in creation order
	templates map[string]*WorkflowSpec
	resources []string
	objects   map[string]*unstructured.Unstructured // resource templates' objects, by kind/name
	repo      *ArtifactRepositoryRefStatus
	claims    map[string]*corev1.PersistentVolumeClaim
	limits    map[string]string // every semaphore's ConfigMap data
	images    map[string]ImageCommand
	createErr func(*corev1.Pod) error // an API server refusing pods
}

func (f *fakeCluster) artifactRepository(_ context.Context, _ string, _ *ArtifactRepositoryRef) (*ArtifactRepositoryRefStatus, error) {
	if f.repo == nil {
		return nil, errNoRepository
	}
	return f.repo, nil
}

func (f *fakeCluster) createPod(_ context.Context, p *corev1.Pod) error {
	if f.createErr != nil {
		if err := f.createErr(p); err != nil {
			return err
		}
	}
	if f.pods[p.Name] == nil {
		f.order = append(f.order, p.Name)
	}
	p.Status.Phase = corev1.PodPending
	f.pods[p.Name] = p
	return nil
}
func (f *fakeCluster) createClaim(_ context.Context, _ *Workflow, pvc *corev1.PersistentVolumeClaim) error {
	if f.claims == nil {
		f.claims = map[string]*corev1.PersistentVolumeClaim{}
	}
	f.claims[pvc.Name] = pvc
	return nil
}
func (f *fakeCluster) deleteClaim(_ context.Context, _, name string) error {
	delete(f.claims, name)
	return nil
}
func (f *fakeCluster) semaphoreLimit(_ context.Context, ns, name, key string) (int, error) {
	cm := &corev1.ConfigMap{Data: f.limits}
	return semaphoreLimitOf(cm, ns, name, key)
}
func (f *fakeCluster) imageCommand(_ context.Context, _, image string, _ []corev1.LocalObjectReference) (ImageCommand, error) {
	if ic, ok := f.images[image]; ok {
		return ic, nil
	}
	return ImageCommand{}, fmt.Errorf("no registry in unit tests")
}
func (f *fakeCluster) readArtifact(_ context.Context, _ string, loc artifacts.Location, _ []corev1.EnvVar, _ int64) ([]byte, error) {
	return nil, fmt.Errorf("no artifact store in unit tests (%s)", loc)
}
func (f *fakeCluster) deletePod(_ context.Context, _, name string) error {
	delete(f.pods, name)
	return nil
}
func (f *fakeCluster) templateSpec(_ context.Context, _, name string, cluster bool) (*WorkflowSpec, error) {
	if s := f.templates[fmt.Sprint(cluster)+"/"+name]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("not found")
}
func (f *fakeCluster) resource(_ context.Context, _ *Workflow, sa string, a *resourceAction) (*unstructured.Unstructured, string, error) {
	kind, name := a.typ, a.name
	if a.obj != nil {
		kind, name = a.obj.GetKind(), a.obj.GetName()
	}
	s := fmt.Sprintf("%s %s/%s as %s", a.action, kind, name, sa)
	f.resources = append(f.resources, s)
	if f.objects == nil {
		f.objects = map[string]*unstructured.Unstructured{}
	}
	key := kind + "/" + name
	switch a.action {
	case "delete":
		delete(f.objects, key)
		return nil, s, nil
	case "create", "apply", "replace":
		f.objects[key] = a.obj.DeepCopy()
	}
	if f.objects[key] == nil {
		return nil, "", apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
	}
	return f.objects[key].DeepCopy(), s, nil
}
func (f *fakeCluster) getResource(_ context.Context, _ *Workflow, _ string, r *NodeResource) (*unstructured.Unstructured, error) {
	if o := f.objects[r.Kind+"/"+r.Name]; o != nil {
		return o.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: r.Kind}, r.Name)
}

// run is what a step's pod does: its exit code and what the emissary reports.
type run struct {
	code     int32
	result   string
	params   map[string]string
	arts     map[string]int64              // output artifacts saved
	artErrs  map[string]string             // output artifacts that could not be saved
	inputErr string                        // an input artifact that could not be loaded
	waiting  *corev1.ContainerStateWaiting // the pod cannot start: it stays Pending, main waiting so
}

// harness drives a workflow to its end: operate, then the kubelet finishes every pending pod.
type harness struct {
	t       *testing.T
	wf      *Workflow
	fc      *fakeCluster
	now     time.Time
	kubelet func(pod *corev1.Pod) run
	locks   *lockManager // nil: each step its own (no lock outlives a step)
	// The controller's settings (podOptions, the runtime's default deadline).
	pullGrace, createTimeout time.Duration
	defaultDeadline          *int64
	refused                  refusals
}

func newHarness(t *testing.T, y string, kubelet func(*corev1.Pod) run) *harness {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := Decode(j)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	wf.Namespace, wf.UID = "ns", "uid-1"
	if wf.Name == "" {
		wf.Name = "wf"
	}
	return &harness{t: t, wf: wf, fc: &fakeCluster{pods: map[string]*corev1.Pod{}, templates: map[string]*WorkflowSpec{}}, now: time.Unix(1e9, 0), kubelet: kubelet}
}

// command is the user's command of a pod (after the emissary's "--").
func command(p *corev1.Pod) []string {
	c := p.Spec.Containers[0].Command
	i := slices.Index(c, "--")
	return c[i+1:]
}

func (h *harness) step() time.Duration {
	spec := &h.wf.Spec
	if ref := h.wf.Spec.WorkflowTemplateRef; ref != nil {
		s, err := h.fc.templateSpec(context.Background(), "ns", ref.Name, ref.ClusterScope)
		if err != nil {
			h.t.Fatal(err)
		}
		spec = mergeSpec(&h.wf.Spec, s)
		if err := ValidateSpec(spec, "spec"); err != nil {
			h.t.Fatal(err)
		}
	}
	o := &operation{ctx: context.Background(), cl: h.fc, wf: h.wf, spec: spec, nodes: map[string]*NodeStatus{}, pods: h.fc.pods,
		now: h.now, globals: globalScope(h.wf, spec), tmplSpecs: map[string]*WorkflowSpec{}, opts: podOptions{executorImage: "x", executorPath: "/x",
			pullGrace: h.pullGrace, createTimeout: h.createTimeout}, locks: h.locks, defaultDeadline: h.defaultDeadline, refused: &h.refused}
	for id, n := range h.wf.Status.Nodes {
		n := n
		o.nodes[id] = &n
	}
	st := *h.wf.Status.deepCopy()
	o.operate(&st)
	st.Nodes = map[string]NodeStatus{}
	for id, n := range o.nodes {
		st.Nodes[id] = *n
	}
	// The status round-trips through JSON, as it does through the API server.
	b, _ := json.Marshal(st)
	h.wf.Status = WorkflowStatus{}
	if err := json.Unmarshal(b, &h.wf.Status); err != nil {
		h.t.Fatal(err)
	}
	if o.err != nil {
		h.t.Fatal(o.err)
	}
	o.locks.commit(o.wfKey(), o.sync.release, o.sync.waiting, o.sync.all)
	// The kubelet: every pending pod runs to its end.
	for _, name := range h.fc.order {
		p := h.fc.pods[name]
		if p == nil || p.Status.Phase != corev1.PodPending {
			continue
		}
		if p.CreationTimestamp.IsZero() {
			p.CreationTimestamp = metav1.NewTime(h.now)
		}
		r := h.kubelet(p)
		if r.waiting != nil {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: p.Spec.Containers[0].Image, State: corev1.ContainerState{Waiting: r.waiting}}}
			continue
		}
		if r.code < 0 {
			p.Status.Phase = corev1.PodRunning
			continue
		}
		msg, _ := json.Marshal(emissary.Outputs{Result: &r.result, Parameters: r.params, Artifacts: r.arts, ArtifactErrors: r.artErrs, InputError: r.inputErr})
		p.Status.Phase = corev1.PodSucceeded
		reason := "Completed"
		if r.code != 0 {
			p.Status.Phase, reason = corev1.PodFailed, "Error"
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: r.code, Reason: reason, Message: string(msg)}}}}
	}
	return o.requeue
}

func (h *harness) runToEnd() {
	h.t.Helper()
	for i := 0; i < 500; i++ {
		d := h.step()
		if h.wf.Status.Phase.Completed() {
			return
		}
		// The controller is woken by pod events and by its own requeue, whichever is first.
		h.now = h.now.Add(min(max(d, time.Millisecond), time.Second))
	}
	h.t.Fatalf("workflow did not finish: %s", h.dump())
}

func (h *harness) dump() string {
	var lines []string
	for _, n := range h.wf.Status.Nodes {
		lines = append(lines, fmt.Sprintf("%s [%s] %s %s", n.Name, n.Type, n.Phase, n.Message))
	}
	slices.Sort(lines)
	return fmt.Sprintf("phase %s %q\n  %s", h.wf.Status.Phase, h.wf.Status.Message, strings.Join(lines, "\n  "))
}

func (h *harness) node(name string) NodeStatus {
	h.t.Helper()
	n, ok := h.wf.Status.Nodes[nodeID(h.wf.Name, name)]
	if !ok {
		h.t.Fatalf("no node %q: %s", name, h.dump())
	}
	return n
}

func echo(p *corev1.Pod) run {
	c := command(p)
	return run{result: strings.Join(c[len(c)-1:], " ")}
}

func TestStepsPassResultToNextStep(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: steps}
spec:
  entrypoint: main
  arguments: {parameters: [{name: who, value: world}]}
  templates:
  - name: main
    steps:
    - - name: gen
        template: gen
        arguments: {parameters: [{name: who, value: "{{workflow.parameters.who}}"}]}
    - - name: print
        template: print
        arguments: {parameters: [{name: msg, value: "{{steps.gen.outputs.result}}"}]}
      - name: other
        template: print
        arguments: {parameters: [{name: msg, value: "{{workflow.name}}"}]}
  - name: gen
    inputs: {parameters: [{name: who}]}
    script:
      image: alpine
      command: [sh]
      source: echo hello {{inputs.parameters.who}}
  - name: print
    inputs: {parameters: [{name: msg}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.msg}}"]}
`, func(p *corev1.Pod) run {
		if src := p.Annotations[annotationScript]; src != "" {
			return run{result: strings.TrimPrefix(src, "echo ")}
		}
		return echo(p)
	})
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	if r := h.node("steps[1].print").Outputs.Result; r == nil || *r != "hello world" {
		t.Fatalf("print got %v: %s", r, h.dump())
	}
	if r := h.node("steps[1].other").Outputs.Result; r == nil || *r != "steps" {
		t.Fatalf("other got %v", r)
	}
	root := h.node("steps")
	if root.Type != NodeTypeSteps || root.Phase != NodeSucceeded || len(root.Children) != 1 {
		t.Fatalf("root %+v", root)
	}
	g0 := h.node("steps[0]")
	gen := h.node("steps[0].gen")
	if g0.Children[0] != gen.ID || gen.Children[0] != h.node("steps[1]").ID || gen.DisplayName != "gen" {
		t.Fatalf("graph: %+v %+v", g0, gen)
	}
	if h.wf.Status.Progress != "3/3" {
		t.Fatalf("progress %q", h.wf.Status.Progress)
	}
	// Pods: the script's source in its annotation, the command under the emissary.
	p := h.fc.pods[podName(gen.ID)]
	if got := command(p); !slices.Equal(got, []string{"sh", scriptPath}) {
		t.Fatalf("script command %q", got)
	}
	if p.Spec.InitContainers[0].Command[0] != "/x" || p.Labels[LabelWorkflow] != "steps" || p.OwnerReferences[0].Kind != "Workflow" {
		t.Fatalf("pod %+v", p.ObjectMeta)
	}
}

func TestDAGDependsAndFailure(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: dag}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: A, template: ok}
      - {name: B, template: fail, depends: A}
      - {name: C, template: ok, depends: "B.Failed"}
      - {name: D, template: ok, depends: "B.Succeeded"}
      - {name: E, template: ok, depends: "C && !D.Succeeded", arguments: {parameters: [{name: x, value: "{{tasks.C.outputs.result}}"}]}}
      - {name: F, template: ok, depends: "D"}
  - name: ok
    inputs: {parameters: [{name: x, default: none}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.x}}"]}
  - name: fail
    container: {image: alpine, command: ["false"]}
`, func(p *corev1.Pod) run {
		if command(p)[0] == "false" {
			return run{code: 1}
		}
		return echo(p)
	})
	h.runToEnd()
	// D and F were omitted: F's branch inherits B's failure, so the DAG fails (as in Argo; E's
	// branch alone would have succeeded).
	if h.node("dag.C").Phase != NodeSucceeded || h.node("dag.D").Phase != NodeOmitted || h.node("dag.E").Phase != NodeSucceeded {
		t.Fatal(h.dump())
	}
	if r := h.node("dag.E").Outputs.Result; r == nil || *r != "none" {
		t.Fatalf("E result %v", r)
	}
	if h.wf.Status.Phase != WorkflowFailed || !strings.Contains(h.wf.Status.Message, "dag.B") {
		t.Fatal(h.dump())
	}
	if m := h.node("dag.B").Message; m != "Error (exit code 1)" {
		t.Fatalf("B message %q", m)
	}
}

func TestDAGFanOutParallelismAndWhen(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: fan}
spec:
  entrypoint: main
  parallelism: 2
  templates:
  - name: main
    dag:
      tasks:
      - {name: list, template: list}
      - name: each
        template: echo
        depends: list
        withParam: "{{tasks.list.outputs.result}}"
        arguments: {parameters: [{name: x, value: "{{item.n}}"}]}
      - name: seq
        template: echo
        withSequence: {start: "1", end: "3", format: "n%02d"}
        arguments: {parameters: [{name: x, value: "{{item}}"}]}
      - name: items
        template: echo
        withItems: [a, b]
        when: "{{item}} == b"
        arguments: {parameters: [{name: x, value: "{{item}}"}]}
  - name: list
    script: {image: alpine, command: [sh], source: "gen"}
  - name: echo
    inputs: {parameters: [{name: x}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.x}}"]}
`, func(p *corev1.Pod) run {
		if p.Annotations[annotationScript] != "" {
			return run{result: `[{"n": 1}, {"n": 2}, {"n": 3}]`}
		}
		return echo(p)
	})
	maxActive := 0
	for i := 0; i < 100 && !h.wf.Status.Phase.Completed(); i++ {
		h.step()
		active := 0
		for _, n := range h.wf.Status.Nodes {
			if n.Type == NodeTypePod && !n.Phase.Fulfilled() {
				active++
			}
		}
		maxActive = max(maxActive, active)
		h.now = h.now.Add(time.Second)
	}
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	if maxActive > 2 {
		t.Fatalf("%d pods at once with parallelism 2", maxActive)
	}
	if r := h.node("fan.each(2:{\"n\":3})").Outputs.Result; r == nil || *r != "3" {
		t.Fatalf("each(2) %v: %s", r, h.dump())
	}
	if r := h.node("fan.seq(0:n01)").Outputs.Result; r == nil || *r != "n01" {
		t.Fatal(h.dump())
	}
	if h.node("fan.items(0:a)").Phase != NodeSkipped || h.node("fan.items(1:b)").Phase != NodeSucceeded {
		t.Fatal(h.dump())
	}
	if g := h.node("fan.each"); g.Type != NodeTypeTaskGroup || len(g.Children) != 3 {
		t.Fatalf("group %+v", g)
	}
}

func TestRetryBackoffOnExitAndOutputs(t *testing.T) {
	attempts := 0
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: retry}
spec:
  entrypoint: main
  onExit: exit
  templates:
  - name: main
    steps:
    - - {name: flaky, template: flaky}
    - - name: use
        template: echo
        arguments: {parameters: [{name: x, value: "{{steps.flaky.outputs.parameters.out}}"}]}
    outputs:
      parameters:
      - name: final
        valueFrom: {parameter: "{{steps.use.outputs.result}}"}
  - name: flaky
    retryStrategy: {limit: 3, backoff: {duration: 10s, factor: 2}}
    container: {image: alpine, command: [sh, -c, "try {{retries}}"]}
    outputs:
      parameters:
      - name: out
        valueFrom: {path: /tmp/out}
  - name: echo
    inputs: {parameters: [{name: x}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.x}}"]}
  - name: exit
    container: {image: alpine, command: [echo, "{{workflow.status}} {{workflow.duration}}"]}
`, func(p *corev1.Pod) run {
		c := command(p)
		if c[0] == "sh" {
			attempts++
			if attempts < 3 {
				return run{code: 2}
			}
			return run{params: map[string]string{"out": "got " + c[2]}}
		}
		return echo(p)
	})
	start := h.now
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	r := h.node("retry[0].flaky")
	if r.Type != NodeTypeRetry || len(r.Children) != 3 || h.node("retry[0].flaky(1)").Message != "Error (exit code 2)" {
		t.Fatalf("retry node %+v: %s", r, h.dump())
	}
	if got := *h.node("retry[1].use").Outputs.Result; got != "got try 2" {
		t.Fatalf("use got %q", got)
	}
	if got := h.node("retry").Outputs.Parameters[0]; string(*got.Value) != "got try 2" {
		t.Fatalf("steps output %v", got)
	}
	// Backoff: 10 s, then 20 s.
	a1, a2 := h.node("retry[0].flaky(1)"), h.node("retry[0].flaky(2)")
	if d := a1.StartedAt.Sub(start); d < 10*time.Second {
		t.Fatalf("second attempt after %v", d)
	}
	if d := a2.StartedAt.Sub(a1.StartedAt.Time); d < 20*time.Second {
		t.Fatalf("third attempt %v after the second", d)
	}
	// workflow.duration: the seconds since the workflow started (the backoffs' 30 s at least).
	got := *h.node("retry.onExit").Outputs.Result
	status, dur, _ := strings.Cut(got, " ")
	if secs, err := strconv.ParseFloat(dur, 64); status != "Succeeded" || err != nil || secs < 30 || secs > 600 {
		t.Fatalf("onExit saw %q", got)
	}
}

func TestDeadlineSuspendResourceAndTemplateRef(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: dl}
spec:
  entrypoint: main
  activeDeadlineSeconds: 60
  serviceAccountName: robot
  templates:
  - name: main
    steps:
    - - {name: wait, template: wait}
    - - {name: cm, template: cm}
    - - {name: shared, templateRef: {name: lib, template: hello}}
    - - {name: forever, template: forever}
  - name: wait
    suspend: {duration: 20s}
  - name: cm
    resource:
      action: create
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{workflow.name}}-cm"}
  - name: forever
    container: {image: alpine, command: [sleep, infinity]}
`, func(p *corev1.Pod) run {
		if command(p)[0] == "sleep" {
			return run{code: -1}
		}
		return echo(p)
	})
	j, _ := yaml.YAMLToJSON([]byte(`
templates:
- name: hello
  steps: [[{name: inner, template: say}]]
- name: say
  container: {image: alpine, command: [echo, from-lib]}
`))
	var lib WorkflowSpec
	if err := json.Unmarshal(j, &lib); err != nil {
		t.Fatal(err)
	}
	h.fc.templates["false/lib"] = &lib
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowFailed || h.wf.Status.Message != msgWfDeadline {
		t.Fatal(h.dump())
	}
	if w := h.node("dl[0].wait"); w.Phase != NodeSucceeded || w.FinishedAt.Sub(w.StartedAt.Time) < 20*time.Second {
		t.Fatalf("suspend %+v", w)
	}
	if !slices.Equal(h.fc.resources, []string{"create ConfigMap/dl-cm as robot"}) {
		t.Fatalf("resources %q", h.fc.resources)
	}
	if r := h.node("dl[2].shared[0].inner").Outputs; r == nil || r.Result == nil || *r.Result != "from-lib" {
		t.Fatal(h.dump())
	}
	if r := h.node("dl[2].shared[0].inner").Outputs.Result; r == nil || *r != "from-lib" {
		t.Fatal(h.dump())
	}
	f := h.node("dl[3].forever")
	if f.Phase != NodeFailed || f.Message != msgDeadline {
		t.Fatalf("forever %+v", f)
	}
	if len(h.fc.pods) != 1 { // the forever pod was deleted; the library step's pod is left
		t.Fatalf("%d pods left", len(h.fc.pods))
	}
}

// TestTemplateTimeout: a container template's timeout (here from a parameter) ends its node
// from its start, while its pod never finishes.
func TestTemplateTimeout(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: to}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: slow, template: slow, arguments: {parameters: [{name: t, value: "5s"}]}}]]
  - name: slow
    inputs: {parameters: [{name: t}]}
    timeout: "{{inputs.parameters.t}}"
    container: {image: alpine, command: [sleep, infinity]}
`, func(p *corev1.Pod) run { return run{code: -1} })
	h.runToEnd()
	n := h.node("to[0].slow")
	if h.wf.Status.Phase != WorkflowFailed || n.Phase != NodeFailed || n.Message != msgDeadline {
		t.Fatal(h.dump())
	}
	if d := n.FinishedAt.Sub(n.StartedAt.Time); d < 5*time.Second || d > 10*time.Second {
		t.Fatalf("ended after %v", d)
	}
	if len(h.fc.pods) != 0 {
		t.Fatalf("%d pods left", len(h.fc.pods))
	}
}

// TestWorkflowPriorityVariable: {{workflow.priority}} is the Workflow's spec.priority, as in Argo.
func TestWorkflowPriorityVariable(t *testing.T) {
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: prio}
spec:
  entrypoint: main
  priority: 7
  templates:
  - name: main
    container: {image: alpine, command: [echo, "p={{workflow.priority}}"]}
`, echo)
	h.runToEnd()
	if r := h.node("prio").Outputs; h.wf.Status.Phase != WorkflowSucceeded || r == nil || r.Result == nil || *r.Result != "p=7" {
		t.Fatal(h.dump())
	}
}
