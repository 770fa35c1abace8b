package rollouts_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
	"github.com/freshet-dev/freshet/internal/testenv/promenv"
)

// template creates or replaces an AnalysisTemplate from YAML.
func (e *env) template(y string) {
	e.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		e.t.Fatal(err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		e.t.Fatal(err)
	}
	res := e.c.Dynamic.Resource(rollouts.AnalysisTemplatesResource).Namespace(e.ns)
	if cur, err := res.Get(e.ctx, u.GetName(), metav1.GetOptions{}); err == nil {
		u.SetResourceVersion(cur.GetResourceVersion())
		if _, err := res.Update(e.ctx, &u, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if _, err := res.Create(e.ctx, &u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) run(name string) *unstructured.Unstructured {
	e.t.Helper()
	u, err := e.c.Dynamic.Resource(rollouts.AnalysisRunsResource).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("AnalysisRun %s: %v", name, err)
	}
	return u
}

// waitAborted waits for the abort and checks that scale and both Services are back at stable.
func (e *env) waitAborted(name, wantMsg, wantRS string, services ...string) {
	e.t.Helper()
	ro := e.waitPhase(name, rollouts.PhaseDegraded, -1)
	if !ro.Status.Abort || !strings.Contains(ro.Status.Message, wantMsg) {
		e.t.Fatalf("aborted: %v %q, want %q", ro.Status.Abort, ro.Status.Message, wantMsg)
	}
	e.waitRS(name, wantRS)
	for _, s := range services {
		if got := e.selector(s); got != ro.Status.StableRS {
			e.t.Fatalf("service %s selects %s, want the stable %s", s, got, ro.Status.StableRS)
		}
	}
}

const promTemplate = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: prom-rate}
spec:
  args:
  - name: app
  - name: user
    valueFrom: {secretKeyRef: {name: prom-auth, key: username}}
  - name: password
    valueFrom: {secretKeyRef: {name: prom-auth, key: password}}
  measurementRetention: [{metricName: success-rate, limit: 2}]
  dryRun: [{metricName: dry-probe}]
  metrics:
  - name: success-rate
    interval: 200ms
    count: 3
    consecutiveErrorLimit: 1
    successCondition: result[0] >= 0.95
    provider:
      prometheus:
        address: ADDRESS
        timeout: 5
        query: freshet_success_rate{app="{{args.app}}"}
        authentication: {basicAuth: {username: "{{args.user}}", password: "{{args.password}}"}}
  - name: dry-probe
    successCondition: result[0] >= 2
    provider:
      prometheus:
        address: ADDRESS
        query: freshet_success_rate{app="{{args.app}}"}
        authentication: {basicAuth: {username: "{{args.user}}", password: "{{args.password}}"}}
`

// TestCanaryAnalysisPrometheus runs an analysis step against a real Prometheus scraping a
// target the test sets: the app argument from the Rollout's label (fieldRef), the credentials
// from a Secret (never in the run), a dry-run metric that fails without deciding, retention of
// two measurements; then a failing rate and an unreachable Prometheus abort back to stable.
func TestCanaryAnalysisPrometheus(t *testing.T) {
	e := newEnv(t)
	target := promenv.NewTarget(t)
	target.Set(`freshet_success_rate{app="api"}`, 0.99)
	prom := promenv.Start(t, target)
	prom.WaitFor(t, `freshet_success_rate{app="api"}`, 0.99)
	if _, err := e.c.Client.CoreV1().Secrets(e.ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prom-auth"},
		StringData: map[string]string{"username": prom.User, "password": prom.Password}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.template(strings.ReplaceAll(promTemplate, "ADDRESS", prom.URL))
	e.service("api-canary", "api")
	e.service("api-stable", "api")
	doc := func(image string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api, labels: {app: api}}
spec:
  replicas: 4
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: "` + image + `"}]}
  strategy:
    canary:
      canaryService: api-canary
      stableService: api-stable
      maxSurge: 1
      maxUnavailable: 0
      steps:
      - setWeight: 25
      - analysis:
          templates: [{templateName: prom-rate}]
          args: [{name: app, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}]
      - setWeight: 50
`
	}
	e.apply(doc("registry.local/api:1"))
	e.waitPhase("api", rollouts.PhaseHealthy, 3)

	e.apply(doc("registry.local/api:2"))
	done := e.waitPhase("api", rollouts.PhaseHealthy, 3)
	run := e.run("api-" + done.Status.CurrentPodHash + "-1")
	raw, _ := run.MarshalJSON()
	if strings.Contains(string(raw), prom.Password) {
		t.Fatalf("the password is in the AnalysisRun: %s", raw)
	}
	var ar rollouts.AnalysisRun
	if err := json.Unmarshal(raw, &ar); err != nil {
		t.Fatal(err)
	}
	st := ar.Status
	if st.Phase != rollouts.AnalysisSuccessful || len(st.MetricResults) != 2 {
		t.Fatalf("run: %s", raw)
	}
	gate, dry := st.MetricResults[0], st.MetricResults[1]
	if gate.Count != 3 || len(gate.Measurements) != 2 || gate.Measurements[1].Value != "[0.99]" {
		t.Fatalf("success-rate: %+v", gate)
	}
	if !dry.DryRun || dry.Phase != rollouts.AnalysisFailed || st.DryRunSummary == nil || st.DryRunSummary.Failed != 1 {
		t.Fatalf("dry-probe: %+v, summary %+v", dry, st.DryRunSummary)
	}
	if !strings.Contains(string(raw), `"query":"freshet_success_rate{app=\"api\"}"`) || !strings.Contains(string(raw), `"secretKeyRef":{"key":"password","name":"prom-auth"}`) {
		t.Fatalf("the run's spec: %s", raw)
	}

	// Failing: aborted, scale and Services back at stable, the metric named.
	target.Set(`freshet_success_rate{app="api"}`, 0.5)
	prom.WaitFor(t, `freshet_success_rate{app="api"}`, 0.5)
	e.apply(doc("registry.local/api:3"))
	e.waitAborted("api", `Metric "success-rate" assessed Failed`, "1:0/0 2:4/4 3:0/0", "api-canary", "api-stable")

	// Prometheus unreachable: an Error naming the metric and the connection; stable again.
	target.Set(`freshet_success_rate{app="api"}`, 0.99)
	e.template(strings.ReplaceAll(promTemplate, "ADDRESS", fmt.Sprintf("http://127.0.0.1:%d", proc.FreePort(t))))
	e.apply(doc("registry.local/api:4"))
	e.waitAborted("api", `Metric "success-rate" assessed Error`, "1:0/0 2:4/4 3:0/0 4:0/0", "api-canary", "api-stable")
	if msg := e.rollout("api").Status.Message; !strings.Contains(msg, "connection refused") {
		t.Fatalf("message %q does not say why", msg)
	}
	t.Logf("status trail:\n  %s", e.log)
}

