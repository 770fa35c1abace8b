package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// podSpec is the artifacts spec a pod's emissary gets, and its environment.
func podSpec(t *testing.T, p *corev1.Pod) (artifacts.Spec, map[string]corev1.EnvVar) {
	t.Helper()
	env := map[string]corev1.EnvVar{}
	var spec artifacts.Spec
	for _, e := range p.Spec.Containers[0].Env {
		env[e.Name] = e
		if e.Name == emissary.EnvArtifacts {
			if err := json.Unmarshal([]byte(e.Value), &spec); err != nil {
				t.Fatal(err)
			}
		}
	}
	return spec, env
}

func testRepo() *ArtifactRepositoryRefStatus {
	yes := true
	return &ArtifactRepositoryRefStatus{ArtifactRepository: &ArtifactRepository{S3: &S3ArtifactRepository{
		S3Bucket: S3Bucket{Endpoint: "s3.example.com:9000", Bucket: "arts", Insecure: &yes,
			AccessKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}, Key: "ak"},
			SecretKeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}, Key: "sk"}},
		KeyFormat: "runs/{{workflow.name}}/{{pod.name}}"}}}
}

// TestArtifactsPassBetweenSteps: an output artifact stored in the repository under its
// keyFormat is the next step's input (from), a DAG task's too, and a steps template's output
// (from) is the workflow's; credentials reach the pod as Secret references only.
func TestArtifactsPassBetweenSteps(t *testing.T) {
	var specs = map[string]artifacts.Spec{}
	var envs = map[string]map[string]corev1.EnvVar{}
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: arts}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: use
        template: use
        arguments: {artifacts: [{name: in, from: "{{steps.gen.outputs.artifacts.out}}"}]}
      - name: dag
        template: dag
        arguments: {artifacts: [{name: in, from: "{{steps.gen.outputs.artifacts.out}}"}]}
    outputs: {artifacts: [{name: final, from: "{{steps.gen.outputs.artifacts.out}}"}]}
  - name: dag
    inputs: {artifacts: [{name: in}]}
    dag:
      tasks:
      - {name: a, template: gen}
      - name: b
        template: use
        dependencies: [a]
        arguments: {artifacts: [{name: in, from: "{{tasks.a.outputs.artifacts.out}}"}]}
      - name: c
        template: use
        arguments: {artifacts: [{name: in, from: "{{inputs.artifacts.in}}"}]}
  - name: gen
    outputs: {artifacts: [{name: out, path: /tmp/out, globalName: result}, {name: opt, path: /tmp/opt, optional: true, archive: {none: {}}}]}
    container: {image: busybox, command: [sh, -c, "echo hi > /tmp/out"]}
  - name: use
    inputs: {artifacts: [{name: in, path: /tmp/in, mode: 0600}, {name: extra, path: /tmp/extra, raw: {data: "raw!"}}]}
    container: {image: busybox, command: [cat, /tmp/in]}
