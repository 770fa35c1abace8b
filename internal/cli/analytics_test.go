package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// A runtime's syncs reach `freshet deployments list` and `freshet dora` through the server's
// event path, and `freshet admin analytics rebuild` derives the same records from the database.
func TestDeploymentsAndDORACommands(t *testing.T) {
	dataDir := t.TempDir()
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.DataDir = dataDir }})
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := s.Runtimes().Authenticate(ctx, reg.Token)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
	web := runtimev1.Application{Name: "web", Project: "shop", RepoURL: "https://git.example/acme/deploy.git", DestName: "prod",
		DestServer: "https://kubernetes.default.svc", DestNamespace: "shop", Sync: "Synced", Health: "Healthy"}
	sync := func(id int64, phase, by string, at time.Time) runtimev1.AppEvent {
		return runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: id, Revision: "abc", Phase: phase,
			InitiatedBy: by, StartedAt: at.Add(-time.Minute), FinishedAt: at, Commit: &runtimev1.Commit{SHA: "abc", Time: at.Add(-3 * time.Hour)}}}
	}
	// The last sync comes with the commits the runtime walked: two, the older 4 hours before.
	tip, older := strings.Repeat("d", 40), strings.Repeat("e", 40)
	ranged := func(ev runtimev1.AppEvent) runtimev1.AppEvent {
		at := ev.Sync.FinishedAt
		ev.Sync.Commits = &runtimev1.SyncCommits{Kind: runtimev1.CommitsRange, From: "abc", Commits: []runtimev1.Commit{
			{SHA: tip, Author: "Ann", Message: "PROJ-5 tune", Time: at.Add(-time.Hour)}, {SHA: older, Author: "Bo", Message: "prepare", Time: at.Add(-4 * time.Hour)}}}
		return ev
	}
	if _, err := s.Runtimes().Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web},
		Events: []runtimev1.AppEvent{sync(1, "Succeeded", "automated", t0), sync(2, "Failed", "user", t0.Add(time.Hour)),
			sync(3, "Succeeded", "automated", t0.Add(2*time.Hour)), ranged(sync(4, "Succeeded", "automated", t0.Add(3*time.Hour)))}}); err != nil {
		t.Fatal(err)
	}

	var ds []client.Deployment
	for deadline := time.Now().Add(20 * time.Second); len(ds) != 4; time.Sleep(20 * time.Millisecond) {
		code, out, errOut := runIn(t, s.URL, key.Token, "", "deployments", "list", "--app", "web", "-o", "json")
		if code != 0 {
			t.Fatalf("deployments list: %d %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployments: %s", out)
		}
	}
	if ds[0].SyncID != 4 || ds[0].Cluster != "prod" || ds[0].Trigger != "auto-sync" || ds[2].Result != "failed" || ds[2].Trigger != "manual" ||
		ds[0].LeadTimeSeconds == nil || *ds[0].LeadTimeSeconds != 4*3600 || ds[1].LeadTimeSeconds == nil || *ds[1].LeadTimeSeconds != 3*3600 {
		t.Errorf("deployments: %+v", ds)
	}
	// The JSON output has the commits with their sources and issue keys, and the range.
	if c := ds[0].Commits; len(c) != 2 || c[0].SHA != tip || c[0].Author != "Ann" || fmt.Sprint(c[0].Issues, c[0].Sources) != "[PROJ-5] [git]" ||
		c[1].SHA != older || ds[0].CommitRange == nil || ds[0].CommitRange.Kind != "range" || ds[0].CommitRange.From != "abc" || len(ds[1].Commits) != 0 {
		t.Errorf("deployment commits: %+v %+v", ds[0].Commits, ds[0].CommitRange)
	}

	code, out, errOut := runIn(t, s.URL, key.Token, "", "dora", "--app", "web", "--runtime", "edge", "--since", "30d", "-o", "json")
	if code != 0 {
		t.Fatalf("dora: %d %s", code, errOut)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"deploymentFrequency", "leadTimeForChanges", "changeFailureRate", "timeToRestore"} {
		var m struct {
			Value *float64
			Unit  string
			Band  string
		}
		if err := json.Unmarshal(raw[k], &m); err != nil || m.Value == nil || m.Unit == "" || m.Band == "" {
			t.Errorf("%s = %s: want value, unit and band", k, raw[k])
		}
	}
	var r client.DORAReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Deployments != 4 || r.FailedChanges != 1 || r.ChangeFailureRate.Value != 25 || r.LeadTimeForChanges.Value != 3*3600 ||
		r.LeadTimeForChanges.Band != "elite" || len(r.Series) != 31 {
		t.Errorf("dora: %s", out)
	}
	// The table names the metrics.
	if code, out, _ := runIn(t, s.URL, key.Token, "", "dora", "--bucket", "week"); code != 0 || !strings.Contains(out, "change failure rate") {
		t.Errorf("dora table: %d %s", code, out)
	}

	// Bad input names the flag or field.
	if code, _, errOut := runIn(t, s.URL, key.Token, "", "dora", "--since", "last week"); code != 2 || !strings.Contains(errOut, "--since") {
		t.Errorf("bad --since: %d %s", code, errOut)
	}
	if code, _, errOut := runIn(t, s.URL, key.Token, "", "dora", "--bucket", "year"); code == 0 || !strings.Contains(errOut, "year") || !strings.Contains(errOut, "month") {
		t.Errorf("bad --bucket: %d %s", code, errOut)
	}
	if code, _, errOut := runIn(t, s.URL, key.Token, "", "dora", "--failures", "sync-failed,flaky"); code == 0 || !strings.Contains(errOut, "flaky") {
		t.Errorf("bad --failures: %d %s", code, errOut)
	}

	// The rebuild derives the same records from the source tables, next to the running server.
	code, out, errOut = runIn(t, s.URL, key.Token, "", "admin", "analytics", "rebuild", "--reset", "--db", filepath.Join(dataDir, "freshet.db"))
	if code != 0 || !strings.Contains(out, "Rebuilt 4 deployment records of 1 accounts") {
		t.Fatalf("rebuild: %d %s %s", code, out, errOut)
	}
	code, out, _ = runIn(t, s.URL, key.Token, "", "deployments", "list", "-o", "json")
	var again []client.Deployment
	if err := json.Unmarshal([]byte(out), &again); code != 0 || err != nil || len(again) != 4 || again[0].ID != ds[0].ID || again[3].ID != ds[3].ID ||
		len(again[0].Commits) != 2 || again[0].LeadTimeSeconds == nil || *again[0].LeadTimeSeconds != 4*3600 {
		t.Errorf("after the rebuild: %d %v %s", code, err, out)
	}
}