// TestAnalysisJobProvider: a Job metric on the loopback cluster, where the Job controller runs
// the Job and kwok completes its pod (exit code 0, or the code in the
// devcluster.freshet.dev/exit-code annotation: pods do not run containers). Succeeded → the
// step passes; failed → the update is aborted. The run's Jobs are deleted when it ends.
func TestAnalysisJobProvider(t *testing.T) {
	e := newEnv(t)
	e.template(`
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: smoke}
spec:
  args: [{name: exit-code}]
  metrics:
  - name: smoke-test
    provider:
      job:
        metadata: {labels: {purpose: smoke}}
        spec:
          backoffLimit: 0
          template:
            metadata: {annotations: {devcluster.freshet.dev/exit-code: "{{args.exit-code}}"}}
            spec:
              restartPolicy: Never
              containers: [{name: smoke, image: registry.local/smoke:1, command: [sh, -c, "curl -f http://api-canary/healthz"]}]
`)
	doc := func(image, code string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: svc}
spec:
  replicas: 2
  selector: {matchLabels: {app: svc}}
  template:
    metadata: {labels: {app: svc}}
    spec: {containers: [{name: svc, image: "` + image + `"}]}
  strategy:
    canary:
      steps:
      - setWeight: 50
      - analysis:
          templates: [{templateName: smoke}]
          args: [{name: exit-code, value: "` + code + `"}]
`
	}
	jobs := func() int {
		l, err := e.c.Client.BatchV1().Jobs(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "purpose=smoke"})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	e.apply(doc("registry.local/svc:1", "0"))
	e.waitPhase("svc", rollouts.PhaseHealthy, 2)

	seen := make(chan struct{})
	go func() { // the Job exists while the run waits for it
		for e.ctx.Err() == nil {
			l, err := e.c.Client.BatchV1().Jobs(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: "purpose=smoke"})
			if err == nil && len(l.Items) > 0 {
				close(seen)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	e.apply(doc("registry.local/svc:2", "0"))
	done := e.waitPhase("svc", rollouts.PhaseHealthy, 2)
	select {
	case <-seen:
	case <-time.After(time.Second):
		t.Fatal("no Job was seen")
	}
	run := e.run("svc-" + done.Status.CurrentPodHash + "-1")
	if ph, _, _ := unstructured.NestedString(run.Object, "status", "phase"); ph != "Successful" {
		t.Fatalf("run phase %s", ph)
	}
	e.waitFor("the run's Jobs deleted", 30*time.Second, func() (bool, string) { return jobs() == 0, fmt.Sprint(jobs()) })

	e.apply(doc("registry.local/svc:3", "1"))
	e.waitAborted("svc", `Metric "smoke-test" assessed Failed`, "1:0/0 2:2/2 3:0/0")
	e.waitFor("the failed run's Jobs deleted", 30*time.Second, func() (bool, string) { return jobs() == 0, fmt.Sprint(jobs()) })

	// The template's argument left without a value: the run fails naming it, no Job is made, and
	// the update is aborted back to stable.
	e.apply(strings.Replace(doc("registry.local/svc:4", "0"), `args: [{name: exit-code, value: "0"}]`, `args: []`, 1))
	e.waitAborted("svc", `exit-code`, "1:0/0 2:2/2 3:0/0 4:0/0")
	if msg := e.rollout("svc").Status.Message; !strings.Contains(msg, "given no value") {
		t.Fatalf("message %q", msg)
	}
	if n := jobs(); n != 0 {
		t.Fatalf("%d Jobs", n)
	}
}

func gaugeTemplate(name, series, address, count string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: ` + name + `}
spec:
  args: [{name: user}, {name: password}]
  metrics:
  - name: ` + name + `
    interval: 200ms
    ` + count + `
    successCondition: result[0] >= 0.95
    provider:
      prometheus:
        address: ` + address + `
        query: ` + series + `
        authentication: {basicAuth: {username: "{{args.user}}", password: "{{args.password}}"}}
`
}

