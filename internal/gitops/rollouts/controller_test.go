package rollouts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/tlog"
)

func TestMain(m *testing.M) { kube.Main(m) }

// env is one test's namespace on the shared loopback cluster (kube-apiserver, the
// kube-controller-manager's ReplicaSet controller making pods, kwok making them Running and
// Ready) with a rollouts controller watching that namespace.
type env struct {
	t    *testing.T
	c    *kube.Cluster
	ns   string
	ctrl *rollouts.Controller
	ctx  context.Context
	log  *observer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctrl, err := rollouts.New(c.RESTConfig(), rollouts.Options{Namespace: ns, Logger: slog.New(slog.NewTextHandler(tlog.New(t), nil))})
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
	e.log = e.observe()
	return e
}

// observer records every distinct (phase, step, message) a Rollout's status goes through, from
// a watch of the API server: what a user running `kubectl argo rollouts get --watch` sees.
type observer struct {
	mu    sync.Mutex
	trail []string
}

func (o *observer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.trail, "\n  ")
}

func (o *observer) saw(s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.trail {
		if strings.HasPrefix(x, s) {
			return true
		}
	}
	return false
}

func (e *env) observe() *observer {
	o := &observer{}
	w, err := e.c.Dynamic.Resource(rollouts.RolloutsResource).Namespace(e.ns).Watch(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	go func() {
		last := ""
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			u := ev.Object.(*unstructured.Unstructured)
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
			step, has, _ := unstructured.NestedInt64(u.Object, "status", "currentStepIndex")
			s := fmt.Sprintf("%s %s step=", u.GetName(), phase)
			if has {
				s += fmt.Sprint(step)
			} else {
				s += "-"
			}
			s += " " + msg
			if s != last {
				last = s
				o.mu.Lock()
				o.trail = append(o.trail, s)
				o.mu.Unlock()
			}
		}
	}()
	return o
}

func (e *env) waitFor(what string, d time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	trail := ""
	if e.log != nil {
		trail = e.log.String()
	}
	e.t.Fatalf("timed out after %v waiting for %s; last: %s\nstatus trail:\n  %s", d, what, last, trail)
}

func (e *env) apply(y string) {
	e.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		e.t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		e.t.Fatal(err)
	}
	force := true
	if _, err := e.c.Dynamic.Resource(rollouts.RolloutsResource).Namespace(e.ns).Patch(e.ctx, u.GetName(), types.ApplyPatchType, j,
		metav1.PatchOptions{FieldManager: "test", Force: &force}); err != nil {
		e.t.Fatalf("apply rollout: %v", err)
	}
}

func (e *env) service(name, app string) {
	e.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app},
		Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := e.c.Client.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rollout(name string) *rollouts.Rollout {
	e.t.Helper()
	ro, err := e.ctrl.Get(e.ctx, e.ns, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return ro
}

// replicaSets returns "revision:spec/ready" for each ReplicaSet of the Rollout, by revision.
func (e *env) replicaSets(name string) (string, map[string]*appsv1.ReplicaSet) {
	e.t.Helper()
	list, err := e.c.Client.AppsV1().ReplicaSets(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	byRev := map[string]*appsv1.ReplicaSet{}
	var parts []string
	for i := range list.Items {
		rs := &list.Items[i]
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.Name != name {
			continue
		}
		rev := rs.Annotations[rollouts.RevisionAnnotation]
		byRev[rev] = rs
	}
	for rev := 1; rev <= 20; rev++ {
		if rs := byRev[fmt.Sprint(rev)]; rs != nil {
			parts = append(parts, fmt.Sprintf("%d:%d/%d", rev, *rs.Spec.Replicas, rs.Status.ReadyReplicas))
		}
	}
	return strings.Join(parts, " "), byRev
}

// readyPods counts Running and Ready pods of a revision (by its pod-template hash).
func (e *env) readyPods(hash string) int {
	e.t.Helper()
	pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: rollouts.PodTemplateHashLabel + "=" + hash})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}

