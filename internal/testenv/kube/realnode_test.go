package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// realNodeCluster starts (once per test binary) the cluster with a real node pulling from the
// loopback registry, with the test images pushed there.
func realNodeCluster(t *testing.T) (*kube.Cluster, *containers.RegistryInstance) {
	t.Helper()
	c, reg := containers.RealNode(t)
	return c, reg
}

// TestRealNodeRunsPod runs a busybox pod on the real node: the kubelet pulls the image from the
// loopback registry (with the node's credentials and CA), containerd and runc run the command,
// the pod ends Succeeded with the command's exit code, and its log is read through the
// apiserver from the kubelet. A pod that names the kwok node's annotations but not the real
// node stays on the kwok node.
func TestRealNodeRunsPod(t *testing.T) {
	c, reg := realNodeCluster(t)
	ns := c.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	node, err := c.Client.CoreV1().Nodes().Get(ctx, kube.RealNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.KubeletVersion == "" || !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("node %s: kubelet %q, runtime %q, want a kubelet on containerd", node.Name, node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion)
	}

	sel, tol := kube.RealNodePlacement()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  sel,
			Tolerations:   tol,
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   reg.Ref(containers.ImageBusybox),
				Command: []string{"sh", "-c", `echo "hello from $(hostname)"; test -d /proc/1; echo "uid=$(id -u)"; exit 0`},
			}},
		},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	waitFor(t, 3*time.Minute, "the pod to end", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if got.Spec.NodeName != kube.RealNodeName || got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod on %q ended %s: %+v", got.Spec.NodeName, got.Status.Phase, got.Status.ContainerStatuses)
	}
	st := got.Status.ContainerStatuses[0]
	if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 || !strings.Contains(st.ImageID, reg.Images[containers.ImageBusybox].Digest) {
		t.Errorf("container status %+v, want exit 0 and image %s", st, reg.Images[containers.ImageBusybox].Digest)
	}
	log, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod log: %v", err)
	}
	if want := "hello from hello\nuid=0\n"; string(log) != want {
		t.Errorf("pod log %q, want %q", log, want)
	}

	// A failing command: phase Failed, the exit code reported.
	pod.Name = "fails"
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo bye; exit 7"}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the failing pod to end", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if cs := got.Status.ContainerStatuses; got.Status.Phase != corev1.PodFailed || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 7 {
		t.Errorf("failing pod: phase %s, statuses %+v, want Failed with exit code 7", got.Status.Phase, got.Status.ContainerStatuses)
	}

	// Without the real node's selector and toleration, a pod lands on the kwok node.
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fake", Annotations: map[string]string{kube.AnnotationExitCode: "0"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "no-such-registry.invalid/none:v1"}}},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the plain pod to end on the kwok node", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, plain.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	if got.Spec.NodeName != "kwok-node-0" {
		t.Errorf("plain pod ran on %q, want kwok-node-0", got.Spec.NodeName)
	}
}
