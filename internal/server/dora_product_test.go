package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// DORA per product through the real server: the product's applications (by annotation and by
// pattern) resolved by the products service, the metrics over them as a whole in SQL, the same
// through REST and GraphQL, and deployments listed by product.
func TestDORAByProduct(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []client.CreateProductRequest{{Name: "payments", Patterns: []string{"pay-*"}}, {Name: "empty", Patterns: []string{"nothing-*"}}} {
				if _, err := s.Admin.CreateProduct(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now().UTC().Truncate(time.Hour)
			app := func(name, product, health string, at time.Time) *runtimev1.Application {
				a := &runtimev1.Application{Name: name, DestName: "prod", DestNamespace: name, Sync: "Synced", Health: health, ReconciledAt: at}
				if product != "" {
					a.Annotations = map[string]string{"codefresh.io/product": product}
				}
				return a
			}
			products := map[string]string{"pay-api": "payments", "pay-web": "", "search": "discovery"}
			var apps []runtimev1.Application
			for _, n := range []string{"pay-api", "pay-web", "search"} {
				apps = append(apps, *app(n, products[n], "Healthy", now.Add(-10*24*time.Hour)))
			}
			var evs []runtimev1.AppEvent
			ids := map[string]int64{}
			dep := func(name string, daysAgo int, lead time.Duration) {
				ids[name]++
				fin := now.Add(-time.Duration(daysAgo) * 24 * time.Hour)
				evs = append(evs, runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: name, At: fin, Sync: &runtimev1.SyncRecord{ID: ids[name],
					Revision: fmt.Sprint("rev", ids[name]), Phase: "Succeeded", InitiatedBy: "automated", Commit: &runtimev1.Commit{Time: fin.Add(-lead)},
					StartedAt: fin.Add(-time.Minute), FinishedAt: fin}})
			}
			incident := func(name string, daysAgo int, length time.Duration) {
				at := now.Add(-time.Duration(daysAgo)*24*time.Hour + 2*time.Hour)
				evs = append(evs,
					runtimev1.AppEvent{Type: runtimev1.HealthChanged, App: name, At: at, Application: app(name, products[name], "Degraded", at), HealthFrom: "Healthy"},
					runtimev1.AppEvent{Type: runtimev1.HealthChanged, App: name, At: at.Add(length), Application: app(name, products[name], "Healthy", at.Add(length)), HealthFrom: "Degraded"})
			}
			// payments: pay-api leads 1, 2, 3 h (median 2 h), restores 30 s (alone: 30 s); pay-web
			// leads 10, 11 h (lower median 10 h), restores 5, 10, 20 m (median 10 m). As a whole:
			// lead 3 h, time to restore 5 m.
			dep("pay-api", 6, time.Hour)
			dep("pay-api", 5, 2*time.Hour)
			dep("pay-api", 4, 3*time.Hour)
			dep("pay-web", 6, 10*time.Hour)
			dep("pay-web", 3, 11*time.Hour)
			dep("search", 5, 40*time.Hour)
			incident("pay-api", 6, 30*time.Second)
			incident("pay-web", 5, 5*time.Minute)
			incident("pay-web", 4, 10*time.Minute)
			incident("pay-web", 3, 20*time.Minute)
			incident("search", 2, 7*time.Hour)
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: apps, Events: evs})

			since := now.Add(-8 * 24 * time.Hour)
			q := client.DORAQuery{Product: "payments", Since: since, Bucket: "day"}
			var rep client.DORAReport
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if rep, err = s.Admin.DORA(ctx, q); err != nil {
					t.Fatal(err)
				}
				all, err := s.Admin.DORA(ctx, client.DORAQuery{Since: since})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Deployments == 5 && rep.Incidents == 4 && rep.OpenIncidents == 0 && all.Deployments == 6 && all.Incidents == 5 && all.OpenIncidents == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("dora of payments: %+v", rep)
				}
			}
			if rep.LeadTimeForChanges.Value != 3*3600 || rep.TimeToRestore.Value != 300 || rep.Successful != 5 {
				t.Errorf("payments: lead %v s, restore %v s, %d successful; want 10800, 300, 5", rep.LeadTimeForChanges.Value, rep.TimeToRestore.Value, rep.Successful)
			}
			// Each application alone has other medians.
			for _, c := range []struct {
				app           string
				lead, restore float64
			}{{"pay-api", 2 * 3600, 30}, {"pay-web", 10 * 3600, 600}} {
				r, err := s.Admin.DORA(ctx, client.DORAQuery{App: c.app, Since: since})
				if err != nil || r.LeadTimeForChanges.Value != c.lead || r.TimeToRestore.Value != c.restore {
					t.Errorf("%s: lead %v, restore %v, %v", c.app, r.LeadTimeForChanges.Value, r.TimeToRestore.Value, err)
				}
			}
			if r, err := s.Admin.DORA(ctx, client.DORAQuery{Product: "discovery", Since: since}); err != nil || r.Deployments != 1 || r.LeadTimeForChanges.Value != 40*3600 {
				t.Errorf("discovery: %+v, %v", r, err)
			}
			// A product without applications: an empty report, not an error.
			if r, err := s.Admin.DORA(ctx, client.DORAQuery{Product: "empty", Since: since}); err != nil || r.Deployments != 0 || r.Incidents != 0 ||
				r.LeadTimeForChanges.Band != "none" || len(r.Series) != len(rep.Series) {
				t.Errorf("empty: %+v, %v", r, err)
			}
			// An unknown product: 400 naming the parameter and the value.
			var apiErr *client.Error
			if _, err := s.Admin.DORA(ctx, client.DORAQuery{Product: "nope"}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest ||
				apiErr.Field != "product" || !strings.Contains(apiErr.Message, `"nope"`) {
				t.Errorf("unknown product: %v", err)
			}
			if _, err := s.Admin.ListDeployments(ctx, client.DeploymentFilter{Product: "nope"}); !errors.As(err, &apiErr) || apiErr.Field != "product" {
				t.Errorf("deployments of an unknown product: %v", err)
			}

			ds, err := s.Admin.ListDeployments(ctx, client.DeploymentFilter{Product: "payments"})
			if err != nil || len(ds.Items) != 5 {
				t.Fatalf("payments' deployments: %+v, %v", ds, err)
			}
			for _, d := range ds.Items {
				if d.Application != "pay-api" && d.Application != "pay-web" {
					t.Errorf("payments lists %s", d.Application)
				}
			}
			if ds, err := s.Admin.ListDeployments(ctx, client.DeploymentFilter{Product: "empty"}); err != nil || len(ds.Items) != 0 {
				t.Errorf("empty's deployments: %+v, %v", ds, err)
			}

			var g struct {
				Dora struct {
					Deployments        int64
					LeadTimeForChanges client.DORAMetric
					TimeToRestore      client.DORAMetric
					Series             []client.DORABucket
				}
				Deployments struct {
					Nodes []struct{ ID, Application string }
				}
			}
			err = s.Admin.GraphQL(ctx, `query($since: String) {
				dora(filter: {product: "payments", since: $since}, bucket: "day") { deployments leadTimeForChanges { value unit band } timeToRestore { value unit band }
					series { start deployments successful failures leadTimeSeconds incidents openIncidents timeToRestoreSeconds } }
				deployments(filter: {product: "payments"}, first: 50) { nodes { id application } }
			}`, map[string]any{"since": since.Format(time.RFC3339)}, &g)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(g.Dora.Series)
			b, _ := json.Marshal(rep.Series)
			if string(a) != string(b) || g.Dora.Deployments != rep.Deployments || g.Dora.LeadTimeForChanges != rep.LeadTimeForChanges || g.Dora.TimeToRestore != rep.TimeToRestore {
				t.Errorf("GraphQL dora differs from REST:\n%s %+v %+v\n%s %+v %+v", a, g.Dora.LeadTimeForChanges, g.Dora.TimeToRestore, b, rep.LeadTimeForChanges, rep.TimeToRestore)
			}
			if len(g.Deployments.Nodes) != 5 || g.Deployments.Nodes[0].ID != ds.Items[0].ID {
				t.Errorf("GraphQL deployments: %+v", g.Deployments.Nodes)
			}
			var gerr client.GraphQLErrors
			err = s.Admin.GraphQL(ctx, `{ dora(filter: {product: "nope"}) { deployments } }`, nil, &g)
			if !errors.As(err, &gerr) || !strings.Contains(err.Error(), "filter.product") || !strings.Contains(err.Error(), `"nope"`) {
				t.Errorf("GraphQL unknown product: %v", err)
			}
		})
	}
}
