package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A product's DORA report (a set of applications) seeks each application's deployments
// through deployments_runtime, on SQLite as on PostgreSQL, instead of reading the account's
// whole range through deployments_time and filtering it by the set: on SQLite without
// statistics that read took 11 s for a product of 200 applications at 1,000,000 deployments
// (docs/benchmarks.md, Analytics). The plan is checked, not timed.
func TestProductReportSeeksEachApplication(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		rt := seedRuntime(t, db, a.ID, "prod")
		now := time.Now().UTC()
		var ds []store.Deployment
		for app := range 200 {
			for day := range 10 {
				at := now.AddDate(0, 0, -day*9).Add(-time.Duration(app+1) * time.Minute)
				ds = append(ds, store.Deployment{ID: store.NewID("dep"), AccountID: a.ID, EventKey: fmt.Sprintf("k-%d-%d", app, day),
					RuntimeID: rt.ID, Runtime: rt.Name, App: fmt.Sprintf("app-%03d", app), Cluster: "in-cluster", Result: "Succeeded",
					CommitTime: at.Add(-time.Hour), StartedAt: at.Add(-time.Minute), FinishedAt: at})
			}
		}
		if err := db.InsertDeployments(ctx, ds); err != nil {
			t.Fatal(err)
		}
		f := store.DeploymentFilter{AppsSet: true, Since: now.AddDate(0, 0, -90), Until: now}
		for i := range 20 {
			f.Apps = append(f.Apps, store.AppRef{RuntimeID: rt.ID, App: fmt.Sprintf("app-%03d", i*10)})
		}
		queries, args, err := db.DeploymentQueries(a.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range queries {
			plan, err := db.Plan(ctx, q, args[i]...)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			text := strings.Join(plan, "\n")
			if db.Dialect() == store.SQLite && (!strings.Contains(text, "deployments_runtime") || strings.Contains(text, "deployments_time")) {
				t.Errorf("statement %d reads the set's deployments another way:\n%s\nplan:\n%s", i, q, text)
			}
		}
		// And the answers are the set's, not the account's.
		days, err := db.DORADays(ctx, a.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, d := range days {
			n += d.Deployments
		}
		if n != 200 { // 20 applications × 10 deployments, all within 90 days
			t.Errorf("%d deployments in the set's days, want 200", n)
		}
	})
}