func (e *env) selector(svc string) string {
	e.t.Helper()
	s, err := e.c.Client.CoreV1().Services(e.ns).Get(e.ctx, svc, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.Spec.Selector[rollouts.PodTemplateHashLabel]
}

func (e *env) waitRS(name, want string) {
	e.t.Helper()
	e.waitFor("ReplicaSets "+want, 60*time.Second, func() (bool, string) {
		got, _ := e.replicaSets(name)
		return got == want, got
	})
}

func (e *env) waitPhase(name string, phase rollouts.Phase, step int32) *rollouts.Rollout {
	e.t.Helper()
	var ro *rollouts.Rollout
	e.waitFor(fmt.Sprintf("phase %s at step %d", phase, step), 60*time.Second, func() (bool, string) {
		ro = e.rollout(name)
		i := int32(-1)
		if ro.Status.CurrentStepIndex != nil {
			i = *ro.Status.CurrentStepIndex
		}
		return ro.Status.Phase == phase && (step < 0 || i == step) && ro.Status.ObservedGeneration == fmt.Sprint(ro.Generation),
			fmt.Sprintf("%s step %d %q", ro.Status.Phase, i, ro.Status.Message)
	})
	return ro
}

func canary(image string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 4
  revisionHistoryLimit: 2
  minReadySeconds: 0
  progressDeadlineSeconds: 120
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
  strategy:
    canary:
      canaryService: web-canary
      stableService: web-stable
      maxSurge: 1
      maxUnavailable: 0
      steps:
      - setWeight: 25
      - pause: {}
      - setWeight: 50
      - pause: {duration: 2s}
`
}

func TestCanaryOnAPIServer(t *testing.T) {
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.apply(canary("registry.local/web:1"))
	ro := e.waitPhase("web", rollouts.PhaseHealthy, 4)
	stable := ro.Status.StableRS
	e.waitRS("web", "1:4/4")
	if n := e.readyPods(stable); n != 4 {
		t.Fatalf("%d ready pods of revision 1, want 4", n)
	}
	if ro.Status.Replicas != 4 || ro.Status.UpdatedReplicas != 4 || ro.Status.AvailableReplicas != 4 || ro.Status.CurrentPodHash != stable {
		t.Fatalf("status %+v", ro.Status)
	}
	if e.selector("web-canary") != stable || e.selector("web-stable") != stable {
		t.Fatalf("services select %s and %s, want %s", e.selector("web-canary"), e.selector("web-stable"), stable)
	}

	// A new image: one canary pod (25 % of 4), three stable, then the indefinite pause.
	e.apply(canary("registry.local/web:2"))
	ro = e.waitPhase("web", rollouts.PhasePaused, 1)
	canaryHash := ro.Status.CurrentPodHash
	e.waitRS("web", "1:3/3 2:1/1")
	if e.selector("web-canary") != canaryHash || e.selector("web-stable") != stable {
		t.Fatalf("paused at 25%%: canary service selects %s (want %s), stable %s (want %s)", e.selector("web-canary"), canaryHash, e.selector("web-stable"), stable)
	}
	if len(ro.Status.PauseConditions) != 1 || ro.Status.PauseConditions[0].Reason != rollouts.PauseReasonCanaryPauseStep || !ro.Status.ControllerPause {
		t.Fatalf("pause conditions %+v", ro.Status.PauseConditions)
	}
	// Stays paused.
	time.Sleep(time.Second)
	if got := e.rollout("web"); got.Status.Phase != rollouts.PhasePaused {
		t.Fatalf("the pause did not hold: %s", got.Status.Phase)
	}

	// Promote: 50 %, the 2 s pause, then every step is done and revision 2 is stable.
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", false); err != nil {
		t.Fatal(err)
	}
	e.waitFor("step 3 (the 2s pause) at 50%", 60*time.Second, func() (bool, string) {
		got, _ := e.replicaSets("web")
		return e.log.saw("web Paused step=3"), got
	})
	ro = e.waitPhase("web", rollouts.PhaseHealthy, 4)
	if ro.Status.StableRS != canaryHash {
		t.Fatalf("stableRS %s, want %s", ro.Status.StableRS, canaryHash)
	}
	e.waitRS("web", "1:0/0 2:4/4")
	if e.selector("web-canary") != canaryHash || e.selector("web-stable") != canaryHash {
		t.Fatalf("after promotion: services select %s and %s", e.selector("web-canary"), e.selector("web-stable"))
	}
	for _, want := range []string{"web Paused step=1 CanaryPauseStep", "web Paused step=3 CanaryPauseStep", "web Healthy step=4"} {
		if !e.log.saw(want) {
			t.Errorf("the status never showed %q; trail:\n  %s", want, e.log)
		}
	}
	t.Logf("status trail:\n  %s", e.log)

	// revisionHistoryLimit 2: two more revisions leave at most two scaled-down ones.
	for _, img := range []string{"registry.local/web:3", "registry.local/web:4"} {
		e.apply(canary(img))
		e.waitPhase("web", rollouts.PhasePaused, 1)
		if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
			t.Fatal(err)
		}
		e.waitPhase("web", rollouts.PhaseHealthy, 4)
	}
	e.waitRS("web", "2:0/0 3:0/0 4:4/4")
}

func TestCanaryAbortAndRetry(t *testing.T) {
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.apply(canary("registry.local/web:1"))
	stable := e.waitPhase("web", rollouts.PhaseHealthy, 4).Status.StableRS
	e.apply(canary("registry.local/web:2"))
	e.waitPhase("web", rollouts.PhasePaused, 1)
	e.waitRS("web", "1:3/3 2:1/1")

	if err := e.ctrl.Abort(e.ctx, e.ns, "web"); err != nil {
		t.Fatal(err)
	}
	ro := e.waitPhase("web", rollouts.PhaseDegraded, 0)
	if !strings.HasPrefix(ro.Status.Message, "RolloutAborted: Rollout aborted update to revision 2") || ro.Status.AbortedAt == nil {
		t.Fatalf("aborted: %q", ro.Status.Message)
	}
	e.waitRS("web", "1:4/4 2:0/0")
	if e.selector("web-canary") != stable || e.selector("web-stable") != stable {
		t.Fatalf("aborted: services select %s and %s, want stable %s", e.selector("web-canary"), e.selector("web-stable"), stable)
	}
	if err := e.ctrl.Abort(e.ctx, e.ns, "web"); err != nil {
		t.Fatalf("abort twice: %v", err) // still an update in progress: harmless
	}

	if err := e.ctrl.Retry(e.ctx, e.ns, "web"); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhasePaused, 1)
	e.waitRS("web", "1:3/3 2:1/1")
	if err := e.ctrl.Retry(e.ctx, e.ns, "web"); err == nil {
		t.Fatal("retry of a rollout that is not aborted succeeded")
	}
	// Full promotion skips the remaining steps.
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhaseHealthy, 4)
	e.waitRS("web", "1:0/0 2:4/4")
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", false); err == nil {
		t.Fatal("promoting a fully promoted rollout succeeded")
	}
}

func blueGreen(image string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: shop, image: "` + image + `"}]}
  strategy:
    blueGreen:
      activeService: shop-active
      previewService: shop-preview
      autoPromotionEnabled: false
      previewReplicaCount: 1
      scaleDownDelaySeconds: 2
`
}

func TestBlueGreenOnAPIServer(t *testing.T) {
	e := newEnv(t)
	e.service("shop-active", "shop")
	e.service("shop-preview", "shop")
	e.apply(blueGreen("registry.local/shop:1"))
	blue := e.waitPhase("shop", rollouts.PhaseHealthy, -1).Status.StableRS
	e.waitRS("shop", "1:3/3")
	if e.selector("shop-active") != blue {
		t.Fatalf("active selects %q, want %s", e.selector("shop-active"), blue)
	}

	e.apply(blueGreen("registry.local/shop:2"))
	ro := e.waitPhase("shop", rollouts.PhasePaused, -1)
	green := ro.Status.CurrentPodHash
	e.waitRS("shop", "1:3/3 2:1/1")
	if e.selector("shop-active") != blue || e.selector("shop-preview") != green {
		t.Fatalf("preview: active %s (want %s), preview %s (want %s)", e.selector("shop-active"), blue, e.selector("shop-preview"), green)
	}
	if ro.Status.BlueGreen.ActiveSelector != blue || ro.Status.BlueGreen.PreviewSelector != green || ro.Status.Message != "BlueGreenPause" {
		t.Fatalf("status %+v %q", ro.Status.BlueGreen, ro.Status.Message)
	}

	promoted := time.Now() // the switch cannot come before this
	if err := e.ctrl.Promote(e.ctx, e.ns, "shop", false); err != nil {
		t.Fatal(err)
	}
	// The preview scales to 3, takes the active Service, and blue goes 2 s later: at the switch
	// blue still runs, with the deadline (the switch's time + 2 s) on its ReplicaSet.
	e.waitFor("active switched", 60*time.Second, func() (bool, string) {
		return e.selector("shop-active") == green, e.selector("shop-active")
	})
	got, byRev := e.replicaSets("shop")
	if got != "1:3/3 2:3/3" {
		t.Fatalf("at the switch: %s (the old revision must stay for scaleDownDelaySeconds)", got)
	}
	deadline, err := time.Parse(time.RFC3339, byRev["1"].Annotations[rollouts.ScaleDownDeadlineAnnotation])
	if err != nil || deadline.Before(promoted.Add(2*time.Second).Truncate(time.Second)) {
		t.Fatalf("blue's scale-down deadline %q (%v): want the switch + 2 s, after %s", byRev["1"].Annotations[rollouts.ScaleDownDeadlineAnnotation], err, promoted.Format(time.RFC3339Nano))
	}
	e.waitRS("shop", "1:0/0 2:3/3")
	// Observed no earlier than it happened, which is no earlier than the deadline: the switch's
	// time + 2 s in whole seconds (RFC 3339, as Argo writes it), so at least 1 s after promoting.
	if d := time.Since(promoted); d < time.Second {
		t.Fatalf("blue scaled down %v after the promotion, before scaleDownDelaySeconds", d)
	}
	ro = e.waitPhase("shop", rollouts.PhaseHealthy, -1)
	if ro.Status.StableRS != green || ro.Status.BlueGreen.ActiveSelector != green {
		t.Fatalf("status %+v", ro.Status)
	}
	t.Logf("status trail:\n  %s", e.log)
}

func TestInvalidRolloutChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.service("web-canary", "web")
	y := strings.Replace(canary("registry.local/web:1"), "setWeight: 50", "setWeight: 150", 1)
	e.apply(y)
	ro := e.waitPhase("web", rollouts.PhaseDegraded, -1)
	want := `InvalidSpec: spec.strategy.canary.steps[2].setWeight: "150" must be 0 to 100`
	if ro.Status.Message != want {
		t.Fatalf("message %q, want %q", ro.Status.Message, want)
	}
	time.Sleep(500 * time.Millisecond)
	if got, _ := e.replicaSets("web"); got != "" {
		t.Fatalf("an invalid rollout made ReplicaSets: %s", got)
	}
	// Fixed, it runs — once its stable Service exists: till then the error is in the message
	// and the Rollout is retried.
	e.apply(canary("registry.local/web:1"))
	e.waitFor("the missing Service named", 30*time.Second, func() (bool, string) {
		ro := e.rollout("web")
		return ro.Status.Message == `ReconciliationError: service "web-stable" (spec.strategy.canary.stableService) does not exist`, ro.Status.Message
	})
	if got, _ := e.replicaSets("web"); got != "" {
		t.Fatalf("ReplicaSets made while a Service is missing: %s", got)
	}
	e.service("web-stable", "web")
	e.waitPhase("web", rollouts.PhaseHealthy, 4)
}

