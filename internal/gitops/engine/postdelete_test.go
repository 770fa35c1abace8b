package engine_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// PostDelete hooks: a sync does not run them; a cascading delete deletes the app's resources,
// waits until they are gone, then runs the hook (a Job that completes) and deletes it. Seen
// through a watch on the namespace, so the order is the API server's.
func TestPostDeleteHook(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"pd/cm.yaml":   configMap("pd-res", "x"),
		"pd/hook.yaml": job("pd-cleanup", []string{"argocd.argoproj.io/hook: PostDelete"}, "0", "1s"),
	}, "post-delete")
	v.upsert(v.application("pd", "pd", ""))
	res := v.sync("pd", engine.SyncOptions{})
	v.mustSucceed(res)
	if len(res.Hooks) != 0 {
		t.Errorf("a sync ran hooks %+v", res.Hooks)
	}
	if _, found := v.get(gvrJob, "pd-cleanup"); found {
		t.Fatal("the PostDelete hook was created by a sync")
	}

	ctx := v.ctx(120 * time.Second)
	var mu sync.Mutex
	var seen []string
	record := func(w watch.Interface) {
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			mu.Lock()
			seen = append(seen, string(ev.Type)+" "+obj.GetName())
			mu.Unlock()
		}
	}
	cmw, err := v.c.Client.CoreV1().ConfigMaps(v.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=pd-res"})
	if err != nil {
		t.Fatal(err)
	}
	jw, err := v.c.Client.BatchV1().Jobs(v.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=pd-cleanup"})
	if err != nil {
		t.Fatal(err)
	}
	go record(cmw)
	go record(jw)
	if err := v.e.Remove(ctx, "pd", true); err != nil {
		t.Fatalf("cascading delete: %v", err)
	}
	if _, found := v.get(gvrJob, "pd-cleanup"); found {
		t.Error("the PostDelete hook is still there after the delete")
	}
	time.Sleep(300 * time.Millisecond) // the watches' last events
	cmw.Stop()
	jw.Stop()
	mu.Lock()
	order := strings.Join(seen, ", ")
	mu.Unlock()
	del, add, jdel := strings.Index(order, "DELETED pd-res"), strings.Index(order, "ADDED pd-cleanup"), strings.Index(order, "DELETED pd-cleanup")
	if del < 0 || add < 0 || jdel < 0 || !(del < add && add < jdel) {
		t.Errorf("events %s: want the resource deleted, then the hook created, then the hook deleted", order)
	}
}

// A PostDelete hook that fails keeps the app, deleting, as Argo CD does: the error and a
// DeletionError condition name the hook and its failure, no sync starts, the hook is left for
// inspection and the engine retries; once the hook is fixed in git, a retry runs it again and
// the deletion finishes (the app and the hook gone).
func TestPostDeleteHookFails(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"pdf/cm.yaml":   configMap("pdf-res", "x"),
		"pdf/hook.yaml": job("pdf-cleanup", []string{"argocd.argoproj.io/hook: PostDelete"}, "1", ""),
	}, "failing post-delete")
	v.upsert(v.application("pdf", "pdf", ""))
	v.mustSucceed(v.sync("pdf", engine.SyncOptions{}))
	err := v.e.Remove(v.ctx(120*time.Second), "pdf", true)
	if err == nil || !errors.Is(err, engine.ErrDeletionPending) || !strings.Contains(err.Error(), "PostDelete hook") || !strings.Contains(err.Error(), "pdf-cleanup") {
		t.Fatalf("delete with a failing PostDelete hook: %v", err)
	}
	if _, err := v.e.History("pdf"); err != nil {
		t.Errorf("the app is gone although its PostDelete hook failed: %v", err)
	}
	v.mustGet(gvrJob, "pdf-cleanup")
	if _, found := v.get(gvrCM, "pdf-res"); found {
		t.Error("the app's resource was not deleted before the hook ran")
	}
	if _, err := v.e.Sync(v.ctx(10*time.Second), "pdf", engine.SyncOptions{}); err == nil {
		t.Error("a sync of an app being deleted started")
	}

	// The engine runs: the status says why the app stays, and retries (failing again).
	v.run()
	waitUntil(t, 30*time.Second, "the DeletionError condition", func() bool {
		st, err := v.e.Status("pdf")
		c, ok := st.Condition(engine.ConditionDeletionError)
		return err == nil && ok && strings.Contains(c.Message, "PostDelete hook") && strings.Contains(c.Message, "pdf-cleanup") &&
			strings.Contains(c.Message, "attempt 2")
	})
	if n := v.events.count(engine.EventAppDeleted, func(ev engine.Event) bool { return ev.App == "pdf" }); n != 0 {
		t.Fatalf("AppDeleted reported %d times while the hook fails", n)
	}

	// The hook fixed in git: the next retry runs it again, it succeeds, the app goes.
	v.repo.Commit("main", map[string]string{"pdf/hook.yaml": job("pdf-cleanup", []string{"argocd.argoproj.io/hook: PostDelete"}, "0", "")}, "fixed hook")
	v.e.Notify(v.repo.URL(), "main")
	waitUntil(t, 90*time.Second, "the deletion to finish", func() bool {
		_, err := v.e.Status("pdf")
		return errors.Is(err, engine.ErrAppNotFound)
	})
	if _, found := v.get(gvrJob, "pdf-cleanup"); found {
		t.Error("the PostDelete hook is still there after the deletion finished")
	}
	if n := v.events.count(engine.EventAppDeleted, func(ev engine.Event) bool { return ev.App == "pdf" }); n != 1 {
		t.Errorf("AppDeleted reported %d times, want 1", n)
	}
}

// waitUntil polls cond until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
