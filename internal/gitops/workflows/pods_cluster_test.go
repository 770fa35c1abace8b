package workflows_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// TestImagePullFailureOnCluster: a pod whose image cannot be pulled fails its node after the
// grace period with the kubelet's reason and message, and is deleted. The pod is held off
// kwok's nodes (a node selector no node has) and its status is written as a kubelet writes
// it for a failing pull — kwok pulls nothing.
func TestImagePullFailureOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{ImagePullGrace: 2 * time.Second})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: pull}
spec:
  entrypoint: main
  templates:
  - name: main
    nodeSelector: {freshet.dev/no-such-node: "x"}
    container: {image: registry.invalid/nope:1, command: [x]}
`)
	var pod *corev1.Pod
	e.waitFor("the pod", 30*time.Second, func() (bool, string) {
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		pod = &pods.Items[0]
		return true, ""
	})
	msg := `Back-off pulling image "registry.invalid/nope:1": ErrImagePull: dial tcp: lookup registry.invalid: no such host`
	for range 10 {
		cur, err := e.c.Client.CoreV1().Pods(e.ns).Get(e.ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "registry.invalid/nope:1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: msg}}}}
		if _, err = e.c.Client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	want := "ImagePullBackOff: " + msg
	wf := e.finished("pull", 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowFailed || wf.Status.Message != want || node(t, wf, "pull").Message != want {
		t.Fatal(dump(wf))
	}
	if took := wf.Status.FinishedAt.Sub(wf.Status.StartedAt.Time); took < time.Second {
		t.Fatalf("failed after %s: before the grace period", took)
	}
	e.waitFor("the pod deleted", 30*time.Second, func() (bool, string) {
		_, err := e.c.Client.CoreV1().Pods(e.ns).Get(e.ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestQuotaOnCluster: a ResourceQuota that refuses the pod puts the API server's message on
// the node while the pod is tried again, then fails the node after PodCreateTimeout.
func TestQuotaOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{PodCreateTimeout: 4 * time.Second})
	if _, err := e.c.Client.CoreV1().ResourceQuotas(e.ns).Create(e.ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's quota admission reads quotas from a cache (and remembers a namespace
	// without any for a while): a pod created at once can pass before the quota is seen. A
	// dry-run pod tells when the quota refuses pods.
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "alpine:3"}}}}
	e.waitFor("the quota to refuse pods", 60*time.Second, func() (bool, string) {
		_, err := e.c.Client.CoreV1().Pods(e.ns).Create(e.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "quota"), fmt.Sprint(err)
	})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: quota}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: alpine:3, command: [x]}
`)
	e.waitFor("the refusal on the node", 30*time.Second, func() (bool, string) {
		wf := e.workflow("quota")
		for _, n := range wf.Status.Nodes {
			if n.Phase == workflows.NodePending && strings.Contains(n.Message, "forbidden") && strings.Contains(n.Message, "quota") {
				return true, ""
			}
		}
		return false, dump(wf)
	})
	wf := e.finished("quota", 30*time.Second)
	n := node(t, wf, "quota")
	if wf.Status.Phase != workflows.WorkflowFailed || !strings.Contains(n.Message, "quota") || !strings.Contains(n.Message, "(tried for 4s)") {
		t.Fatal(dump(wf))
	}
}

