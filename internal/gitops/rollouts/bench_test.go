package rollouts_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
)

// TestReactionTime measures (FRESHET_ROLLOUTS_BENCH=1, against the loopback cluster) the time
// from Promote returning to the next step's ReplicaSet scale being written, as seen by a watch:
// the "condition met → next step's objects written". docs/benchmarks.md has the figures.
func TestReactionTime(t *testing.T) {
	if os.Getenv("FRESHET_ROLLOUTS_BENCH") == "" {
		t.Skip("a measurement: set FRESHET_ROLLOUTS_BENCH=1")
	}
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	const y = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "IMAGE"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      maxSurge: 10
      maxUnavailable: 10
      steps: [{setWeight: 10}, {pause: {}}, {setWeight: 20}, {pause: {}}, {setWeight: 30}, {pause: {}}, {setWeight: 40}, {pause: {}}, {setWeight: 50}, {pause: {}}]
`
	img := func(i int) string { return replace(y, "IMAGE", fmt.Sprintf("registry.local/web:%d", i)) }
	e.apply(img(0))
	e.waitPhase("web", rollouts.PhaseHealthy, 10)
	var samples []time.Duration
	for rev := 1; rev <= 8; rev++ {
		e.apply(img(rev))
		e.waitPhase("web", rollouts.PhasePaused, 1)
		for step := int32(1); step < 9; step += 2 {
			want := int32(step/2+2) * 1 // setWeight (step/2+2)*10 of 10 replicas
			w, err := e.c.Client.AppsV1().ReplicaSets(e.ns).Watch(e.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.ctrl.Promote(e.ctx, e.ns, "web", false); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			hash := e.rollout("web").Status.CurrentPodHash
			for ev := range w.ResultChan() {
				rs, ok := ev.Object.(*appsv1.ReplicaSet)
				if ok && ev.Type == watch.Modified && rs.Labels[rollouts.PodTemplateHashLabel] == hash && *rs.Spec.Replicas >= want {
					samples = append(samples, time.Since(start))
					break
				}
			}
			w.Stop()
			e.waitPhase("web", rollouts.PhasePaused, step+2)
		}
		if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
			t.Fatal(err)
		}
		e.waitPhase("web", rollouts.PhaseHealthy, 10)
	}
	slices.Sort(samples)
	p := func(q float64) time.Duration { return samples[int(q*float64(len(samples)-1))] }
	fmt.Printf("BENCH rollouts: promote → next step's ReplicaSet scale written: n=%d p50=%v p99=%v max=%v\n", len(samples), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), samples[len(samples)-1].Round(time.Millisecond))
}

// TestAnalysisReactionTime measures (FRESHET_ROLLOUTS_BENCH=1) the time from an analysis
// measurement being taken — the web metric's server writing its answer — to the next step's
// ReplicaSet scale being written, as a watch sees it: a 10-replica canary whose setWeight steps
// each follow an analysis step of one measurement, over several revisions.
func TestAnalysisReactionTime(t *testing.T) {
	if os.Getenv("FRESHET_ROLLOUTS_BENCH") == "" {
		t.Skip("a measurement: set FRESHET_ROLLOUTS_BENCH=1")
	}
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	var mu sync.Mutex
	var answered []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"successRate":1}}`))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		mu.Lock()
		answered = append(answered, time.Now())
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	e.template(`
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: rate}
spec:
  metrics:
  - name: rate
    successCondition: "result >= 0.95"
    provider: {web: {url: "` + srv.URL + `/rate", jsonPath: "{$.data.successRate}"}}
`)
	const y = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "IMAGE"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      maxSurge: 10
      maxUnavailable: 10
      steps:
      - setWeight: 10
      - analysis: {templates: [{templateName: rate}]}
      - setWeight: 20
      - analysis: {templates: [{templateName: rate}]}
      - setWeight: 30
      - analysis: {templates: [{templateName: rate}]}
      - setWeight: 40
      - analysis: {templates: [{templateName: rate}]}
      - setWeight: 50
      - pause: {}
