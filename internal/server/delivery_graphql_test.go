package server_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// The dashboards' data through GraphQL is REST's: products, Helm releases (with a release's
// history), reported images, and the DORA series with incidents and time to restore per bucket,
// reported by a runtime through the real server (outbox, bus, analytics consumers).
func TestDeliveryGraphQLMatchesREST(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
			if err != nil {
				t.Fatal(err)
			}
			const sha = "3333333333333333333333333333333333333333"
			digest := "sha256:" + "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
			if _, err := s.Admin.ReportImage(ctx, client.ReportImageRequest{Image: "registry.example/acme/pay:2.0", Digest: digest, Commit: sha,
				Message: "PAY-9 refunds", Issues: []string{"PAY-9"}}); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			day := now.Truncate(24 * time.Hour)
			app := func(health string) *runtimev1.Application {
				return &runtimev1.Application{Name: "pay", DestName: "prod", DestNamespace: "pay", Sync: "Synced", Health: health, Revision: sha,
					Annotations: map[string]string{"codefresh.io/product": "payments"}, ReconciledAt: now}
			}
			finished := day.Add(time.Hour)
			if finished.After(now) {
				finished = now.Add(-time.Minute)
			}
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{*app("Healthy")}, Events: []runtimev1.AppEvent{
				{Type: runtimev1.SyncFinished, App: "pay", At: finished, Sync: &runtimev1.SyncRecord{ID: 1, Revision: sha, Phase: "Succeeded", InitiatedBy: "automated",
					Commit: &runtimev1.Commit{SHA: sha, Time: finished.Add(-time.Hour)}, StartedAt: finished.Add(-time.Minute), FinishedAt: finished}},
				{Type: runtimev1.HealthChanged, App: "pay", At: finished.Add(10 * time.Second), Application: app("Degraded"), HealthFrom: "Healthy"},
				{Type: runtimev1.HealthChanged, App: "pay", At: finished.Add(40 * time.Second), Application: app("Healthy"), HealthFrom: "Degraded"},
				{Type: runtimev1.HelmReleaseChanged, At: now, HelmRelease: &runtimev1.HelmReleaseRecord{Cluster: "prod", Namespace: "cache", Name: "redis",
					Chart: "redis", ChartVersion: "18.1.0", AppVersion: "7.2.3", Status: "deployed", Revision: 2, Updated: now, Description: "Upgrade complete",
					History: []runtimev1.HelmRevision{{Revision: 2, Status: "deployed", Chart: "redis", ChartVersion: "18.1.0", AppVersion: "7.2.3", Updated: now},
						{Revision: 1, Status: "superseded", Chart: "redis", ChartVersion: "18.0.0", AppVersion: "7.2.0", Updated: now.Add(-time.Hour)}}}},
				{Type: runtimev1.WorkflowFinished, At: finished, Workflow: &runtimev1.WorkflowRecord{Namespace: "ci", Name: "release-1", UID: "uid-release-1",
					Phase: "Failed", StartedAt: finished.Add(-time.Minute), FinishedAt: finished, Trigger: runtimev1.WorkflowTriggerSubmit}},
			}})

			// The deployment and both transitions reach analytics asynchronously (the incident may be
			// seen open before its end arrives).
			q := client.DORAQuery{Runtime: "edge", Since: day.Add(-24 * time.Hour)}
			var rep client.DORAReport
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if rep, err = s.Admin.DORA(ctx, q); err != nil {
					t.Fatal(err)
				}
				if rep.Deployments == 1 && rep.Incidents == 1 && rep.OpenIncidents == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("dora: %+v", rep)
				}
			}
			last := rep.Series[len(rep.Series)-1]
			if last.Incidents != 1 || last.OpenIncidents != 0 || last.TimeToRestoreSeconds == nil || *last.TimeToRestoreSeconds != 30 || rep.Series[0].Incidents != 0 {
				t.Fatalf("series: %+v", rep.Series)
			}

			var g struct {
				Dora struct {
					Deployments int64
					Series      []client.DORABucket
				}
				Products         []client.Product
				HelmReleases     []client.HelmRelease
				HelmRelease      client.HelmRelease
				Images           struct{ Nodes []client.ReportedImage }
				WorkflowRunStats client.WorkflowRunStats
			}
			err = s.Admin.GraphQL(ctx, `query($since: String) {
				dora(filter: {runtime: "edge", since: $since}) { deployments series { start deployments successful failures leadTimeSeconds incidents openIncidents timeToRestoreSeconds } }
				products { name patterns defined applications createdAt }
				helmReleases(cluster: "prod") { id runtime runtimeId cluster namespace name chart chartVersion appVersion status revision updated description reportedAt }
				helmRelease(namespace: "cache", name: "redis") { id runtime runtimeId cluster namespace name chart chartVersion appVersion status revision updated description reportedAt
					history { revision status chart chartVersion appVersion updated description } }
				images(first: 10) { nodes { id registry repository digest tags buildId commit { sha branch repoUrl message author time } issues { key tracker kind title state url error } reportedBy createdAt updatedAt } }
				workflowRunStats(days: 7) { since days { date succeeded failed error } }
			}`, map[string]any{"since": q.Since.Format(time.RFC3339)}, &g)
			if err != nil {
				t.Fatal(err)
			}
			same := func(what string, gql, rest any) {
				t.Helper()
				a, _ := json.Marshal(gql)
				b, _ := json.Marshal(rest)
				if string(a) != string(b) {
					t.Errorf("%s:\nGraphQL %s\nREST    %s", what, a, b)
				}
			}
			same("dora series", g.Dora.Series, rep.Series)
			ps, err := s.Admin.ListProducts(ctx)
			if err != nil || len(ps.Items) != 1 || ps.Items[0].Name != "payments" {
				t.Fatalf("products: %+v, %v", ps, err)
			}
			same("products", g.Products, ps.Items)
			hs, err := s.Admin.ListHelmReleases(ctx, client.HelmReleaseFilter{Cluster: "prod"})
			if err != nil || len(hs.Items) != 1 {
				t.Fatalf("helm releases: %+v, %v", hs, err)
			}
			same("helm releases", g.HelmReleases, hs.Items)
			h, err := s.Admin.GetHelmRelease(ctx, "cache", "redis", client.HelmReleaseFilter{})
			if err != nil || len(h.History) != 2 {
				t.Fatalf("helm release: %+v, %v", h, err)
			}
			same("helm release", g.HelmRelease, h)
			ims, err := s.Admin.ListImages(ctx, client.ImageFilter{})
			if err != nil || len(ims.Items) != 1 || len(ims.Items[0].Issues) != 1 {
				t.Fatalf("images: %+v, %v", ims, err)
			}
			same("images", g.Images.Nodes, ims.Items)
			ws, err := s.Admin.WorkflowRunStats(ctx, 7)
			var failed int64
			for _, d := range ws.Days {
				if d.Date == finished.Format(time.DateOnly) {
					failed = d.Failed
				}
			}
			if err != nil || len(ws.Days) != 7 || failed != 1 {
				t.Fatalf("workflow run stats (the workflow failed on %s): %+v, %v", finished.Format(time.DateOnly), ws, err)
			}
			same("workflow run days", g.WorkflowRunStats.Days, ws.Days)
			if g.WorkflowRunStats.Since.IsZero() || !g.WorkflowRunStats.Since.Equal(ws.Since) {
				t.Errorf("workflow run stats since: GraphQL %s, REST %s", g.WorkflowRunStats.Since, ws.Since)
			}
			if !reflect.DeepEqual(g.Images.Nodes[0].Issues[0].Key, "PAY-9") {
				t.Errorf("image issues: %+v", g.Images.Nodes[0].Issues)
			}
		})
	}
}
