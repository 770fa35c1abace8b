package events_test

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestBenchWebhookToWorkflowRealNode (make bench-events-real-node): TestBenchWebhookToWorkflow's
// measures with the Workflows' pods on the loopback cluster's real node (kubelet, containerd,
// runc), where they really run: busybox echo, pulled from the loopback registry, under the
// emissary its init container copies in. 30 pushes and 30 baseline creates, bounded by 5 min.
func TestBenchWebhookToWorkflowRealNode(t *testing.T) {
	if os.Getenv("FRESHET_EVENTS_BENCH") == "" {
		t.Skip("set FRESHET_EVENTS_BENCH=1 and " + kube.EnvRealNode + "=1 (make bench-events-real-node)")
	}
	c, reg := containers.RealNode(t)
	busybox := reg.Ref(containers.ImageBusybox)
	sensor := strings.Replace(buildSensor, "container: {image: alpine,", "container: {image: "+busybox+",", 1)
	if sensor == buildSensor {
		t.Fatal("buildSensor's template changed; its image was not replaced")
	}
	sel, tol := kube.RealNodePlacement()
	emissary := reg.EmissaryImage(t)
	opts := workflows.Options{ExecutorImage: emissary, ExecutorPath: "/usr/bin/freshet", NodeSelector: sel, Tolerations: tol}
	e := newEnvOn(t, c)
	// Pull both images once, so that no run measures a pull.
	warm := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "warm"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, NodeSelector: sel, Tolerations: tol,
		InitContainers: []corev1.Container{{Name: "init", Image: emissary, Command: []string{"true"}}},
		Containers:     []corev1.Container{{Name: "main", Image: busybox, Command: []string{"true"}}}}}
	if _, err := c.Client.CoreV1().Pods(e.ns).Create(e.ctx, warm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the warm-up pod", 3*time.Minute, func() (bool, string) {
		p, err := c.Client.CoreV1().Pods(e.ns).Get(e.ctx, "warm", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase)
	})
	benchWebhookToWorkflow(e, sensor, "{}", busybox, opts, 30, "real node")
}
