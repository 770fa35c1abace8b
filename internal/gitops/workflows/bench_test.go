package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
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

// benchShape is what the benches run: trivial pods and the Workflow template of one trivial
// step, on kwok (pods end at once, no container runs) or on the real node (busybox `true` in a
// container, the emissary copied in by the workflow pod's init container).
type benchShape struct {
	where string
	// pod is a bare pod of the baseline, labelled as given.
	pod func(name string, labels map[string]string) *corev1.Pod
	// template is the YAML of a template named name with one trivial container, indented
	// as a list item of spec.templates.
	template func(name string) string
}

// kwokShape: kwok ends each pod with exit code 0 at once; hold keeps it Running that long
// first ("" for not at all), so that a watch sees it Running.
func kwokShape(hold string) benchShape {
	ann := map[string]string{kube.AnnotationExitCode: "0"}
	if hold != "" {
		ann[kube.AnnotationRunDuration] = hold
	}
	annYAML, _ := json.Marshal(ann)
	return benchShape{
		where: "kwok",
		pod: func(name string, labels map[string]string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: maps.Clone(ann)},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "alpine:3", Command: []string{"true"}}}}}
		},
		template: func(name string) string {
			return fmt.Sprintf("  - name: %s\n    metadata: {annotations: %s}\n    container: {image: alpine:3, command: [\"true\"]}\n", name, annYAML)
		},
	}
}

// benchDAG100 runs a 100-node DAG — 10 chains of 10 tasks — end to end, beside the floor the
// cluster sets: the same 100 pods created by the test, 10 at a time in 10 waves, waited for
// until Succeeded.
func benchDAG100(e *env, shape benchShape) {
	t := e.t
	const width, depth = 10, 10
	start := time.Now()
	for d := range depth {
		for w := range width {
			p := shape.pod(fmt.Sprintf("base-%d-%d", d, w), map[string]string{"bench": "base"})
			if _, err := e.c.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.waitFor("a wave of pods", 3*time.Minute, e.podsSucceeded("bench=base", (d+1)*width))
	}
	base := time.Since(start)

	var b strings.Builder
	b.WriteString(`apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: dag100}
spec:
  entrypoint: main
  templates:
`)
	b.WriteString(shape.template("t"))
	b.WriteString(`  - name: main
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
	wf := e.finished("dag100", 10*time.Minute)
	wall := time.Since(start)
	cpu := cpuSeconds() - cpu0
	if wf.Status.Phase != workflows.WorkflowSucceeded || wf.Status.Progress != "100/100" {
		t.Fatal(dump(wf))
	}
	fmt.Printf("BENCH workflows dag100 (%s): 100-node DAG (10 chains of 10) end to end %.2fs; baseline 100 bare pods in 10 waves %.2fs; test process (controller + clients) CPU %.2fs, max RSS %.0f MiB; load average %s\n",
		shape.where, wall.Seconds(), base.Seconds(), cpu, maxRSSMiB(), loadAvg())
}

// podsSucceeded is a waitFor condition: n pods matching sel have Succeeded.
func (e *env) podsSucceeded(sel string, n int) func() (bool, string) {
	return func() (bool, string) {
		pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		k := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				k++
			}
		}
		return k == n, fmt.Sprint(k)
	}
}

// TestBenchDAG100 (make bench-workflows): benchDAG100 on the loopback cluster's kwok node.
func TestBenchDAG100(t *testing.T) {
	if os.Getenv("FRESHET_WORKFLOWS_BENCH") == "" {
		t.Skip("set FRESHET_WORKFLOWS_BENCH=1 (make bench-workflows)")
	}
	benchDAG100(newEnv(t, workflows.Options{}), kwokShape(""))
}

// countingTransport counts the requests a client sends, by method.
type countingTransport struct {
	rt http.RoundTripper
	mu sync.Mutex
	n  map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.Method]++
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

func (c *countingTransport) take() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	var parts []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if c.n[m] > 0 {
			total += c.n[m]
			parts = append(parts, fmt.Sprintf("%s %d", m, c.n[m]))
		}
	}
	clear(c.n)
	return total, strings.Join(parts, ", ")
}

// benchEnv is a test namespace on c with a controller whose every API request is counted.
func benchEnv(t *testing.T, c *kube.Cluster, opts workflows.Options) (*env, *countingTransport) {
	ns := c.Namespace(t)
	counter := &countingTransport{n: map[string]int{}}
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 100 // as a runtime's controller runs
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.rt = rt; return counter }
	opts.Namespace, opts.ConfigNamespace = ns, ns
	ctrl, err := workflows.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	e := &env{t: t, c: c, ns: ns, ctrl: ctrl, ctx: ctx}
	e.waitFor("controller started", 60*time.Second, func() (bool, string) { return ctrl.Healthy(), "" })
	return e, counter
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// runningWatch reports, for each pod label value (or pod name), when a pod was first seen
// Running.
func (e *env) runningWatch(sel string, key func(*corev1.Pod) string) (func(string) time.Time, func()) {
	w, err := e.c.Client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		e.t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || (p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded) {
				continue
			}
			mu.Lock()
			if _, ok := seen[key(p)]; !ok {
				seen[key(p)] = time.Now()
			}
			mu.Unlock()
		}
	}()
	get := func(k string) time.Time {
		mu.Lock()
		defer mu.Unlock()
		return seen[k]
	}
	return get, func() { w.Stop(); <-done }
}

// benchSubmitToRunning: a one-step Workflow's creation → its pod seen Running by a watch, 30
// times one after another; the baseline is a bare pod's creation → Running, 30 times, in the
// same namespace and run.
func benchSubmitToRunning(e *env, shape benchShape) {
	t := e.t
	const n = 30
	lock := func(seen func(string) time.Time, k string) time.Time {
		var at time.Time
		e.waitFor(k+" running", 2*time.Minute, func() (bool, string) {
			at = seen(k)
			return !at.IsZero(), ""
		})
		return at
	}
	seenBase, stopBase := e.runningWatch("bench=base", func(p *corev1.Pod) string { return p.Name })
	var base []time.Duration
	for i := range n {
		name := fmt.Sprintf("base-%d", i)
		p := shape.pod(name, map[string]string{"bench": "base"})
		start := time.Now()
		if _, err := e.c.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		base = append(base, lock(seenBase, name).Sub(start))
	}
	stopBase()
	seenWf, stopWf := e.runningWatch(workflows.LabelWorkflow, func(p *corev1.Pod) string { return p.Labels[workflows.LabelWorkflow] })
	defer stopWf()
	var wfs []time.Duration
	for i := range n {
		name := fmt.Sprintf("first-%d", i)
		start := time.Now()
		e.create(workflows.WorkflowsResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: %s}
spec:
  entrypoint: main
  templates:
%s`, name, shape.template("main")))
		wfs = append(wfs, lock(seenWf, name).Sub(start))
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Printf("BENCH workflows submit-to-running (%s): %d one-step workflows, creation → pod Running p50 %s p99 %s; baseline bare pod creation → Running p50 %s p99 %s; load average %s\n",
		shape.where, n, ms(percentile(wfs, 0.5)), ms(percentile(wfs, 0.99)), ms(percentile(base, 0.5)), ms(percentile(base, 0.99)), loadAvg())
}

