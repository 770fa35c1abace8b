package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

var discard = slog.New(slog.DiscardHandler)

func newTestService(db *store.DB) *Service {
	return New(Deps{Store: db, Audit: audit.NewLog(db, discard), Keys: secrets.Generate(), Log: discard})
}

// seedRuntime creates a tunnel runtime in account (created on first use), and returns the
// runtime and its token.
func seedRuntime(t *testing.T, s *Service, account, name string) (Runtime, string) {
	t.Helper()
	ctx := context.Background()
	id := "acc_" + account
	db := s.db.(*store.DB)
	if _, err := db.GetAccount(ctx, id); err != nil {
		if err := db.CreateAccount(ctx, store.Account{ID: id, Name: account, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	rt, tok, err := s.create(ctx, id, TypeHybrid, RegisterInput{Name: name, AccessMode: AccessTunnel}, s.expiry(TypeHybrid), audit.System(ctx, id, "runtime.register", "runtime", ""))
	if err != nil {
		t.Fatal(err)
	}
	return rt, tok
}

func app(name, health string) runtimev1.Application {
	return runtimev1.Application{Name: name, Project: "default", RepoURL: "https://git.example/acme/deploy.git", Path: "apps/" + name,
		DestServer: "https://kubernetes.default.svc", DestNamespace: name, Sync: "Synced", Health: health,
		Labels: map[string]string{"team": "shop"}, ReconciledAt: time.Unix(1700000000, 0).UTC()}
}

func changed(a runtimev1.Application) runtimev1.AppEvent {
	return runtimev1.AppEvent{Type: runtimev1.AppChanged, App: a.Name, Application: &a}
}

func names(apps []store.Application) string {
	var out []string
	for _, a := range apps {
		out = append(out, a.Name+":"+a.Health)
	}
	return strings.Join(out, " ")
}

func appNames(apps []Application) string {
	var out []string
	for _, a := range apps {
		out = append(out, a.Name+":"+a.Health)
	}
	return strings.Join(out, " ")
}

// deployment returns the sync a record holds, failing t when it does not decode.
func deployment(t *testing.T, r store.ApplicationSync) Deployment {
	t.Helper()
	d, err := deploymentFromRow(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReportAppliesSnapshotAndEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		kicks := 0
		s.onEvents = func() { kicks++ }
		rt, _ := seedRuntime(t, s, "acme", "edge")
		list := func() []store.Application {
			t.Helper()
			apps, err := db.ListApplications(ctx, rt.AccountID, store.AppFilter{}, paging.Page{})
			if err != nil {
				t.Fatal(err)
			}
			return apps
		}

		if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{app("web", "Healthy"), app("api", "Healthy")}}); err != nil {
			t.Fatal(err)
		}
		if got := names(list()); got != "web:Healthy api:Healthy" {
			t.Fatalf("after the snapshot: %s", got)
		}

		start := time.Unix(1700000100, 0).UTC()
		running := &runtimev1.SyncRecord{Revision: "abc", Phase: "Running", InitiatedBy: "automated", StartedAt: start}
		finished := &runtimev1.SyncRecord{ID: 1, Revision: "abc", Phase: "Succeeded", InitiatedBy: "automated", StartedAt: start,
			FinishedAt: start.Add(5 * time.Second), Commit: &runtimev1.Commit{SHA: "abc", Author: "Ann", Message: "bump", Time: start.Add(-time.Hour)},
			Changed: []runtimev1.ResourceChange{{Kind: "Deployment", Namespace: "jobs", Name: "jobs", Result: "configured"}}}
		dry := &runtimev1.SyncRecord{Revision: "abc", Phase: "Succeeded", DryRun: true, StartedAt: start.Add(time.Minute)}
		degraded := app("web", "Degraded")
		report := runtimev1.ReportRequest{Events: []runtimev1.AppEvent{
			changed(app("jobs", "Progressing")),
			{Type: runtimev1.HealthChanged, App: "web", Application: &degraded, HealthFrom: "Healthy"},
			{Type: runtimev1.AppDeleted, App: "api"},
			{Type: runtimev1.SyncStarted, App: "jobs", Sync: running},
			{Type: runtimev1.SyncFinished, App: "jobs", Sync: finished},
			{Type: runtimev1.SyncFinished, App: "jobs", Sync: dry},
		}}
		n, err := s.Report(ctx, rt, report)
		if err != nil || n != 6 {
			t.Fatalf("Report = %d, %v", n, err)
		}
		if got := names(list()); got != "web:Degraded jobs:Progressing" {
			t.Fatalf("after the events: %s", got)
		}
		syncs, _ := db.ListSyncs(ctx, rt.AccountID, rt.ID, "jobs", paging.Page{})
		if len(syncs) != 1 || syncs[0].SyncID != 1 || syncs[0].CommitAuthor != "Ann" || deployment(t, syncs[0]).Changed[0].Name != "jobs" {
			t.Fatalf("syncs = %+v (the dry run is no deployment)", syncs)
		}
		// The dry run started last, so it is the operation shown.
		jobs, _ := db.GetApplication(ctx, rt.AccountID, "edge", "jobs")
		if a, err := applicationFromRow(jobs); err != nil || a.Operation == nil || !a.Operation.DryRun {
			t.Fatalf("operation = %+v, %v", a.Operation, err)
		}
		out, _ := db.OutboxBatch(ctx, 10)
		if len(out) != 2 || kicks != 1 {
			t.Fatalf("outbox = %+v, kicks %d: want a health-changed and a sync-finished event", out, kicks)
		}
		var hc HealthChanged
		if err := json.Unmarshal([]byte(out[0].Payload), &hc); err != nil {
			t.Fatal(err)
		}
		if out[0].Subject != "freshet."+rt.AccountID+".gitops.health-changed" || hc.Application != "web" || hc.From != "Healthy" || hc.To != "Degraded" || hc.Runtime != "edge" {
			t.Fatalf("event %s = %+v", out[0].Subject, hc)
		}
		out = out[1:]
		var ev SyncFinished
		if err := json.Unmarshal([]byte(out[0].Payload), &ev); err != nil {
			t.Fatal(err)
		}
		if out[0].Subject != "freshet."+rt.AccountID+".gitops.sync-finished" || ev.Application != "jobs" || ev.Runtime != "edge" ||
			ev.SyncID != 1 || ev.Phase != "Succeeded" || ev.Commit.Author != "Ann" || ev.RepoURL == "" || ev.DestNamespace != "jobs" {
			t.Fatalf("event %s = %+v", out[0].Subject, ev)
		}

		// The same report again changes nothing and publishes nothing.
		before := list()
		if _, err := s.Report(ctx, rt, report); err != nil {
			t.Fatal(err)
		}
		after := list()
		for i := range after {
			if !after[i].UpdatedAt.Equal(before[i].UpdatedAt) || after[i].Data != before[i].Data {
				t.Errorf("%s changed on a resend", after[i].Name)
			}
		}
		if out, _ := db.OutboxBatch(ctx, 10); len(out) != 2 || kicks != 1 {
			t.Fatalf("a resend published again: %d events, %d kicks", len(out), kicks)
		}

		// Invalid input anywhere changes nothing.
		bad := runtimev1.ReportRequest{Events: []runtimev1.AppEvent{changed(app("new", "Healthy")), {Type: "AppRenamed", App: "web"}}}
		_, err = s.Report(ctx, rt, bad)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "events[1].type" || !strings.Contains(err.Error(), "AppRenamed") || !strings.Contains(err.Error(), "SyncFinished") {
			t.Fatalf("bad event type: %v", err)
		}
		if got := names(list()); got != "web:Degraded jobs:Progressing" {
			t.Fatalf("half a bad report was applied: %s", got)
		}

		// A later snapshot without jobs forgets it and its deployments.
		if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{degraded}}); err != nil {
			t.Fatal(err)
		}
		if got := names(list()); got != "web:Degraded" {
			t.Fatalf("after the second snapshot: %s", got)
		}
		if syncs, _ := db.ListSyncs(ctx, rt.AccountID, rt.ID, "jobs", paging.Page{}); len(syncs) != 0 {
			t.Fatalf("syncs of a forgotten app: %+v", syncs)
		}
	})
}