func TestRestartAt(t *testing.T) {
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.apply(canary("registry.local/web:1"))
	e.waitPhase("web", rollouts.PhaseHealthy, 4)
	e.waitRS("web", "1:4/4")
	before, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(time.Now().Add(time.Second).Truncate(time.Second))
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"restartAt": at}})
	if _, err := e.c.Dynamic.Resource(rollouts.RolloutsResource).Namespace(e.ns).Patch(e.ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("restartedAt", 90*time.Second, func() (bool, string) {
		ro := e.rollout("web")
		return ro.Status.RestartedAt != nil && ro.Status.RestartedAt.Equal(&at) && ro.Status.Phase == rollouts.PhaseHealthy, string(ro.Status.Phase) + " " + ro.Status.Message
	})
	after, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, p := range before.Items {
		old[p.Name] = true
	}
	for _, p := range after.Items {
		if old[p.Name] && p.DeletionTimestamp == nil {
			t.Errorf("pod %s from before restartAt is still there", p.Name)
		}
	}
}

func TestCRDsPrintArgoColumns(t *testing.T) {
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.apply(canary("registry.local/web:1"))
	e.waitPhase("web", rollouts.PhaseHealthy, 4)
	// What `kubectl get rollout` prints: the API server's table.
	raw, err := e.c.Client.CoreV1().RESTClient().Get().AbsPath("/apis/argoproj.io/v1alpha1/namespaces/"+e.ns+"/rollouts").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got := strings.Join(cols, ","); got != "Name,Desired,Current,Up-to-date,Available,Age" {
		t.Fatalf("columns %s", got)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[1:5]) != "[4 4 4 4]" {
		t.Fatalf("rows %v", table.Rows)
	}
	// Argo Rollouts' other kinds apply as they are.
	at := `{"apiVersion":"argoproj.io/v1alpha1","kind":"AnalysisTemplate","metadata":{"name":"success-rate"},
	  "spec":{"metrics":[{"name":"ok","interval":"10s","successCondition":"result[0] >= 0.95","provider":{"web":{"url":"http://x/"}}}]}}`
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(at)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Dynamic.Resource(rollouts.AnalysisTemplatesResource).Namespace(e.ns).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("AnalysisTemplate: %v", err)
	}
}

