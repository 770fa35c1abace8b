package engine_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

func rv(t *testing.T, obj *unstructured.Unstructured) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Waves are applied in order, and the next wave starts only once the previous one is
// healthy: a wave-1 ConfigMap is created after the wave-0 Job (running 2s) completed.
func TestSyncWaves(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"waves/a.yaml":   configMap("first", "a", `argocd.argoproj.io/sync-wave: "-1"`),
		"waves/b.yaml":   configMap("second", "b"),
		"waves/job.yaml": job("work", nil, "", "2s"),
		"waves/c.yaml":   configMap("third", "c", `argocd.argoproj.io/sync-wave: "1"`),
		"waves/d.yaml":   deployment("late", 1, "\n    argocd.argoproj.io/sync-wave: \"2\""),
	}, "waves")
	v.upsert(v.application("waves", "waves", ""))
	res := v.sync("waves", engine.SyncOptions{})
	v.mustSucceed(res)

	var order []string
	for _, r := range res.Resources {
		order = append(order, r.Name+"@"+strconv.Itoa(r.Wave))
	}
	if got := strings.Join(order, " "); got != "first@-1 second@0 work@0 third@1 late@2" {
		t.Errorf("apply order %s", got)
	}
	first, second, third := v.mustGet(gvrCM, "first"), v.mustGet(gvrCM, "second"), v.mustGet(gvrCM, "third")
	if !(rv(t, first) < rv(t, second) && rv(t, second) < rv(t, third)) {
		t.Errorf("creation order by resource version: first %d second %d third %d", rv(t, first), rv(t, second), rv(t, third))
	}
	jobObj := v.mustGet(gvrJob, "work")
	done, _, _ := unstructured.NestedString(jobObj.Object, "status", "completionTime")
	completed, err := time.Parse(time.RFC3339, done)
	if err != nil {
		t.Fatalf("job completionTime %q: %v", done, err)
	}
	created := third.GetCreationTimestamp().Time
	if created.Before(completed) {
		t.Errorf("wave 1 created at %s, before the wave 0 Job completed at %s", created, completed)
	}
	if created.Sub(jobObj.GetCreationTimestamp().Time) < time.Second {
		t.Errorf("wave 1 created %s after the 2s Job: no health wait", created.Sub(jobObj.GetCreationTimestamp().Time))
	}
}

// PreSync and PostSync hook Jobs run (and are waited on); delete policies apply: the PreSync
// hook (HookSucceeded) is deleted, the PostSync hook (default BeforeHookCreation) stays until
// the next sync recreates it.
func TestHooks(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"hooks/deploy.yaml": deployment("web", 1, ""),
		"hooks/pre.yaml": job("pre", []string{`argocd.argoproj.io/hook: PreSync`,
			`argocd.argoproj.io/hook-delete-policy: HookSucceeded`}, "", ""),
		"hooks/post.yaml": job("post", []string{`argocd.argoproj.io/hook: PostSync`}, "", ""),
		"hooks/skip.yaml": configMap("skipped", "x", `argocd.argoproj.io/hook: Skip`),
	}, "hooks")
	v.upsert(v.application("hooks", "hooks", ""))
	res := v.sync("hooks", engine.SyncOptions{})
	v.mustSucceed(res)
	if len(res.Hooks) != 2 || res.Hooks[0].Name != "pre" || res.Hooks[0].Type != engine.HookPreSync ||
		res.Hooks[1].Name != "post" || res.Hooks[1].Type != engine.HookPostSync {
		t.Fatalf("hooks %+v", res.Hooks)
	}
	for _, h := range res.Hooks {
		if h.Phase != engine.PhaseSucceeded {
			t.Errorf("hook %s: %s %s", h.Name, h.Phase, h.Message)
		}
	}
	if !res.Hooks[0].Deleted || res.Hooks[1].Deleted {
		t.Errorf("deleted flags: pre %v post %v", res.Hooks[0].Deleted, res.Hooks[1].Deleted)
	}
	if _, ok := v.get(gvrCM, "skipped"); ok {
		t.Error("a Skip hook was applied")
	}
	// PostSync ran after the Sync phase was healthy: the Deployment was Available first.
	post := v.mustGet(gvrJob, "post")
	dep := v.mustGet(gvrDeploy, "web")
	if post.GetCreationTimestamp().Time.Before(dep.GetCreationTimestamp().Time) {
		t.Error("PostSync hook created before the Deployment")
	}
	v.eventually(20*time.Second, "PreSync hook deleted", func() (bool, string) {
		_, ok := v.get(gvrJob, "pre")
		return !ok, "pre still exists"
	})
	uid := post.GetUID()
	res = v.sync("hooks", engine.SyncOptions{})
	v.mustSucceed(res)
	if again := v.mustGet(gvrJob, "post"); again.GetUID() == uid {
		t.Error("BeforeHookCreation: the PostSync Job was not recreated")
	}
	s := v.refresh("hooks")
	if s.Sync != engine.Synced {
		t.Errorf("hooks count in sync status: %s %+v", s.Sync, s.Resources)
	}
}

