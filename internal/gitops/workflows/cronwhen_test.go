package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

const gatedCron = `
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {name: gated}
spec:
  schedule: "* * * * *"
  startingDeadlineSeconds: 30
  when: "{{= cronworkflow.lastScheduledTime == nil || cronworkflow.succeeded < 1 }}"
  workflowSpec:
    entrypoint: quick
    templates:
    - {name: quick, suspend: {duration: "0s"}}
`

// TestCronWhenAndUpdateOnCluster: spec.when gates each scheduled run (the first runs, the
// second is skipped once its run has succeeded: an Event says so, lastScheduledTime stays at
// the run made, and a restarted controller does not run the skipped time though its updated
// when now holds); the controller
// writes Argo's last-used-schedule annotation; UpdateCron replaces the spec and keeps the
// status, and the time the new schedule missed is not run (the annotation follows once the new
// schedule has run); a bad when is refused by lint,
// create and update naming spec.when.
func TestCronWhenAndUpdateOnCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	clk := &fakeClock{t: time.Now()}
	ctrl, stop := runController(t, c, ns, clk)
	e := &env{t: t, c: c, ns: ns, ctrl: ctrl, ctx: context.Background()}
	manifest := func(y string) []byte {
		t.Helper()
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	// A bad when: lint and create refuse it naming the field; nothing is created.
	bad := strings.Replace(gatedCron, "cronworkflow.succeeded < 1", "cronworkflow.succeded < 1", 1)
	for _, op := range []string{"lint", "create"} {
		var err error
		if op == "lint" {
			_, err = ctrl.LintCron(e.ctx, workflows.CronOptions{Namespace: ns, Manifest: manifest(bad)})
		} else {
			_, err = ctrl.CreateCron(e.ctx, workflows.CronOptions{Namespace: ns, Manifest: manifest(bad)})
		}
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != "spec.when" || !strings.Contains(err.Error(), "names cronworkflow.succeded") {
			t.Fatalf("%s of a bad when: %v", op, err)
		}
	}
	if _, err := ctrl.GetCron(e.ctx, ns, "gated"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("a refused create created: %v", err)
	}

	if _, err := ctrl.CreateCron(e.ctx, workflows.CronOptions{Namespace: ns, Manifest: manifest(gatedCron)}); err != nil {
		t.Fatal(err)
	}
	annotation := func() string {
		t.Helper()
		u, err := c.Dynamic.Resource(workflows.CronWorkflowsResource).Namespace(ns).Get(e.ctx, "gated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetAnnotations()[workflows.AnnotationLastUsedSchedule]
	}
	e.waitFor("the last-used-schedule annotation", 30*time.Second, func() (bool, string) {
		a := annotation()
		return a == "* * * * *", a
	})

	tick1 := time.Now().Add(time.Second).Truncate(time.Minute).Add(time.Minute)
	tick2, tick3, tick4 := tick1.Add(time.Minute), tick1.Add(2*time.Minute), tick1.Add(3*time.Minute)
	clk.Set(tick1.Add(time.Second))
	e.touch("gated")
	if wf := e.finishedRun(runName("gated", tick1)); wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatalf("gated's first run: %s", dump(wf))
	}
	e.waitFor("gated's first run counted", 30*time.Second, func() (bool, string) {
		st := e.cron("gated")
		return st.Succeeded == 1 && len(st.Active) == 0, fmt.Sprintf("%+v", st)
	})

	// tick2: when is false (a run succeeded), so nothing runs and an Event says why.
	clk.Set(tick2.Add(time.Second))
	e.touch("gated")
	e.waitFor("the when skip event", 30*time.Second, func() (bool, string) {
		evs, err := c.Client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == "gated" && ev.Reason == workflows.EventReasonSkipped {
				return strings.Contains(ev.Message, "spec.when") && strings.Contains(ev.Message, tick2.UTC().Format(time.RFC3339)), ev.Message
			}
		}
		return false, fmt.Sprint(len(evs.Items), " events")
	})
	e.touch("gated")
	if st := e.cron("gated"); !st.LastScheduledTime.Equal(&metav1.Time{Time: tick1}) || len(st.Conditions) != 0 {
		t.Fatalf("after the skip: %+v", st)
	}
	// A restarted controller within tick2's deadline does not decide it again, even once its
	// when (updated, the schedule unchanged) would hold.
	stop()
	clk.Set(tick2.Add(5 * time.Second))
	ctrl, stop = runController(t, c, ns, clk)
	e.ctrl = ctrl
	loosened := strings.Replace(gatedCron, "cronworkflow.succeeded < 1", "cronworkflow.succeeded < 5", 1)
	if _, err := ctrl.UpdateCron(e.ctx, ns, "gated", workflows.CronOptions{Manifest: manifest(loosened)}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the loosened when seen", 30*time.Second, func() (bool, string) {
		cw, err := ctrl.GetCron(e.ctx, ns, "gated")
		return err == nil && strings.Contains(cw.When, "< 5"), fmt.Sprint(cw.When, err)
	})
	e.touch("gated")
	time.Sleep(2 * time.Second)
	if runs := e.cronRuns("gated"); !slices.Equal(runs, []string{runName("gated", tick1)}) {
		t.Fatalf("gated's runs after a skip, a restart and a when that holds: %v", runs)
	}

	// update: a bad when is refused naming it and changes nothing; another name is refused; a
	// new schedule and when replace the spec, the status is kept.
	if _, err := ctrl.UpdateCron(e.ctx, ns, "gated", workflows.CronOptions{Manifest: manifest(bad)}); err == nil || !strings.Contains(err.Error(), "spec.when") {
		t.Fatalf("update with a bad when: %v", err)
	}
	if _, err := ctrl.UpdateCron(e.ctx, ns, "other", workflows.CronOptions{Manifest: manifest(gatedCron)}); err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Fatalf("update naming another: %v", err)
	}
	// tick3 passes while the controller is down and the schedule changes (every minute too,
	// written differently): the next controller does not run it, though it is within the
	// starting deadline (without the change it would: TestCronWorkflowOnCluster's hist).
	stop()
	clk.Set(tick3.Add(5 * time.Second))
	moved := strings.Replace(loosened, `"* * * * *"`, `"*/1 * * * *"`, 1)
	cw, err := ctrl.UpdateCron(e.ctx, ns, "gated", workflows.CronOptions{Manifest: manifest(moved)})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, _ = runController(t, c, ns, clk)
	e.ctrl = ctrl
	if cw.Schedules[0] != "*/1 * * * *" || cw.Succeeded != 1 || cw.LastScheduledTime == nil || !cw.LastScheduledTime.Equal(tick1) || !strings.Contains(cw.When, "< 5") {
		t.Fatalf("updated: %+v", cw)
	}
	e.touch("gated")
	time.Sleep(2 * time.Second)
	e.touch("gated")
	time.Sleep(2 * time.Second)
	if runs := e.cronRuns("gated"); !slices.Equal(runs, []string{runName("gated", tick1)}) {
		t.Fatalf("gated ran a time its new schedule missed: %v", runs)
	}
	if a := annotation(); a != "* * * * *" {
		t.Fatalf("last-used-schedule before the new schedule ran: %q", a)
	}
	// tick4 runs by the new spec (its when holds again).
	clk.Set(tick4.Add(time.Second))
	e.touch("gated")
	e.finishedRun(runName("gated", tick4))
	e.waitFor("gated's second run counted", 30*time.Second, func() (bool, string) {
		st := e.cron("gated")
		return st.Succeeded == 2 && st.LastScheduledTime.Equal(&metav1.Time{Time: tick4}), fmt.Sprintf("%+v", st)
	})
	if a := annotation(); a != "*/1 * * * *" {
		t.Fatalf("last-used-schedule after the new schedule ran: %q", a)
	}
}
