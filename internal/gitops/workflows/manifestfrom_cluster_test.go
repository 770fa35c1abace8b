package workflows_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/s3env"
)

// TestResourceManifestFromRawOnCluster: a resource template creates a ConfigMap whose manifest
// is a raw input artifact the step gives, as the workflow's service account.
func TestResourceManifestFromRawOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.grantConfigMaps("robot")
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: mf}
spec:
  entrypoint: main
  serviceAccountName: robot
  templates:
  - name: main
    steps:
    - - name: raw
        template: make
        arguments:
          artifacts:
          - name: manifest
            raw:
              data: |
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: from-raw}
                data: {from: raw}
  - name: make
    inputs:
      artifacts:
      - name: manifest
    resource:
      action: create
      manifestFrom:
        artifact:
          name: manifest
`)
	wf := e.finished("mf", 60*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	if m := node(t, wf, "mf[0].raw").Message; m != "created configmap/from-raw" {
		t.Fatalf("raw: %s", m)
	}
	cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "from-raw", metav1.GetOptions{})
	if err != nil || cm.Data["from"] != "raw" {
		t.Fatalf("from-raw: %v %+v", err, cm)
	}
}

// TestResourceManifestFromS3OnCluster: the controller reads manifestFrom artifacts from an S3
// bucket with the namespace's Secret as credentials — a YAML object, and a tar.gz of one file
// as output artifacts are stored — and fails a node whose artifact is over 1 MiB, naming it.
func TestResourceManifestFromS3OnCluster(t *testing.T) {
	srv := s3env.Start(t, s3env.Options{})
	srv.Bucket(t, "manifests")
	put := func(key string, data []byte) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := srv.Client(t).PutObject(ctx, "manifests", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("plain.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-s3}\ndata: {from: s3}\n"))
	var tgz bytes.Buffer
	zw := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(zw)
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-tgz}\ndata: {from: tgz}\n"
	if err := tw.WriteHeader(&tar.Header{Name: "cm.yaml", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	_ = zw.Close()
	put("cm.tgz", tgz.Bytes())
	put("big.yaml", []byte("# "+strings.Repeat("x", 1<<20)+"\n"))

	e := newEnv(t, workflows.Options{})
	e.grantConfigMaps("robot")
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3"},
		StringData: map[string]string{"access": srv.AccessKey, "secret": srv.SecretKey}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s3 := func(key string) string {
		return `{name: manifest, s3: {endpoint: "` + srv.Endpoint + `", bucket: manifests, key: ` + key +
			`, insecure: true, accessKeySecret: {name: s3, key: access}, secretKeySecret: {name: s3, key: secret}}}`
	}
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: mfs3}
spec:
  entrypoint: main
  serviceAccountName: robot
  templates:
  - name: main
    steps:
    - - {name: plain, template: make, arguments: {artifacts: [`+s3("plain.yaml")+`]}}
      - {name: tgz, template: make, arguments: {artifacts: [`+s3("cm.tgz")+`]}}
      - {name: big, template: make, arguments: {artifacts: [`+s3("big.yaml")+`]}}
  - name: make
    inputs:
      artifacts:
      - name: manifest
    resource:
      action: apply
      manifestFrom:
        artifact:
          name: manifest
`)
	wf := e.finished("mfs3", 60*time.Second)
	if wf.Status.Phase != workflows.WorkflowFailed {
		t.Fatal(dump(wf))
	}
	if m := node(t, wf, "mfs3[0].plain").Message; m != "applied configmap/from-s3" {
		t.Fatalf("plain: %s", m)
	}
	if m := node(t, wf, "mfs3[0].tgz").Message; m != "applied configmap/from-tgz" {
		t.Fatalf("tgz: %s", m)
	}
	big := node(t, wf, "mfs3[0].big")
	if big.Phase != workflows.NodeFailed || big.Message != `resource.manifestFrom: input artifact "manifest" is larger than 1048576 bytes (1 MiB), the most a manifest read from an artifact may be` {
		t.Fatalf("big: %+v", big)
	}
	for name, want := range map[string]string{"from-s3": "s3", "from-tgz": "tgz"} {
		cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil || cm.Data["from"] != want {
			t.Fatalf("%s: %v %+v", name, err, cm)
		}
	}
}