// A runtime's report changes its own runtime's applications only, whatever it names.
func TestReportStaysInTheRuntime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		a, _ := seedRuntime(t, s, "acme", "edge")
		a2, _ := seedRuntime(t, s, "acme", "hub")
		b, _ := seedRuntime(t, s, "globex", "edge")
		if _, err := s.Report(ctx, a, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{app("web", "Healthy")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Report(ctx, a2, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{app("other", "Healthy")}}); err != nil {
			t.Fatal(err)
		}
		// B's runtime reports an application of the same name, deletes it, snapshots nothing.
		for _, req := range []runtimev1.ReportRequest{
			{Events: []runtimev1.AppEvent{changed(app("web", "Missing"))}},
			{Events: []runtimev1.AppEvent{{Type: runtimev1.AppDeleted, App: "web"}, {Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: 1, Phase: "Failed"}}}},
			{Snapshot: true},
		} {
			if _, err := s.Report(ctx, b, req); err != nil {
				t.Fatal(err)
			}
		}
		// And A's other runtime snapshots nothing: only its own set is emptied.
		if _, err := s.Report(ctx, a2, runtimev1.ReportRequest{Snapshot: true}); err != nil {
			t.Fatal(err)
		}
		apps, _ := db.ListApplications(ctx, a.AccountID, store.AppFilter{}, paging.Page{})
		if names(apps) != "web:Healthy" || apps[0].RuntimeID != a.ID {
			t.Fatalf("A's applications: %s", names(apps))
		}
		if ss, _ := db.ListSyncs(ctx, a.AccountID, a.ID, "web", paging.Page{}); len(ss) != 0 {
			t.Fatalf("B's sync landed in A: %+v", ss)
		}
		if bs, _ := db.ListApplications(ctx, b.AccountID, store.AppFilter{}, paging.Page{}); len(bs) != 0 {
			t.Fatalf("B's applications: %s", names(bs))
		}
	})
}

