package engine_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// A plain directory app: Missing → synced → Healthy (the Deployment becomes Available on the
// kwok node), a second sync changes nothing, the tree shows Deployment → ReplicaSet → Pod,
// and the reporter saw the sync and the health transition.
func TestDirectoryApp(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"guestbook/deploy.yaml": deployment("web", 1, ""),
		"guestbook/svc.yaml":    service("web"),
		"guestbook/cm.yaml":     configMap("web-config", "v1"),
		"guestbook/README.md":   "not a manifest",
	}, "guestbook")
	v.upsert(v.application("guestbook", "guestbook", ""))

	s := v.refresh("guestbook")
	if s.Sync != engine.OutOfSync || len(s.Resources) != 3 {
		t.Fatalf("before sync: sync=%s resources=%+v conditions=%v", s.Sync, s.Resources, s.Conditions)
	}
	for _, r := range s.Resources {
		if r.Health == nil || r.Health.Status != health.Missing {
			t.Errorf("%s: health %v, want Missing", r.ResourceKey, r.Health)
		}
	}
	if s.Commit == nil || s.Commit.Message == "" || s.Revision == "" {
		t.Errorf("status lacks the commit: %+v", s.Commit)
	}
	diffs, err := v.e.Diff(v.ctx(30*time.Second), "guestbook")
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 3 || diffs[0].Status != engine.DiffMissing || !strings.Contains(diffs[0].Diff, "+++ desired/") {
		t.Fatalf("diffs: %+v", diffs)
	}

	res := v.sync("guestbook", engine.SyncOptions{})
	v.mustSucceed(res)
	for _, kind := range []string{"Deployment", "Service", "ConfigMap"} {
		name := "web"
		if kind == "ConfigMap" {
			name = "web-config"
		}
		if got := result(res, kind, name); got != engine.ResultCreated {
			t.Errorf("%s/%s: %s, want created", kind, name, got)
		}
	}
	// Kind order within the wave: ConfigMap, Service, Deployment.
	var order []string
	for _, r := range res.Resources {
		order = append(order, r.Kind)
	}
	if strings.Join(order, ",") != "ConfigMap,Service,Deployment" {
		t.Errorf("apply order %v", order)
	}
	dep := v.mustGet(gvrDeploy, "web")
	if dep.GetLabels()[engine.LabelApp] != "guestbook" {
		t.Errorf("deployment labels %v", dep.GetLabels())
	}
	s = v.waitStatus("guestbook", 30*time.Second, "Synced and Healthy", healthy)
	if s.Operation == nil || s.Operation.Phase != engine.PhaseSucceeded {
		t.Errorf("operation %+v", s.Operation)
	}

	// Unchanged: a second sync configures nothing.
	res = v.sync("guestbook", engine.SyncOptions{})
	v.mustSucceed(res)
	for _, r := range res.Resources {
		if r.Result != engine.ResultUnchanged {
			t.Errorf("second sync: %s %s", r.ResourceKey, r.Result)
		}
	}

	// ApplyOutOfSyncOnly: nothing is out of sync, nothing is applied.
	res = v.sync("guestbook", engine.SyncOptions{Options: []string{"ApplyOutOfSyncOnly=true"}})
	v.mustSucceed(res)
	for _, r := range res.Resources {
		if r.Result != engine.ResultSkipped {
			t.Errorf("ApplyOutOfSyncOnly: %s %s", r.ResourceKey, r.Result)
		}
	}
	// A hard refresh renders again; a normal one does not.
	renders := v.e.Stats().Renders
	v.refresh("guestbook")
	if got := v.e.Stats().Renders; got != renders {
		t.Errorf("a normal refresh rendered (%d → %d)", renders, got)
	}
	if s, err := v.e.Refresh(v.ctx(30*time.Second), "guestbook", true); err != nil || !healthy(s) {
		t.Errorf("hard refresh: %v %s/%s", err, s.Sync, s.Health.Status)
	}
	if got := v.e.Stats().Renders; got != renders+1 {
		t.Errorf("a hard refresh did not render (%d → %d)", renders, got)
	}

	tree, err := v.e.Tree(v.ctx(30*time.Second), "guestbook")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, n := range tree {
		if n.Kind != "Deployment" {
			continue
		}
		if n.Sync != engine.Synced || n.Health.Status != health.Healthy {
			t.Errorf("deployment node %+v", n)
		}
		if len(n.Children) != 1 || n.Children[0].Kind != "ReplicaSet" || len(n.Children[0].Children) != 1 || n.Children[0].Children[0].Kind != "Pod" {
			t.Fatalf("deployment children: %+v", n.Children)
		}
		pod := n.Children[0].Children[0]
		if pod.Health.Status != health.Healthy || len(pod.Images) != 1 || pod.Images[0] != "nginx:1.27" {
			t.Errorf("pod node %+v", pod)
		}
		found = true
	}
	if !found {
		t.Fatalf("no Deployment in the tree: %+v", tree)
	}

	if n := v.events.count(engine.EventSyncFinished, nil); n != 3 {
		t.Errorf("%d SyncFinished events, want 3", n)
	}
	if n := v.events.count(engine.EventHealthChanged, func(ev engine.Event) bool { return ev.Status.Health.Status == health.Healthy }); n == 0 {
		t.Error("no HealthChanged event to Healthy")
	}
	hist, _ := v.e.History("guestbook")
	if len(hist) != 3 || hist[0].Commit == nil || hist[0].Commit.Subject() != "guestbook" || len(hist[0].Changed) != 3 || len(hist[1].Changed) != 0 {
		t.Errorf("history: %+v", hist)
	}
}

// Refreshes, diffs, trees and syncs of one app at once, with the engine's own loops running,
// are safe (run with -race) and agree at the end.
func TestConcurrentOperations(t *testing.T) {
	v := newEnv(t, func(o *engine.Options) { o.PollInterval = 500 * time.Millisecond })
	v.repo.Commit("main", map[string]string{
		"c/deploy.yaml": deployment("web", 1, ""),
		"c/cm.yaml":     configMap("conf", "v1"),
	}, "concurrent")
	v.upsert(v.application("conc", "c", autoSelfHeal))
	v.run()
	ctx := v.ctx(30 * time.Second)
	stop := time.Now().Add(3 * time.Second)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				var err error
				switch i {
				case 0:
					_, err = v.e.Diff(ctx, "conc")
				case 1:
					_, err = v.e.Tree(ctx, "conc")
				case 2:
					_, err = v.e.Sync(ctx, "conc", engine.SyncOptions{})
					if errors.Is(err, engine.ErrOperationRunning) {
						err = nil
					}
				case 3:
					v.e.Notify(v.repo.URL(), "")
				default:
					_, err = v.e.Refresh(ctx, "conc", i == 4)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	v.waitStatus("conc", 20*time.Second, "Synced and Healthy", healthy)
}
