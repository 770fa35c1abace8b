package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

func windowProject(t *testing.T, manualSync bool) *app.AppProject {
	t.Helper()
	p, err := app.DecodeAppProject([]byte(fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: frozen}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  syncWindows:
    - kind: deny
      schedule: '0 22 * * *'
      duration: 1h
      timeZone: Europe/Berlin
      applications: ['win*']
      manualSync: %t
`, manualSync)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A deny window open on the engine's clock keeps an automated app from syncing, with a
// condition naming the window and when it closes; a manual sync passes when the window has
// manualSync and is refused when it has not; once the clock leaves the window, auto-sync runs.
func TestSyncWindowBlocksAutomatedSync(t *testing.T) {
	var clock atomic.Int64                                                 // unix nanoseconds
	clock.Store(time.Date(2026, 1, 16, 21, 30, 0, 0, time.UTC).UnixNano()) // 22:30 in Berlin
	v := newEnv(t, func(o *engine.Options) {
		o.PollInterval = time.Hour
		o.Now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	})
	v.repo.Commit("main", map[string]string{"w/cm.yaml": configMap("frozen", "v1")}, "window")
	a := v.application("win", "w", autoSelfHeal)
	a.Spec.Project = "frozen"
	if err := v.e.Upsert(a, windowProject(t, true)); err != nil {
		t.Fatal(err)
	}
	v.run()

	s := v.waitStatus("win", 30*time.Second, "sync window condition", func(s engine.AppStatus) bool {
		_, ok := s.Condition(engine.ConditionSyncWindow)
		return ok
	})
	c, _ := s.Condition(engine.ConditionSyncWindow)
	for _, want := range []string{`automated syncs are blocked by project "frozen"'s deny window spec.syncWindows[0]`,
		`deny "0 22 * * *" for 1h (Europe/Berlin)`, "the next sync may run at 2026-01-16T22:00:00Z", "manual syncs are allowed"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition %q does not say %q", c.Message, want)
		}
	}
	// Another turn of the loop on the same clock still applies nothing.
	v.refresh("win")
	if s := v.refresh("win"); s.Sync != engine.OutOfSync {
		t.Errorf("sync status %s during the deny window, want OutOfSync", s.Sync)
	}
	if _, ok := v.get(gvrCM, "frozen"); ok {
		t.Fatalf("the ConfigMap was applied during a deny window")
	}
	if n := v.events.count(engine.EventSyncStarted, func(engine.Event) bool { return true }); n != 0 {
		t.Fatalf("%d syncs started during a deny window", n)
	}

	// manualSync: a user's sync runs.
	v.mustSucceed(v.sync("win", engine.SyncOptions{}))
	v.mustGet(gvrCM, "frozen")

	// Without manualSync a manual sync (and a rollback) is refused, naming the window.
	if err := v.e.Upsert(a, windowProject(t, false)); err != nil {
		t.Fatal(err)
	}
	_, err := v.e.Sync(v.ctx(30*time.Second), "win", engine.SyncOptions{})
	if !errors.Is(err, engine.ErrSyncWindow) || !strings.Contains(err.Error(), "manual syncs are blocked") || !strings.Contains(err.Error(), "spec.syncWindows[0]") {
		t.Fatalf("manual sync in a deny window without manualSync: %v", err)
	}
	if _, err := v.e.Rollback(v.ctx(30*time.Second), "win", 1, false); !errors.Is(err, engine.ErrSyncWindow) {
		t.Fatalf("rollback in a deny window: %v", err)
	}
	if s, _ := v.e.Status("win"); s.AutoSyncDisabled {
		t.Errorf("a refused rollback switched automated sync off")
	}
	if res, err := v.e.Sync(v.ctx(30*time.Second), "win", engine.SyncOptions{DryRun: true}); err != nil || res.Phase != engine.PhaseSucceeded {
		t.Fatalf("a dry run applies nothing and is not blocked: %v %+v", err, res)
	}

	// A new commit during the window waits; when the clock leaves the window auto-sync runs.
	v.repo.Commit("main", map[string]string{"w/cm.yaml": configMap("frozen", "v2")}, "change")
	s = v.refresh("win")
	if _, ok := s.Condition(engine.ConditionSyncWindow); !ok || s.Sync != engine.OutOfSync {
		t.Fatalf("new commit in the window: %s %v", s.Sync, s.Conditions)
	}
	clock.Store(time.Date(2026, 1, 16, 22, 0, 0, 0, time.UTC).UnixNano())
	v.refresh("win")
	v.eventually(30*time.Second, "auto-synced after the window", func() (bool, string) {
		cm, _ := v.get(gvrCM, "frozen")
		got := ""
		if cm != nil {
			got, _, _ = unstructured.NestedString(cm.Object, "data", "value")
		}
		return got == "v2", got
	})
	s = v.waitStatus("win", 30*time.Second, "synced without the condition", func(s engine.AppStatus) bool {
		_, ok := s.Condition(engine.ConditionSyncWindow)
		return s.Sync == engine.Synced && !ok
	})
	if n := v.events.count(engine.EventSyncStarted, func(ev engine.Event) bool { return ev.Sync.InitiatedBy == engine.InitiatedByAutomated }); n != 1 {
		t.Errorf("%d automated syncs, want 1 (after the window)", n)
	}
}
