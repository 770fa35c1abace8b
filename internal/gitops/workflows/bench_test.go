package workflows_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func maxRSSMiB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024
}

// TestBenchDAG100 (make bench-workflows): a 100-node DAG of trivial containers — 10 chains of
// 10 tasks — end to end on the loopback cluster, where kwok ends each pod at once with exit code
// 0. The baseline is the floor the cluster sets: the same 100 pods created by the test, 10 at a
// time in 10 waves, waited for until Succeeded.
func TestBenchDAG100(t *testing.T) {
	if os.Getenv("FRESHET_WORKFLOWS_BENCH") == "" {
		t.Skip("set FRESHET_WORKFLOWS_BENCH=1 (make bench-workflows)")
	}
	e := newEnv(t, workflows.Options{})
	const width, depth = 10, 10

	// Baseline: 10 waves of 10 pods.
	start := time.Now()
	for d := range depth {
		for w := range width {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("base-%d-%d", d, w),
				Annotations: map[string]string{kube.AnnotationExitCode: "0"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "alpine:3", Command: []string{"true"}}}}}
			if _, err := e.c.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.waitFor("a wave of pods", 60*time.Second, func() (bool, string) {
			pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			n := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodSucceeded {
					n++
				}
			}
			return n == (d+1)*width, fmt.Sprint(n)
		})
	}
	base := time.Since(start)

	var b strings.Builder
	b.WriteString(`apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: dag100}
spec:
  entrypoint: main
  templates:
  - name: t
    metadata: {annotations: {devcluster.freshet.dev/exit-code: "0"}}
    container: {image: alpine:3, command: ["true"]}
  - name: main
    dag:
      tasks:
`)
	for d := range depth {
		for w := range width {
			fmt.Fprintf(&b, "      - {name: t%d-%d, template: t", d, w)
			if d > 0 {
				fmt.Fprintf(&b, ", depends: t%d-%d", d-1, w)
			}
			b.WriteString("}\n")
		}
	}
	cpu0 := cpuSeconds()
	start = time.Now()
	e.create(workflows.WorkflowsResource, b.String())
	wf := e.finished("dag100", 5*time.Minute)
	wall := time.Since(start)
	cpu := cpuSeconds() - cpu0
	if wf.Status.Phase != workflows.WorkflowSucceeded || wf.Status.Progress != "100/100" {
		t.Fatal(dump(wf))
	}
	fmt.Printf("BENCH workflows dag100: 100-node DAG (10 chains of 10) end to end %.2fs; baseline 100 bare pods in 10 waves %.2fs; test process (controller + clients) CPU %.2fs, max RSS %.0f MiB\n",
		wall.Seconds(), base.Seconds(), cpu, maxRSSMiB())
}
