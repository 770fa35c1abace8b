package analytics_test

import (
	"context"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A runtime reports its Rollout's transitions with its syncs: an aborted update makes the
// deployment before it a failed change (degraded) and starts an incident; steps, phases and a
// completed update change no deployment. The path is the real one: report → outbox → bus →
// analytics consumer.
func TestAbortedRolloutIsAFailedChange(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, 1)
		t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
		web := app("web", "prod", "shop", "Healthy")
		if _, err := e.rts.Report(context.Background(), e.rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web}}); err != nil {
			t.Fatal(err)
		}
		ro := func(kind string, at time.Time, rev int64) runtimev1.AppEvent {
			return runtimev1.AppEvent{Type: runtimev1.RolloutChanged, App: "web", At: at, Rollout: &runtimev1.RolloutRecord{Namespace: "shop", Name: "web",
				Kind: kind, Phase: "Degraded", Message: "RolloutAborted: Rollout aborted update to revision 2", Strategy: "canary", Steps: 2, Revision: rev, PodHash: "abc"}}
		}
		e.report(t,
			synced("web", 1, "Succeeded", "automated", "c1", t0.Add(-time.Minute), t0, nil),
			ro(runtimev1.RolloutUpdateStarted, t0.Add(time.Second), 2),
			ro(runtimev1.RolloutStepChanged, t0.Add(2*time.Second), 2),
			ro(runtimev1.RolloutAborted, t0.Add(10*time.Minute), 2),
			synced("web", 2, "Succeeded", "automated", "c2", t0.Add(59*time.Minute), t0.Add(time.Hour), nil),
			ro(runtimev1.RolloutUpdateStarted, t0.Add(time.Hour+time.Second), 3),
			ro(runtimev1.RolloutCompleted, t0.Add(time.Hour+5*time.Minute), 3),
			synced("web", 3, "Succeeded", "automated", "c3", t0.Add(119*time.Minute), t0.Add(2*time.Hour), nil),
		)
		ds := e.waitFor(t, analytics.Filter{App: "web"}, func(ds []analytics.Deployment) bool {
			return len(ds) == 3 && !ds[2].DegradedAt.IsZero()
		})
		if !ds[2].DegradedAt.Equal(t0.Add(10*time.Minute)) || !ds[1].DegradedAt.IsZero() || !ds[0].DegradedAt.IsZero() {
			t.Fatalf("deployments %+v: want the first degraded at the abort (10m after it), the others not", ds)
		}
		r, err := e.svc.DORA(context.Background(), e.admin, analytics.Query{Filter: analytics.Filter{App: "web", Since: t0.Add(-time.Hour)}})
		if err != nil || r.Deployments != 3 || r.FailedChanges != 1 {
			t.Fatalf("DORA of web = %d deployments, %d failed, %v: want 3 and 1", r.Deployments, r.FailedChanges, err)
		}
	})
}
