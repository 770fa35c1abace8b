package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// analyticsOptions size the analytics bench.
type analyticsOptions struct {
	deployments, apps, queries, events int
	// productApps is the size of the product (a random set of applications) timed.
	productApps int
	backends    string
	// reusePostgres (a schema) and reuseSQLite (a file) are databases an earlier run kept
	// (FRESHET_BENCH_KEEP=1), loaded already: opened (migrated to this checkout) and timed
	// without loading again.
	reusePostgres, reuseSQLite string
}

// analyticsBench loads deployments records of apps applications over the last 365 days (and
// incidents) into a fresh database per backend, then times DORA reports over 90 days through
// the analytics service, and the event path: a runtime's report of a finished sync → outbox →
// relay → JetStream → consumer → the deployment readable.
func analyticsBench(pgBase string, o analyticsOptions) error {
	backends := availableBackends(pgBase, o.backends)
	fmt.Printf("## Analytics: DORA over %d deployment records of %d applications (%d queries per row)\n\n", o.deployments, o.apps, o.queries)
	fmt.Println("| backend | DORA report, 90 days | deployments in range | p50 | p99 | max |")
	fmt.Println("|---|---|---|---|---|---|")
	var eventRows []string
	for _, b := range backends {
		rows, err := analyticsBackend(b, pgBase, o)
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		eventRows = append(eventRows, rows...)
	}
	fmt.Printf("\n### Analytics: event → visible (%d finished syncs reported one at a time, on the loaded database)\n\n", o.events)
	fmt.Println("| backend | p50 | p99 | max |")
	fmt.Println("|---|---|---|---|")
	for _, r := range eventRows {
		fmt.Println(r)
	}
	fmt.Println()
	return nil
}

func analyticsBackend(backend, pgBase string, o analyticsOptions) ([]string, error) {
	ctx := context.Background()
	var dsn string
	reuse := true
	switch {
	case backend == "sqlite" && o.reuseSQLite != "":
		dsn = o.reuseSQLite
	case backend == "postgres" && o.reusePostgres != "":
		dsn = withSearchPath(pgBase, o.reusePostgres)
	default:
		var cleanup func()
		var err error
		if dsn, cleanup, err = freshDSN(backend, pgBase, "analytics"); err != nil {
			return nil, err
		}
		defer cleanup()
		reuse = false
	}
	t0 := time.Now()
	db, err := store.Open(ctx, dsn, nil)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	al := audit.NewLog(db, nil)
	id := identity.New(identity.Deps{Store: db, Audit: al})
	if !reuse {
		if _, err := id.Bootstrap(ctx, "bench", "admin@bench.test", adminPassword); err != nil {
			return nil, err
		}
	}
	login, err := id.Login(ctx, "admin@bench.test", adminPassword, "")
	if err != nil {
		return nil, err
	}
	p := login.Principal

	start := time.Now()
	if reuse {
		fmt.Fprintf(os.Stderr, "bench: %s: reusing %s (opened and migrated in %s)\n", backend, dsn, time.Since(t0).Round(time.Millisecond))
	} else if err := loadDeployments(ctx, db, p.AccountID, o); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	} else {
		fmt.Fprintf(os.Stderr, "bench: %s: loaded %d deployments in %s\n", backend, o.deployments, time.Since(start).Round(time.Millisecond))
	}
	if backend == "postgres" { // as autovacuum would soon after a load this size
		if err := db.Analyze(ctx); err != nil {
			return nil, err
		}
	}

	svc := analytics.New(analytics.Deps{Store: db})
	now := time.Now()
	r := rand.New(rand.NewPCG(2, 2))
	cases := []struct {
		name   string
		filter func() analytics.Filter
	}{
		{"the account (every application)", func() analytics.Filter { return analytics.Filter{} }},
		{"one runtime (of 20)", func() analytics.Filter { return analytics.Filter{Runtime: fmt.Sprintf("rt-%02d", r.IntN(20))} }},
		{"one cluster (of 50)", func() analytics.Filter { return analytics.Filter{Cluster: fmt.Sprintf("cluster-%02d", r.IntN(50))} }},
		{"one application", func() analytics.Filter { return analytics.Filter{App: fmt.Sprintf("app-%05d", r.IntN(o.apps))} }},
		// A product: a random set of applications, as the API passes a product's (runtime ID
		// and name each), the report over them as a whole.
		{fmt.Sprintf("one product (%d applications)", o.productApps), func() analytics.Filter {
			f := analytics.Filter{AppsSet: true}
			for _, app := range r.Perm(o.apps)[:min(o.productApps, o.apps)] {
				f.Apps = append(f.Apps, analytics.AppRef{RuntimeID: fmt.Sprintf("rt_%02d", app%20), App: fmt.Sprintf("app-%05d", app)})
			}
			return f
		}},
	}
	for _, c := range cases {
		var times []time.Duration
		var n int64
		for i := range o.queries + 2 {
			f := c.filter()
			f.Since, f.Until = now.Add(-90*24*time.Hour), now
			t0 := time.Now()
			rep, err := svc.DORA(ctx, p, analytics.Query{Filter: f, Bucket: analytics.BucketWeek})
			if err != nil {
				return nil, err
			}
			if i >= 2 { // two to warm the caches
				times = append(times, time.Since(t0))
				n += rep.Deployments
			}
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		fmt.Fprintf(os.Stderr, "bench: %s: %s: load average %s\n", backend, c.name, loadAverage())
		fmt.Printf("| %s | %s | %d | %s | %s | %s |\n", backend, c.name, n/int64(len(times)), ms(pct(times, 50)), ms(pct(times, 99)), ms(times[len(times)-1]))
	}

	row, err := eventLatency(ctx, db, al, p, backend, o)
	if err != nil {
		return nil, fmt.Errorf("event latency: %w", err)
	}
	return []string{row}, nil
}