// TestBenchSubmitToRunning (make bench-workflows): benchSubmitToRunning on the kwok node, each
// pod Running 1 s.
func TestBenchSubmitToRunning(t *testing.T) {
	if os.Getenv("FRESHET_WORKFLOWS_BENCH") == "" {
		t.Skip("set FRESHET_WORKFLOWS_BENCH=1 (make bench-workflows)")
	}
	e, _ := benchEnv(t, kube.Shared(t), workflows.Options{})
	benchSubmitToRunning(e, kwokShape("1s"))
}

// bench50Workflows: 50 one-step Workflows created at once, to all Succeeded: wall, the test
// process's CPU and max RSS (the controller runs in it), and the API requests the controller
// sent (a counting RoundTripper on its REST config, informers' lists and watches included).
// The baseline: 50 bare pods created at once, to all Succeeded.
func bench50Workflows(e *env, counter *countingTransport, shape benchShape) {
	t := e.t
	const n = 50
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := shape.pod(fmt.Sprintf("base-%d", i), map[string]string{"bench": "base"})
			if _, err := e.c.Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	e.waitFor("50 bare pods", 5*time.Minute, e.podsSucceeded("bench=base", n))
	base := time.Since(start)

	counter.take() // the informers' start
	cpu0 := cpuSeconds()
	start = time.Now()
	for i := range n {
		wg.Go(func() {
			e.create(workflows.WorkflowsResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: many-%d}
spec:
  entrypoint: main
  templates:
%s`, i, shape.template("main")))
		})
	}
	wg.Wait()
	e.waitFor("50 workflows", 10*time.Minute, func() (bool, string) {
		list, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelCompleted + "=true"})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == n, fmt.Sprint(len(list.Items))
	})
	wall := time.Since(start)
	cpu := cpuSeconds() - cpu0
	reqs, by := counter.take()
	for i := range n {
		if wf := e.workflow(fmt.Sprintf("many-%d", i)); wf.Status.Phase != workflows.WorkflowSucceeded {
			t.Fatal(dump(wf))
		}
	}
	fmt.Printf("BENCH workflows 50-at-once (%s): 50 one-step workflows created at once → all Succeeded %.2fs; baseline 50 bare pods at once → Succeeded %.2fs; test process (controller + test clients) CPU %.2fs, max RSS %.0f MiB; controller API requests %d (%s); load average %s\n",
		shape.where, wall.Seconds(), base.Seconds(), cpu, maxRSSMiB(), reqs, by, loadAvg())
}

// TestBench50Workflows (make bench-workflows): bench50Workflows on the kwok node.
func TestBench50Workflows(t *testing.T) {
	if os.Getenv("FRESHET_WORKFLOWS_BENCH") == "" {
		t.Skip("set FRESHET_WORKFLOWS_BENCH=1 (make bench-workflows)")
	}
	e, counter := benchEnv(t, kube.Shared(t), workflows.Options{})
	bench50Workflows(e, counter, kwokShape(""))
}
