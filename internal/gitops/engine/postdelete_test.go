package engine_test

import (
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

// A PostDelete hook that fails fails the deletion: the error names it, the app stays, the
// hook is left for inspection.
func TestPostDeleteHookFails(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"pdf/cm.yaml":   configMap("pdf-res", "x"),
		"pdf/hook.yaml": job("pdf-cleanup", []string{"argocd.argoproj.io/hook: PostDelete"}, "1", ""),
	}, "failing post-delete")
	v.upsert(v.application("pdf", "pdf", ""))
	v.mustSucceed(v.sync("pdf", engine.SyncOptions{}))
	err := v.e.Remove(v.ctx(120*time.Second), "pdf", true)
	if err == nil || !strings.Contains(err.Error(), "PostDelete hook") || !strings.Contains(err.Error(), "pdf-cleanup") {
		t.Fatalf("delete with a failing PostDelete hook: %v", err)
	}
	if _, err := v.e.History("pdf"); err != nil {
		t.Errorf("the app is gone although its PostDelete hook failed: %v", err)
	}
	v.mustGet(gvrJob, "pdf-cleanup")
	if _, found := v.get(gvrCM, "pdf-res"); found {
		t.Error("the app's resource was not deleted before the hook ran")
	}
}