func replace(s, old, new string) string { return strings.ReplaceAll(s, old, new) }

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	return unstructured.NestedString(obj, fields...)
}

func TestMinReadySeconds(t *testing.T) {
	e := newEnv(t)
	e.apply(`
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: slow}
spec:
  replicas: 1
  minReadySeconds: 3
  selector: {matchLabels: {app: slow}}
  template:
    metadata: {labels: {app: slow}}
    spec: {containers: [{name: slow, image: "registry.local/slow:1"}]}
  strategy: {canary: {}}
`)
	var hash string
	e.waitFor("a Ready pod", 60*time.Second, func() (bool, string) {
		hash = e.rollout("slow").Status.CurrentPodHash
		return hash != "" && e.readyPods(hash) == 1, ""
	})
	ready := time.Now()
	ro := e.waitPhase("slow", rollouts.PhaseHealthy, -1)
	if d := time.Since(ready); d < 2*time.Second {
		t.Fatalf("Healthy %v after the pod was Ready, before minReadySeconds (3)", d)
	}
	_, rss := e.replicaSets("slow")
	if rs := rss["1"]; rs == nil || rs.Spec.MinReadySeconds != 3 || ro.Status.AvailableReplicas != 1 {
		t.Fatalf("ReplicaSet %+v, available %d", rs, ro.Status.AvailableReplicas)
	}
}