`, nil)
	h.fc.repo = testRepo()
	h.kubelet = func(p *corev1.Pod) run {
		spec, env := podSpec(t, p)
		node := p.Annotations[AnnotationNodeName]
		specs[node], envs[node] = spec, env
		if len(spec.Outputs) > 0 {
			return run{arts: map[string]int64{"out": 10}} // opt is optional and missing
		}
		return run{}
	}
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded {
		t.Fatal(h.dump())
	}
	gen := specs["arts[0].gen"]
	if len(gen.Outputs) != 2 {
		t.Fatalf("%+v", gen)
	}
	genPod := podName(nodeID("arts", "arts[0].gen"))
	out := gen.Outputs[0]
	if out.Location.S3 == nil || out.Location.S3.Key != "runs/arts/"+genPod+"/out.tgz" || out.Location.S3.Bucket != "arts" || !out.Location.S3.Insecure || out.Archive != artifacts.ArchiveTar {
		t.Fatalf("gen's output: %+v %+v", out, out.Location.S3)
	}
	if o := gen.Outputs[1]; o.Location.S3.Key != "runs/arts/"+genPod+"/opt" || o.Archive != artifacts.ArchiveNone || !o.Optional {
		t.Fatalf("unarchived output: %+v %+v", o, o.Location.S3)
	}
	// Credentials: the pod reads the Secret; its spec names the variables only.
	ak := envs["arts[0].gen"][out.Location.S3.AccessKeyEnv]
	if ak.ValueFrom == nil || ak.ValueFrom.SecretKeyRef == nil || ak.ValueFrom.SecretKeyRef.Name != "s3" || ak.ValueFrom.SecretKeyRef.Key != "ak" || ak.Value != "" {
		t.Fatalf("access key env: %+v", ak)
	}
	// The next steps load what gen stored, where their templates say.
	for _, n := range []string{"arts[1].use", "arts[1].dag.c"} {
		use := specs[n]
		if len(use.Inputs) != 2 || use.Inputs[0].Path != "/tmp/in" || *use.Inputs[0].Mode != 0o600 || use.Inputs[0].Location.S3.Key != out.Location.S3.Key {
			t.Fatalf("%s inputs: %+v", n, use.Inputs)
		}
		if use.Inputs[1].Location.Raw == nil || use.Inputs[1].Location.Raw.Data != "raw!" {
			t.Fatalf("%s raw input: %+v", n, use.Inputs[1])
		}
	}
	aPod := podName(nodeID("arts", "arts[1].dag.a"))
	if b := specs["arts[1].dag.b"]; b.Inputs[0].Location.S3.Key != "runs/arts/"+aPod+"/out.tgz" {
		t.Fatalf("dag task b loads %+v", b.Inputs[0].Location.S3)
	}
	// The node records where its artifacts are; the optional one it did not make is left out.
	g := h.node("arts[0].gen")
	if len(g.Outputs.Artifacts) != 1 || g.Outputs.Artifacts[0].S3.Key != out.Location.S3.Key {
		t.Fatalf("gen's node outputs: %+v", g.Outputs)
	}
	if root := h.node("arts"); len(root.Outputs.Artifacts) != 1 || root.Outputs.Artifacts[0].Name != "final" || root.Outputs.Artifacts[0].S3.Key != out.Location.S3.Key {
		t.Fatalf("steps outputs: %+v", root.Outputs)
	}
	if o := h.wf.Status.Outputs; o == nil || len(o.Artifacts) != 1 || o.Artifacts[0].Name != "result" {
		t.Fatalf("global outputs: %+v", o)
	}
	if r := h.wf.Status.ArtifactRepositoryRef; r == nil || r.ArtifactRepository.S3.Bucket != "arts" {
		t.Fatalf("status.artifactRepositoryRef: %+v", r)
	}
}

// TestMissingInputArtifact: a required input artifact that is not there fails the node with a
// clear message and ends the workflow, whether the controller sees it missing or the pod does.
func TestMissingInputArtifact(t *testing.T) {
	for _, tc := range []struct {
		name, y string
		kubelet func(*corev1.Pod) run
		node    string
		want    string
	}{
		{"an optional output not produced", `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: m1}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: use
        template: use
        arguments: {artifacts: [{name: in, from: "{{steps.gen.outputs.artifacts.out}}"}]}
  - name: gen
    outputs: {artifacts: [{name: out, path: /tmp/out, optional: true}]}
    container: {image: busybox, command: ["true"]}
  - name: use
    inputs: {artifacts: [{name: in, path: /tmp/in}]}
    container: {image: busybox, command: [cat, /tmp/in]}
`, func(*corev1.Pod) run { return run{} }, "m1[1].use",
			"inputs.artifacts.in: required input artifact is missing: {{steps.gen.outputs.artifacts.out}} did not resolve"},
		{"the object is not in the bucket", `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: m2}
