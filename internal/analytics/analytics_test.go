package analytics_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// env is a control plane's event path on real parts: a database, an embedded JetStream, the
// runtime registry that turns reports into outbox events, both relays and the analytics
// consumers.
type env struct {
	db    *store.DB
	bus   *bus.Bus
	rts   *runtimes.Service
	svc   *analytics.Service
	admin rbac.Principal
	rt    runtimes.Runtime
}

func newEnv(t *testing.T, db *store.DB, handlers int) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := audit.NewLog(db, nil)
	id := identity.New(identity.Deps{Store: db, Audit: a})
	if _, err := id.Bootstrap(ctx, "acme", "admin@acme.test", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	login, err := id.Login(ctx, "admin@acme.test", "correct-horse-battery", "")
	if err != nil {
		t.Fatal(err)
	}
	outbox := events.NewOutboxRelay(db, b, nil)
	relay := events.NewRelay(db, b, nil)
	e := &env{db: db, bus: b, admin: login.Principal, svc: analytics.New(analytics.Deps{Store: db})}
	e.rts = runtimes.New(runtimes.Deps{Store: db, Audit: a, Keys: secrets.Generate(), OnEvents: outbox.Kick})
	if e.rt, _, err = e.rts.Register(ctx, e.admin, runtimes.RegisterInput{Name: "edge", AccessMode: "tunnel"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	run(outbox.Run)
	run(relay.Run)
	for range handlers {
		run(analytics.NewHandler(analytics.HandlerDeps{Store: db, Bus: b, Ledger: db.Ledger()}).Run)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		b.Close()
	})
	return e
}

func app(name, cluster, ns, health string) runtimev1.Application {
	return runtimev1.Application{Name: name, Project: "shop", RepoURL: "https://git.example/acme/deploy.git", Path: "apps/" + name,
		DestServer: "https://kubernetes.default.svc", DestName: cluster, DestNamespace: ns, Sync: "Synced", Health: health}
}

func (e *env) report(t *testing.T, evs ...runtimev1.AppEvent) {
	t.Helper()
	if _, err := e.rts.Report(context.Background(), e.rt, runtimev1.ReportRequest{Events: evs}); err != nil {
		t.Fatal(err)
	}
}

func synced(a string, id int64, phase, by, rev string, started, finished time.Time, commit *runtimev1.Commit) runtimev1.AppEvent {
	return runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: a, Sync: &runtimev1.SyncRecord{ID: id, Revision: rev, Phase: phase,
		InitiatedBy: by, User: "dev@acme.test", StartedAt: started, FinishedAt: finished, Commit: commit}}
}

func health(a runtimev1.Application, from, to string, at time.Time) runtimev1.AppEvent {
	a.Health = to
	a.ReconciledAt = at
	return runtimev1.AppEvent{Type: runtimev1.HealthChanged, App: a.Name, At: at, Application: &a, HealthFrom: from}
}