// TestCanaryAnalysisWebMetric runs an inline analysis step with a web metric against an HTTP
// server the test controls: passing, the steps go on; failing, the update is aborted back to
// stable, with the metric named; retried once the metric passes, it completes.
func TestCanaryAnalysisWebMetric(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	rate := 0.99
	var hashes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hashes = append(hashes, r.URL.Query().Get("canary"))
		fmt.Fprintf(w, `{"data": {"successRate": %v}}`, rate)
	}))
	t.Cleanup(srv.Close)
	setRate := func(v float64) { mu.Lock(); rate = v; mu.Unlock() }

	tpl := `{"apiVersion":"argoproj.io/v1alpha1","kind":"AnalysisTemplate","metadata":{"name":"success-rate"},
	  "spec":{"args":[{"name":"canary-hash"},{"name":"threshold","value":"0.95"}],
	    "metrics":[{"name":"success-rate","interval":"200ms","count":3,"failureLimit":0,
	      "successCondition":"result >= {{args.threshold}}",
	      "provider":{"web":{"url":"` + srv.URL + `/rate?canary={{args.canary-hash}}","jsonPath":"{$.data.successRate}"}}}]}}`
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(tpl)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Dynamic.Resource(rollouts.AnalysisTemplatesResource).Namespace(e.ns).Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ro := func(image string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api}
spec:
  replicas: 4
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: "` + image + `"}]}
  strategy:
    canary:
      maxSurge: 1
      maxUnavailable: 0
      steps:
      - setWeight: 25
      - analysis:
          templates: [{templateName: success-rate}]
          args: [{name: canary-hash, valueFrom: {podTemplateHashValue: Latest}}]
      - setWeight: 50