spec:
  entrypoint: main
  templates:
  - name: main
    inputs: {artifacts: [{name: in, path: /tmp/in, s3: {endpoint: "s3:9000", bucket: b, key: nope}}]}
    container: {image: busybox, command: [cat, /tmp/in]}
`, func(*corev1.Pod) run {
			return run{code: 1, inputErr: `failed to load input artifact "in" from s3://b/nope (at s3:9000): s3://b/nope: not found (no such key)`}
		}, "m2", `failed to load input artifact "in"`},
		{"an output not saved", `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: m3}
spec:
  entrypoint: main
  templates:
  - name: main
    outputs: {artifacts: [{name: out, path: /tmp/out}]}
    container: {image: busybox, command: ["true"]}
`, func(*corev1.Pod) run {
			return run{artErrs: map[string]string{"out": "/tmp/out: no such file or directory"}}
		}, "m3", `failed to save output artifact "out": /tmp/out: no such file or directory`},
		{"no artifact repository", `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: m4}
spec:
  entrypoint: main
  templates:
  - name: main
    outputs: {artifacts: [{name: out, path: /tmp/out}]}
    container: {image: busybox, command: ["true"]}
`, func(*corev1.Pod) run { return run{} }, "m4", "outputs.artifacts.out: no artifact repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.y, tc.kubelet)
			if tc.name != "no artifact repository" {
				h.fc.repo = testRepo()
			}
			h.runToEnd()
			if h.wf.Status.Phase == WorkflowSucceeded {
				t.Fatal(h.dump())
			}
			n := h.node(tc.node)
			if n.Phase != NodeError || !strings.Contains(n.Message, tc.want) {
				t.Fatalf("node %s: %s %q, want Error %q\n%s", tc.node, n.Phase, n.Message, tc.want, h.dump())
			}
		})
	}
}

// TestOptionalInputArtifact: an optional input that is given nowhere is left out.
func TestOptionalInputArtifact(t *testing.T) {
	var got artifacts.Spec
	h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: opt}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: use
        template: use
        arguments: {artifacts: [{name: in, from: "{{steps.gen.outputs.artifacts.out}}"}]}
  - name: gen
    outputs: {artifacts: [{name: out, path: /tmp/out, optional: true}]}
    container: {image: busybox, command: ["true"]}
  - name: use
    inputs: {artifacts: [{name: in, path: /tmp/in, optional: true}, {name: w, path: /w, http: {url: "https://example.com/x"}}]}
    container: {image: busybox, command: ["true"]}
