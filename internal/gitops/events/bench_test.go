package events_test

import (
	"context"
	"fmt"
	"log/slog"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/tlog"
)

const benchEvents = 100

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// benchPod is the pod metadata of every Workflow the bench runs: kwok keeps the pod Running 1 s,
// then ends it with exit code 0, so finished pods never fill the fake node.
var benchPod = fmt.Sprintf(`{annotations: {%s: "0", %s: "1s"}}`, kube.AnnotationExitCode, kube.AnnotationRunDuration)

// benchSensor is buildSensor with benchPod on its Workflow's template.
var benchSensor = strings.Replace(buildSensor, "              - name: main\n                container:",
	"              - name: main\n                metadata: "+benchPod+"\n                container:", 1)

// milestones records, by Workflow name, when a watch first saw it created, its status.phase
// Running, and a pod of it (label workflows.LabelWorkflow) Running or already Succeeded; the
// names of Workflows seen created, in order, go to added.
type milestones struct {
	mu                       sync.Mutex
	created, phase, podFirst map[string]time.Time
	added                    chan string
}

func (m *milestones) mark(at map[string]time.Time, name string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := at[name]; !ok {
		at[name] = t
	}
}

func (m *milestones) get(at map[string]time.Time, name string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return at[name]
}

// watchMilestones starts the watches on Workflows and their pods; stop ends them.
func (e *env) watchMilestones() (m *milestones, stop func()) {
	m = &milestones{created: map[string]time.Time{}, phase: map[string]time.Time{}, podFirst: map[string]time.Time{},
		added: make(chan string, 4*benchEvents)}
	ww, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pw, err := e.c.Client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow})
	if err != nil {
		e.t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev := range ww.ResultChan() {
			now := time.Now()
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if ev.Type == watch.Added {
				m.mark(m.created, u.GetName(), now)
				select {
				case m.added <- u.GetName():
				default:
				}
			}
			if p, _, _ := unstructured.NestedString(u.Object, "status", "phase"); p == string(workflows.WorkflowRunning) {
				m.mark(m.phase, u.GetName(), now)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range pw.ResultChan() {
			now := time.Now()
			p, ok := ev.Object.(*corev1.Pod)
			if ok && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
				m.mark(m.podFirst, p.Labels[workflows.LabelWorkflow], now)
			}
		}
	}()
	return m, func() { ww.Stop(); pw.Stop(); wg.Wait() }
}

// TestBenchWebhookToWorkflow (make bench-events): a signed GitHub push → the Workflow created
// in the cluster, seen by a watch, and → its first pod Running and its status.phase Running,
// with the workflow controller running in the test process beside the events controller; one
// push at a time, 100 times (each with its own revision and delivery id), through the HTTP
// handler, the verification, the JetStream bus (the test NATS), the Sensor's filter and
// parameters and the impersonated create, then the workflow controller's reconcile and the
// pod's start on the kwok node. The baseline, in the same run, namespace and watches, is the
// floor: the test creating the same Workflow itself and seeing it created, then its first pod
// Running.
func TestBenchWebhookToWorkflow(t *testing.T) {
	if os.Getenv("FRESHET_EVENTS_BENCH") == "" {
		t.Skip("set FRESHET_EVENTS_BENCH=1 (make bench-events)")
	}
	e := newEnv(t)
	if benchSensor == buildSensor {
		t.Fatal("benchSensor: buildSensor's template changed; the pod metadata was not added")
	}
	benchWebhookToWorkflow(e, benchSensor, benchPod, "alpine", workflows.Options{}, benchEvents, "kwok")
}