// waitFor polls the account's deployments until ok accepts them.
func (e *env) waitFor(t *testing.T, f analytics.Filter, ok func([]analytics.Deployment) bool) []analytics.Deployment {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds, err := e.svc.ListDeployments(context.Background(), e.admin, f, paging.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if ok(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployments never became what the test waits for: %+v", ds)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seedBuildImage records an image a build of sha pushed.
func seedBuildImage(t *testing.T, db *store.DB, accountID, sha string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	proj := store.Project{ID: store.NewID("prj"), AccountID: accountID, Name: "shop", CreatedAt: now}
	pl := store.Pipeline{ID: store.NewID("pip"), AccountID: accountID, ProjectID: proj.ID, Name: "web", Config: "{}", CreatedAt: now, UpdatedAt: now}
	b := store.Build{ID: store.NewID("bld"), AccountID: accountID, PipelineID: pl.ID, Status: "succeeded", TriggerType: "manual",
		Repo: "https://git.example/acme/web.git", Branch: "main", SHA: sha, Variables: "{}", Labels: "{}", CreatedAt: now}
	if err := db.CreateProject(ctx, proj); err != nil {
		t.Fatal(err)
	}
	if err := db.CreatePipeline(ctx, pl); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateBuild(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutBuildImage(ctx, store.BuildImage{ID: store.NewID(store.PrefixImage), AccountID: accountID, BuildID: b.ID, Step: "build",
		Registry: "registry.acme.test", Repository: "acme/web", Tags: []string{"v1"}, Digest: "sha256:" + fmt.Sprintf("%064d", 1),
		SHA: sha, Branch: "main", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

func TestSyncHistoryBecomesDeployments(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, 1)
		acc := e.admin.AccountID
		web := app("web", "prod", "shop", "Healthy")
		if _, err := e.rts.Report(context.Background(), e.rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web}}); err != nil {
			t.Fatal(err)
		}
		rev1 := "1111111111111111111111111111111111111111"
		seedBuildImage(t, db, acc, rev1)

		t0 := time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Second)
		e.report(t,
			synced("web", 1, "Succeeded", "automated", rev1, t0, t0.Add(30*time.Second), &runtimev1.Commit{SHA: rev1, Author: "Ann", Message: "SHOP-12 faster checkout", Time: t0.Add(-2 * time.Hour)}),
			health(web, "Healthy", "Degraded", t0.Add(10*time.Minute)),
			health(web, "Degraded", "Healthy", t0.Add(40*time.Minute)),
			synced("web", 2, "Failed", "user", "2222", t0.Add(time.Hour), t0.Add(time.Hour+time.Minute), nil),
			synced("web", 3, "Succeeded", "rollback", rev1, t0.Add(time.Hour+5*time.Minute), t0.Add(time.Hour+6*time.Minute), nil),
		)
		ds := e.waitFor(t, analytics.Filter{}, func(ds []analytics.Deployment) bool { return len(ds) == 3 })
		// Newest first.
		d3, d2, d1 := ds[0], ds[1], ds[2]
		if d1.SyncID != 1 || d2.SyncID != 2 || d3.SyncID != 3 {
			t.Fatalf("order: %d %d %d", d1.SyncID, d2.SyncID, d3.SyncID)
		}
		if d1.Application != "web" || d1.Runtime != "edge" || d1.Cluster != "prod" || d1.Namespace != "shop" || d1.Project != "shop" ||
			d1.Trigger != analytics.TriggerAutoSync || d1.Result != analytics.ResultSucceeded || d1.Duration != 30*time.Second ||
			d1.LeadTime != 2*time.Hour+30*time.Second || d1.Commit.Author != "Ann" || d1.Revision != rev1 {
			t.Errorf("deployment 1 = %+v", d1)
		}
		if len(d1.Images) != 1 || d1.Images[0].Repository != "acme/web" || d1.Images[0].Digest == "" || d1.Images[0].BuildID == "" {
			t.Errorf("deployment 1's images = %+v: want the image the build of its revision pushed", d1.Images)
		}
		if !d1.DegradedAt.Equal(t0.Add(10*time.Minute)) || !d1.RolledBackAt.IsZero() {
			t.Errorf("deployment 1: degraded at %v, rolled back at %v: want degraded 10m after, no rollback", d1.DegradedAt, d1.RolledBackAt)
		}
		if d2.Trigger != analytics.TriggerManual || d2.Result != analytics.ResultFailed || d2.LeadTime != -1 || d2.User != "dev@acme.test" {
			t.Errorf("deployment 2 = %+v", d2)
		}
		if !d2.RolledBackAt.Equal(d3.FinishedAt) || d3.Trigger != analytics.TriggerRollback {
			t.Errorf("deployment 2 rolled back at %v, deployment 3 (%s) finished %v", d2.RolledBackAt, d3.Trigger, d3.FinishedAt)
		}

		// The filter selects by application and time.
		if got := e.waitFor(t, analytics.Filter{App: "web", Since: t0.Add(30 * time.Minute)}, func(ds []analytics.Deployment) bool { return true }); len(got) != 2 {
			t.Errorf("since: %d deployments, want 2", len(got))
		}
		if got := e.waitFor(t, analytics.Filter{App: "api"}, func(ds []analytics.Deployment) bool { return true }); len(got) != 0 {
			t.Errorf("another app: %d deployments", len(got))
		}

		// Another account's principal sees none of them.
		other := rbac.Principal{AccountID: "acc_other", Role: rbac.Admin}
		if got, err := e.svc.ListDeployments(context.Background(), other, analytics.Filter{}, paging.Page{}); err != nil || len(got) != 0 {
			t.Errorf("another account: %d, %v", len(got), err)
		}
	})
}

func TestDuplicateAndOutOfOrderEventsCountOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, 1)
		ctx := context.Background()
		acc := e.admin.AccountID
		t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
		sf := func(id int64, finished time.Time) runtimes.SyncFinished {
			return runtimes.SyncFinished{AccountID: acc, RuntimeID: e.rt.ID, Runtime: "edge", Application: "api", SyncID: id, Revision: "abc",
				Phase: "Succeeded", InitiatedBy: "automated", StartedAt: finished.Add(-time.Minute), FinishedAt: finished}
		}
		pub := func(subject, key string, v any) {
			t.Helper()
			if err := bus.Publish(ctx, e.bus, subject, key, v); err != nil {
				t.Fatal(err)
			}
		}
		syncSubj := events.DomainSubject(acc, runtimes.EventDomain, runtimes.EventSyncFinished)
		healthSubj := events.DomainSubject(acc, runtimes.EventDomain, runtimes.EventHealthChanged)

		// The health transition arrives before the deployment it follows: it is placed by time.
		pub(healthSubj, "h1", runtimes.HealthChanged{AccountID: acc, RuntimeID: e.rt.ID, Runtime: "edge", Application: "api", From: "Healthy", To: "Degraded", At: t0.Add(5 * time.Minute)})
		pub(syncSubj, "s2", sf(2, t0.Add(time.Hour)))
		pub(syncSubj, "s1", sf(1, t0))
		// The same sync again under other keys (a publish retried after the duplicate window,
		// a second relay), and the same transition again.
		pub(syncSubj, "s1-again", sf(1, t0))
		pub(syncSubj, "s2-again", sf(2, t0.Add(time.Hour)))
		pub(healthSubj, "h1-again", runtimes.HealthChanged{AccountID: acc, RuntimeID: e.rt.ID, Runtime: "edge", Application: "api", From: "Healthy", To: "Degraded", At: t0.Add(5 * time.Minute)})
		// Events of an account that does not exist, of an account other than the subject's, and
		// a payload without identity are dropped.
		pub(events.DomainSubject("acc_gone", runtimes.EventDomain, runtimes.EventSyncFinished), "g1", runtimes.SyncFinished{AccountID: "acc_gone", RuntimeID: "rt", Application: "x", SyncID: 1, FinishedAt: t0})
		pub(syncSubj, "forged", runtimes.SyncFinished{AccountID: "acc_gone", RuntimeID: "rt", Application: "x", SyncID: 1, FinishedAt: t0})
		pub(syncSubj, "empty", map[string]string{"accountId": acc})
		// A deployment of an application deleted since is kept: the record outlives it.
		pub(syncSubj, "s-deleted", runtimes.SyncFinished{AccountID: acc, RuntimeID: e.rt.ID, Runtime: "edge", Application: "gone", SyncID: 7,
			Revision: "def", Phase: "Succeeded", InitiatedBy: "automated", StartedAt: t0, FinishedAt: t0.Add(2 * time.Hour)})
		// A marker last: once it is in, everything before it was handled.
		pub(syncSubj, "marker", runtimes.SyncFinished{AccountID: acc, RuntimeID: e.rt.ID, Runtime: "edge", Application: "marker", SyncID: 1,
			Phase: "Succeeded", StartedAt: t0, FinishedAt: t0.Add(150 * time.Minute)})

		ds := e.waitFor(t, analytics.Filter{}, func(ds []analytics.Deployment) bool { return len(ds) > 0 && ds[0].Application == "marker" })
		if len(ds) != 4 {
			t.Fatalf("%d deployments, want 4 (api 1 and 2, gone, marker): %+v", len(ds), ds)
		}
		api := e.waitFor(t, analytics.Filter{App: "api"}, func([]analytics.Deployment) bool { return true })
		if len(api) != 2 || api[1].SyncID != 1 || !api[1].DegradedAt.Equal(t0.Add(5*time.Minute)) || !api[0].DegradedAt.IsZero() {
			t.Fatalf("api deployments = %+v: want sync 1 degraded 5m after, sync 2 not", api)
		}
		r, err := e.svc.DORA(ctx, e.admin, analytics.Query{Filter: analytics.Filter{App: "api", Since: t0.Add(-time.Hour)}})
		if err != nil || r.Deployments != 2 || r.FailedChanges != 1 {
			t.Fatalf("DORA of api = %d deployments, %d failed, %v: want 2 and 1", r.Deployments, r.FailedChanges, err)
		}
	})
}

