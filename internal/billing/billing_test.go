package billing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

const testPlans = `
default: big
plans:
  - name: tiny
    limits: {concurrent-builds: 3, runners: 2, users: 2, build-minutes: 10, hosted-runtimes: 0, applications: 0, clusters-per-runtime: 2}
  - name: big
    title: Big
    limits: {concurrent-builds: unlimited}
`

func catalogue(t testing.TB) billing.Catalogue {
	t.Helper()
	c, err := billing.ParseCatalogue("test.yaml", []byte(testPlans))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixture is an account with a pipeline, on a fresh database.
type fixture struct {
	db       *store.DB
	svc      *billing.Service
	account  string
	pipeline string
}

func newFixture(t testing.TB, db *store.DB) fixture {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	f := fixture{db: db, svc: billing.New(billing.Deps{Store: db, Catalogue: catalogue(t)}), account: store.NewID(store.PrefixAccount)}
	if err := db.CreateAccount(ctx, store.Account{ID: f.account, Name: "acme-" + f.account[len(f.account)-6:], CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	prj := store.Project{ID: store.NewID("prj"), AccountID: f.account, Name: "p", CreatedAt: now}
	if err := db.CreateProject(ctx, prj); err != nil {
		t.Fatal(err)
	}
	f.pipeline = store.NewID("pip")
	if err := db.CreatePipeline(ctx, store.Pipeline{ID: f.pipeline, AccountID: f.account, ProjectID: prj.ID, Name: "ci", SpecYAML: "version: '1.0'",
		Config: "{}", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	return f
}

// queue inserts n queued builds and returns their IDs.
func (f fixture) queue(t testing.TB, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		b := store.Build{ID: store.NewID("bld"), AccountID: f.account, PipelineID: f.pipeline, Status: "queued", TriggerType: "manual",
			Variables: "{}", Labels: "{}", CreatedAt: time.Now()}
		if err := f.db.Tx(context.Background(), func(tx *store.Tx) error { return tx.CreateBuild(context.Background(), &b) }); err != nil {
			t.Fatal(err)
		}
		ids[i] = b.ID
	}
	return ids
}

// claim is what the pipeline service does when a runner accepts a build: admit one more
// concurrent build and claim it, in one transaction.
func (f fixture) claim(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := f.db.Tx(ctx, func(tx *store.Tx) error {
		if err := f.svc.Admit(ctx, tx, f.account, billing.ConcurrentBuilds); err != nil {
			return err
		}
		var err error
		now := time.Now()
		ok, err = tx.ClaimBuild(ctx, f.account, id, "rnr_x", store.NewID("lea"), now.Add(time.Minute), now)
		return err
	})
	return ok, err
}

func (f fixture) setPlan(t testing.TB, plan string) {
	t.Helper()
	if _, err := f.svc.SetPlan(context.Background(), f.account, plan, "test"); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentBuildStartsAtLimit starts 100 builds at once on a plan of 3 concurrent builds:
// exactly 3 run, every other claim is refused naming the limit, the plan and the use, and the
// database never holds more than 3 running — on SQLite and PostgreSQL.
func TestConcurrentBuildStartsAtLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		f.setPlan(t, "tiny")
		ids := f.queue(t, 100)
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted, refused := 0, 0
		var other []error
		start := make(chan struct{})
		for _, id := range ids {
			wg.Go(func() {
				<-start
				ok, err := f.claim(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				var le *billing.LimitError
				switch {
				case err == nil && ok:
					admitted++
				case errors.As(err, &le):
					refused++
					if le.Plan != "tiny" || le.Limit != 3 || le.Used != 3 || le.Resource != billing.ConcurrentBuilds {
						other = append(other, fmt.Errorf("refusal %+v", le))
					}
				default:
					other = append(other, fmt.Errorf("claim %s: ok=%v err=%v", id, ok, err))
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range other {
			t.Error(err)
		}
		if admitted != 3 || refused != 97 {
			t.Errorf("admitted %d, refused %d; want 3 and 97", admitted, refused)
		}
		running, err := db.CountUse(ctx, f.account, store.UseActiveBuilds, time.Time{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if running != 3 {
			t.Errorf("%d builds running; the plan allows 3", running)
		}
	})
}

// TestPlanChangeTakesEffectAtOnce: a refused claim is admitted as soon as the account moves
// to a larger plan, and refused again when it moves back.
func TestPlanChangeTakesEffectAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.setPlan(t, "tiny")
		ids := f.queue(t, 5)
		for _, id := range ids[:3] {
			if ok, err := f.claim(ctx, id); err != nil || !ok {
				t.Fatalf("claim %s: %v %v", id, ok, err)
			}
		}
		_, err := f.claim(ctx, ids[3])
		if !errors.Is(err, errdefs.ErrLimitExceeded) || errdefs.HTTPStatus(err) != 402 {
			t.Fatalf("4th claim on tiny: %v (status %d); want a 402 limit refusal", err, errdefs.HTTPStatus(err))
		}
		for _, want := range []string{`plan "tiny"`, "allows 3 concurrent builds", "has 3 running"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		f.setPlan(t, "big")
		if ok, err := f.claim(ctx, ids[3]); err != nil || !ok {
			t.Fatalf("claim on big: %v %v", ok, err)
		}
		f.setPlan(t, "tiny")
		if _, err := f.claim(ctx, ids[4]); !errors.Is(err, errdefs.ErrLimitExceeded) {
			t.Fatalf("claim back on tiny with 4 running: %v", err)
		}
	})
}

// TestBuildMinutes: the month's run time, counted from the builds, stops new builds at the limit.
func TestBuildMinutes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.setPlan(t, "tiny")
		admit := func() error {
			return db.Tx(ctx, func(tx *store.Tx) error { return f.svc.Admit(ctx, tx, f.account, billing.BuildMinutes) })
		}
		if err := admit(); err != nil {
			t.Fatalf("no minutes used: %v", err)
		}
		// A build that ran 9 minutes and ended: 9 of 10 used.
		id := f.queue(t, 1)[0]
		now := time.Now()
		start := now.Add(-9 * time.Minute)
		if ok, err := db.ClaimBuild(ctx, f.account, id, "rnr_x", "lea_x", now.Add(time.Minute), start); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if ok, err := db.SetBuildStatus(ctx, f.account, id, "", nil, "success", "", now); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := admit(); err != nil {
			t.Fatalf("9 of 10 minutes used: %v", err)
		}
		// One running for 2 minutes so far: 11 of 10.
		id = f.queue(t, 1)[0]
		if ok, err := db.ClaimBuild(ctx, f.account, id, "rnr_x", "lea_y", now.Add(time.Minute), now.Add(-2*time.Minute)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		err := admit()
		var le *billing.LimitError
		if !errors.As(err, &le) || le.Used != 11 || le.Limit != 10 || !strings.Contains(err.Error(), "build minutes a month") {
			t.Fatalf("11 of 10 minutes used: %v", err)
		}
		p, err := f.svc.Get(ctx, rbac.Principal{AccountID: f.account, Role: rbac.Viewer})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range p.Uses {
			if u.Resource == billing.BuildMinutes && (u.Used != 11 || u.Limit != 10 || u.Period != "month") {
				t.Errorf("plan shows build minutes %+v", u)
			}
		}
		u, err := f.svc.Usage(ctx, rbac.Principal{AccountID: f.account, Role: rbac.Viewer}, now.Add(-24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if u.Totals.Builds != 1 || u.Totals.BuildMinutes != 9 {
			t.Errorf("usage totals %+v; want 1 ended build of 9 minutes", u.Totals)
		}
		csv := string(u.CSV())
		if !strings.HasPrefix(csv, "day,build_minutes,builds,deployments,active_users\n") || !strings.Contains(csv, ",9,1,0,") {
			t.Errorf("usage CSV:\n%s", csv)
		}
	})
}

// TestZeroLimitAndDefaults: a limit of 0 allows none; an account never put on a plan is on
// the catalogue's default; an unknown plan is refused naming the catalogue's plans.
func TestZeroLimitAndDefaults(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		p, err := f.svc.Get(ctx, rbac.Principal{AccountID: f.account, Role: rbac.Viewer})
		if err != nil || p.Plan.Name != "big" || !p.Default {
			t.Fatalf("new account's plan: %+v %v; want the default, big", p, err)
		}
		if _, err := f.svc.SetPlan(ctx, f.account, "gold", "test"); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "tiny, big") {
			t.Errorf("unknown plan: %v", err)
		}
		if _, err := f.svc.SetPlan(ctx, "no-such-account", "tiny", "test"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("unknown account: %v", err)
		}
		f.setPlan(t, "tiny")
		err = db.Tx(ctx, func(tx *store.Tx) error { return f.svc.Admit(ctx, tx, f.account, billing.HostedRuntimes) })
		if !errors.Is(err, errdefs.ErrLimitExceeded) || !strings.Contains(err.Error(), `plan "tiny" allows 0 hosted runtimes; the account has 0`) {
			t.Errorf("hosted runtime on a plan of 0: %v", err)
		}
		if err := f.svc.Check(ctx, f.account, billing.Applications); !errors.Is(err, errdefs.ErrLimitExceeded) ||
			err.Error() != `plan "tiny" allows 0 applications; the account has 0` {
			t.Errorf("an application on a plan of 0: %v", err)
		}
		if err := f.svc.CheckReported(ctx, f.account, billing.ClustersPerRuntime, "runtime prod", 1); err != nil {
			t.Errorf("a second cluster on a plan of 2: %v", err)
		}
		if err := f.svc.CheckReported(ctx, f.account, billing.ClustersPerRuntime, "runtime prod", 2); err == nil ||
			err.Error() != `plan "tiny" allows 2 clusters per runtime; runtime prod has 2` {
			t.Errorf("a third cluster on a plan of 2: %v", err)
		}
		f.setPlan(t, "big")
		if err := f.svc.CheckReported(ctx, f.account, billing.ClustersPerRuntime, "runtime prod", 50); err != nil {
			t.Errorf("clusters on a plan that does not bound them: %v", err)
		}
	})
}

func TestParseCatalogue(t *testing.T) {
	if c := billing.DefaultCatalogue(); c.Default != "enterprise" || strings.Join(c.Names(), ",") != "free,team,enterprise" {
		t.Errorf("default catalogue: %+v", c)
	}
	free, _ := billing.DefaultCatalogue().Plan("free")
	if free.Limit(billing.ConcurrentBuilds) != 1 || free.Limit(billing.HostedRuntimes) != 1 {
		t.Errorf("free plan: %+v", free)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", ``, "is empty"},
		{"no plans", "default: x\nplans: []\n", "lists no plan"},
		{"unknown key", "default: a\nplans:\n  - name: a\n    price: 3\n", "field price not found"},
		{"unknown resource", "default: a\nplans:\n  - name: a\n    limits: {gpus: 3}\n", `plans[0].limits.gpus: "gpus" is not a limited resource`},
		{"negative", "default: a\nplans:\n  - name: a\n    limits:\n      users: -1\n", `test.yaml:5: plans[0].limits.users: "-1" is not a limit`},
		{"not a number", "default: a\nplans:\n  - name: a\n    limits: {users: many}\n", `"many" is not a limit`},
		{"list limit", "default: a\nplans:\n  - name: a\n    limits: {users: [1]}\n", "is not a limit"},
		{"bad name", "default: A\nplans:\n  - name: A\n", `plans[0].name: "A" is not a plan name`},
		{"duplicate", "default: a\nplans:\n  - name: a\n  - name: a\n", "names a plan listed before"},
		{"no default", "plans:\n  - name: a\n", "default: is missing"},
		{"unknown default", "default: b\nplans:\n  - name: a\n", `default: "b" names no plan of the catalogue: use a`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := billing.ParseCatalogue("test.yaml", []byte(tc.yaml))
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want an invalid-argument error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct{ in, want, err string }{
		{"", "2026-10-27", ""},
		{"30d", "2026-10-28", ""},
		{"1d", "2026-11-26", ""},
		{"72h", "2026-11-23", ""},
		{"2026-11-01", "2026-11-01", ""},
		{"0d", "", "is not a window"},
		{"401d", "", "longer than 400 days"},
		{"2027-01-01", "", "in the future"},
		{"yesterday", "", "is not a window"},
	} {
		got, err := billing.ParseSince("since", tc.in, now)
		if tc.err != "" {
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "since: ") {
				t.Errorf("ParseSince(%q) = %v; want an error naming since and saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.Format(time.DateOnly) != tc.want {
			t.Errorf("ParseSince(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

var testNow = time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC)