`
	img := func(i int) string { return replace(y, "IMAGE", fmt.Sprintf("registry.local/web:%d", i)) }
	e.apply(img(0))
	e.waitPhase("web", rollouts.PhaseHealthy, 10)
	type scaled struct {
		at       time.Time
		hash     string
		replicas int32
	}
	var samples []time.Duration
	for rev := 1; rev <= 8; rev++ {
		w, err := e.c.Client.AppsV1().ReplicaSets(e.ns).Watch(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var seen []scaled
		collected := make(chan struct{})
		go func() {
			defer close(collected)
			for ev := range w.ResultChan() {
				if rs, ok := ev.Object.(*appsv1.ReplicaSet); ok && ev.Type == watch.Modified && rs.Spec.Replicas != nil {
					seen = append(seen, scaled{time.Now(), rs.Labels[rollouts.PodTemplateHashLabel], *rs.Spec.Replicas})
				}
			}
		}()
		mu.Lock()
		answered = answered[:0]
		mu.Unlock()
		e.apply(img(rev))
		ro := e.waitPhase("web", rollouts.PhasePaused, 9)
		w.Stop()
		<-collected
		hash := ro.Status.CurrentPodHash
		mu.Lock()
		answers := slices.Clone(answered)
		mu.Unlock()
		if len(answers) != 4 {
			t.Fatalf("revision %d: %d measurements, want 4", rev, len(answers))
		}
		// After the i-th measurement, the canary goes from i+1 to i+2 replicas (weight 10·(i+2) %).
		for i, at := range answers {
			want := int32(i + 2)
			j := slices.IndexFunc(seen, func(s scaled) bool { return s.hash == hash && s.replicas >= want })
			if j < 0 || seen[j].at.Before(at) {
				t.Fatalf("revision %d: no scale to %d after measurement %d (%v)", rev, want, i+1, seen)
			}
			samples = append(samples, seen[j].at.Sub(at))
		}
		if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
			t.Fatal(err)
		}
		e.waitPhase("web", rollouts.PhaseHealthy, 10)
	}
	slices.Sort(samples)
	p := func(q float64) time.Duration { return samples[int(q*float64(len(samples)-1))] }
	fmt.Printf("BENCH rollouts: analysis measurement answered → next step's ReplicaSet scale written: n=%d p50=%v p99=%v max=%v\n", len(samples), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), samples[len(samples)-1].Round(time.Millisecond))
}

// TestPauseReactionTime measures (FRESHET_ROLLOUTS_BENCH=1) the time from a timed pause being
// over — its condition's startTime plus its duration, the status the controller decides from (a
// time to the second, as Argo Rollouts keeps it) — to the next step's ReplicaSet scale written.
func TestPauseReactionTime(t *testing.T) {
	if os.Getenv("FRESHET_ROLLOUTS_BENCH") == "" {
		t.Skip("a measurement: set FRESHET_ROLLOUTS_BENCH=1")
	}
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	const y = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "IMAGE"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      maxSurge: 10
      maxUnavailable: 10
      steps: [{setWeight: 10}, {pause: {duration: 1}}, {setWeight: 20}, {pause: {duration: 1}}, {setWeight: 30}, {pause: {duration: 1}}, {setWeight: 40}, {pause: {duration: 1}}, {setWeight: 50}, {pause: {}}]
`
	img := func(i int) string { return replace(y, "IMAGE", fmt.Sprintf("registry.local/web:%d", i)) }
	e.apply(img(0))
	e.waitPhase("web", rollouts.PhaseHealthy, 10)
	var samples []time.Duration
	for rev := 1; rev <= 8; rev++ {
		rsw, err := e.c.Client.AppsV1().ReplicaSets(e.ns).Watch(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		row, err := e.c.Dynamic.Resource(rollouts.RolloutsResource).Namespace(e.ns).Watch(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		type scaled struct {
			at       time.Time
			hash     string
			replicas int32
		}
		var seen []scaled
		ends := map[int32]time.Time{} // pause step → when it is over
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for ev := range rsw.ResultChan() {
				if rs, ok := ev.Object.(*appsv1.ReplicaSet); ok && ev.Type == watch.Modified && rs.Spec.Replicas != nil {
					seen = append(seen, scaled{time.Now(), rs.Labels[rollouts.PodTemplateHashLabel], *rs.Spec.Replicas})
				}
			}
		}()
		go func() {
			defer wg.Done()
			for ev := range row.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				b, _ := u.MarshalJSON()
				var ro rollouts.Rollout
				if json.Unmarshal(b, &ro) != nil || ro.Status.CurrentStepIndex == nil {
					continue
				}
				for _, pc := range ro.Status.PauseConditions {
					if pc.Reason == rollouts.PauseReasonCanaryPauseStep {
						ends[*ro.Status.CurrentStepIndex] = pc.StartTime.Add(time.Second)
					}
				}
			}
		}()
		e.apply(img(rev))
		ro := e.waitPhase("web", rollouts.PhasePaused, 9)
		rsw.Stop()
		row.Stop()
		wg.Wait()
		hash := ro.Status.CurrentPodHash
		for step := int32(1); step < 9; step += 2 {
			end, ok := ends[step]
			want := step/2 + 2 // the setWeight after the pause: 10·(step/2+2) % of 10 replicas
			j := slices.IndexFunc(seen, func(s scaled) bool { return s.hash == hash && s.replicas >= want })
			if !ok || j < 0 {
				t.Fatalf("revision %d: pause %d ended %v, scale to %d seen %v", rev, step, end, want, j >= 0)
			}
			samples = append(samples, seen[j].at.Sub(end))
		}
		if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
			t.Fatal(err)
		}
		e.waitPhase("web", rollouts.PhaseHealthy, 10)
	}
	slices.Sort(samples)
	p := func(q float64) time.Duration { return samples[int(q*float64(len(samples)-1))] }
	fmt.Printf("BENCH rollouts: timed pause over → next step's ReplicaSet scale written: n=%d p50=%v p99=%v max=%v\n", len(samples), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), samples[len(samples)-1].Round(time.Millisecond))
}