// Two handlers on one durable consumer, as two replicas run them, share the events: each is
// applied once.
func TestReplicasShareTheWork(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := db.CreateAccount(ctx, store.Account{ID: "acc_acme", Name: "acme", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var applied [2]atomic.Int64
		hctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range 2 {
			h := analytics.NewHandler(analytics.HandlerDeps{Store: db, Bus: b, Ledger: db.Ledger(), Applied: func(string) { applied[i].Add(1) }})
			wg.Add(1)
			go func() { defer wg.Done(); h.Run(hctx) }()
		}
		defer func() { cancel(); wg.Wait() }()
		const n = 60
		t0 := time.Now().Add(-time.Hour)
		for i := range n {
			ev := runtimes.SyncFinished{AccountID: "acc_acme", RuntimeID: "rt_1", Runtime: "edge", Application: fmt.Sprintf("app-%d", i%7),
				SyncID: int64(i), Phase: "Succeeded", InitiatedBy: "automated", StartedAt: t0, FinishedAt: t0.Add(time.Duration(i) * time.Second)}
			if err := bus.Publish(ctx, b, events.DomainSubject("acc_acme", "gitops", "sync-finished"), fmt.Sprint("k", i), ev); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for applied[0].Load()+applied[1].Load() < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // a duplicate delivery would show by now
		if got := applied[0].Load() + applied[1].Load(); got != n {
			t.Fatalf("applied %d times (%d + %d), want %d", got, applied[0].Load(), applied[1].Load(), n)
		}
		t.Logf("replica shares: %d and %d", applied[0].Load(), applied[1].Load())
		ds, err := db.ListDeployments(ctx, "acc_acme", store.DeploymentFilter{}, paging.Page{Limit: 1000})
		if err != nil || len(ds) != n {
			t.Fatalf("%d deployments, %v", len(ds), err)
		}
	})
}

// Rebuild derives from the source tables what the events gave.
func TestRebuildFromSourceTables(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, 1)
		ctx := context.Background()
		web := app("web", "prod", "shop", "Healthy")
		if _, err := e.rts.Report(ctx, e.rt, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web}}); err != nil {
			t.Fatal(err)
		}
		seedBuildImage(t, db, e.admin.AccountID, "aaaa")
		t0 := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Second)
		e.report(t,
			synced("web", 1, "Succeeded", "automated", "aaaa", t0, t0.Add(time.Minute), &runtimev1.Commit{SHA: "aaaa", Author: "Ann", Time: t0.Add(-time.Hour)}),
			health(web, "Healthy", "Degraded", t0.Add(20*time.Minute)),
			synced("web", 2, "Failed", "user", "bbbb", t0.Add(time.Hour), t0.Add(61*time.Minute), nil),
			synced("web", 3, "Succeeded", "rollback", "aaaa", t0.Add(62*time.Minute), t0.Add(63*time.Minute), nil),
		)
		want := e.waitFor(t, analytics.Filter{}, func(ds []analytics.Deployment) bool { return len(ds) == 3 && !ds[2].DegradedAt.IsZero() })
		res, err := analytics.Rebuild(ctx, db, analytics.RebuildOptions{Reset: true})
		if err != nil || res.Deployments != 3 || res.Accounts != 1 {
			t.Fatalf("Rebuild = %+v, %v", res, err)
		}
		got := e.waitFor(t, analytics.Filter{}, func([]analytics.Deployment) bool { return true })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("rebuilt:\n%+v\nfrom the events:\n%+v", got, want)
		}
		// Without --reset each record is replaced in place: the same records, none twice.
		if res, err := analytics.Rebuild(ctx, db, analytics.RebuildOptions{}); err != nil || res.Deployments != 3 {
			t.Fatalf("Rebuild without reset = %+v, %v", res, err)
		}
		if got := e.waitFor(t, analytics.Filter{}, func([]analytics.Deployment) bool { return true }); !reflect.DeepEqual(got, want) {
			t.Fatalf("rebuilt in place:\n%+v\nfrom the events:\n%+v", got, want)
		}
	})
}

