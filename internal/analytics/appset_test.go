package analytics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// TestDORAOverASetOfApplications computes the metrics of a product's applications as a whole
// in SQL: the product's medians are not any application's median, nor an average of them.
func TestDORAOverASetOfApplications(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.CreateAccount(ctx, store.Account{ID: "acc_acme", Name: "acme", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		day := func(d, h int) time.Time { return time.Date(2026, 3, d, h, 0, 0, 0, time.UTC) }
		var syncs []runtimes.SyncFinished
		ids := map[string]int64{}
		dep := func(rt, app string, d int, lead time.Duration) {
			ids[rt+app]++
			finished := day(d, 12)
			syncs = append(syncs, runtimes.SyncFinished{AccountID: "acc_acme", RuntimeID: rt, Runtime: "edge-" + rt, Application: app,
				DestName: "prod", SyncID: ids[rt+app], Revision: fmt.Sprint("rev", d), Phase: "Succeeded", InitiatedBy: "automated",
				StartedAt: finished.Add(-time.Minute), FinishedAt: finished, Commit: &runtimev1.Commit{Time: finished.Add(-lead)}})
		}
		var healths []runtimes.HealthChanged
		incident := func(rt, app string, d int, length time.Duration) {
			start := day(d, 15)
			healths = append(healths,
				runtimes.HealthChanged{AccountID: "acc_acme", RuntimeID: rt, Runtime: "edge-" + rt, Application: app, From: "Healthy", To: "Degraded", At: start},
				runtimes.HealthChanged{AccountID: "acc_acme", RuntimeID: rt, Runtime: "edge-" + rt, Application: app, From: "Degraded", To: "Healthy", At: start.Add(length)})
		}
		h := time.Hour
		// Product shop: a1 on rt_1 (leads 1, 2, 3 h: median 2 h; restores 10 m, 30 m: lower
		// median 10 m) and a2 on rt_2 (leads 10, 11 h: lower median 10 h; restores 2, 5, 6 h:
		// median 5 h). As a whole: leads 1, 2, 3, 10, 11 h → 3 h; restores → 2 h.
		dep("rt_1", "a1", 2, 1*h)
		dep("rt_1", "a1", 3, 2*h)
		dep("rt_1", "a1", 4, 3*h)
		dep("rt_2", "a2", 2, 10*h)
		dep("rt_2", "a2", 5, 11*h)
		incident("rt_1", "a1", 2, 10*time.Minute)
		incident("rt_1", "a1", 6, 30*time.Minute)
		incident("rt_2", "a2", 3, 2*h)
		incident("rt_2", "a2", 7, 5*h)
		incident("rt_2", "a2", 8, 6*h)
		// a2 on rt_1 is another application: not the product's.
		dep("rt_1", "a2", 9, 100*h)
		incident("rt_1", "a2", 9, 50*h)
		// Product ops: b1 (leads 4, 8 h: lower median 4 h), b2 (5, 20, 30 h: median 20 h); as a
		// whole 4, 5, 8, 20, 30 h → 8 h.
		dep("rt_1", "b1", 10, 4*h)
		dep("rt_1", "b1", 11, 8*h)
		dep("rt_1", "b2", 10, 5*h)
		dep("rt_1", "b2", 12, 20*h)
		dep("rt_1", "b2", 13, 30*h)
		incident("rt_1", "b1", 10, 3*h)
		incident("rt_1", "b2", 11, h)
		err := db.Tx(ctx, func(tx *store.Tx) error {
			for _, e := range healths {
				if err := analytics.ApplyHealthChanged(ctx, tx, e, analytics.DefaultFailureWindow); err != nil {
					return err
				}
			}
			for _, s := range syncs {
				if err := analytics.ApplySyncFinished(ctx, tx, s, analytics.DefaultFailureWindow); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		svc := analytics.New(analytics.Deps{Store: db})
		p := rbac.Principal{AccountID: "acc_acme", Role: rbac.Viewer}
		march := func(apps ...analytics.AppRef) analytics.Filter {
			return analytics.Filter{Apps: apps, AppsSet: true, Since: day(1, 0), Until: day(31, 0)}
		}
		shop := march(analytics.AppRef{RuntimeID: "rt_1", App: "a1"}, analytics.AppRef{RuntimeID: "rt_2", App: "a2"})
		ops := march(analytics.AppRef{RuntimeID: "rt_1", App: "b1"}, analytics.AppRef{RuntimeID: "rt_1", App: "b2"})

		for _, c := range []struct {
			name          string
			f             analytics.Filter
			deployments   int64
			lead, restore time.Duration
			incidents     int64
		}{
			{"shop", shop, 5, 3 * h, 2 * h, 5},
			{"ops", ops, 5, 8 * h, h, 2},
			// Each application alone: the medians the product's are not.
			{"a1", march(analytics.AppRef{RuntimeID: "rt_1", App: "a1"}), 3, 2 * h, 10 * time.Minute, 2},
			{"a2", march(analytics.AppRef{RuntimeID: "rt_2", App: "a2"}), 2, 10 * h, 5 * h, 3},
			{"b2", march(analytics.AppRef{RuntimeID: "rt_1", App: "b2"}), 3, 20 * h, h, 1},
		} {
			r, err := svc.DORA(ctx, p, analytics.Query{Filter: c.f})
			if err != nil {
				t.Fatal(c.name, err)
			}
			if r.Deployments != c.deployments || r.LeadTimeForChanges.Value != c.lead.Seconds() ||
				r.TimeToRestore.Value != c.restore.Seconds() || r.Incidents != c.incidents {
				t.Errorf("%s: %d deployments, lead %v s, restore %v s, %d incidents; want %d, %v, %v, %d", c.name, r.Deployments,
					r.LeadTimeForChanges.Value, r.TimeToRestore.Value, r.Incidents, c.deployments, c.lead.Seconds(), c.restore.Seconds(), c.incidents)
			}
		}
		// The series is the product's: 2 March has a1's and a2's deployments (leads 1 and 10 h:
		// mean 5.5 h) and a1's incident.
		r, err := svc.DORA(ctx, p, analytics.Query{Filter: shop})
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Series[1]; s.Deployments != 2 || s.LeadTime != 5*h+30*time.Minute || s.Incidents != 1 || s.TimeToRestore != 10*time.Minute {
			t.Errorf("shop on 2 March: %+v", s)
		}
		if s := r.Series[8]; s.Deployments != 0 || s.Incidents != 0 {
			t.Errorf("shop on 9 March has rt_1's a2: %+v", s)
		}
		ds, err := svc.ListDeployments(ctx, p, shop, paging.Page{})
		if err != nil || len(ds) != 5 {
			t.Fatalf("shop's deployments: %d, %v", len(ds), err)
		}
		for _, d := range ds {
			if d.RuntimeID+"/"+d.Application != "rt_1/a1" && d.RuntimeID+"/"+d.Application != "rt_2/a2" {
				t.Errorf("shop lists %s/%s", d.RuntimeID, d.Application)
			}
		}

		// An empty set selects nothing (a product without applications); a large one is one
		// bounded statement.
		r, err = svc.DORA(ctx, p, analytics.Query{Filter: march()})
		if err != nil || r.Deployments != 0 || r.Incidents != 0 || r.LeadTimeForChanges.Band != analytics.BandNone || len(r.Series) != 30 {
			t.Errorf("empty set: %+v, %v", r, err)
		}
		if ds, err := svc.ListDeployments(ctx, p, march(), paging.Page{}); err != nil || len(ds) != 0 {
			t.Errorf("empty set lists %d, %v", len(ds), err)
		}
		big := shop
		big.Apps = append([]analytics.AppRef(nil), shop.Apps...)
		for i := len(big.Apps); i < analytics.MaxApps; i++ {
			big.Apps = append(big.Apps, analytics.AppRef{RuntimeID: "rt_1", App: fmt.Sprint("x", i)})
		}
		r, err = svc.DORA(ctx, p, analytics.Query{Filter: big})
		if err != nil || r.Deployments != 5 || r.LeadTimeForChanges.Value != (3*h).Seconds() || r.TimeToRestore.Value != (2*h).Seconds() {
			t.Errorf("shop among %d applications: %+v, %v", len(big.Apps), r, err)
		}
		big.Apps = append(big.Apps, analytics.AppRef{RuntimeID: "rt_1", App: "one-too-many"})
		if _, err := svc.DORA(ctx, p, analytics.Query{Filter: big}); err == nil {
			t.Error("more than MaxApps applications were accepted")
		} else if errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	})
}