// A failing PreSync hook fails the sync before anything is applied, runs the SyncFail hook,
// and leaves a SyncError condition.
func TestFailingPreSyncHook(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"app/deploy.yaml": deployment("web", 1, ""),
		"app/pre.yaml":    job("migrate", []string{`argocd.argoproj.io/hook: PreSync`}, "1", ""),
		"app/fail.yaml": job("notify-failure", []string{`argocd.argoproj.io/hook: SyncFail`,
			`argocd.argoproj.io/hook-delete-policy: HookSucceeded`}, "", ""),
	}, "failing hook")
	v.upsert(v.application("failing", "app", ""))
	res := v.sync("failing", engine.SyncOptions{})
	if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, "PreSync hook") || !strings.Contains(res.Message, "migrate") {
		t.Fatalf("phase %s message %q", res.Phase, res.Message)
	}
	if len(res.Hooks) != 2 || res.Hooks[0].Phase != engine.PhaseFailed || res.Hooks[1].Type != engine.HookSyncFail || res.Hooks[1].Phase != engine.PhaseSucceeded {
		t.Fatalf("hooks %+v", res.Hooks)
	}
	if _, ok := v.get(gvrDeploy, "web"); ok {
		t.Error("the Deployment was applied although PreSync failed")
	}
	if _, ok := v.get(gvrJob, "migrate"); !ok {
		t.Error("the failed hook was deleted; its default policy is BeforeHookCreation")
	}
	s, _ := v.e.Status("failing")
	if c, ok := s.Condition(engine.ConditionSyncError); !ok || !strings.Contains(c.Message, "migrate") {
		t.Errorf("conditions %+v", s.Conditions)
	}
	if hist, _ := v.e.History("failing"); len(hist) != 1 || hist[0].Phase != engine.PhaseFailed {
		t.Errorf("history %+v", hist)
	}
}