// TestManyRollouts runs (FRESHET_ROLLOUTS_BENCH=1) N Rollouts at once through a 5-step canary
// with timed pauses and reports the wall time, the controller's CPU seconds and the process RSS.
// The wall time is bound by the cluster: every step makes the kube-controller-manager create and
// delete pods and kwok ready them. One replica each, replaced in place (maxSurge 0): the kwok
// node takes 110 pods, so 100 Rollouts of two replicas, or with surge pods, would leave pods
// Pending for want of room, not of the controller.
func TestManyRollouts(t *testing.T) {
	if os.Getenv("FRESHET_ROLLOUTS_BENCH") == "" {
		t.Skip("a measurement: set FRESHET_ROLLOUTS_BENCH=1")
	}
	n := 100 // FRESHET_ROLLOUTS_BENCH=N runs N instead
	if v, err := strconv.Atoi(os.Getenv("FRESHET_ROLLOUTS_BENCH")); err == nil && v > 1 {
		n = v
	}
	e := newEnv(t)
	const y = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: NAME}
spec:
  replicas: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec: {containers: [{name: web, image: "IMAGE"}]}
  strategy:
    canary:
      maxSurge: 0
      maxUnavailable: 1
      steps: [{setWeight: 20}, {pause: {duration: 1}}, {setWeight: 60}, {pause: {duration: 1}}, {setWeight: 100}]
`
	doc := func(i int, img string) string {
		return replace(replace(y, "NAME", fmt.Sprintf("r%03d", i)), "IMAGE", img)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { e.apply(doc(i, "registry.local/web:1")) })
	}
	wg.Wait()
	waitAll := func(what string) {
		e.waitFor(what, 30*time.Minute, func() (bool, string) {
			list, err := e.c.Dynamic.Resource(rollouts.RolloutsResource).Namespace(e.ns).List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			healthy := 0
			for _, u := range list.Items {
				ph, _, _ := unstructuredString(u.Object, "status", "phase")
				og, _, _ := unstructuredString(u.Object, "status", "observedGeneration")
				if ph == "Healthy" && og == fmt.Sprint(u.GetGeneration()) {
					healthy++
				}
			}
			return healthy == n, fmt.Sprintf("%d/%d healthy", healthy, n)
		})
	}
	waitAll("first revisions")
	cpu0 := cpuSeconds()
	start := time.Now()
	for i := range n {
		wg.Go(func() { e.apply(doc(i, "registry.local/web:2")) })
	}
	wg.Wait()
	time.Sleep(time.Second) // let every Rollout leave Healthy before waiting for it again
	waitAll("second revisions through 5 steps")
	wall := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("BENCH rollouts: %d Rollouts × 5-step canary: wall %v, test process CPU %.1f s (controller, client, watches), RSS %d MiB, Go heap %d MiB\n",
		n, wall.Round(100*time.Millisecond), cpuSeconds()-cpu0, maxRSS()>>20, ms.HeapAlloc>>20)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func maxRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss << 10
}
