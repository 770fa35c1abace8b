package workflows_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/tlog"
)

// lockedWorkflow is a Workflow whose one kwok pod runs for run, behind sync.
func lockedWorkflow(name, sync, run string) string {
	return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: %s}
spec:
  entrypoint: main
  synchronization: %s
  templates:
  - name: main
    metadata: {annotations: {%s: "0", %s: %q}}
    container: {image: alpine:3, command: ["true"]}`, name, sync, kube.AnnotationExitCode, kube.AnnotationRunDuration, run)
}

var waitingRE = regexp.MustCompile(`^Waiting for \S+ lock\. Lock status: \d+/\d+$`)

// watchRunning polls the workflows until all have finished and returns the most that were
// Running at once in one list (one snapshot of the API); it fails when one waits without Argo's
// message. A status lags its lock: the controller frees a holder's lock, then writes its phase,
// so a waiter's Running can be written first and a snapshot show one more Running than hold
// the lock — callers allow for it and check the runs' own spans (overlap) exactly.
func (e *env) watchRunning(names []string, lock string, d time.Duration) int {
	e.t.Helper()
	most, sawWaiting := 0, false
	e.waitFor("workflows to finish", d, func() (bool, string) {
		running, done := 0, 0
		var states []string
		l, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		byName := map[string]*workflows.Workflow{}
		for i := range l.Items {
			b, _ := l.Items[i].MarshalJSON()
			wf, err := workflows.Decode(b)
			if err != nil {
				e.t.Fatal(err)
			}
			byName[wf.Name] = wf
		}
		for _, n := range names {
			wf := byName[n]
			if wf == nil {
				return false, n + " not listed"
			}
			states = append(states, n+" "+string(wf.Status.Phase)+" "+wf.Status.Message)
			switch {
			case wf.Status.Phase == workflows.WorkflowRunning:
				running++
			case wf.Status.Phase.Completed():
				done++
			case wf.Status.Phase == workflows.WorkflowPending && wf.Status.Message != "":
				sawWaiting = true
				// The count is the lock's free slots when the waiter last looked: a slot can be
				// free while an older waiter is first in line for it (waiters are served oldest
				// first), so it is not always 0.
				if !waitingRE.MatchString(wf.Status.Message) || !strings.HasPrefix(wf.Status.Message, "Waiting for "+lock+" lock. ") {
					e.t.Fatalf("%s waits with message %q", n, wf.Status.Message)
				}
				if s := wf.Status.Synchronization; s == nil || (s.Mutex == nil && s.Semaphore == nil) {
					e.t.Fatalf("%s waits without status.synchronization", n)
				}
			}
		}
		most = max(most, running)
		return done == len(names), strings.Join(states, "; ")
	})
	if !sawWaiting {
		e.t.Errorf("no workflow was seen waiting for %s", lock)
	}
	for _, n := range names {
		if wf := e.workflow(n); wf.Status.Phase != workflows.WorkflowSucceeded || wf.Status.Synchronization != nil {
			e.t.Errorf("%s: %s, synchronization %+v", n, dump(wf), wf.Status.Synchronization)
		}
	}
	return most
}

// overlap is the most workflows whose [startedAt, finishedAt] (whole seconds) cover one instant.
func (e *env) overlap(names []string) int {
	type span struct{ from, to time.Time }
	var spans []span
	for _, n := range names {
		wf := e.workflow(n)
		spans = append(spans, span{wf.Status.StartedAt.Time, wf.Status.FinishedAt.Time})
	}
	most := 0
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !o.from.After(s.from) && o.to.After(s.from) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// Two workflows with the same mutex never run together: the second waits, Pending with
// Argo's message, and starts when the first finishes.
func TestMutexWorkflowsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	names := []string{"mx-a", "mx-b"}
	for _, n := range names {
		e.create(workflows.WorkflowsResource, lockedWorkflow(n, "{mutex: {name: deploy}}", "2s"))
	}
	if most := e.watchRunning(names, e.ns+"/Mutex/deploy", 90*time.Second); most > 2 {
		t.Fatalf("%d workflows with one mutex ran at once", most)
	}
	if o := e.overlap(names); o > 1 {
		t.Fatalf("run spans overlap (%d at once)", o)
	}
}

// A semaphore of 2 (a ConfigMap key) lets 2 of 4 workflows run at once.
func TestSemaphoreWorkflowsOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"build": "2"}}
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{"sem-a", "sem-b", "sem-c", "sem-d"}
	for _, n := range names {
		e.create(workflows.WorkflowsResource, lockedWorkflow(n, "{semaphore: {configMapKeyRef: {name: limits, key: build}}}", "2s"))
	}
	most := e.watchRunning(names, e.ns+"/ConfigMap/limits/build", 2*time.Minute)
	if most > 3 {
		t.Fatalf("%d workflows ran behind a semaphore of 2", most)
	}
	if o := e.overlap(names); o > 2 {
		t.Fatalf("run spans overlap %d at once behind a semaphore of 2", o)
	}
	// A semaphore whose ConfigMap key is missing fails the workflow, naming it.
	e.create(workflows.WorkflowsResource, lockedWorkflow("sem-bad", "{semaphore: {configMapKeyRef: {name: limits, key: nope}}}", "1s"))
	if wf := e.finished("sem-bad", 30*time.Second); wf.Status.Phase != workflows.WorkflowFailed ||
		!strings.Contains(wf.Status.Message, "Failed to acquire the synchronization lock") || !strings.Contains(wf.Status.Message, `"nope"`) {
		t.Fatalf("missing key: %s", dump(wf))
	}
}

// Locks outlive the controller: a new controller rebuilds them from the statuses (the waiter
// goes on waiting, nothing is held twice); terminating a waiter ends it without running, and
// deleting the holder lets the next one run.
func TestLocksAcrossRestartOnCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := c.Namespace(t)
	e := &env{t: t, c: c, ns: ns, ctx: t.Context()}
	start := func() context.CancelFunc {
		ctrl, err := workflows.New(c.RESTConfig(), workflows.Options{Namespace: ns, ConfigNamespace: ns,
			Logger: slog.New(slog.NewTextHandler(tlog.New(t), nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(ctx) }()
		e.waitFor("controller started", 60*time.Second, func() (bool, string) { return ctrl.Healthy(), "" })
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("controller: %v", err)
			}
		}
	}
	stop := start()
	e.create(workflows.WorkflowsResource, lockedWorkflow("hold", "{mutexes: [{name: m}]}", "1h"))
	e.waitFor("hold running", 30*time.Second, func() (bool, string) {
		wf := e.workflow("hold")
		return wf.Status.Phase == workflows.WorkflowRunning, dump(wf)
	})
	for _, n := range []string{"wait-1", "wait-2"} {
		e.create(workflows.WorkflowsResource, lockedWorkflow(n, "{mutexes: [{name: m}]}", "1s"))
		e.waitFor(n+" waiting", 30*time.Second, func() (bool, string) {
			wf := e.workflow(n)
			return wf.Status.Phase == workflows.WorkflowPending && wf.Status.Synchronization != nil, dump(wf)
		})
	}
	stop()
	stop = start()
	defer func() { stop() }()
	time.Sleep(2 * time.Second) // a restarted controller that lost the lock would start a waiter now
	for _, n := range []string{"wait-1", "wait-2"} {
		if wf := e.workflow(n); wf.Status.Phase != workflows.WorkflowPending {
			t.Fatalf("after a restart %s is %s: the lock was lost", n, dump(wf))
		}
	}
	if h := e.workflow("hold").Status.Synchronization; h == nil || h.Mutex == nil || len(h.Mutex.Holding) != 1 || h.Mutex.Holding[0].Holder != ns+"/hold" {
		t.Fatalf("holder's status.synchronization %+v", h)
	}
	// Terminating a waiter ends it: it never ran.
	patch := []byte(`{"spec":{"shutdown":"Terminate"}}`)
	if _, err := c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(ns).Patch(e.ctx, "wait-1", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if wf := e.finished("wait-1", 30*time.Second); wf.Status.Phase != workflows.WorkflowFailed || wf.Status.Message != "Stopped with strategy 'Terminate'" || len(wf.Status.Nodes) != 0 {
		t.Fatalf("terminated waiter: %s", dump(wf))
	}
	// Deleting the holder frees the lock for the other waiter.
	if err := c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(ns).Delete(e.ctx, "hold", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if wf := e.finished("wait-2", 60*time.Second); wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatalf("wait-2 after the holder was deleted: %s", dump(wf))
	}
}

// Volumes on the cluster: the claim of a volumeClaimTemplate is made as Argo names it, owned
// by the Workflow; its pod is not scheduled while the claim is unbound, runs once it is bound,
// mounts the claim and the workflow's ConfigMap volume; the claim is deleted when it succeeds.
func TestVolumesOnCluster(t *testing.T) {
	e := newEnv(t, workflows.Options{})
	e.create(workflows.WorkflowsResource, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: vols}
spec:
  entrypoint: main
  volumes: [{name: cfg, configMap: {name: settings, optional: true}}]
  volumeClaimTemplates:
  - metadata: {name: work}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}
  templates:
  - name: main
    metadata: {annotations: {%s: "0"}}
    container: {image: alpine:3, command: ["true"], volumeMounts: [{name: work, mountPath: /work}, {name: cfg, mountPath: /cfg}]}`, kube.AnnotationExitCode))
	var claim *corev1.PersistentVolumeClaim
	e.waitFor("the claim", 30*time.Second, func() (bool, string) {
		var err error
		claim, err = e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, "vols-work", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	wf := e.workflow("vols")
	if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != wf.UID || claim.Labels[workflows.LabelWorkflow] != "vols" {
		t.Fatalf("claim metadata %+v", claim.ObjectMeta)
	}
	// Unbound: the scheduler holds the pod back, and the node says why.
	e.waitFor("the pod held back by its unbound claim", 60*time.Second, func() (bool, string) {
		wf := e.workflow("vols")
		for _, n := range wf.Status.Nodes {
			if n.Type == workflows.NodeTypePod {
				return n.Phase == workflows.NodePending && strings.Contains(n.Message, "unbound"), dump(wf)
			}
		}
		return false, dump(wf)
	})
	if got := e.workflow("vols").Status.PersistentVolumeClaims; len(got) != 1 || got[0].Name != "work" || got[0].PersistentVolumeClaim == nil || got[0].PersistentVolumeClaim.ClaimName != "vols-work" {
		t.Fatalf("status.persistentVolumeClaims %+v", got)
	}
	e.c.ProvisionVolumes(t, e.ns, "")
	wf = e.finished("vols", 90*time.Second)
	if wf.Status.Phase != workflows.WorkflowSucceeded {
		t.Fatal(dump(wf))
	}
	pods, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=vols"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	var vols []string
	for _, v := range pods.Items[0].Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			continue // the service account's token, added by admission
		}
		vols = append(vols, v.Name)
		if v.Name == "work" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "vols-work") {
			t.Errorf("work volume %+v", v)
		}
	}
	slices.Sort(vols)
	if !slices.Equal(vols, []string{"cfg", "freshet-bin", "work"}) {
		t.Errorf("pod volumes %v", vols)
	}
	// OnWorkflowSuccess (Argo's default): deleted, and gone from the status.
	if len(wf.Status.PersistentVolumeClaims) != 0 {
		t.Errorf("status.persistentVolumeClaims after success: %+v", wf.Status.PersistentVolumeClaims)
	}
	e.waitFor("the claim deleted", 60*time.Second, func() (bool, string) {
		c, err := e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, "vols-work", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && c.DeletionTimestamp != nil), fmt.Sprint(err)
	})
}