// Prune removes exactly what was removed from git, only when asked, and the inventory makes
// it work for a new engine (a restarted runtime) too.
func TestPrune(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"p/a.yaml": configMap("a", "1"),
		"p/b.yaml": configMap("b", "1"),
		"p/c.yaml": configMap("c", "1"),
		"p/s.yaml": service("s"),
	}, "four")
	v.upsert(v.application("prune", "p", ""))
	v.mustSucceed(v.sync("prune", engine.SyncOptions{}))
	// Someone else's ConfigMap in the same namespace must survive every prune.
	other := configMapObj(v.ns, "not-managed")
	if _, err := v.c.Dynamic.Resource(gvrCM).Namespace(v.ns).Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	aUID := v.mustGet(gvrCM, "a").GetUID()

	v.repo.Delete("main", "drop b", "p/b.yaml")
	s := v.refresh("prune")
	b, ok := resourceStatus(s, "ConfigMap", "b")
	if s.Sync != engine.OutOfSync || !ok || !b.RequiresPruning {
		t.Fatalf("after removing b from git: sync %s, b %+v", s.Sync, b)
	}
	res := v.sync("prune", engine.SyncOptions{})
	v.mustSucceed(res)
	if got := result(res, "ConfigMap", "b"); got != engine.ResultPruneSkipped {
		t.Errorf("prune off: b %s", got)
	}
	v.mustGet(gvrCM, "b")
	res = v.sync("prune", engine.SyncOptions{Prune: true})
	v.mustSucceed(res)
	if got := result(res, "ConfigMap", "b"); got != engine.ResultPruned {
		t.Errorf("prune on: b %s", got)
	}
	v.eventually(10*time.Second, "b deleted", func() (bool, string) { _, ok := v.get(gvrCM, "b"); return !ok, "" })
	if s := v.refresh("prune"); s.Sync != engine.Synced {
		t.Errorf("after prune: %s %+v", s.Sync, s.Resources)
	}

	// A new engine (the runtime restarted) finds the inventory in the cluster.
	v.restart()
	v.upsert(v.application("prune", "p", "  syncPolicy:\n    syncOptions: [PruneLast=true]\n"))
	v.repo.Delete("main", "drop c and s", "p/c.yaml", "p/s.yaml")
	v.repo.Commit("main", map[string]string{"p/d.yaml": configMap("d", "1")}, "add d")
	res = v.sync("prune", engine.SyncOptions{Prune: true})
	v.mustSucceed(res)
	// PruneLast: the prunes come after every apply.
	if n := len(res.Resources); n != 4 || res.Resources[n-2].Result != engine.ResultPruned || res.Resources[n-1].Result != engine.ResultPruned {
		t.Errorf("PruneLast order: %+v", res.Resources)
	}
	if result(res, "ConfigMap", "c") != engine.ResultPruned || result(res, "Service", "s") != engine.ResultPruned {
		t.Errorf("after restart: %+v", res.Resources)
	}
	v.eventually(20*time.Second, "c and s deleted", func() (bool, string) {
		_, c := v.get(gvrCM, "c")
		_, s := v.get(gvrSvc, "s")
		return !c && !s, ""
	})
	if got := v.mustGet(gvrCM, "a").GetUID(); got != aUID {
		t.Error("a was recreated")
	}
	v.mustGet(gvrCM, "not-managed")
	if hist, _ := v.e.History("prune"); len(hist) != 4 || len(hist[3].Changed) != 3 {
		t.Errorf("history after restart has %d entries, want 4", len(hist))
	}
}

func configMapObj(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     map[string]any{"k": "v"},
	}}
}

// A dry run changes nothing; a selective sync applies only what was selected.
func TestDryRunAndSelectiveSync(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"s/a.yaml": configMap("a", "1"),
		"s/b.yaml": configMap("b", "1"),
	}, "two")
	v.upsert(v.application("sel", "s", ""))
	res := v.sync("sel", engine.SyncOptions{DryRun: true})
	v.mustSucceed(res)
	if result(res, "ConfigMap", "a") != engine.ResultCreated {
		t.Errorf("dry run results %+v", res.Resources)
	}
	if _, ok := v.get(gvrCM, "a"); ok {
		t.Fatal("a dry run created a ConfigMap")
	}
	if hist, _ := v.e.History("sel"); len(hist) != 0 {
		t.Errorf("a dry run is in the history: %+v", hist)
	}
	res = v.sync("sel", engine.SyncOptions{Resources: []engine.ResourceKey{{Kind: "ConfigMap", Name: "b"}}})
	v.mustSucceed(res)
	if len(res.Resources) != 1 || res.Resources[0].Name != "b" {
		t.Errorf("selective sync results %+v", res.Resources)
	}
	if _, ok := v.get(gvrCM, "a"); ok {
		t.Error("a selective sync of b applied a")
	}
	v.mustGet(gvrCM, "b")
}