func TestPrepareReportNamesTheField(t *testing.T) {
	long := strings.Repeat("a", 254)
	for _, c := range []struct {
		name  string
		req   runtimev1.ReportRequest
		field string
		says  string
	}{
		{"app name", runtimev1.ReportRequest{Applications: []runtimev1.Application{{Name: "Web_1"}}}, "applications[0].name", "Web_1"},
		{"long name", runtimev1.ReportRequest{Applications: []runtimev1.Application{{Name: long}}}, "applications[0].name", "253"},
		{"empty name", runtimev1.ReportRequest{Applications: []runtimev1.Application{{}}}, "applications[0].name", "required"},
		{"twice", runtimev1.ReportRequest{Applications: []runtimev1.Application{{Name: "a"}, {Name: "a"}}}, "applications[1].name", "applications[0]"},
		{"label key", runtimev1.ReportRequest{Applications: []runtimev1.Application{{Name: "a", Labels: map[string]string{"a=b": "c"}}}}, "applications[0].labels[a=b]", "label key"},
		{"label value", runtimev1.ReportRequest{Applications: []runtimev1.Application{{Name: "a", Labels: map[string]string{"k": "x\ny"}}}}, "applications[0].labels[k]", "control"},
		{"too large", runtimev1.ReportRequest{Applications: []runtimev1.Application{{Name: "a", HealthMessage: strings.Repeat("x", MaxApplicationBytes)}}}, "applications[0]", "too large"},
		{"event type", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: "appchanged", App: "a"}}}, "events[0].type", "AppChanged, AppDeleted, SyncStarted, SyncFinished, HealthChanged, RolloutChanged"},
		{"event app", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.AppDeleted, App: "-a"}}}, "events[0].app", "-a"},
		{"no application", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.AppChanged, App: "a"}}}, "events[0].application", "required"},
		{"other application", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.HealthChanged, App: "a", Application: &runtimev1.Application{Name: "b"}}}}, "events[0].application.name", "differs"},
		{"no sync", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "a"}}}, "events[0].sync", "required"},
		{"sync id", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "a", Sync: &runtimev1.SyncRecord{ID: -1}}}}, "events[0].sync.id", "-1"},
		{"too many events", runtimev1.ReportRequest{Events: make([]runtimev1.AppEvent, MaxReportEvents+1)}, "events", "at most 1000"},
		{"no rollout", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.RolloutChanged, App: "a", At: time.Now()}}}, "events[0].rollout", "required"},
		{"rollout kind", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.RolloutChanged, App: "a", At: time.Now(),
			Rollout: &runtimev1.RolloutRecord{Namespace: "prod", Name: "web", Kind: "Exploded"}}}}, "events[0].rollout.kind", "UpdateStarted, StepChanged, PhaseChanged, Completed, Aborted"},
		{"rollout namespace", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.RolloutChanged, App: "a", At: time.Now(),
			Rollout: &runtimev1.RolloutRecord{Namespace: "Prod", Name: "web", Kind: runtimev1.RolloutAborted}}}}, "events[0].rollout.namespace", "Prod"},
		{"rollout step", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.RolloutChanged, App: "a", At: time.Now(),
			Rollout: &runtimev1.RolloutRecord{Namespace: "prod", Name: "web", Kind: runtimev1.RolloutStepChanged, Step: new(int32(5)), Steps: 4}}}}, "events[0].rollout.step", "0 to the number of steps"},
		{"rollout time", runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.RolloutChanged, App: "a",
			Rollout: &runtimev1.RolloutRecord{Namespace: "prod", Name: "web", Kind: runtimev1.RolloutAborted}}}}, "events[0].at", "required"},
	} {
		_, err := prepareReport(&c.req)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want field %s saying %q", c.name, err, c.field, c.says)
		}
	}
	// An application without a name in its event takes the event's.
	req := runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.AppChanged, App: "a.b-c", Application: &runtimev1.Application{}}}}
	if rep, err := prepareReport(&req); err != nil || rep.events[0].row.Name != "a.b-c" {
		t.Fatalf("unnamed application: %+v, %v", rep, err)
	}
}