// `freshet dora --product P` and `freshet deployments list --product P` read the product's
// applications as a whole: the median lead time is the product's, not an application's.
func TestDORAAndDeploymentsByProduct(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := s.Runtimes().Authenticate(ctx, reg.Token)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	app := func(name, product string) runtimev1.Application {
		return runtimev1.Application{Name: name, Project: "shop", DestName: "prod", DestNamespace: name, Sync: "Synced", Health: "Healthy",
			Annotations: map[string]string{"codefresh.io/product": product}}
	}
	var evs []runtimev1.AppEvent
	ids := map[string]int64{}
	sync := func(name string, at time.Time, lead time.Duration) {
		ids[name]++
		evs = append(evs, runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: name, Sync: &runtimev1.SyncRecord{ID: ids[name], Revision: "abc",
			Phase: "Succeeded", InitiatedBy: "automated", StartedAt: at.Add(-time.Minute), FinishedAt: at, Commit: &runtimev1.Commit{Time: at.Add(-lead)}}})
	}
	// shop: web 1, 2, 3 h (median 2 h), api 10, 11 h (lower median 10 h): 3 h as a whole.
	sync("web", t0, time.Hour)
	sync("web", t0.Add(time.Hour), 2*time.Hour)
	sync("web", t0.Add(2*time.Hour), 3*time.Hour)
	sync("api", t0.Add(3*time.Hour), 10*time.Hour)
	sync("api", t0.Add(4*time.Hour), 11*time.Hour)
	sync("search", t0.Add(5*time.Hour), 50*time.Hour)
	if _, err := s.Runtimes().Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true,
		Applications: []runtimev1.Application{app("web", "shop"), app("api", "shop"), app("search", "discovery")}, Events: evs}); err != nil {
		t.Fatal(err)
	}
	var ds []client.Deployment
	for deadline := time.Now().Add(20 * time.Second); len(ds) != 5; time.Sleep(20 * time.Millisecond) {
		code, out, errOut := runIn(t, s.URL, key.Token, "", "deployments", "list", "--product", "shop", "-o", "json")
		if code != 0 {
			t.Fatalf("deployments list: %d %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployments: %s", out)
		}
	}
	for _, d := range ds {
		if d.Application == "search" {
			t.Errorf("shop lists search: %+v", d)
		}
	}
	code, out, errOut := runIn(t, s.URL, key.Token, "", "dora", "--product", "shop", "--since", "30d", "-o", "json")
	if code != 0 {
		t.Fatalf("dora: %d %s", code, errOut)
	}
	var r client.DORAReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Deployments != 5 || r.LeadTimeForChanges.Value != 3*3600 {
		t.Errorf("dora of shop: %s", out)
	}
	if code, _, errOut := runIn(t, s.URL, key.Token, "", "dora", "--product", "nope"); code == 0 || !strings.Contains(errOut, "product") || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown product: %d %s", code, errOut)
	}
}