`
	}
	e.apply(ro("registry.local/api:1"))
	e.waitPhase("api", rollouts.PhaseHealthy, 3)

	// Passing: three measurements, then the next steps.
	e.apply(ro("registry.local/api:2"))
	done := e.waitPhase("api", rollouts.PhaseHealthy, 3)
	runName := "api-" + done.Status.CurrentPodHash + "-1"
	run, err := e.c.Dynamic.Resource(rollouts.AnalysisRunsResource).Namespace(e.ns).Get(e.ctx, runName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("AnalysisRun %s: %v", runName, err)
	}
	phase, _, _ := unstructured.NestedString(run.Object, "status", "phase")
	results, _, _ := unstructured.NestedSlice(run.Object, "status", "metricResults")
	if phase != "Successful" || len(results) != 1 || results[0].(map[string]any)["count"] != int64(3) {
		t.Fatalf("run %s: phase %s, results %v", runName, phase, results)
	}
	mu.Lock()
	if len(hashes) == 0 || hashes[len(hashes)-1] != done.Status.CurrentPodHash {
		t.Errorf("the metric's URL got canary=%v, want the Latest hash %s", hashes, done.Status.CurrentPodHash)
	}
	mu.Unlock()

	// Failing: the update is aborted, scale and selectors back to stable, the metric named.
	setRate(0.5)
	e.apply(ro("registry.local/api:3"))
	failed := e.waitPhase("api", rollouts.PhaseDegraded, 0)
	if !strings.Contains(failed.Status.Message, `RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate" assessed Failed`) {
		t.Fatalf("aborted: %q", failed.Status.Message)
	}
	e.waitRS("api", "1:0/0 2:4/4 3:0/0")

	// Fixed, and retried: measured afresh, and through.
	setRate(0.99)
	if err := e.ctrl.Retry(e.ctx, e.ns, "api"); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("api", rollouts.PhaseHealthy, 3)
	e.waitRS("api", "1:0/0 2:0/0 3:4/4")
	t.Logf("status trail:\n  %s", e.log)
}

func TestProgressDeadlineAbort(t *testing.T) {
	e := newEnv(t)
	doc := func(image, annotations string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: crash}
spec:
  replicas: 2
  minReadySeconds: 2
  progressDeadlineSeconds: 4
  progressDeadlineAbort: true
  selector: {matchLabels: {app: crash}}
  template:
    metadata:
      labels: {app: crash}
      annotations: ` + annotations + `
    spec: {containers: [{name: crash, image: "` + image + `"}]}
  strategy:
    canary:
      steps: [{setWeight: 50}, {pause: {}}]
`
	}
	e.apply(doc("registry.local/crash:1", "{}"))
	stable := e.waitPhase("crash", rollouts.PhaseHealthy, 2).Status.StableRS
	// The new revision's pods fail at once (kwok ends them with exit code 1): no progress.
	e.apply(doc("registry.local/crash:2", `{devcluster.freshet.dev/exit-code: "1"}`))
	e.waitFor("aborted after the deadline", 60*time.Second, func() (bool, string) {
		ro := e.rollout("crash")
		return ro.Status.Phase == rollouts.PhaseDegraded && ro.Status.Abort && strings.HasPrefix(ro.Status.Message, "RolloutAborted: "), ro.Status.Message
	})
	if !e.log.saw("crash Degraded step=0 ProgressDeadlineExceeded") {
		t.Errorf("the status never showed ProgressDeadlineExceeded; trail:\n  %s", e.log)
	}
	e.waitRS("crash", "1:2/2 2:0/0")
	if e.rollout("crash").Status.StableRS != stable {
		t.Fatal("stable changed")
	}
}
