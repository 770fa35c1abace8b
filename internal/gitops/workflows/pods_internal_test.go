package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const oneStep = `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: nope:1, command: [x]}
`

// A pull that keeps failing fails the node after the grace period, with the kubelet's reason
// and message on the node and the workflow; the pod goes.
func TestImagePullFailsAfterGrace(t *testing.T) {
	h := newHarness(t, oneStep, func(*corev1.Pod) run {
		return run{waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope:1"`}}
	})
	h.pullGrace = time.Minute
	start := h.now
	h.step()
	h.step()
	if n := h.node("wf"); n.Phase != NodePending || n.Message != `ImagePullBackOff: Back-off pulling image "nope:1"` {
		t.Fatalf("before the grace period: %s", h.dump())
	}
	h.runToEnd()
	want := `ImagePullBackOff: Back-off pulling image "nope:1"`
	if h.wf.Status.Phase != WorkflowFailed || h.wf.Status.Message != want || h.node("wf").Message != want {
		t.Fatal(h.dump())
	}
	if took := h.wf.Status.FinishedAt.Sub(start); took < time.Minute || took > time.Minute+2*time.Second {
		t.Fatalf("failed after %s, want the grace period (1m)", took)
	}
	if len(h.fc.pods) != 0 {
		t.Fatalf("the pod stayed: %v", h.fc.order)
	}
}

// A bad image name fails at once; a retryStrategy retries it as any failed node.
func TestInvalidImageNameFailsAtOnceAndRetries(t *testing.T) {
	h := newHarness(t, strings.Replace(oneStep, "  - name: main\n", "  - name: main\n    retryStrategy: {limit: 1}\n", 1), func(*corev1.Pod) run {
		return run{waiting: &corev1.ContainerStateWaiting{Reason: "InvalidImageName", Message: `couldn't parse image name "nope:1"`}}
	})
	h.pullGrace = time.Hour
	start := h.now
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowFailed || h.wf.Status.FinishedAt.Sub(start) > 10*time.Second {
		t.Fatal(h.dump())
	}
	if a := h.node("wf(0)"); a.Phase != NodeFailed || a.Message != `InvalidImageName: couldn't parse image name "nope:1"` {
		t.Fatal(h.dump())
	}
	if h.node("wf(1)").Phase != NodeFailed || len(h.fc.order) != 2 {
		t.Fatalf("not retried: %s", h.dump())
	}
}

// A pod the API server refuses (a ResourceQuota) has the refusal on its node while it is tried
// again, then fails the node with it after createTimeout; a refusal that ends lets it run.
func TestRefusedPodRetriedThenFails(t *testing.T) {
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "wf",
		errorString(`exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`))
	h := newHarness(t, oneStep, echo)
	h.createTimeout = time.Minute
	tries := 0
	h.fc.createErr = func(*corev1.Pod) error { tries++; return quota }
	start := h.now
	h.step()
	n := h.node("wf")
	if n.Phase != NodePending || !strings.Contains(n.Message, "exceeded quota: q") || !strings.HasPrefix(n.Message, "pod not created: ") {
		t.Fatal(h.dump())
	}
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowFailed || !strings.Contains(h.node("wf").Message, "exceeded quota: q") ||
		!strings.Contains(h.node("wf").Message, "(tried for 1m0s)") {
		t.Fatal(h.dump())
	}
	if took := h.wf.Status.FinishedAt.Sub(start); took < time.Minute || took > time.Minute+31*time.Second {
		t.Fatalf("failed after %s", took)
	}
	if tries < 3 || tries > 30 {
		t.Fatalf("%d tries in a minute: want a backoff", tries)
	}

	// The quota frees up before the timeout: the pod is made and the step runs.
	h = newHarness(t, oneStep, echo)
	h.createTimeout = time.Minute
	tries = 0
	h.fc.createErr = func(*corev1.Pod) error {
		if tries++; tries < 3 {
			return quota
		}
		return nil
	}
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded || h.node("wf").Message != "" {
		t.Fatal(h.dump())
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A container without command runs the image's ENTRYPOINT and CMD, or ENTRYPOINT and its args;
// an image that cannot be read errors the node naming it.
func TestContainerWithoutCommand(t *testing.T) {
	y := `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: plain, template: plain}
      - {name: args, template: args}
      - {name: cmd-only, template: cmd-only}
  - name: plain
    container: {image: "reg.example/tool:1"}
  - name: args
    container: {image: "reg.example/tool:1", args: [hello, world]}
  - name: cmd-only
    container: {image: "reg.example/shell:1"}
`
	got := map[string][]string{}
	h := newHarness(t, y, func(p *corev1.Pod) run {
		got[p.Annotations[AnnotationNodeName]] = command(p)
		return run{}
	})
	h.fc.images = map[string]ImageCommand{
		"reg.example/tool:1":  {Entrypoint: []string{"/bin/tool", "--flag"}, Cmd: []string{"default"}},
		"reg.example/shell:1": {Cmd: []string{"sh", "-c", "true"}},
	}
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	for name, want := range map[string][]string{
		"wf[0].plain":    {"/bin/tool", "--flag", "default"},
		"wf[0].args":     {"/bin/tool", "--flag", "hello", "world"},
		"wf[0].cmd-only": {"sh", "-c", "true"},
	} {
		if !slices.Equal(got[name], want) {
			t.Errorf("%s runs %q, want %q", name, got[name], want)
		}
	}

	h = newHarness(t, strings.Replace(y, "reg.example/shell:1", "reg.example/gone:1", 1), func(*corev1.Pod) run { return run{} })
	h.fc.images = map[string]ImageCommand{"reg.example/tool:1": {Cmd: []string{"x"}}}
	h.runToEnd()
	n := h.node("wf[0].cmd-only")
	if h.wf.Status.Phase != WorkflowFailed || n.Phase != NodeError || !strings.Contains(n.Message, `image "reg.example/gone:1" could not be read: no registry in unit tests`) {
		t.Fatal(h.dump())
	}
}

// The runtime's default deadline ends a workflow that gives none; its own wins.
func TestDefaultActiveDeadline(t *testing.T) {
	forever := func(*corev1.Pod) run { return run{code: -1} }
	ten := int64(10)
	h := newHarness(t, oneStep, forever)
	h.defaultDeadline = &ten
	start := h.now
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowFailed || h.wf.Status.Message != msgWfDeadline || h.wf.Status.FinishedAt.Sub(start) != 10*time.Second {
		t.Fatal(h.dump())
	}
	h = newHarness(t, strings.Replace(oneStep, "  entrypoint: main\n", "  entrypoint: main\n  activeDeadlineSeconds: 20\n", 1), forever)
	h.defaultDeadline = &ten
	start = h.now
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowFailed || h.wf.Status.FinishedAt.Sub(start) != 20*time.Second {
		t.Fatal(h.dump())
	}
}

func TestDecodeControllerConfig(t *testing.T) {
	images, defaults, err := DecodeControllerConfig(map[string]string{
		"images":           "docker/whalesay:latest:\n  cmd: [cowsay]\nalpine:3:\n  entrypoint: [/bin/sh]\n",
		"workflowDefaults": "metadata: {labels: {a: b}}\nspec:\n  activeDeadlineSeconds: 3600\n",
	}, "ConfigMap r/workflow-controller-configmap")
	if err != nil || *defaults.Deadline != 3600 || defaults.Labels["a"] != "b" || !slices.Equal(images["docker/whalesay:latest"].Cmd, []string{"cowsay"}) ||
		!slices.Equal(images["alpine:3"].Entrypoint, []string{"/bin/sh"}) {
		t.Fatalf("%v %v %v", images, defaults, err)
	}
	for _, c := range []struct{ key, val, want string }{
		{"images", "alpine:3: {command: [x]}", `ConfigMap r/workflow-controller-configmap key images`},
		{"images", "alpine:3: {}", "alpine:3: needs an entrypoint or a cmd"},
		{"images", "'UPPER//x': {cmd: [x]}", "is not an image reference"},
		{"workflowDefaults", "spec: {paralelism: 3}", `key workflowDefaults: is not a Workflow's metadata (labels, annotations) and spec: error unmarshaling JSON: while decoding JSON: json: unknown field "paralelism"`},
		{"workflowDefaults", "spec: {activeDeadlineSeconds: 0}", "workflowDefaults.spec.activeDeadlineSeconds"},
		{"workflowDefaults", "spec: {workflowTemplateRef: {name: t}}", "workflowDefaults.spec.workflowTemplateRef"},
		{"workflowDefaults", "spec: {shutdown: Stop}", "cannot default shutdown or suspend"},
		{"workflowDefaults", "spec: {templates: [{container: {image: a}}]}", "workflowDefaults.spec.templates[0].name"},
	} {
		_, _, err := DecodeControllerConfig(map[string]string{c.key: c.val}, "ConfigMap r/workflow-controller-configmap")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.key, c.val, err, c.want)
		}
	}
}