// TestCanaryBackgroundAnalysis: background analysis from step 1 runs while the update does;
// the update completing terminates it; a failing measurement aborts the next update at once.
func TestCanaryBackgroundAnalysis(t *testing.T) {
	e := newEnv(t)
	target := promenv.NewTarget(t)
	target.Set(`freshet_bg_rate`, 0.99)
	prom := promenv.Start(t, target)
	prom.WaitFor(t, `freshet_bg_rate`, 0.99)
	e.template(gaugeTemplate("bg-rate", "freshet_bg_rate", prom.URL, ""))
	e.service("bg-canary", "bg")
	e.service("bg-stable", "bg")
	doc := func(image string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: bg}
spec:
  replicas: 4
  selector: {matchLabels: {app: bg}}
  template:
    metadata: {labels: {app: bg}}
    spec: {containers: [{name: bg, image: "` + image + `"}]}
  strategy:
    canary:
      canaryService: bg-canary
      stableService: bg-stable
      maxSurge: 1
      maxUnavailable: 0
      analysis:
        startingStep: 1
        templates: [{templateName: bg-rate}]
        args: [{name: user, value: ` + prom.User + `}, {name: password, value: ` + prom.Password + `}]
      steps:
      - setWeight: 25
      - pause: {}
      - setWeight: 50
`
	}
	e.apply(doc("registry.local/bg:1"))
	e.waitPhase("bg", rollouts.PhaseHealthy, 3)

	e.apply(doc("registry.local/bg:2"))
	ro := e.waitPhase("bg", rollouts.PhasePaused, 1)
	runName := "bg-" + ro.Status.CurrentPodHash + "-background"
	e.waitFor("background measurements", 20*time.Second, func() (bool, string) {
		r, err := e.c.Dynamic.Resource(rollouts.AnalysisRunsResource).Namespace(e.ns).Get(e.ctx, runName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error() // started by the reconcile after the one that reached the step
		}
		n, _, _ := unstructured.NestedSlice(r.Object, "status", "metricResults")
		if len(n) == 0 {
			return false, "no results"
		}
		c, _, _ := unstructured.NestedInt64(n[0].(map[string]any), "count")
		return c >= 3, fmt.Sprint(c)
	})
	if err := e.ctrl.Promote(e.ctx, e.ns, "bg", false); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("bg", rollouts.PhaseHealthy, 3)
	e.waitFor("background run terminated", 20*time.Second, func() (bool, string) {
		r := e.run(runName)
		ph, _, _ := unstructured.NestedString(r.Object, "status", "phase")
		msg, _, _ := unstructured.NestedString(r.Object, "status", "message")
		return ph == "Successful" && msg == "Run Terminated", ph + " " + msg
	})

	e.apply(doc("registry.local/bg:3"))
	e.waitPhase("bg", rollouts.PhasePaused, 1)
	target.Set(`freshet_bg_rate`, 0.2)
	e.waitAborted("bg", `Metric "bg-rate" assessed Failed`, "1:0/0 2:4/4 3:0/0", "bg-canary", "bg-stable")
	t.Logf("status trail:\n  %s", e.log)
}

// TestBlueGreenPromotionAnalysis: pre-promotion analysis gates the switch (failing: aborted,
// the active Service never moves); post-promotion analysis failing after the switch points the
// active Service back at the previous revision, which kept its scale.
func TestBlueGreenPromotionAnalysis(t *testing.T) {
	e := newEnv(t)
	target := promenv.NewTarget(t)
	target.Set(`freshet_pre`, 0.99)
	target.Set(`freshet_post`, 0.99)
	prom := promenv.Start(t, target)
	prom.WaitFor(t, `freshet_post`, 0.99)
	e.template(gaugeTemplate("pre-rate", "freshet_pre", prom.URL, "count: 2"))
	e.template(gaugeTemplate("post-rate", "freshet_post", prom.URL, "count: 2"))
	e.service("shop-active", "shop")
	e.service("shop-preview", "shop")
	args := `[{name: user, value: ` + prom.User + `}, {name: password, value: ` + prom.Password + `}]`
	doc := func(image string) string {
		return `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: shop, image: "` + image + `"}]}
  strategy:
    blueGreen:
      activeService: shop-active
      previewService: shop-preview
      scaleDownDelaySeconds: 1
      abortScaleDownDelaySeconds: 0
      prePromotionAnalysis: {templates: [{templateName: pre-rate}], args: ` + args + `}
      postPromotionAnalysis: {templates: [{templateName: post-rate}], args: ` + args + `}
