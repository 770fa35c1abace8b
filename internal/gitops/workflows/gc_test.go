package workflows_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/freshet-dev/freshet/internal/gitops/workflows"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

func (e *env) touchWorkflow(name string) {
	e.t.Helper()
	touches++
	body := fmt.Sprintf(`{"metadata":{"annotations":{"test/touch":"%d"}}}`, touches)
	if _, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) podsOf(name string) int {
	e.t.Helper()
	l, err := e.c.Client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: workflows.LabelWorkflow + "=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// TestTTLAndPodGCOnCluster, on a clock the test moves: podGC OnPodCompletion deletes each pod
// once its step ended; OnWorkflowSuccess with a delay keeps the pods until the delay passed;
// ttlStrategy keeps a succeeded Workflow its secondsAfterSuccess, then deletes it — after the
// archive was told it finished.
func TestTTLAndPodGCOnCluster(t *testing.T) {
	clk := &fakeClock{t: time.Now()}
	var recs records
	// The archive takes ttl's record only when the test says so; until then its ttlStrategy
	// waits. asked holds the finishes the controller asked about.
	var archived atomic.Bool
	var askedMu sync.Mutex
	asked := map[string]time.Time{}
	e := newEnv(t, workflows.Options{Now: clk.Now, OnFinished: recs.add, Archived: func(uid string, finishedAt time.Time) bool {
		askedMu.Lock()
		asked[uid] = finishedAt
		askedMu.Unlock()
		return archived.Load()
	}})
	e.kubelet(func(*corev1.Pod) (int32, emissary.Outputs) { return 0, emissary.Outputs{} })
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: ttl}
spec:
  entrypoint: quick
  ttlStrategy: {secondsAfterSuccess: 5, secondsAfterFailure: 0}
  templates:
  - {name: quick, suspend: {duration: "0s"}}
`)
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: gc-pod}
spec:
  entrypoint: main
  podGC: {strategy: OnPodCompletion}
  templates:
  - name: main
    steps: [[{name: a, template: c}], [{name: b, template: c}]]
  - {name: c, container: {image: alpine:3, command: ["true"]}}
`)
	e.create(workflows.WorkflowsResource, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: gc-wf}
spec:
  entrypoint: c
  podGC: {strategy: OnWorkflowSuccess, deleteDelayDuration: 10s}
  templates:
  - {name: c, container: {image: alpine:3, command: ["true"]}}
`)
	for _, name := range []string{"ttl", "gc-pod", "gc-wf"} {
		if wf := e.finished(name, 60*time.Second); wf.Status.Phase != workflows.WorkflowSucceeded {
			t.Fatalf("%s: %s", name, dump(wf))
		}
	}
	pods := 0
	for _, n := range e.workflow("gc-pod").Status.Nodes {
		if n.Type == workflows.NodeTypePod {
			pods++
		}
	}
	if pods != 2 {
		t.Fatalf("gc-pod ran %d pods", pods)
	}
	e.waitFor("gc-pod's pods deleted", 30*time.Second, func() (bool, string) {
		n := e.podsOf("gc-pod")
		return n == 0, fmt.Sprint(n)
	})
	// The clock has not moved: the delayed GC and the TTL have not come yet.
	if n := e.podsOf("gc-wf"); n != 1 {
		t.Fatalf("gc-wf has %d pods before its delay", n)
	}
	e.workflow("ttl")

	clk.Set(clk.Now().Add(11 * time.Second))
	e.touchWorkflow("gc-wf")
	e.touchWorkflow("ttl")
	e.waitFor("gc-wf's pod deleted", 30*time.Second, func() (bool, string) {
		n := e.podsOf("gc-wf")
		return n == 0, fmt.Sprint(n)
	})
	// Due, but not archived: it stays (looked at again every 2 s).
	e.waitFor("the archive asked about ttl", 30*time.Second, func() (bool, string) {
		askedMu.Lock()
		defer askedMu.Unlock()
		return len(asked) == 1, fmt.Sprint(asked)
	})
	time.Sleep(5 * time.Second)
	ttl := e.workflow("ttl")
	askedMu.Lock()
	if at, ok := asked[string(ttl.UID)]; !ok || !at.Equal(ttl.Status.FinishedAt.Time) {
		t.Errorf("asked about %v, want ttl's UID %s finished at %s", asked, ttl.UID, ttl.Status.FinishedAt.Time)
	}
	askedMu.Unlock()
	archived.Store(true)
	e.waitFor("ttl deleted", 30*time.Second, func() (bool, string) {
		_, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(e.ctx, "ttl", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if r := recs.of("ttl"); len(r) != 1 || r[0].Phase != string(workflows.WorkflowSucceeded) {
		t.Fatalf("ttl's records: %+v", r)
	}
	if _, err := e.c.Dynamic.Resource(workflows.WorkflowsResource).Namespace(e.ns).Get(e.ctx, "gc-wf", metav1.GetOptions{}); err != nil {
		t.Fatalf("gc-wf (no ttlStrategy) was deleted: %v", err)
	}
}