`, nil)
	h.fc.repo = testRepo()
	h.kubelet = func(p *corev1.Pod) run {
		if p.Annotations[AnnotationNodeName] == "opt[1].use" {
			got, _ = podSpec(t, p)
		}
		return run{}
	}
	h.runToEnd()
	if h.wf.Status.Phase != WorkflowSucceeded || len(got.Inputs) != 1 || got.Inputs[0].Name != "w" || got.Inputs[0].Location.HTTP.URL != "https://example.com/x" {
		t.Fatalf("%+v\n%s", got, h.dump())
	}
}

// TestArtifactGCDue: which stored artifacts are deleted when.
func TestArtifactGCDue(t *testing.T) {
	s3 := &S3Artifact{S3Bucket: S3Bucket{Endpoint: "e", Bucket: "b"}, Key: "k"}
	st := &WorkflowStatus{Phase: WorkflowRunning, Nodes: map[string]NodeStatus{
		"n1": {Type: NodeTypePod, Outputs: &Outputs{Artifacts: []Artifact{
			{Name: "wf", ArtifactLocation: ArtifactLocation{S3: s3}},
			{Name: "never", ArtifactGC: &ArtifactGC{Strategy: ArtifactGCNever}, ArtifactLocation: ArtifactLocation{S3: s3}},
			{Name: "del", ArtifactGC: &ArtifactGC{Strategy: ArtifactGCOnWorkflowDeletion}, ArtifactLocation: ArtifactLocation{S3: s3}},
			{Name: "http", ArtifactLocation: ArtifactLocation{HTTP: &HTTPArtifact{URL: "https://x"}}},
			{Name: "gone", Deleted: true, ArtifactLocation: ArtifactLocation{S3: s3}},
		}}},
	}}
	spec := &WorkflowSpec{ArtifactGC: &WorkflowArtifactGC{ArtifactGC: ArtifactGC{Strategy: ArtifactGCOnWorkflowCompletion}}}
	if d := dueArtifacts(spec, st, false); len(d) != 0 {
		t.Fatalf("running: %v", d)
	}
	st.Phase = WorkflowFailed
	if d := dueArtifacts(spec, st, false); len(d) != 1 || d[0].i != 0 {
		t.Fatalf("completed: %v", d)
	}
	if d := dueArtifacts(spec, st, true); len(d) != 2 || d[1].i != 2 {
		t.Fatalf("deleted: %v", d)
	}
	if !needsGCFinalizer(&WorkflowSpec{Templates: []Template{{Outputs: Outputs{Artifacts: []Artifact{{ArtifactGC: &ArtifactGC{Strategy: ArtifactGCOnWorkflowDeletion}}}}}}}) || needsGCFinalizer(spec) {
		t.Fatal("needsGCFinalizer")
	}
}

// TestArtifactFromExpression: Argo's coin-flip example — the artifact of whichever task ran,
// chosen by a fromExpression on another task's result, in a task's arguments and in the DAG's
// outputs.
func TestArtifactFromExpression(t *testing.T) {
	for _, side := range []string{"heads", "tails"} {
		t.Run(side, func(t *testing.T) {
			var got artifacts.Spec
			h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: flip}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: flip-coin, template: flip}
      - {name: heads, template: make, depends: flip-coin, when: "{{tasks.flip-coin.outputs.result}} == heads"}
      - {name: tails, template: make, depends: flip-coin, when: "{{tasks.flip-coin.outputs.result}} == tails"}
      - name: use
        template: use
        depends: heads || tails
        arguments:
          artifacts:
          - name: in
            fromExpression: "tasks['flip-coin'].outputs.result == 'heads' ? tasks.heads.outputs.artifacts.out : tasks.tails.outputs.artifacts.out"
    outputs:
      artifacts:
      - {name: chosen, fromExpression: "tasks['flip-coin'].outputs.result == 'heads' ? tasks.heads.outputs.artifacts.out : tasks.tails.outputs.artifacts.out"}
  - {name: flip, script: {image: busybox, command: [sh], source: "echo"}}
  - name: make
    outputs: {artifacts: [{name: out, path: /tmp/out}]}
    container: {image: busybox, command: ["true"]}
  - name: use
    inputs: {artifacts: [{name: in, path: /tmp/in}]}
    container: {image: busybox, command: [cat, /tmp/in]}
`, nil)
			h.fc.repo = testRepo()
			h.kubelet = func(p *corev1.Pod) run {
				switch p.Annotations[AnnotationNodeName] {
				case "flip.flip-coin":
					return run{result: side}
				case "flip.use":
					got, _ = podSpec(t, p)
				}
				if spec, _ := podSpec(t, p); len(spec.Outputs) > 0 {
					return run{arts: map[string]int64{"out": 1}}
				}
				return run{}
			}
			h.runToEnd()
			if h.wf.Status.Phase != WorkflowSucceeded {
				t.Fatal(h.dump())
			}
			want := "runs/flip/" + podName(nodeID("flip", "flip."+side)) + "/out.tgz"
			if len(got.Inputs) != 1 || got.Inputs[0].Location.S3.Key != want {
				t.Fatalf("use loads %+v, want %s", got.Inputs, want)
			}
			if o := h.node("flip").Outputs; o == nil || len(o.Artifacts) != 1 || o.Artifacts[0].S3.Key != want {
				t.Fatalf("the DAG's output: %+v", o)
			}
		})
	}
}