`
	}
	e.apply(doc("registry.local/shop:1"))
	v1 := e.waitPhase("shop", rollouts.PhaseHealthy, -1).Status.StableRS

	// Both pass: promoted, stable after the post-promotion analysis, the old revision scaled down.
	e.apply(doc("registry.local/shop:2"))
	e.waitFor("revision 2 stable", 60*time.Second, func() (bool, string) {
		ro := e.rollout("shop")
		return ro.Status.StableRS != v1 && ro.Status.Phase == rollouts.PhaseHealthy, fmt.Sprintf("%s %q", ro.Status.Phase, ro.Status.Message)
	})
	v2 := e.rollout("shop").Status.StableRS
	for _, n := range []string{"pre", "post"} {
		if ph, _, _ := unstructured.NestedString(e.run("shop-"+v2+"-"+n).Object, "status", "phase"); ph != "Successful" {
			t.Fatalf("%s-promotion run: %s", n, ph)
		}
	}
	e.waitRS("shop", "1:0/0 2:2/2")
	if e.selector("shop-active") != v2 {
		t.Fatal("active not at revision 2")
	}

	// Pre-promotion fails: aborted; the active Service never left revision 2.
	target.Set(`freshet_pre`, 0.3)
	prom.WaitFor(t, `freshet_pre`, 0.3)
	e.apply(doc("registry.local/shop:3"))
	e.waitAborted("shop", `Metric "pre-rate" assessed Failed`, "1:0/0 2:2/2 3:0/0", "shop-active", "shop-preview")

	// Pre passes, post fails: the active Service went to revision 4 and comes back to 2.
	target.Set(`freshet_pre`, 0.99)
	target.Set(`freshet_post`, 0.3)
	prom.WaitFor(t, `freshet_pre`, 0.99)
	prom.WaitFor(t, `freshet_post`, 0.3)
	var mu sync.Mutex
	selected := map[string]bool{}
	go func() { // every selector the active Service has, as a client would see it
		for e.ctx.Err() == nil {
			if s, err := e.c.Client.CoreV1().Services(e.ns).Get(e.ctx, "shop-active", metav1.GetOptions{}); err == nil {
				mu.Lock()
				selected[s.Spec.Selector[rollouts.PodTemplateHashLabel]] = true
				mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	e.apply(doc("registry.local/shop:4"))
	e.waitAborted("shop", `Metric "post-rate" assessed Failed`, "1:0/0 2:2/2 3:0/0 4:0/0", "shop-active", "shop-preview")
	ro := e.rollout("shop")
	if ro.Status.StableRS != v2 || ro.Status.BlueGreen.ActiveSelector != v2 {
		t.Fatalf("after the post-promotion failure: stable %s, active %s, want %s", ro.Status.StableRS, ro.Status.BlueGreen.ActiveSelector, v2)
	}
	mu.Lock()
	if !selected[ro.Status.CurrentPodHash] {
		t.Errorf("the active Service never selected revision 4 (%s): %v", ro.Status.CurrentPodHash, selected)
	}
	mu.Unlock()
	t.Logf("status trail:\n  %s", e.log)
}
