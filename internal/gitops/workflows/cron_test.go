package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/tlog"
)

// fakeClock is the controllers' clock in the cron tests: the test moves it, so a schedule of
// once a minute fires when the test says, without waiting a minute.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Set(t time.Time) {
	f.mu.Lock()
	f.t = t
	f.mu.Unlock()
}

// runController starts a controller on ns and returns its stop function (which waits for it).
func runController(t *testing.T, c *kube.Cluster, ns string, clk *fakeClock) (*workflows.Controller, func()) {
	t.Helper()
	ctrl, err := workflows.New(c.RESTConfig(), workflows.Options{Namespace: ns, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(tlog.New(t), nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(60 * time.Second)
	for !ctrl.Healthy() {
		if time.Now().After(deadline) {
			t.Fatal("controller did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ctrl, stop
}

type cronStatus struct {
	Status workflows.CronWorkflowStatus `json:"status"`
}

func (e *env) cron(name string) workflows.CronWorkflowStatus {
	e.t.Helper()
	u, err := e.c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := u.MarshalJSON()
	var s cronStatus
	if err := json.Unmarshal(b, &s); err != nil {
		e.t.Fatal(err)
	}
	return s.Status
}

// touch changes an annotation of the CronWorkflow, so that the controller looks at it now.
var touches int

func (e *env) touch(name string) {
	e.t.Helper()
	touches++
	body := fmt.Sprintf(`{"metadata":{"annotations":{"test/touch":"%d"}}}`, touches)
	if _, err := e.c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// cronRuns lists the names of the Workflows labelled with the CronWorkflow.
func (e *env) cronRuns(name string) []string {
	e.t.Helper()
	l, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelCronWorkflow + "=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		if u.GetDeletionTimestamp() == nil {
			out = append(out, u.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// finishedRun waits for a Workflow that may not exist yet to finish.
func (e *env) finishedRun(name string) *workflows.Workflow {
	e.t.Helper()
	e.waitFor(name+" to exist", 30*time.Second, func() (bool, string) {
		_, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return e.finished(name, 30*time.Second)
}

func runName(cron string, due time.Time) string {
	return cron + "-" + strconv.FormatInt(due.Unix(), 10)
}

// TestCronWorkflowOnCluster: CronWorkflows on a clock the test moves. A Forbid CronWorkflow
// creates its Workflow (labelled, owned, in its status), skips the next schedule while that
// Workflow runs (an Event says so), and runs again once it ended; an Allow one with a history
// limit of 1 keeps only its last succeeded Workflow; a schedule missed while the controller was
// down runs once after a restart if within startingDeadlineSeconds, and not again after
// another restart; bad schedules and time zones are conditions naming the field, and nothing
// runs.
func TestCronWorkflowOnCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	clk := &fakeClock{t: time.Now()}
	ctrl, stop := runController(t, c, ns, clk)
	e := &env{t: t, c: c, ns: ns, ctrl: ctrl, ctx: context.Background()}

	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: forbid}
spec:
  schedule: "* * * * *"
  timezone: Europe/Berlin
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: 10
  workflowMetadata: {labels: {team: a}}
  workflowSpec:
    entrypoint: wait
    templates:
    - {name: wait, suspend: {}}
`)
	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: hist}
spec:
  schedules: ["* * * * *"]
  successfulJobsHistoryLimit: 1
  startingDeadlineSeconds: 30
  workflowSpec:
    entrypoint: quick
    templates:
    - {name: quick, suspend: {duration: "0s"}}
`)
	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: replace}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Replace
  workflowSpec:
    entrypoint: wait
    templates:
    - {name: wait, suspend: {}}
`)
	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: badsched}
spec:
  schedule: "61 * * * *"
  workflowSpec: {entrypoint: a, templates: [{name: a, suspend: {}}]}
`)
	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: badtz}
spec:
  schedule: "* * * * *"
  timezone: Mars/Olympus
  workflowSpec: {entrypoint: a, templates: [{name: a, suspend: {}}]}
`)
	for name, field := range map[string]string{"badsched": "spec.schedule", "badtz": "spec.timezone"} {
		e.waitFor(name+" condition", 30*time.Second, func() (bool, string) {
			st := e.cron(name)
			return len(st.Conditions) == 1 && st.Conditions[0].Type == workflows.CondSpecError &&
				strings.HasPrefix(st.Conditions[0].Message, field+": "), fmt.Sprintf("%+v", st)
		})
	}

	created := time.Now().Add(time.Second) // the CronWorkflows' creationTimestamp is before this
	tick1 := created.Truncate(time.Minute).Add(time.Minute)
	tick2, tick3, tick4 := tick1.Add(time.Minute), tick1.Add(2*time.Minute), tick1.Add(3*time.Minute)

	// tick1: both run.
	clk.Set(tick1.Add(time.Second))
	e.touch("forbid")
	e.touch("hist")
	e.touch("replace")
	first := runName("forbid", tick1)
	e.waitFor("forbid's first run in its status", 30*time.Second, func() (bool, string) {
		st := e.cron("forbid")
		return st.LastScheduledTime != nil && st.LastScheduledTime.Equal(&metav1.Time{Time: tick1}) &&
			len(st.Active) == 1 && st.Active[0].Name == first, fmt.Sprintf("%+v", st)
	})
	wf := e.workflow(first)
	if wf.Labels[workflows.LabelCronWorkflow] != "forbid" || wf.Labels["team"] != "a" ||
		len(wf.OwnerReferences) != 1 || wf.OwnerReferences[0].Kind != "CronWorkflow" || wf.OwnerReferences[0].Name != "forbid" ||
		wf.Annotations[workflows.AnnotationScheduledTime] != tick1.UTC().Format(time.RFC3339) {
		t.Fatalf("first run: labels %v owners %+v annotations %v", wf.Labels, wf.OwnerReferences, wf.Annotations)
	}
	if e.finishedRun(runName("hist", tick1)).Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal("hist's first run did not succeed")
	}

	// Before the clock moves on: once it does, any event of replace's first Workflow (its
	// status written as it starts) runs replace's tick2 too.
	e.waitFor("replace's first run", 30*time.Second, func() (bool, string) {
		runs := e.cronRuns("replace")
		return slices.Equal(runs, []string{runName("replace", tick1)}), fmt.Sprint(runs)
	})

	// tick2: forbid skips (its first run still waits); hist runs.
	clk.Set(tick2.Add(time.Second))
	e.touch("forbid")
	e.touch("hist")
	e.touch("replace")
	if wf := e.finishedRun(runName("replace", tick1)); wf.Status.Phase != workflows.WorkflowFailed ||
		!strings.Contains(wf.Status.Message, "Terminate") {
		t.Fatalf("replace's first run: %s", dump(wf))
	}
	e.waitFor("replace's second run", 30*time.Second, func() (bool, string) {
		st := e.cron("replace")
		return len(st.Active) == 1 && st.Active[0].Name == runName("replace", tick2), fmt.Sprintf("%+v", st)
	})
	e.waitFor("the skip event", 30*time.Second, func() (bool, string) {
		evs, err := c.Client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == "forbid" && ev.Reason == workflows.EventReasonSkipped {
				return strings.Contains(ev.Message, first), ev.Message
			}
		}
		return false, fmt.Sprint(len(evs.Items), " events")
	})
	e.finishedRun(runName("hist", tick2))
	e.waitFor("hist's history pruned to 1", 30*time.Second, func() (bool, string) {
		runs := e.cronRuns("hist")
		return slices.Equal(runs, []string{runName("hist", tick2)}), fmt.Sprint(runs)
	})

	// Past tick2's deadline, the first run ends; tick3 runs again.
	clk.Set(tick2.Add(30 * time.Second))
	if err := ctrl.Resume(e.ctx, ns, first); err != nil {
		t.Fatal(err)
	}
	e.finished(first, 30*time.Second)
	e.waitFor("forbid's active list empty", 30*time.Second, func() (bool, string) {
		st := e.cron("forbid")
		return len(st.Active) == 0, fmt.Sprintf("%+v", st)
	})
	clk.Set(tick3.Add(time.Second))
	e.touch("forbid")
	e.waitFor("forbid's second run", 30*time.Second, func() (bool, string) {
		runs := e.cronRuns("forbid")
		return slices.Equal(runs, []string{first, runName("forbid", tick3)}), fmt.Sprint(runs)
	})

	// Restarts: tick4 passes while the controller is down; the next one runs it once (within
	// hist's 30 s deadline), and a further restart does not run it again.
	stop()
	clk.Set(tick4.Add(20 * time.Second))
	_, stop2 := runController(t, c, ns, clk)
	e.waitFor("hist's missed run", 30*time.Second, func() (bool, string) {
		st := e.cron("hist")
		return st.LastScheduledTime != nil && st.LastScheduledTime.Equal(&metav1.Time{Time: tick4}), fmt.Sprintf("%+v", st)
	})
	e.finished(runName("hist", tick4), 30*time.Second)
	stop2()
	clk.Set(tick4.Add(25 * time.Second))
	_, _ = runController(t, c, ns, clk)
	e.touch("hist")
	e.waitFor("hist's history pruned to the tick4 run", 30*time.Second, func() (bool, string) {
		runs := e.cronRuns("hist")
		return slices.Equal(runs, []string{runName("hist", tick4)}), fmt.Sprint(runs)
	})
	if st := e.cron("hist"); !st.LastScheduledTime.Equal(&metav1.Time{Time: tick4}) {
		t.Fatalf("hist after the second restart: %+v", st)
	}
	for _, bad := range []string{"badsched", "badtz"} {
		if runs := e.cronRuns(bad); len(runs) != 0 {
			t.Fatalf("%s ran %v", bad, runs)
		}
	}
}

// TestCronWorkflowKeepsItsOwnRunOnCluster: a reconcile created a schedule's Workflow and its
// status write was refused (the CronWorkflow had changed meanwhile), so the status does not
// name the run. The next reconcile must take that Workflow as the schedule's run: Forbid does
// not skip the schedule because of it, Replace does not terminate it.
func TestCronWorkflowKeepsItsOwnRunOnCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	if err := workflows.EnsureCRDs(ctx, c.Dynamic); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, ns: ns, ctx: ctx}
	for _, policy := range []string{"Forbid", "Replace"} {
		e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: `+strings.ToLower(policy)+`}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: `+policy+`
  workflowSpec:
    entrypoint: wait
    templates:
    - {name: wait, suspend: {}}
`)
	}
	tick1 := time.Now().Add(time.Second).Truncate(time.Minute).Add(time.Minute)
	for _, name := range []string{"forbid", "replace"} {
		cw, err := c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		yes := true
		wf := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": workflows.Group + "/" + workflows.Version, "kind": "Workflow",
			"metadata": map[string]any{"name": runName(name, tick1),
				"labels":      map[string]any{workflows.LabelCronWorkflow: name},
				"annotations": map[string]any{workflows.AnnotationScheduledTime: tick1.UTC().Format(time.RFC3339)}},
			"spec": map[string]any{"entrypoint": "wait", "templates": []any{map[string]any{"name": "wait", "suspend": map[string]any{}}}},
		}}
		wf.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: workflows.Group + "/" + workflows.Version, Kind: "CronWorkflow",
			Name: name, UID: cw.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}})
		if _, err := c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(ns).Create(ctx, wf, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	clk := &fakeClock{t: tick1.Add(time.Second)}
	runController(t, c, ns, clk)
	for _, name := range []string{"forbid", "replace"} {
		run := runName(name, tick1)
		e.waitFor(name+"'s run in its status", 30*time.Second, func() (bool, string) {
			st := e.cron(name)
			return st.LastScheduledTime != nil && st.LastScheduledTime.Equal(&metav1.Time{Time: tick1}) &&
				len(st.Active) == 1 && st.Active[0].Name == run, fmt.Sprintf("%+v", st)
		})
		if wf := e.workflow(run); wf.Spec.Shutdown != "" || wf.Status.Phase.Completed() {
			t.Fatalf("%s's own run was stopped: %s", name, dump(wf))
		}
		if runs := e.cronRuns(name); !slices.Equal(runs, []string{run}) {
			t.Fatalf("%s's runs: %v", name, runs)
		}
	}
	evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if ev.Reason == workflows.EventReasonSkipped {
			t.Fatalf("a schedule was skipped because of its own run: %s", ev.Message)
		}
	}
}