func TestDockerConfigAuth(t *testing.T) {
	data := []byte(`{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}, "reg.example:5000": {"username": "u", "password": "p"}}}`)
	for _, c := range []struct{ reg, user, pass string }{
		{"index.docker.io", "user", "pass"}, {"reg.example:5000", "u", "p"}, {"REG.example:5000", "u", "p"},
	} {
		ac, ok, err := DockerConfigAuth(data, false, registryHost(c.reg))
		if err != nil || !ok || ac.Username != c.user || ac.Password != c.pass {
			t.Errorf("%s: %+v %v %v", c.reg, ac, ok, err)
		}
	}
	if _, ok, err := DockerConfigAuth(data, false, "other.example"); ok || err != nil {
		t.Errorf("another registry got credentials: %v %v", ok, err)
	}
	if _, ok, err := DockerConfigAuth([]byte(`{"reg.example": {"auth": "dTpw"}}`), true, "reg.example"); !ok || err != nil {
		t.Errorf(".dockercfg: %v %v", ok, err)
	}
	if _, _, err := DockerConfigAuth([]byte(`{"auths": {"reg.example": {"auth": "%%%"}}}`), false, "reg.example"); err == nil ||
		!strings.Contains(err.Error(), `auths["reg.example"].auth is not base64`) {
		t.Errorf("bad auth: %v", err)
	}
}

