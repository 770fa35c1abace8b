package host

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// A finished Workflow counts as archived only once a report carrying it was taken (not while
// the control plane is away), and it outlives the queue's overflow, which drops application
// events for a snapshot but cannot put a finished Workflow in one.
func TestWorkflowArchivedAfterReportTaken(t *testing.T) {
	var mu sync.Mutex
	up := false
	var taken []runtimev1.AppEvent
	sink := func(_ context.Context, req runtimev1.ReportRequest) error {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			return errors.New("connection refused")
		}
		taken = append(taken, req.Events...)
		return nil
	}
	r := newReporter(sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	finished := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	r.enqueue(runtimev1.AppEvent{Type: runtimev1.WorkflowFinished, At: finished,
		Workflow: &runtimev1.WorkflowRecord{Namespace: "ci", Name: "build-1", UID: "uid-1", Phase: "Succeeded", FinishedAt: finished}})
	for i := range maxQueued {
		r.enqueue(runtimev1.AppEvent{Type: "HealthChanged", App: "app", At: finished.Add(time.Duration(i))})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.run(ctx, func() []runtimev1.Application { return nil }); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	time.Sleep(300 * time.Millisecond) // a few refused attempts
	if r.workflowArchived("uid-1", finished) {
		t.Fatal("archived while the control plane refused every report")
	}
	mu.Lock()
	up = true
	mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for !r.workflowArchived("uid-1", finished) {
		if time.Now().After(deadline) {
			t.Fatal("not archived 30 s after the control plane came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.workflowArchived("uid-1", finished.Add(time.Second)) || r.workflowArchived("uid-2", finished) {
		t.Error("another finish, or another Workflow, counts as archived")
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, ev := range taken {
		if ev.Workflow != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the control plane took %d workflow records, want 1", n)
	}
	if len(taken) > maxQueued {
		t.Errorf("%d events taken: the overflow kept application events", len(taken))
	}
}

// A report carries the application's product annotations (codefresh.io/, freshet.dev/) and no
// other annotation.
func TestReportCarriesProductAnnotations(t *testing.T) {
	spec := &app.Application{Metadata: app.ObjectMeta{Name: "shop", Annotations: map[string]string{
		"codefresh.io/product": "shop", "freshet.dev/product": "shop-alias",
		"kubectl.kubernetes.io/last-applied-configuration": "{huge}", "notes": "x"}}}
	got := toReport(spec, engine.AppStatus{Name: "shop"})
	want := map[string]string{"codefresh.io/product": "shop", "freshet.dev/product": "shop-alias"}
	if len(got.Annotations) != len(want) || got.Annotations["codefresh.io/product"] != "shop" || got.Annotations["freshet.dev/product"] != "shop-alias" {
		t.Fatalf("annotations %v, want %v", got.Annotations, want)
	}
	if none := toReport(&app.Application{Metadata: app.ObjectMeta{Name: "web", Annotations: map[string]string{"notes": "x"}}}, engine.AppStatus{Name: "web"}); none.Annotations != nil {
		t.Fatalf("an application without product annotations reports %v", none.Annotations)
	}
}
