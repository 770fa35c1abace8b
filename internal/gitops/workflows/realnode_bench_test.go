package workflows_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestBenchRealNode (make bench-workflows-real-node): the three workflow benches on the
// loopback cluster's real node, where each pod's containers really run (kubelet, containerd,
// runc): busybox `true`, pulled from the loopback registry; a workflow pod's init container
// first copies the emissary in, as on any runtime. Baselines: bare busybox pods on the same
// node, in the same run.
func TestBenchRealNode(t *testing.T) {
	if os.Getenv("FRESHET_WORKFLOWS_BENCH") == "" {
		t.Skip("set FRESHET_WORKFLOWS_BENCH=1 and " + kube.EnvRealNode + "=1 (make bench-workflows-real-node)")
	}
	c, reg := containers.RealNode(t)
	image := reg.EmissaryImage(t)
	sel, tol := kube.RealNodePlacement()
	opts := workflows.Options{ExecutorImage: image, ExecutorPath: "/usr/bin/freshet", NodeSelector: sel, Tolerations: tol}
	shape := realNodeShape(reg.Ref(containers.ImageBusybox), sel, tol)

	// Pull the image once, so that no run below measures the pull.
	warm := &env{t: t, c: c, ns: c.Namespace(t), ctx: context.Background()}
	if _, err := c.Client.CoreV1().Pods(warm.ns).Create(warm.ctx, shape.pod("warm", map[string]string{"bench": "warm"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	warm.waitFor("the warm-up pod", 3*time.Minute, warm.podsSucceeded("bench=warm", 1))

	t.Run("submit-to-running", func(t *testing.T) {
		e, _ := benchEnv(t, c, opts)
		benchSubmitToRunning(e, shape)
	})
	t.Run("dag100", func(t *testing.T) {
		e, _ := benchEnv(t, c, opts)
		benchDAG100(e, shape)
	})
	t.Run("50-at-once", func(t *testing.T) {
		e, counter := benchEnv(t, c, opts)
		bench50Workflows(e, counter, shape)
	})
}

// realNodeShape: busybox `true` on the real node.
func realNodeShape(busybox string, sel map[string]string, tol []corev1.Toleration) benchShape {
	return benchShape{
		where: "real node",
		pod: func(name string, labels map[string]string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: maps.Clone(sel), Tolerations: tol,
					Containers: []corev1.Container{{Name: "main", Image: busybox, Command: []string{"true"}}}}}
		},
		template: func(name string) string {
			return fmt.Sprintf("  - name: %s\n    container: {image: %s, command: [\"true\"]}\n", name, busybox)
		},
	}
}