func TestDORA(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.CreateAccount(ctx, store.Account{ID: "acc_acme", Name: "acme", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		day := func(d, h, m int) time.Time { return time.Date(2026, 3, d, h, m, 0, 0, time.UTC) }
		dep := func(app, cluster string, id int64, phase, by string, finished time.Time, lead time.Duration) runtimes.SyncFinished {
			ev := runtimes.SyncFinished{AccountID: "acc_acme", RuntimeID: "rt_1", Runtime: "edge", Application: app, DestName: cluster,
				SyncID: id, Revision: fmt.Sprint("rev", id), Phase: phase, InitiatedBy: by, StartedAt: finished.Add(-time.Minute), FinishedAt: finished}
			if lead > 0 {
				ev.Commit = &runtimev1.Commit{Time: finished.Add(-lead)}
			}
			return ev
		}
		hc := func(app, from, to string, at time.Time) runtimes.HealthChanged {
			return runtimes.HealthChanged{AccountID: "acc_acme", RuntimeID: "rt_1", Runtime: "edge", Application: app, From: from, To: to, At: at}
		}
		syncs := []runtimes.SyncFinished{
			dep("web", "prod", 1, "Succeeded", "automated", day(2, 10, 0), time.Hour),
			dep("web", "prod", 2, "Succeeded", "automated", day(3, 10, 0), 3*time.Hour),
			dep("web", "prod", 3, "Failed", "user", day(4, 10, 0), 0),
			dep("web", "prod", 4, "Succeeded", "automated", day(5, 10, 0), 5*time.Hour),
			dep("web", "prod", 5, "Succeeded", "automated", day(6, 10, 0), 2*time.Hour),
			dep("web", "prod", 6, "Succeeded", "rollback", day(6, 10, 20), 0),
			dep("api", "staging", 1, "Succeeded", "automated", day(10, 10, 0), 10*time.Hour),
			dep("api", "staging", 0, "Succeeded", "automated", time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC), time.Hour), // before the range
		}
		healths := []runtimes.HealthChanged{
			hc("web", "Healthy", "Degraded", day(5, 10, 30)),
			hc("web", "Degraded", "Progressing", day(5, 10, 40)),
			hc("web", "Progressing", "Degraded", day(5, 10, 45)),
			hc("web", "Degraded", "Healthy", day(5, 11, 0)),
			hc("api", "Healthy", "Degraded", day(20, 9, 0)),
			hc("api", "Degraded", "Healthy", day(20, 12, 0)),
			hc("api", "Healthy", "Degraded", day(25, 9, 0)), // still degraded
		}
		// Apply in reverse, health first: the result must not depend on the order.
		err := db.Tx(ctx, func(tx *store.Tx) error {
			for i := len(healths) - 1; i >= 0; i-- {
				if err := analytics.ApplyHealthChanged(ctx, tx, healths[i], analytics.DefaultFailureWindow); err != nil {
					return err
				}
			}
			for i := len(syncs) - 1; i >= 0; i-- {
				if err := analytics.ApplySyncFinished(ctx, tx, syncs[i], analytics.DefaultFailureWindow); err != nil {
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
		march := analytics.Filter{Since: day(1, 0, 0), Until: day(31, 0, 0)}

		r, err := svc.DORA(ctx, p, analytics.Query{Filter: march})
		if err != nil {
			t.Fatal(err)
		}
		// 7 deployments, 6 successful over 30 days; failed changes: the failed sync (3), the one
		// followed by Degraded (4), the one rolled back (5).
		if r.Deployments != 7 || r.Successful != 6 || r.FailedChanges != 3 {
			t.Fatalf("counts: %d deployments, %d successful, %d failed changes", r.Deployments, r.Successful, r.FailedChanges)
		}
		check := func(name string, m analytics.Metric, value float64, unit, band string) {
			t.Helper()
			if m.Value != value || m.Unit != unit || m.Band != band {
				t.Errorf("%s = %+v, want %v %s %s", name, m, value, unit, band)
			}
		}
		check("deployment frequency", r.DeploymentFrequency, 0.2, analytics.UnitPerDay, analytics.BandHigh)
		check("lead time", r.LeadTimeForChanges, 3*3600, analytics.UnitSeconds, analytics.BandElite) // median of 1, 2, 3, 5, 10 h
		check("change failure rate", r.ChangeFailureRate, 42.86, analytics.UnitPercent, analytics.BandLow)
		// Incidents: web 10:30 → 11:00 (one, though it went Degraded twice), api 3 h, api open.
		if r.Incidents != 3 || r.OpenIncidents != 1 {
			t.Errorf("incidents %d, open %d: want 3 and 1", r.Incidents, r.OpenIncidents)
		}
		check("time to restore", r.TimeToRestore, 1800, analytics.UnitSeconds, analytics.BandElite) // lower median of 30 m, 3 h
		if len(r.Series) != 30 || r.Series[1].Deployments != 1 || r.Series[5].Deployments != 2 || r.Series[5].Failures != 1 ||
			r.Series[3].Failures != 1 || r.Series[3].Successful != 0 || r.Series[1].LeadTime != time.Hour || r.Series[0].LeadTime != -1 {
			t.Errorf("day series: %+v", r.Series[:7])
		}
		// Incidents and time to restore per bucket, by when the incident started.
		if s := r.Series; s[4].Incidents != 1 || s[4].OpenIncidents != 0 || s[4].TimeToRestore != 30*time.Minute ||
			s[19].Incidents != 1 || s[19].TimeToRestore != 3*time.Hour || s[24].Incidents != 1 || s[24].OpenIncidents != 1 ||
			s[24].TimeToRestore != -1 || s[0].Incidents != 0 || s[0].TimeToRestore != -1 {
			t.Errorf("incident series: day 5 %+v, day 20 %+v, day 25 %+v, day 1 %+v", s[4], s[19], s[24], s[0])
		}
		if r, err := svc.DORA(ctx, p, analytics.Query{Filter: march, Bucket: "month"}); err != nil || len(r.Series) != 1 ||
			r.Series[0].Incidents != 3 || r.Series[0].OpenIncidents != 1 || r.Series[0].TimeToRestore != 30*time.Minute {
			t.Errorf("month series: %+v, %v", r.Series, err)
		}

		// Per application, per cluster, per runtime.
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{App: "web", Since: march.Since, Until: march.Until}})
		if r.Deployments != 6 || r.LeadTimeForChanges.Value != 2*3600 || r.Incidents != 1 {
			t.Errorf("web: %d deployments, lead %v, %d incidents", r.Deployments, r.LeadTimeForChanges.Value, r.Incidents)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Cluster: "staging", Since: march.Since, Until: march.Until}})
		if r.Deployments != 1 || r.ChangeFailureRate.Value != 0 || r.ChangeFailureRate.Band != analytics.BandElite {
			t.Errorf("staging: %d deployments, failure rate %+v", r.Deployments, r.ChangeFailureRate)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Runtime: "edge", Since: march.Since, Until: march.Until}})
		if r.Deployments != 7 {
			t.Errorf("runtime edge: %d deployments", r.Deployments)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Runtime: "rt_1", Since: march.Since, Until: march.Until}})
		if r.Deployments != 7 || r.LeadTimeForChanges.Value != 3*3600 {
			t.Errorf("runtime rt_1: %d deployments, lead %v", r.Deployments, r.LeadTimeForChanges.Value)
		}
		// Ranges that do not start or end at midnight: whole days from the day statistics, the
		// ends from the deployments.
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Since: day(2, 9, 0), Until: day(10, 12, 0)}})
		if r.Deployments != 7 || r.FailedChanges != 3 || r.LeadTimeForChanges.Value != 3*3600 {
			t.Errorf("2 March 09:00 to 10 March 12:00: %d deployments, %d failed, lead %v", r.Deployments, r.FailedChanges, r.LeadTimeForChanges.Value)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Since: day(2, 11, 0), Until: day(10, 9, 0)}})
		if r.Deployments != 5 || r.FailedChanges != 3 || r.LeadTimeForChanges.Value != 3*3600 { // leads 2, 3, 5 h
			t.Errorf("2 March 11:00 to 10 March 09:00: %d deployments, %d failed, lead %v", r.Deployments, r.FailedChanges, r.LeadTimeForChanges.Value)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Since: day(6, 10, 10), Until: day(6, 10, 30)}})
		if r.Deployments != 1 || r.Series[0].Deployments != 1 {
			t.Errorf("within one day: %+v", r)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Runtime: "other", Since: march.Since, Until: march.Until}})
		if r.Deployments != 0 || r.LeadTimeForChanges.Band != analytics.BandNone || r.DeploymentFrequency.Band != analytics.BandLow {
			t.Errorf("another runtime: %+v", r)
		}

		// The failure definition is the caller's.
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: march, Failures: []string{analytics.FailureSyncFailed}})
		check("change failure rate, failed syncs only", r.ChangeFailureRate, 14.29, analytics.UnitPercent, analytics.BandMedium)
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: march, Failures: []string{analytics.FailureRollback, analytics.FailureDegraded}})
		if r.FailedChanges != 2 {
			t.Errorf("rollbacks and degraded: %d failed changes, want 2", r.FailedChanges)
		}

		// Weeks start on Monday: 1 March 2026 is a Sunday.
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: march, Bucket: analytics.BucketWeek})
		if len(r.Series) != 6 || !r.Series[0].Start.Equal(time.Date(2026, 2, 23, 0, 0, 0, 0, time.UTC)) || r.Series[1].Deployments != 6 || r.Series[2].Deployments != 1 {
			t.Errorf("week series: %+v", r.Series)
		}
		r, _ = svc.DORA(ctx, p, analytics.Query{Filter: analytics.Filter{Since: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Until: march.Until}, Bucket: analytics.BucketMonth})
		if len(r.Series) != 2 || r.Series[0].Deployments != 1 || r.Series[1].Deployments != 7 {
			t.Errorf("month series: %+v", r.Series)
		}

		// Bad input names the field; no role, no report.
		for _, c := range []struct {
			q     analytics.Query
			field string
		}{
			{analytics.Query{Filter: march, Bucket: "year"}, "bucket"},
			{analytics.Query{Filter: march, Failures: []string{"flaky"}}, "failures"},
			{analytics.Query{Filter: analytics.Filter{Since: march.Until, Until: march.Since}}, "since"},
			{analytics.Query{Filter: analytics.Filter{Since: march.Until.AddDate(-2, 0, 0), Until: march.Until}}, "since"},
		} {
			if _, err := svc.DORA(ctx, p, c.q); !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field {
				t.Errorf("%+v: %v, want invalid %s", c.q, err, c.field)
			}
		}
		if _, err := svc.DORA(ctx, rbac.Principal{AccountID: "acc_acme"}, analytics.Query{}); err == nil {
			t.Error("a principal without a role read the report")
		}
	})
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"30d":                  now.AddDate(0, 0, -30),
		"2w":                   now.AddDate(0, 0, -14),
		"36h":                  now.Add(-36 * time.Hour),
		"2026-01-02T15:04:05Z": time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
	} {
		if got, err := analytics.ParseTime("since", in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-3d", "yesterday", "1.5d", "99999d"} {
		if _, err := analytics.ParseTime("since", in, now); errdefs.Field(err) != "since" {
			t.Errorf("%q: %v, want an error naming since", in, err)
		}
	}
}