// loadDeployments writes o.deployments records of o.apps applications (20 runtimes, 50
// clusters), finished over the last 365 days in time order, as events arrive: 10 % failed syncs, 3 % rollbacks, lead times of
// 10 minutes to 10 days; and one incident per 50 deployments.
func loadDeployments(ctx context.Context, db *store.DB, accountID string, o analyticsOptions) error {
	r := rand.New(rand.NewPCG(1, 1))
	now := time.Now()
	const batch = 10000
	for done := 0; done < o.deployments; done += batch {
		ds := make([]store.Deployment, 0, batch)
		var hs []store.HealthEvent
		for i := done; i < min(done+batch, o.deployments); i++ {
			app := r.IntN(o.apps)
			year := int64(365 * 24 * time.Hour)
			finished := now.Add(-time.Duration(year - year/int64(o.deployments)*int64(i) - r.Int64N(int64(time.Minute))))
			d := store.Deployment{AccountID: accountID, EventKey: fmt.Sprintf("rt-%02d/app-%05d/%d/0", app%20, app, i),
				RuntimeID: fmt.Sprintf("rt_%02d", app%20), Runtime: fmt.Sprintf("rt-%02d", app%20), App: fmt.Sprintf("app-%05d", app),
				Project: "default", Cluster: fmt.Sprintf("cluster-%02d", app%50), Namespace: "ns", Revision: fmt.Sprintf("%040x", i),
				SyncID: int64(i), Trigger: analytics.TriggerAutoSync, InitiatedBy: "automated", Result: analytics.ResultSucceeded,
				Images: "[]", StartedAt: finished.Add(-time.Minute), FinishedAt: finished, LeadTime: -1}
			d.ID = fmt.Sprintf("dep_%013x%013x", finished.UnixMilli(), i)
			switch x := r.IntN(100); {
			case x < 10:
				d.Result = analytics.ResultFailed
			case x < 13:
				d.Trigger, d.InitiatedBy = analytics.TriggerRollback, "rollback"
			default:
				lead := 10*time.Minute + time.Duration(r.Int64N(int64(10*24*time.Hour)))
				d.CommitTime, d.LeadTime, d.LeadBucket = finished.Add(-lead), lead, analytics.LeadBucket(lead)
			}
			if i%50 == 0 {
				degraded := finished.Add(time.Duration(r.Int64N(int64(30 * time.Minute))))
				d.DegradedAt = degraded
				h := store.HealthEvent{AccountID: accountID, RuntimeID: d.RuntimeID, Runtime: d.Runtime, App: d.App, Cluster: d.Cluster}
				h.At, h.Health, h.From = degraded, "Degraded", "Healthy"
				hs = append(hs, h)
				h.At, h.Health, h.From = degraded.Add(time.Duration(r.Int64N(int64(4*time.Hour)))+time.Minute), "Healthy", "Degraded"
				hs = append(hs, h)
			}
			ds = append(ds, d)
		}
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.InsertDeployments(ctx, ds); err != nil {
				return err
			}
			for _, h := range hs {
				if _, err := tx.PutHealthEvent(ctx, h); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// The day statistics the consumers keep as events arrive, for the whole year at once.
	return db.Tx(ctx, func(tx *store.Tx) error {
		return tx.RefreshDeploymentStats(ctx, accountID, analytics.DayOf(now.AddDate(-1, 0, -1)), analytics.DayOf(now))
	})
}

// eventLatency times a runtime's report of a finished sync until the consumer committed its
// deployment, one at a time, with the whole path running in this process as the server runs it.
func eventLatency(ctx context.Context, db *store.DB, al *audit.Log, p rbac.Principal, backend string, o analyticsOptions) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir, err := os.MkdirTemp("", "freshet-bench-nats")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	b, err := bus.Open(ctx, bus.Options{DataDir: dir}, nil)
	if err != nil {
		return "", err
	}
	defer b.Close()
	outbox := events.NewOutboxRelay(db, b, nil)
	rts := runtimes.New(runtimes.Deps{Store: db, Audit: al, Keys: secrets.Generate(), OnEvents: outbox.Kick})
	rt, _, err := rts.Register(ctx, p, runtimes.RegisterInput{Name: fmt.Sprintf("edge-%d", time.Now().Unix()%100000), AccessMode: "tunnel"})
	if err != nil {
		return "", err
	}
	applied := make(chan struct{}, 1)
	h := analytics.NewHandler(analytics.HandlerDeps{Store: db, Bus: b, Ledger: db.Ledger(), Applied: func(subject string) {
		select {
		case applied <- struct{}{}:
		default:
		}
	}})
	go outbox.Run(ctx)
	go h.Run(ctx)
	var times []time.Duration
	r := rand.New(rand.NewPCG(3, 3))
	for i := range o.events + 5 {
		app := fmt.Sprintf("app-%05d", r.IntN(o.apps))
		fin := time.Now().Add(-time.Duration(r.Int64N(int64(24 * time.Hour))))
		ev := runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: app, Sync: &runtimev1.SyncRecord{ID: int64(i + 1), Revision: "abc", Phase: "Succeeded",
			InitiatedBy: "automated", StartedAt: fin.Add(-time.Minute), FinishedAt: fin, Commit: &runtimev1.Commit{Time: fin.Add(-time.Hour)}}}
		t0 := time.Now()
		if _, err := rts.Report(ctx, rt, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{ev}}); err != nil {
			return "", err
		}
		select {
		case <-applied:
		case <-time.After(30 * time.Second):
			return "", fmt.Errorf("event %d was not applied within 30 s", i)
		}
		if i >= 5 {
			times = append(times, time.Since(t0))
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return fmt.Sprintf("| %s | %s | %s | %s |", backend, ms(pct(times, 50)), ms(pct(times, 99)), ms(times[len(times)-1])), nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, "?" where unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// availableBackends is the backends a bench runs on: SQLite, and PostgreSQL first when pgBase
// is set (its loads are the quicker); only those named in only (comma-separated) when given.
func availableBackends(pgBase, only string) []string {
	backends := []string{"sqlite"}
	if pgBase != "" {
		backends = []string{"postgres", "sqlite"}
	}
	if only != "" {
		backends = slices.DeleteFunc(backends, func(b string) bool { return !slices.Contains(strings.Split(only, ","), b) })
	}
	return backends
}

// freshDSN makes a new database for a bench on backend: a file in a new directory (SQLite), a
// new schema of pgBase's database (PostgreSQL). cleanup removes it, unless FRESHET_BENCH_KEEP is
// set (then it is named on stderr, for -analytics-reuse-*).
func freshDSN(backend, pgBase, name string) (dsn string, cleanup func(), err error) {
	keep := os.Getenv("FRESHET_BENCH_KEEP") != ""
	if backend != "postgres" {
		dir, err := os.MkdirTemp("", "freshet-bench-"+name)
		if err != nil {
			return "", nil, err
		}
		if keep {
			fmt.Fprintln(os.Stderr, "bench: keeping", dir)
			return filepath.Join(dir, "freshet.db"), func() {}, nil
		}
		return filepath.Join(dir, "freshet.db"), func() { os.RemoveAll(dir) }, nil
	}
	schema := fmt.Sprintf("bench_%s_%d", name, time.Now().UnixNano())
	admin, err := sql.Open("pgx", pgBase)
	if err != nil {
		return "", nil, err
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		return "", nil, err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "bench: keeping schema", schema)
		admin.Close()
		return withSearchPath(pgBase, schema), func() {}, nil
	}
	return withSearchPath(pgBase, schema), func() {
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	}, nil
}

// withSearchPath is the PostgreSQL DSN base with its search_path set to schema.
func withSearchPath(base, schema string) string {
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