// benchWebhookToWorkflow measures on e: sensor is the build Sensor, podMeta and image the pod
// metadata and image of the baseline's Workflow (as the Sensor's), opts the workflow
// controller's placement and executor, n the number of pushes (and of baseline creates).
func benchWebhookToWorkflow(e *env, sensor, podMeta, image string, opts workflows.Options, n int, where string) {
	t := e.t
	e.setupGitHubWith(sensor)
	// The workflow controller, as a runtime runs it beside the events controller.
	opts.Namespace, opts.ConfigNamespace = e.ns, e.ns
	opts.Logger = slog.New(slog.NewTextHandler(tlog.New(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	wctrl, err := workflows.New(e.c.RESTConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(e.ctx)
	wdone := make(chan error, 1)
	go func() { wdone <- wctrl.Run(wctx) }()
	t.Cleanup(func() {
		wcancel()
		if err := <-wdone; err != nil {
			t.Errorf("workflow controller: %v", err)
		}
	})
	e.waitFor("workflow controller started", 60*time.Second, func() (bool, string) { return wctrl.Healthy(), "" })

	m, stop := e.watchMilestones()
	defer stop()
	next := func(prefix string) string {
		select {
		case name := <-m.added:
			if !strings.HasPrefix(name, prefix) {
				t.Fatalf("saw %s created, want a %s workflow", name, prefix)
			}
			return name
		case <-time.After(60 * time.Second):
			t.Fatalf("no %s workflow seen created within 60 s", prefix)
		}
		return ""
	}
	when := func(at map[string]time.Time, name, what string) time.Time {
		var t0 time.Time
		e.waitFor(name+" "+what, 2*time.Minute, func() (bool, string) {
			t0 = m.get(at, name)
			return !t0.IsZero(), ""
		})
		return t0
	}

	var wf unstructured.Unstructured
	j, _ := yaml.YAMLToJSON([]byte(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: base-}
spec:
  entrypoint: main
  arguments: {parameters: [{name: revision, value: x}, {name: repo, value: acme/app}]}
  templates: [{name: main, metadata: %s, container: {image: %s, command: [echo, "{{workflow.parameters.revision}}"]}}]
`, podMeta, image)))
	if err := wf.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	load0 := loadAvg()
	end := time.Now().Add(5 * time.Minute) // the whole run's bound
	var baseSeen, basePod, created, podRunning, phaseRunning []time.Duration
	cpu0 := cpuSeconds()
	for i := range n {
		if time.Now().After(end) {
			break
		}
		start := time.Now()
		if _, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Create(e.ctx, wf.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := next("base-")
		baseSeen = append(baseSeen, when(m.created, name, "created").Sub(start))
		basePod = append(basePod, when(m.podFirst, name, "first pod Running").Sub(start))

		sha := fmt.Sprintf("%040x", i+1)
		start = time.Now()
		code, body := e.push("/github/push", secret, fmt.Sprintf("bench-%d", i), pushBody("refs/heads/main", sha, "acme/app"))
		if code != http.StatusOK || !strings.Contains(body, "published") {
			t.Fatalf("push %d: %d %s", i, code, body)
		}
		name = next("build-")
		created = append(created, when(m.created, name, "created").Sub(start))
		podRunning = append(podRunning, when(m.podFirst, name, "first pod Running").Sub(start))
		phaseRunning = append(phaseRunning, when(m.phase, name, "phase Running").Sub(start))
	}
	cpu := cpuSeconds() - cpu0
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	stats := func(ds []time.Duration) string {
		return fmt.Sprintf("p50=%s p99=%s max=%s", ms(pct(ds, 0.5)), ms(pct(ds, 0.99)), ms(slices.Max(ds)))
	}
	fmt.Printf("BENCH events (%s) webhook→workflow created n=%d %s | baseline create→seen %s\n", where, len(created), stats(created), stats(baseSeen))
	fmt.Printf("BENCH events (%s) webhook→first pod Running n=%d %s | webhook→workflow phase Running %s | baseline create→first pod Running %s\n",
		where, len(podRunning), stats(podRunning), stats(phaseRunning), stats(basePod))
	fmt.Printf("BENCH events (%s) test process CPU (events and workflow controllers, clients, watches) %.2f s | load average %s → %s\n", where, cpu, load0, loadAvg())
}
