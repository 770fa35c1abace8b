package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// TestArtifactRepositoryOnCluster resolves artifact repositories from real ConfigMaps as Argo
// does: none configured fails the node naming where it looked; the namespace's
// artifact-repositories default wins over the runtime's workflow-controller-configmap;
// spec.artifactRepositoryRef picks another key; a bad repository is refused naming its
// ConfigMap and field. The pods' emissary spec carries the bucket and the rendered key (kwok
// runs no container: the spec on the pod is what is checked).
func TestArtifactRepositoryOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	wf := func(name, extra string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: ` + name + `}
spec:
  entrypoint: main` + extra + `
  templates:
  - name: main
    outputs: {artifacts: [{name: out, path: /tmp/out}]}
    container: {image: busybox, command: ["true"]}
`
	}
	e.create(workflows.WorkflowsResource, wf("none", ""))
	got := e.finished("none", 30*time.Second)
	if n := node(t, got, "none"); n.Phase != workflows.NodeError || !strings.Contains(n.Message, "no artifact repository is configured") ||
		!strings.Contains(n.Message, workflows.ControllerConfigMap) {
		t.Fatalf("%s %q", n.Phase, n.Message)
	}

	cm := func(name string, ann map[string]string, data map[string]string) {
		t.Helper()
		if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	spec := func(name string) (artifacts.Spec, *corev1.Pod) {
		t.Helper()
		var pod *corev1.Pod
		e.waitFor("the pod of "+name, 30*time.Second, func() (bool, string) {
			pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=" + name})
			if err != nil || len(pods.Items) == 0 {
				return false, ""
			}
			pod = &pods.Items[0]
			return true, ""
		})
		var s artifacts.Spec
		for _, env := range pod.Spec.Containers[0].Env {
			if env.Name == emissary.EnvArtifacts {
				if err := json.Unmarshal([]byte(env.Value), &s); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(s.Outputs) != 1 || s.Outputs[0].Location.S3 == nil {
			t.Fatalf("pod %s: %+v", pod.Name, s)
		}
		return s, pod
	}
	// The status is written after the pod is made: wait for it.
	repoRef := func(name string, ok func(*workflows.ArtifactRepositoryRefStatus) bool) {
		t.Helper()
		e.waitFor(name+"'s status.artifactRepositoryRef", 30*time.Second, func() (bool, string) {
			r := e.workflow(name).Status.ArtifactRepositoryRef
			return r != nil && ok(r), fmt.Sprintf("%+v", r)
		})
	}
	cm(workflows.ControllerConfigMap, nil, map[string]string{workflows.ControllerConfigMapRepositoryKey: "s3: {bucket: runtime, endpoint: 's3.runtime:9000'}"})
	e.create(workflows.WorkflowsResource, wf("rt", ""))
	if s, pod := spec("rt"); s.Outputs[0].Location.S3.Bucket != "runtime" || s.Outputs[0].Location.S3.Key != "rt/"+pod.Name+"/out.tgz" {
		t.Fatalf("rt: %+v", s.Outputs[0].Location.S3)
	}
	repoRef("rt", func(r *workflows.ArtifactRepositoryRefStatus) bool {
		return r.Default && r.ConfigMap == workflows.ControllerConfigMap && r.ArtifactRepository.S3.Bucket == "runtime"
	})
	cm(workflows.ArtifactRepositoriesConfigMap, map[string]string{workflows.AnnotationDefaultArtifactRepository: "team"}, map[string]string{
		"team":  "s3: {bucket: team, endpoint: 's3.team:9000', insecure: true, keyFormat: 'team/{{workflow.name}}/{{workflow.parameters.p}}'}",
		"other": "s3: {bucket: other, endpoint: 's3.other:9000'}",
		"bad":   "s3: {bucket: b, endpoint: e, keyFormat: '{{inputs.parameters.x}}'}",
	})
	e.create(workflows.WorkflowsResource, wf("team", "\n  arguments: {parameters: [{name: p, value: v1}]}"))
	s, pod := spec("team")
	if l := s.Outputs[0].Location.S3; l.Bucket != "team" || l.Endpoint != "s3.team:9000" || !l.Insecure || l.Key != "team/team/v1/out.tgz" {
		t.Fatalf("team: %+v (pod %s)", l, pod.Name)
	}
	repoRef("team", func(r *workflows.ArtifactRepositoryRefStatus) bool {
		return r.ConfigMap == workflows.ArtifactRepositoriesConfigMap && r.Key == "team" && !r.Default && r.Namespace == e.ns
	})
	e.create(workflows.WorkflowsResource, wf("other", "\n  artifactRepositoryRef: {key: other}"))
	if s, pod := spec("other"); s.Outputs[0].Location.S3.Bucket != "other" || s.Outputs[0].Location.S3.Key != "other/"+pod.Name+"/out.tgz" {
		t.Fatalf("other: %+v", s.Outputs[0].Location.S3)
	}
	e.create(workflows.WorkflowsResource, wf("bad", "\n  artifactRepositoryRef: {key: bad}"))
	got = e.finished("bad", 30*time.Second)
	if n := node(t, got, "bad"); n.Phase != workflows.NodeError || !strings.Contains(n.Message, "ConfigMap "+e.ns+"/artifact-repositories key bad.s3.keyFormat") {
		t.Fatalf("bad: %s %q", n.Phase, n.Message)
	}
}