// TestCronStopStrategyOnCluster: status.succeeded and status.failed count each finished run
// once, and spec.stopStrategy stops the CronWorkflow when its expression holds: "twice" stops
// after its second success (Stopped, labelled, no third run, and a resume is refused saying
// why), "fails" after its first failure (a Workflow whose template does not exist ends in
// Error). A restarted controller counts nothing again.
func TestCronStopStrategyOnCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	clk := &fakeClock{t: time.Now()}
	ctrl, stop := runController(t, c, ns, clk)
	e := &env{t: t, c: c, ns: ns, ctrl: ctrl, ctx: context.Background()}
	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: twice}
spec:
  schedule: "* * * * *"
  startingDeadlineSeconds: 30
  stopStrategy: {expression: "cronworkflow.succeeded >= 2"}
  workflowSpec:
    entrypoint: quick
    templates:
    - {name: quick, suspend: {duration: "0s"}}
`)
	e.create(workflows.CronWorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: fails}
spec:
  schedule: "* * * * *"
  startingDeadlineSeconds: 30
  stopStrategy: {expression: "cronworkflow.failed >= 1"}
  workflowSpec:
    workflowTemplateRef: {name: absent}
`)
	tick1 := time.Now().Add(time.Second).Truncate(time.Minute).Add(time.Minute)
	tick2, tick3, tick4 := tick1.Add(time.Minute), tick1.Add(2*time.Minute), tick1.Add(3*time.Minute)
	counts := func(name string, succeeded, failed int64, phase string) {
		t.Helper()
		e.waitFor(fmt.Sprintf("%s: succeeded %d, failed %d, %s", name, succeeded, failed, phase), 30*time.Second, func() (bool, string) {
			st := e.cron(name)
			return st.Succeeded == succeeded && st.Failed == failed && st.Phase == phase && len(st.Active) == 0, fmt.Sprintf("%+v", st)
		})
	}

	clk.Set(tick1.Add(time.Second))
	e.touch("twice")
	e.touch("fails")
	if wf := e.finishedRun(runName("fails", tick1)); wf.Status.Phase != workflows.WorkflowError {
		t.Fatalf("fails' run: %s", dump(wf))
	}
	e.finishedRun(runName("twice", tick1))
	counts("twice", 1, 0, workflows.CronPhaseActive)
	counts("fails", 0, 1, workflows.CronPhaseStopped)

	clk.Set(tick2.Add(time.Second))
	e.touch("twice")
	e.touch("fails")
	e.finishedRun(runName("twice", tick2))
	counts("twice", 2, 0, workflows.CronPhaseStopped)
	for _, name := range []string{"twice", "fails"} {
		u, err := c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil || u.GetLabels()[workflows.LabelCronCompleted] != "true" {
			t.Fatalf("%s's labels: %v, %v", name, u.GetLabels(), err)
		}
	}
	if _, err := ctrl.SuspendCron(e.ctx, ns, "twice", false); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "cronworkflow.succeeded >= 2") {
		t.Fatalf("resume of a stopped cron workflow: %v", err)
	}

	// Stopped: tick3 runs nothing, and a restarted controller counts nothing again. Taking the
	// label away makes the controller look (its status is unchanged): the label back means
	// that look, which would have created a run first, is over.
	relabelled := func(name string) {
		t.Helper()
		body := `{"metadata":{"labels":{"` + workflows.LabelCronCompleted + `":null}}}`
		if _, err := c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(ns).Patch(e.ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitFor(name+" labelled again", 30*time.Second, func() (bool, string) {
			u, err := c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(ns).Get(e.ctx, name, metav1.GetOptions{})
			return err == nil && u.GetLabels()[workflows.LabelCronCompleted] == "true", fmt.Sprint(u.GetLabels(), err)
		})
	}
	clk.Set(tick3.Add(time.Second))
	relabelled("twice")
	relabelled("fails")
	stop()
	clk.Set(tick4.Add(time.Second))
	runController(t, c, ns, clk)
	relabelled("twice")
	relabelled("fails")
	counts("twice", 2, 0, workflows.CronPhaseStopped)
	counts("fails", 0, 1, workflows.CronPhaseStopped)
	if runs := e.cronRuns("twice"); !slices.Equal(runs, []string{runName("twice", tick1), runName("twice", tick2)}) {
		t.Fatalf("twice's runs: %v", runs)
	}
	if runs := e.cronRuns("fails"); !slices.Equal(runs, []string{runName("fails", tick1)}) {
		t.Fatalf("fails' runs: %v", runs)
	}
}
