package workflows_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/s3env"
)

// TestRealNodeArtifacts runs workflows whose pods really move artifacts through a real
// S3-compatible server: it listens on the real node's bridge address (the node's InternalIP),
// which the pods reach. The runtime's artifact repository is workflow-controller-configmap's,
// with credentials from a Secret; a step stores a directory (tar+gzip) and a file (archive
// none), the next step loads the directory where its template says, with a raw input beside
// it, and checks the content; artifactGC OnWorkflowCompletion deletes the object whose own
// strategy does not say Never. A missing input fails its workflow with a clear message.
func TestRealNodeArtifacts(t *testing.T) {
	c, reg := containers.RealNode(t)
	rn, err := c.Client.CoreV1().Nodes().Get(context.Background(), kube.RealNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeIP := ""
	for _, a := range rn.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	if nodeIP == "" {
		t.Fatalf("the real node has no InternalIP: %+v", rn.Status.Addresses)
	}
	s3 := s3env.Start(t, s3env.Options{Host: nodeIP})
	s3.Bucket(t, "artifacts")
	image := reg.EmissaryImage(t)
	sel, tol := kube.RealNodePlacement()
	e := startEnv(t, c, workflows.Options{ExecutorImage: image, ExecutorPath: "/usr/bin/freshet", NodeSelector: sel, Tolerations: tol})
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-creds"},
		StringData: map[string]string{"accesskey": s3.AccessKey, "secretkey": s3.SecretKey}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: workflows.ControllerConfigMap},
		Data: map[string]string{workflows.ControllerConfigMapRepositoryKey: `
s3:
  bucket: artifacts
  endpoint: ` + s3.Endpoint + `
  insecure: true
  accessKeySecret: {name: s3-creds, key: accesskey}
  secretKeySecret: {name: s3-creds, key: secretkey}
  keyFormat: "runs/{{workflow.name}}/{{pod.name}}"
`}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	busybox := reg.Ref(containers.ImageBusybox)
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: arts}
spec:
  entrypoint: main
  artifactGC: {strategy: OnWorkflowCompletion}
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - name: use
        template: use
        arguments: {artifacts: [{name: tree, from: "{{steps.gen.outputs.artifacts.tree}}"}]}
  - name: gen
    outputs:
      artifacts:
      - {name: tree, path: /tmp/tree}
      - {name: note, path: /tmp/note.txt, archive: {none: {}}, artifactGC: {strategy: Never}, globalName: note}
    container:
      image: `+busybox+`
      command: [sh, -c, 'mkdir -p /tmp/tree/sub && echo alpha > /tmp/tree/a.txt && echo beta > /tmp/tree/sub/b.txt && echo "made on $(hostname)" > /tmp/note.txt']
  - name: use
    inputs:
      artifacts:
      - {name: tree, path: /work/in, mode: 0755}
      - {name: greeting, path: /work/greeting, raw: {data: "hello raw"}}
    container:
      image: `+busybox+`
      command: [sh, -c, 'test "$(cat /work/in/a.txt)" = alpha && test "$(cat /work/in/sub/b.txt)" = beta && test "$(cat /work/greeting)" = "hello raw" && ! env | grep -q FRESHET_ARTIFACT && echo checked']
`)
	wf := e.finished("arts", 4*time.Minute)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	gen := node(t, wf, "arts[0].gen")
	if gen.Outputs == nil || len(gen.Outputs.Artifacts) != 2 {
		t.Fatalf("gen's outputs: %+v", gen.Outputs)
	}
	tree, note := gen.Outputs.Artifacts[0], gen.Outputs.Artifacts[1]
	if tree.S3 == nil || tree.S3.Key != "runs/arts/"+gen.ID+"/tree.tgz" || tree.S3.Bucket != "artifacts" {
		t.Fatalf("tree stored at %+v", tree.S3)
	}
	if r := node(t, wf, "arts[1].use").Outputs; r == nil || r.Result == nil || *r.Result != "checked" {
		t.Fatalf("use: %+v", r)
	}
	// artifactGC: the tree is deleted once the workflow completed; the note (Never) stays.
	mc := s3.Client(t)
	e.waitFor("artifactGC", time.Minute, func() (bool, string) {
		wf := e.workflow("arts")
		st := wf.Status.ArtifactGCStatus
		return st != nil && st.Done, dump(wf)
	})
	if _, err := mc.StatObject(ctx, "artifacts", tree.S3.Key, minio.StatObjectOptions{}); err == nil || minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Fatalf("the tree is still stored: %v", err)
	}
	obj, err := mc.GetObject(ctx, "artifacts", note.S3.Key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || string(b) != "made on "+gen.ID+"\n" {
		t.Fatalf("the note: %q %v", b, err)
	}
	if got := e.workflow("arts"); got.Status.Outputs == nil || len(got.Status.Outputs.Artifacts) != 1 || got.Status.Outputs.Artifacts[0].Name != "note" {
		t.Fatalf("global outputs: %+v", got.Status.Outputs)
	} else if n := node(t, got, "arts[0].gen"); !n.Outputs.Artifacts[0].Deleted || n.Outputs.Artifacts[1].Deleted {
		t.Fatalf("deleted marks: %+v", n.Outputs.Artifacts)
	}

	// artifactGC OnWorkflowDeletion: the object stays while the Workflow does; deleting the
	// Workflow deletes it, the finalizer holding the Workflow until then.
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: kept}
spec:
  entrypoint: main
  artifactGC: {strategy: OnWorkflowDeletion}
  templates:
  - name: main
    outputs: {artifacts: [{name: log, path: /tmp/log.txt}]}
    container: {image: `+busybox+`, command: [sh, -c, 'echo kept > /tmp/log.txt']}
`)
	wf = e.finished("kept", 4*time.Minute)
	if wf.Status.Phase != workflows.WorkflowSucceeded || !slices.Contains(wf.Finalizers, workflows.FinalizerArtifactGC) {
		t.Fatalf("kept: %v %s", wf.Finalizers, dump(wf))
	}
	kept := node(t, wf, "kept").Outputs.Artifacts[0].S3.Key
	if _, err := mc.StatObject(ctx, "artifacts", kept, minio.StatObjectOptions{}); err != nil {
		t.Fatalf("kept before deletion: %v", err)
	}
	if err := c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the deleted workflow to go", time.Minute, func() (bool, string) {
		_, err := c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(ctx, "kept", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := mc.StatObject(ctx, "artifacts", kept, minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Fatalf("kept after deletion: %v", err)
	}

	// A missing input: the pod's emissary cannot load it, the command never runs, the workflow
	// ends with the reason on the node.
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: missing}
spec:
  entrypoint: main
  templates:
  - name: main
    inputs:
      artifacts:
      - name: data
        path: /tmp/data
        s3: {endpoint: "`+s3.Endpoint+`", insecure: true, bucket: artifacts, key: no/such/object, accessKeySecret: {name: s3-creds, key: accesskey}, secretKeySecret: {name: s3-creds, key: secretkey}}
    container: {image: `+busybox+`, command: [cat, /tmp/data]}
`)
	wf = e.finished("missing", 4*time.Minute)
	n := node(t, wf, "missing")
	if wf.Status.Phase == workflows.WorkflowSucceeded || n.Phase != workflows.NodeError ||
		!strings.Contains(n.Message, `failed to load input artifact "data"`) || !strings.Contains(n.Message, "no such key") {
		t.Fatalf("missing input: %s %q\n%s", n.Phase, n.Message, dump(wf))
	}
}