// A pod the API server finds invalid fails its node at once.
func TestInvalidPodFailsAtOnce(t *testing.T) {
	h := newHarness(t, oneStep, echo)
	h.createTimeout = time.Hour
	h.fc.createErr = func(*corev1.Pod) error {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "wf", nil)
	}
	start := h.now
	h.runToEnd()
	if n := h.node("wf"); h.wf.Status.Phase != WorkflowFailed || n.Phase != NodeFailed || !strings.Contains(n.Message, "is invalid") ||
		h.wf.Status.FinishedAt.Sub(start) != 0 {
		t.Fatal(h.dump())
	}
}

// TestWorkflowDefaultsApply: the Workflow's fields win over the defaults; objects merge field
// by field; templates, parameters and volumes merge by name; other lists are the Workflow's.
func TestWorkflowDefaultsApply(t *testing.T) {
	d, err := decodeWorkflowDefaults(`
metadata: {labels: {team: core, tier: x}}
spec:
  serviceAccountName: default-sa
  parallelism: 5
  podGC: {strategy: OnPodSuccess}
  ttlStrategy: {secondsAfterCompletion: 60, secondsAfterFailure: 600}
  nodeSelector: {pool: ci}
  tolerations: [{key: a, operator: Exists}]
  arguments: {parameters: [{name: env, value: dev}, {name: region, value: eu}]}
  templates: [{name: notify, container: {image: busybox, command: [echo, default]}}, {name: main, container: {image: default}}]
  hooks: {exit: {template: notify}}
`, "workflowDefaults")
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.YAMLToJSON([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w, labels: {tier: own}}
spec:
  entrypoint: main
  parallelism: 2
  ttlStrategy: {secondsAfterFailure: 5}
  tolerations: [{key: b, operator: Exists}]
  arguments: {parameters: [{name: env, value: prod}]}
  templates: [{name: main, container: {image: own}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Apply(&wf.Spec)
	if err != nil {
		t.Fatal(err)
	}
	d.ApplyMetadata(wf)
	var params []string
	for _, p := range got.Arguments.Parameters {
		params = append(params, p.Name+"="+string(*p.Value))
	}
	var tmpls []string
	for _, tp := range got.Templates {
		tmpls = append(tmpls, tp.Name+":"+tp.Container.Image)
	}
	switch {
	case got.ServiceAccountName != "default-sa" || *got.Parallelism != 2 || got.PodGC == nil || got.PodGC.Strategy != "OnPodSuccess":
		t.Errorf("scalars: %+v", got)
	case got.TTLStrategy == nil || got.TTLStrategy.SecondsAfterCompletion == nil || *got.TTLStrategy.SecondsAfterCompletion != 60 || *got.TTLStrategy.SecondsAfterFailure != 5:
		t.Errorf("ttlStrategy %+v", got.TTLStrategy)
	case len(got.Tolerations) != 1 || got.Tolerations[0].Key != "b" || got.NodeSelector["pool"] != "ci":
		t.Errorf("lists: %+v %v", got.Tolerations, got.NodeSelector)
	case !slices.Equal(params, []string{"env=prod", "region=eu"}):
		t.Errorf("parameters %v", params)
	case !slices.Equal(tmpls, []string{"notify:busybox", "main:own"}):
		t.Errorf("templates %v", tmpls)
	case got.Hooks["exit"].Template != "notify":
		t.Errorf("hooks %+v", got.Hooks)
	case wf.Labels["team"] != "core" || wf.Labels["tier"] != "own":
		t.Errorf("labels %v", wf.Labels)
	case wf.Spec.ServiceAccountName != "" || len(wf.Spec.Templates) != 1:
		t.Errorf("the Workflow's own spec changed: %+v", wf.Spec)
	}
	if err := ValidateSpec(got, "spec"); err != nil {
		t.Errorf("merged spec: %v", err)
	}
}