// Terminate stops a sync waiting on a long hook; the result says so.
func TestTerminateSync(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"t/cm.yaml":  configMap("a", "1"),
		"t/pre.yaml": job("slow", []string{`argocd.argoproj.io/hook: PreSync`}, "", "60s"),
	}, "slow hook")
	v.upsert(v.application("slow", "t", ""))
	done := make(chan *engine.SyncResult, 1)
	go func() {
		res, _ := v.e.Sync(context.Background(), "slow", engine.SyncOptions{})
		done <- res
	}()
	v.eventually(20*time.Second, "the hook runs", func() (bool, string) { _, ok := v.get(gvrJob, "slow"); return ok, "" })
	if _, err := v.e.Sync(context.Background(), "slow", engine.SyncOptions{}); err == nil {
		t.Error("a second sync started while one runs")
	}
	start := time.Now()
	if !v.e.Terminate("slow") {
		t.Fatal("Terminate found no running sync")
	}
	select {
	case res := <-done:
		if res.Phase != engine.PhaseFailed || !strings.Contains(res.Message, "terminated") {
			t.Errorf("phase %s message %q", res.Phase, res.Message)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("termination took %s", time.Since(start))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the sync did not stop")
	}
	if _, ok := v.get(gvrCM, "a"); ok {
		t.Error("a terminated sync applied resources")
	}
}

// CreateNamespace=true creates the destination namespace with managedNamespaceMetadata;
// Replace=true updates with PUT.
func TestCreateNamespaceAndReplace(t *testing.T) {
	v := newEnv(t)
	target := v.ns + "-created"
	t.Cleanup(func() {
		_ = v.c.Client.CoreV1().Namespaces().Delete(context.Background(), target, metav1.DeleteOptions{})
	})
	v.repo.Commit("main", map[string]string{"n/cm.yaml": configMap("a", "1")}, "cm")
	a := v.application("ns", "n", `  syncPolicy:
    syncOptions: [CreateNamespace=true, Replace=true]
    managedNamespaceMetadata:
      labels: {team: blue}
`)
	a.Spec.Destination.Namespace = target
	v.upsert(a)
	v.mustSucceed(v.sync("ns", engine.SyncOptions{}))
	ns, err := v.c.Client.CoreV1().Namespaces().Get(context.Background(), target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["team"] != "blue" {
		t.Errorf("namespace labels %v", ns.Labels)
	}
	cm, err := v.c.Client.CoreV1().ConfigMaps(target).Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) == 0 || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("Replace=true: managed fields %+v", cm.ManagedFields)
	}
	if s := v.refresh("ns"); s.Sync != engine.Synced {
		t.Errorf("after replace: %s %+v", s.Sync, s.Resources)
	}
}

// Deleting an app with cascade deletes what its inventory lists, except an object another
// app applied last (a shared resource), and the inventory itself.
func TestRemoveCascade(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"one/a.yaml":      configMap("a", "1"),
		"one/shared.yaml": configMap("shared", "1"),
		"two/shared.yaml": configMap("shared", "2"),
	}, "two apps")
	v.upsert(v.application("one", "one", ""))
	v.upsert(v.application("two", "two", ""))
	v.mustSucceed(v.sync("one", engine.SyncOptions{}))
	v.mustSucceed(v.sync("two", engine.SyncOptions{}))
	if s := v.refresh("one"); s.Sync != engine.OutOfSync {
		t.Errorf("app one after app two changed the shared ConfigMap: %s", s.Sync)
	}
	if err := v.e.Remove(v.ctx(30*time.Second), "one", true); err != nil {
		t.Fatal(err)
	}
	v.eventually(20*time.Second, "a deleted", func() (bool, string) { _, ok := v.get(gvrCM, "a"); return !ok, "" })
	v.mustGet(gvrCM, "shared")
	if _, ok := v.get(gvrCM, "freshet-app-one"); ok {
		t.Error("the inventory of a deleted app is left")
	}
	v.mustGet(gvrCM, "freshet-app-two")
	if _, err := v.e.Status("one"); err == nil {
		t.Error("a removed app still has a status")
	}
	if v.events.count(engine.EventAppDeleted, nil) != 1 {
		t.Error("no AppDeleted event")
	}
}
