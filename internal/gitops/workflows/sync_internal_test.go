package workflows

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A template's mutex and semaphore hold its nodes back: the tasks of one DAG that share a
// mutex run one at a time, those behind a semaphore of 2 two at a time; the ones waiting are
// Pending with Argo's message and their lock in synchronizationStatus, and the workflow's
// status.synchronization lists what is held and waited for.
func TestTemplateSynchronization(t *testing.T) {
	for _, tc := range []struct {
		name, sync, lock string
		limit            int
	}{
		{"mutex", "{mutex: {name: m}}", "ns/Mutex/m", 1},
		{"semaphore", "{semaphores: [{configMapKeyRef: {name: limits, key: build}}]}", "ns/ConfigMap/limits/build", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks: [{name: a, template: t}, {name: b, template: t}, {name: c, template: t}, {name: d, template: t}]
  - name: t
    synchronization: `+tc.sync+`
    container: {image: x, command: [x]}`, func(*corev1.Pod) run { return run{} })
			h.fc.limits = map[string]string{"build": "2"}
			h.locks = newLockManager(h.fc.semaphoreLimit, nil, func() time.Time { return h.now })
			sawWaiting, sawHolding := false, false
			for i := 0; i < 50 && !h.wf.Status.Phase.Completed(); i++ {
				before := len(h.fc.order)
				h.step()
				if created := len(h.fc.order) - before; created > tc.limit {
					t.Fatalf("step %d started %d pods behind a lock of %d", i, created, tc.limit)
				}
				for _, n := range h.wf.Status.Nodes {
					if n.SynchronizationStatus == nil {
						continue
					}
					sawWaiting = true
					if n.Phase != NodePending || n.SynchronizationStatus.Waiting != tc.lock ||
						!strings.HasPrefix(n.Message, "Waiting for "+tc.lock+" lock. Lock status: 0/") {
						t.Fatalf("waiting node %s: %s %q %+v", n.Name, n.Phase, n.Message, n.SynchronizationStatus)
					}
				}
				if s := h.wf.Status.Synchronization; !h.wf.Status.Phase.Completed() && s != nil {
					b, _ := json.Marshal(s)
					sawHolding = sawHolding || strings.Contains(string(b), `"holding"`)
					if !strings.Contains(string(b), `"`+tc.lock+`"`) {
						t.Fatalf("status.synchronization %s", b)
					}
				}
			}
			if h.wf.Status.Phase != WorkflowSucceeded || len(h.fc.order) != 4 || !sawWaiting || !sawHolding {
				t.Fatalf("pods %v, saw waiting %v, holding %v: %s", h.fc.order, sawWaiting, sawHolding, h.dump())
			}
			if h.wf.Status.Synchronization != nil || len(h.locks.holdsOf("ns/wf")) != 0 || len(h.locks.holders(tc.lock)) != 0 {
				t.Fatalf("locks left: %+v %v", h.wf.Status.Synchronization, h.locks.holdsOf("ns/wf"))
			}
		})
	}
}

// The lock manager: FIFO by creation, all-or-nothing across locks, a rebuilt hold counts
// even over a limit lowered since, and a release wakes the waiters.
func TestLockManager(t *testing.T) {
	limit := 1
	var woken []string
	m := newLockManager(func(context.Context, string, string, string) (int, error) { return limit, nil },
		func(wf string) { woken = append(woken, wf) }, time.Now)
	mx := lockRefs(&Synchronization{Mutex: &Mutex{Name: "m"}}, "ns")
	both := lockRefs(&Synchronization{Mutex: &Mutex{Name: "m"}, Semaphore: &SemaphoreRef{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}}, "ns")
	t0 := time.Unix(1000, 0)
	if err := m.refreshLimits(context.Background(), both); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := m.tryAcquire("ns/a", 0, t0, mx); !ok {
		t.Fatal("a did not take a free mutex")
	}
	// c (newer) asks first, then b (older): b is first in line.
	if ok, lock, msg := m.tryAcquire("ns/c", 0, t0.Add(2*time.Second), mx); ok || lock != "ns/Mutex/m" || msg != "Waiting for ns/Mutex/m lock. Lock status: 0/1" {
		t.Fatalf("c: %v %q %q", ok, lock, msg)
	}
	if ok, _, _ := m.tryAcquire("ns/b", 0, t0.Add(time.Second), both); ok {
		t.Fatal("b took a held mutex")
	}
	m.commit("ns/a", []hold{{"ns/Mutex/m", "ns/a"}}, nil, false)
	if !slices.Contains(woken, "ns/b") || !slices.Contains(woken, "ns/c") {
		t.Fatalf("woken %v", woken)
	}
	if ok, _, _ := m.tryAcquire("ns/c", 0, t0.Add(2*time.Second), mx); ok {
		t.Fatal("c jumped the queue")
	}
	_ = m.refreshLimits(context.Background(), both)
	if ok, _, _ := m.tryAcquire("ns/b", 0, t0.Add(time.Second), both); !ok {
		t.Fatal("b did not take both locks")
	}
	if got := m.holdsOf("ns/b"); len(got) != 2 {
		t.Fatalf("b holds %v", got)
	}
	// A restart: the statuses' holds come back, even beyond the limit, and new holders wait.
	m2 := newLockManager(func(context.Context, string, string, string) (int, error) { return 1, nil }, nil, time.Now)
	for _, h := range holdsFromStatus("ns", "x", &SynchronizationStatus{Semaphore: &SemaphoreStatus{Holding: []SemaphoreHolding{
		{Semaphore: "ns/ConfigMap/cm/k", Holders: []string{"ns/x", "ns/x/x-1", "ns/other", "ns/x/a/b", "ns/x/"}}}}}) {
		m2.reacquire(h)
	}
	if got := m2.holders("ns/ConfigMap/cm/k"); !slices.Equal(got, []string{"ns/x", "ns/x/x-1"}) {
		t.Fatalf("rebuilt holders %v (another workflow's, or malformed, must not count)", got)
	}
	sem := lockRefs(&Synchronization{Semaphore: &SemaphoreRef{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}}, "ns")
	_ = m2.refreshLimits(context.Background(), sem)
	if ok, _, msg := m2.tryAcquire("ns/y", 0, t0, sem); ok || msg != "Waiting for ns/ConfigMap/cm/k lock. Lock status: 0/1" {
		t.Fatalf("y over a lowered limit: %v %q", ok, msg)
	}
	m2.commit("ns/x", nil, nil, true)
	if ok, _, _ := m2.tryAcquire("ns/y", 0, t0, sem); !ok {
		t.Fatal("y did not take the semaphore once x finished")
	}
}

// TestLockPriority: waiters are served as Argo serves them — the Workflow's spec.priority,
// higher first, then the oldest; a waiter whose priority is raised moves ahead.
func TestLockPriority(t *testing.T) {
	m := newLockManager(func(context.Context, string, string, string) (int, error) { return 1, nil }, nil, time.Now)
	mx := lockRefs(&Synchronization{Mutex: &Mutex{Name: "m"}}, "ns")
	t0 := time.Unix(1000, 0)
	if ok, _, _ := m.tryAcquire("ns/holder", 0, t0, mx); !ok {
		t.Fatal("the first did not take a free mutex")
	}
	for _, w := range []struct {
		name     string
		priority int32
		age      time.Duration
	}{{"old-low", 0, 1}, {"new-high", 5, 4}, {"old-high", 5, 2}, {"mid", 1, 3}} {
		if ok, _, _ := m.tryAcquire("ns/"+w.name, w.priority, t0.Add(w.age*time.Second), mx); ok {
			t.Fatalf("%s took a held mutex", w.name)
		}
	}
	order := func() []string {
		var out []string
		for _, w := range m.locks["ns/Mutex/m"].waiting {
			out = append(out, w.holder)
		}
		return out
	}
	if got := order(); !slices.Equal(got, []string{"ns/old-high", "ns/new-high", "ns/mid", "ns/old-low"}) {
		t.Fatalf("queue %v", got)
	}
	// old-low's priority is raised above the others: it is next.
	if ok, _, _ := m.tryAcquire("ns/old-low", 9, t0.Add(time.Second), mx); ok {
		t.Fatal("old-low took a held mutex")
	}
	if got := order(); !slices.Equal(got, []string{"ns/old-low", "ns/old-high", "ns/new-high", "ns/mid"}) {
		t.Fatalf("queue after a raised priority %v", got)
	}
	m.commit("ns/holder", nil, nil, true)
	for _, next := range []string{"old-high", "new-high", "mid"} {
		if ok, _, _ := m.tryAcquire("ns/"+next, 5, t0.Add(2*time.Second), mx); ok {
			t.Fatalf("%s went before old-low", next)
		}
	}
	if ok, _, _ := m.tryAcquire("ns/old-low", 9, t0.Add(time.Second), mx); !ok {
		t.Fatal("old-low, first in line, did not take the free mutex")
	}
}
