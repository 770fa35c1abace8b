package runtimes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// The registry decodes what the store keeps as JSON (a runtime's report, an application's
// state, a sync's detail) and hands out the decoded values. A stored value that does not
// decode is an error naming what it belongs to, not an empty value; a runtime whose report
// does not decode can still authenticate, heartbeat (which mends the report) and be deleted.
func TestStoredEncodings(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	ctx := context.Background()
	rt, tok := seedRuntime(t, s, "acme", "edge")
	admin := rbac.Principal{AccountID: rt.AccountID, UserID: "usr_a", Email: "a@acme.test", Role: rbac.Admin}

	hb := runtimev1.HeartbeatRequest{Protocol: runtimev1.ProtocolVersion, Version: "1.2.3", Capabilities: []string{"cd"},
		Components: []runtimev1.Component{{Name: "app-proxy", Health: runtimev1.ComponentHealthy}},
		Clusters:   []runtimev1.Cluster{{Name: "in-cluster", Server: "https://kubernetes.default.svc"}}}
	if _, err := s.Heartbeat(ctx, rt, hb); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, admin, "edge")
	if err != nil || got.Version != "1.2.3" || got.Status != StatusHealthy || len(got.Capabilities) != 1 || got.Components[0].Name != "app-proxy" ||
		got.Clusters[0].Server != "https://kubernetes.default.svc" || got.LastHeartbeat.IsZero() {
		t.Fatalf("Get = %+v, %v", got, err)
	}

	if err := db.RuntimeHeartbeat(ctx, rt.ID, "1.2.3", StatusHealthy, "{not json", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, admin, "edge"); err == nil || !strings.Contains(err.Error(), "runtime edge: stored report") {
		t.Fatalf("Get of a runtime whose report does not decode: %v", err)
	}
	if _, err := s.List(ctx, admin); err == nil || !strings.Contains(err.Error(), "runtime edge: stored report") {
		t.Fatalf("List with a runtime whose report does not decode: %v", err)
	}
	authed, err := s.Authenticate(ctx, tok)
	if err != nil || authed.ID != rt.ID || authed.Name != "edge" {
		t.Fatalf("Authenticate = %+v, %v", authed, err)
	}
	if _, err := s.Heartbeat(ctx, authed, hb); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, admin, "edge"); err != nil || got.Clusters[0].Name != "in-cluster" {
		t.Fatalf("after a heartbeat: %+v, %v", got, err)
	}

	// Applications and their deployments.
	start := time.Unix(1700000100, 0).UTC()
	finished := &runtimev1.SyncRecord{ID: 1, Revision: "abc", Phase: "Succeeded", InitiatedBy: "automated", StartedAt: start,
		FinishedAt: start.Add(time.Second), Changed: []runtimev1.ResourceChange{{Kind: "Deployment", Name: "web", Result: "configured"}}}
	web := app("web", "Healthy")
	if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web},
		Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "web", Sync: finished}}}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetApplication(ctx, admin, "edge", "web")
	if err != nil || a.Runtime != "edge" || a.RuntimeID != rt.ID || a.ID == "" || a.RepoURL != web.RepoURL || a.Labels["team"] != "shop" ||
		a.Operation == nil || a.Operation.ID != 1 || a.UpdatedAt.IsZero() {
		t.Fatalf("GetApplication = %+v, %v", a, err)
	}
	deps, err := s.ListSyncs(ctx, admin, a, paging.Page{})
	if err != nil || len(deps) != 1 || deps[0].ID != 1 || deps[0].App != "web" || deps[0].Changed[0].Name != "web" {
		t.Fatalf("ListSyncs = %+v, %v", deps, err)
	}
	counts, err := s.CountApplications(ctx, admin, AppFilter{})
	if err != nil || counts.Total != 1 || counts.Health["Healthy"] != 1 || counts.Sync["Synced"] != 1 {
		t.Fatalf("CountApplications = %+v, %v", counts, err)
	}

	err = db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.RecordSync(ctx, store.ApplicationSync{AccountID: rt.AccountID, RuntimeID: rt.ID, App: "web", SyncID: 2, Phase: "Failed",
			StartedAt: start.Add(time.Minute), FinishedAt: start.Add(2 * time.Minute), Detail: "{not json"}); err != nil {
			return err
		}
		_, err := tx.UpsertApplication(ctx, store.Application{AccountID: rt.AccountID, RuntimeID: rt.ID, Name: "web", Health: "Healthy",
			Sync: "Synced", Data: "{not json", UpdatedAt: time.Now()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListSyncs(ctx, admin, a, paging.Page{}); err == nil || !strings.Contains(err.Error(), "sync 2 of application web: stored detail") {
		t.Fatalf("ListSyncs with a detail that does not decode: %v", err)
	}
	if _, err := s.GetApplication(ctx, admin, "edge", "web"); err == nil || !strings.Contains(err.Error(), "application web: stored state") {
		t.Fatalf("GetApplication of a state that does not decode: %v", err)
	}
	if _, err := s.ListApplications(ctx, admin, AppFilter{}, paging.Page{}); err == nil || !strings.Contains(err.Error(), "application web: stored state") {
		t.Fatalf("ListApplications with a state that does not decode: %v", err)
	}

	// Deleting needs no report.
	if err := db.RuntimeHeartbeat(ctx, rt.ID, "1.2.3", StatusHealthy, "[]", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, admin, "edge"); err != nil {
		t.Fatalf("Delete of a runtime whose report does not decode: %v", err)
	}
	if _, err := db.GetRuntime(ctx, rt.AccountID, rt.ID); err == nil {
		t.Fatal("the runtime is still there")
	}
}