// The protocol handler: the token decides the runtime, bad input is InvalidArgument naming
// the field, oversize bodies are refused before they are decoded.
func TestReportRPC(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	s := newTestService(db)
	rt, token := seedRuntime(t, s, "acme", "edge")
	mux := http.NewServeMux()
	s.RegisterProtocol(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cl := connect.NewClient[runtimev1.ReportRequest, runtimev1.ReportResponse](srv.Client(), srv.URL+runtimev1.ProcedureReport, connect.WithCodec(runnerv1.Codec{}))
	call := func(tok string, msg *runtimev1.ReportRequest) (*connect.Response[runtimev1.ReportResponse], error) {
		req := connect.NewRequest(msg)
		if tok != "" {
			req.Header().Set("Authorization", "Bearer "+tok)
		}
		return cl.CallUnary(context.Background(), req)
	}
	ok := &runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{app("web", "Healthy")}}
	for _, tok := range []string{"", "frt_nope_nope", token + "x"} {
		if _, err := call(tok, ok); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("token %q: %v, want unauthenticated", tok, err)
		}
	}
	resp, err := call(token, ok)
	if err != nil || resp.Msg.Accepted != 1 {
		t.Fatalf("report: %+v, %v", resp, err)
	}
	if a, err := db.GetApplication(context.Background(), rt.AccountID, rt.ID, "web"); err != nil || a.Labels["team"] != "shop" {
		t.Fatalf("stored: %+v, %v", a, err)
	}
	_, err = call(token, &runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: "Exploded", App: "web"}}})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `events[0].type: "Exploded" is not an event type`) {
		t.Fatalf("bad type: %v", err)
	}
	huge := app("web", "Healthy")
	huge.HealthMessage = strings.Repeat("x", MaxReportBytes)
	if _, err := call(token, &runtimev1.ReportRequest{Applications: []runtimev1.Application{huge}}); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("oversize report: %v", err)
	}
	// The account's other runtime is told apart by its own token.
	_, token2 := seedRuntime(t, s, "acme", "hub")
	if _, err := call(token2, &runtimev1.ReportRequest{Snapshot: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetApplication(context.Background(), rt.AccountID, rt.ID, "web"); err != nil {
		t.Fatalf("hub's empty snapshot removed edge's application: %v", err)
	}
}

// Reports that arrive again out of order do not take an operation back, and odd characters
// (PostgreSQL stores no NUL in text) are stored.
func TestReportOperationAndOddValues(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		rt, _ := seedRuntime(t, s, "acme", "edge")
		odd := app("web", "Degraded")
		odd.HealthMessage, odd.Project = "back-off\x00 restarting\nfailed container", "p\x00"
		start := time.Unix(1700000100, 0).UTC()
		started := runtimev1.ReportRequest{Events: []runtimev1.AppEvent{changed(odd), {Type: runtimev1.SyncStarted, App: "web", Sync: &runtimev1.SyncRecord{Phase: "Running", StartedAt: start}}}}
		finished := runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.SyncFinished, App: "web",
			Sync: &runtimev1.SyncRecord{ID: 7, Phase: "Failed", Message: "hook\x00 failed", StartedAt: start, FinishedAt: start.Add(time.Second)}}}}
		for _, req := range []runtimev1.ReportRequest{started, finished} {
			if _, err := s.Report(ctx, rt, req); err != nil {
				t.Fatal(err)
			}
		}
		// The first report again (a retry that arrives late): the finished sync stays.
		again := runtimev1.ReportRequest{Events: started.Events[1:]}
		if _, err := s.Report(ctx, rt, again); err != nil {
			t.Fatal(err)
		}
		row, err := db.GetApplication(ctx, rt.AccountID, "edge", "web")
		if err != nil {
			t.Fatal(err)
		}
		a, _ := applicationFromRow(row)
		if a.Operation == nil || a.Operation.Phase != "Failed" || a.HealthMessage != odd.HealthMessage || row.HealthMessage != "back-off restarting\nfailed container" {
			t.Fatalf("stored %+v, operation %+v", row, a.Operation)
		}
		if ss, _ := db.ListSyncs(ctx, rt.AccountID, rt.ID, "web", paging.Page{}); len(ss) != 1 || deployment(t, ss[0]).Message != "hook\x00 failed" {
			t.Fatalf("syncs = %+v", ss)
		}
	})
}