// TestContainerWithoutCommandOnCluster: a container without command runs its image's
// ENTRYPOINT and CMD (or its args), read from a real registry (go-containerregistry's, on
// loopback) with the workflow's imagePullSecret; workflow-controller-configmap's images
// overrides the lookup; an image that cannot be read errors the node naming it.
func TestContainerWithoutCommandOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "pass" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.Config(img, v1.Config{Entrypoint: []string{"/bin/tool", "-v"}, Cmd: []string{"default"}}); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(addr + "/tool:1")
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "user", Password: "pass"})); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("user:pass"))
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"` + addr + `": {"auth": "` + auth + `"}}}`)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: workflows.ControllerConfigMap},
		Data:       map[string]string{workflows.ControllerConfigMapImagesKey: "docker/whalesay:latest:\n  cmd: [cowsay]\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	var mu sync.Mutex
	e.kubelet(func(p *corev1.Pod) (int32, emissary.Outputs) {
		mu.Lock()
		got[p.Annotations[workflows.AnnotationNodeName]] = userCommand(p)
		mu.Unlock()
		return 0, emissary.Outputs{}
	})
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: nocmd}
spec:
  entrypoint: main
  imagePullSecrets: [{name: pull}]
  templates:
  - name: main
    steps:
    - - {name: plain, template: plain}
      - {name: args, template: args}
      - {name: configured, template: configured}
  - name: plain
    container: {image: "`+addr+`/tool:1"}
  - name: args
    container: {image: "`+addr+`/tool:1", args: [a, b]}
  - name: configured
    container: {image: "docker/whalesay:latest"}
`)
	wf := e.finished("nocmd", 60*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	mu.Lock()
	ran := maps.Clone(got)
	mu.Unlock()
	for n, want := range map[string][]string{
		"nocmd[0].plain":      {"/bin/tool", "-v", "default"},
		"nocmd[0].args":       {"/bin/tool", "-v", "a", "b"},
		"nocmd[0].configured": {"cowsay"},
	} {
		if !slices.Equal(ran[n], want) {
			t.Errorf("%s ran %q, want %q", n, ran[n], want)
		}
	}

	// Without the pull secret the registry refuses; a missing image is named.
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: nocreds}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: "`+addr+`/tool:1"}
`)
	wf = e.finished("nocreds", 60*time.Second)
	want := fmt.Sprintf(`the ENTRYPOINT and CMD of image %q could not be read: the registry answered HTTP 401`, addr+"/tool:1")
	if wf.Status.Phase != workflows.WorkflowError || !strings.Contains(node(t, wf, "nocreds").Message, want) {
		t.Fatal(dump(wf))
	}
}

// TestWorkflowDefaultsDeadlineOnCluster: workflowDefaults' spec.activeDeadlineSeconds in the
// runtime's workflow-controller-configmap ends a Workflow that gives no deadline of its own.
func TestWorkflowDefaultsDeadlineOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: workflows.ControllerConfigMap},
		Data:       map[string]string{workflows.ControllerConfigMapDefaultsKey: "spec:\n  activeDeadlineSeconds: 2\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: bounded}
spec:
  entrypoint: main
  templates:
  - name: main
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0", devcluster.freshet.dev/run-duration: "1h"}}
    container: {image: alpine:3, command: [sleep, "3600"]}
`)
	wf := e.finished("bounded", 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowFailed || wf.Status.Message != "Workflow exceeded its activeDeadlineSeconds" {
		t.Fatal(dump(wf))
	}
}

// TestWorkflowDefaultsOnCluster: workflowDefaults' podMetadata, arguments, templates and
// ttlStrategy apply to a Workflow that gives none of them: its pod carries the default labels
// and sees the default label (its own parameter wins over the default's), the default exit handler
// (a default template) runs, and the finished Workflow is deleted by the default ttlStrategy.
func TestWorkflowDefaultsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: workflows.ControllerConfigMap},
		Data: map[string]string{workflows.ControllerConfigMapDefaultsKey: `
metadata: {labels: {team: core}}
spec:
  podMetadata: {labels: {from: defaults}}
  arguments: {parameters: [{name: greeting, value: hello}, {name: who, value: nobody}]}
  ttlStrategy: {secondsAfterCompletion: 5}
  onExit: notify
  templates:
  - name: notify
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0", devcluster.freshet.dev/run-duration: "100ms"}}
    container: {image: alpine:3, command: [echo, "{{workflow.name}} {{workflow.status}}"]}
`},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: defaulted}
spec:
  entrypoint: main
  arguments: {parameters: [{name: who, value: world}]}
  templates:
  - name: main
    steps:
    - - name: greet
        template: say
        arguments: {parameters: [{name: msg, value: "{{workflow.parameters.who}} {{workflow.labels.team}}"}]}
  - name: say
    inputs: {parameters: [{name: msg}]}
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0", devcluster.freshet.dev/run-duration: "100ms"}}
    container: {image: alpine:3, command: [echo, "{{inputs.parameters.msg}}"]}
`)
	var pod *corev1.Pod
	e.waitFor("the step's pod", 30*time.Second, func() (bool, string) {
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=defaulted"})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		pod = &pods.Items[0]
		return true, ""
	})
	if pod.Labels["from"] != "defaults" || !slices.Contains(pod.Spec.Containers[0].Args, "world core") && !slices.Contains(pod.Spec.Containers[0].Command, "world core") {
		t.Errorf("pod labels %v, command %q args %q", pod.Labels, pod.Spec.Containers[0].Command, pod.Spec.Containers[0].Args)
	}
	wf := e.finished("defaulted", 30*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded || node(t, wf, "defaulted.onExit").Phase != workflows.NodeSucceeded {
		t.Fatal(dump(wf))
	}
	e.waitFor("the default ttlStrategy to delete the Workflow", 60*time.Second, func() (bool, string) {
		_, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(e.ctx, "defaulted", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
