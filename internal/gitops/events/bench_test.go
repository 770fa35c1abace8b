package events_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
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

// TestBenchWebhookToWorkflow (make bench-events): a signed GitHub push → the Workflow created
// in the cluster, seen by a watch, one push at a time, 100 times (each with its own revision and
// delivery id), through the HTTP handler, the verification, the JetStream bus (the test NATS),
// the Sensor's filter and parameters and the impersonated create. The baseline, in the same run
// and namespace, is the floor: the test creating the same Workflow itself and seeing it on the
// same watch.
func TestBenchWebhookToWorkflow(t *testing.T) {
	if os.Getenv("FRESHET_EVENTS_BENCH") == "" {
		t.Skip("set FRESHET_EVENTS_BENCH=1 (make bench-events)")
	}
	e := newEnv(t)
	e.setupGitHub()
	w, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := func(deadline time.Time) string {
		for {
			select {
			case ev := <-w.ResultChan():
				if ev.Type == watch.Added {
					return ev.Object.(*unstructured.Unstructured).GetName()
				}
			case <-time.After(time.Until(deadline)):
				t.Fatalf("no workflow seen before the deadline")
			}
		}
	}
	var wf unstructured.Unstructured
	j, _ := yaml.YAMLToJSON([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: base-}
spec:
  entrypoint: main
  arguments: {parameters: [{name: revision, value: x}, {name: repo, value: acme/app}]}
  templates: [{name: main, container: {image: alpine, command: [echo, "{{workflow.parameters.revision}}"]}}]
`))
	_ = wf.UnmarshalJSON(j)
	end := time.Now().Add(3 * time.Minute) // the whole run's bound
	var base, lat []time.Duration
	cpu0 := cpuSeconds()
	for i := range benchEvents {
		if time.Now().After(end) {
			break
		}
		start := time.Now()
		if _, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Create(e.ctx, wf.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		seen(end)
		base = append(base, time.Since(start))
		sha := fmt.Sprintf("%040x", i+1)
		start = time.Now()
		code, body := e.push("/github/push", secret, fmt.Sprintf("bench-%d", i), pushBody("refs/heads/main", sha, "acme/app"))
		if code != http.StatusOK || !strings.Contains(body, "published") {
			t.Fatalf("push %d: %d %s", i, code, body)
		}
		if name := seen(end); !strings.HasPrefix(name, "build-") {
			t.Fatalf("saw %s, want a build- workflow", name)
		}
		lat = append(lat, time.Since(start))
	}
	cpu := cpuSeconds() - cpu0
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("BENCH events webhook→workflow n=%d p50=%s p99=%s max=%s | baseline create→seen p50=%s p99=%s | test process CPU %.2f s\n",
		len(lat), ms(pct(lat, 0.5)), ms(pct(lat, 0.99)), ms(slices.Max(lat)), ms(pct(base, 0.5)), ms(pct(base, 0.99)), cpu)
}
