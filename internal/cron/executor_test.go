package cron

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
)

func (p *pipeline) setHook(h func(replica string, s Schedule, at time.Time) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

// sleepUntil advances the bubble's clock to t and lets every goroutine settle.
func sleepUntil(t time.Time) {
	time.Sleep(time.Until(t))
	synctest.Wait()
}

// Three replicas share one database for half an hour: exactly one leads at every moment, and
// every scheduled time of every schedule is fired once, on time, by the leader.
func TestExactlyOneReplicaFires(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		start := time.Now()
		src := newSource(
			Schedule{ID: "tr_minute", AccountID: "acc_1", PipelineID: "pip_1", Expression: "* * * * *", Branch: "main"},
			Schedule{ID: "tr_5m", AccountID: "acc_1", PipelineID: "pip_2", Expression: "*/5 * * * *", Timezone: "Europe/Berlin"},
			Schedule{ID: "tr_every", AccountID: "acc_2", PipelineID: "pip_3", Expression: "@every 2m", Variables: map[string]string{"K": "v"}},
		)
		p := newPipeline()
		rs := []*replica{
			startReplica(t, db, "a", src, p, Options{}),
			startReplica(t, db, "b", src, p, Options{}),
			startReplica(t, db, "c", src, p, Options{}),
		}
		synctest.Wait()
		leader := leaders(rs...)
		if len(leader) != 1 {
			t.Fatalf("leaders = %v, want one", leader)
		}
		for range 30 {
			time.Sleep(time.Minute)
			synctest.Wait()
			if ls := leaders(rs...); len(ls) != 1 || ls[0] != leader[0] {
				t.Fatalf("at %s leaders = %v, want %s throughout", time.Now().Format(time.TimeOnly), ls, leader[0])
			}
		}
		time.Sleep(time.Second)
		for _, r := range rs {
			r.stop()
		}

		calls, builds := p.allCalls(), p.builds()
		if len(calls) != len(builds) {
			t.Fatalf("%d fire calls for %d builds: a run was fired twice", len(calls), len(builds))
		}
		for _, want := range []struct {
			id   string
			step time.Duration
			n    int
		}{{"tr_minute", time.Minute, 30}, {"tr_5m", 5 * time.Minute, 6}, {"tr_every", 2 * time.Minute, 15}} {
			got := scheduledOf(builds, want.id)
			if exp := times(start, want.step, want.n); !equalTimes(got, exp) {
				t.Errorf("%s fired at %v, want %v", want.id, fmtTimes(got), fmtTimes(exp))
			}
		}
		for _, b := range builds {
			if b.replica != leader[0] || !b.when.Equal(b.at) {
				t.Fatalf("run %s@%s fired by %s at %s; want by the leader %s, on time", b.schedule, b.at, b.replica, b.when, leader[0])
			}
		}
		fires, err := db.ListCronFires(context.Background(), "tr_minute", 0)
		if err != nil || len(fires) != 30 {
			t.Fatalf("records = %d, %v", len(fires), err)
		}
		for _, f := range fires {
			if f.Status != store.CronFired || f.Holder != leader[0] || f.Epoch != 1 || f.Attempts != 1 {
				t.Fatalf("record %+v", f)
			}
		}
	})
}

// When the leader goes away, another replica takes over and every run still fires exactly once:
// nothing the old leader fired is fired again, and the run due during the gap fires late, once.
func TestFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		// at is when the leader goes away; how is one of "stop", "crash", "crash-mid-fire".
		at  time.Duration
		how string
	}{
		{"graceful stop", 5*time.Minute + 30*time.Second, "stop"},
		{"crash while idle", 5*time.Minute + 59*time.Second, "crash"},
		{"crash while firing", 5 * time.Minute, "crash-mid-fire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, db *store.DB) {
				start := time.Now()
				src := newSource(Schedule{ID: "tr_minute", Expression: "* * * * *"})
				p := newPipeline()
				rs := map[string]*replica{}
				for _, n := range []string{"a", "b", "c"} {
					rs[n] = startReplica(t, db, n, src, p, Options{})
				}
				synctest.Wait()
				var old *replica
				for _, r := range rs {
					if r.el.IsLeader() {
						old = r
					}
				}
				crashAt := start.Add(tc.at)
				if tc.how == "crash-mid-fire" {
					// The old leader queues the build of 00:05, then loses the database before it
					// can record that it did: the run is left claimed, in doubt.
					p.setHook(func(replica string, s Schedule, at time.Time) error {
						if replica == old.name && at.Equal(crashAt) {
							old.net.down.Store(true)
						}
						return nil
					})
				}
				sleepUntil(crashAt)
				switch tc.how {
				case "stop":
					old.stop()
				case "crash":
					old.crash()
				}
				sleepUntil(start.Add(10*time.Minute + time.Second))
				var newLeader *replica
				for _, r := range rs {
					if r.el.IsLeader() {
						if newLeader != nil {
							t.Fatalf("two leaders: %s and %s", newLeader.name, r.name)
						}
						newLeader = r
					}
				}
				if newLeader == nil || newLeader == old {
					t.Fatalf("no new leader after the old one (%s) went away", old.name)
				}
				for _, r := range rs {
					r.stop()
				}

				builds := p.builds()
				if got, want := scheduledOf(builds, "tr_minute"), times(start, time.Minute, 10); !equalTimes(got, want) {
					t.Fatalf("builds queued for %v, want each of %v once", fmtTimes(got), fmtTimes(want))
				}
				gap := start.Add(6 * time.Minute) // the first run after the leader went away
				for _, b := range builds {
					switch {
					case b.at.Before(crashAt) || (tc.how == "crash-mid-fire" && b.at.Equal(crashAt)):
						if b.replica != old.name {
							t.Errorf("run %s fired by %s, want the old leader %s", b.at.Format(time.TimeOnly), b.replica, old.name)
						}
					case b.replica != newLeader.name:
						t.Errorf("run %s fired by %s, want the new leader %s", b.at.Format(time.TimeOnly), b.replica, newLeader.name)
					case b.at.Equal(gap) && tc.how == "crash":
						// Late by the rest of the old lease plus one acquire period, never more.
						if late := b.when.Sub(b.at); late <= 0 || late > testTTL+testTTL/3+testTTL/30 {
							t.Errorf("the run due during the failover fired %s late", late)
						}
					case !b.when.Equal(b.at):
						t.Errorf("run %s fired at %s, want on time", b.at.Format(time.TimeOnly), b.when.Format(time.TimeOnly))
					}
				}

				calls := p.allCalls()
				wantCalls := len(builds)
				if tc.how == "crash-mid-fire" {
					// The in-doubt run is attempted again by the new leader once the old attempt
					// is older than the fire timeout; the idempotent fire queues nothing twice.
					wantCalls++
					var again []fired
					for _, c := range calls {
						if c.at.Equal(crashAt) {
							again = append(again, c)
						}
					}
					if len(again) != 2 || again[1].replica != newLeader.name || again[1].queued ||
						again[1].when.Before(crashAt.Add(DefaultFireTimeout)) {
						t.Fatalf("calls for the in-doubt run: %+v", again)
					}
				}
				if len(calls) != wantCalls {
					t.Fatalf("%d fire calls, want %d: %+v", len(calls), wantCalls, calls)
				}
				fires, err := db.ListCronFires(context.Background(), "tr_minute", 0)
				if err != nil || len(fires) != 10 {
					t.Fatalf("records: %d, %v", len(fires), err)
				}
				for _, f := range fires {
					if f.Status != store.CronFired {
						t.Fatalf("record %+v not fired", f)
					}
					if f.ScheduledAt.Equal(crashAt) && tc.how == "crash-mid-fire" && (f.Attempts != 2 || f.Holder != newLeader.name) {
						t.Fatalf("in-doubt run record %+v, want retaken by %s", f, newLeader.name)
					}
				}
			})
		})
	}
}

// After downtime, the missed-run policy decides which runs fire: skip none, once the most recent
// within the window, all of them (oldest first, at most MaxCatchUp).
func TestMissedRunPolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want []int // hours (of the missed 03:00, 04:00, 05:00) fired at restart
	}{
		{"skip", Options{Missed: MissedSkip}, nil},
		{"once (default)", Options{}, []int{5}},
		{"all", Options{Missed: MissedAll}, []int{3, 4, 5}},
		{"all bounded", Options{Missed: MissedAll, MaxCatchUp: 2}, []int{4, 5}},
		{"once outside the window", Options{MissedWindow: 20 * time.Minute}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, db *store.DB) {
				day := time.Now() // 2000-01-01 00:00 UTC
				hour := func(h int) time.Time { return day.Add(time.Duration(h) * time.Hour) }
				src := newSource(Schedule{ID: "tr_hourly", Expression: "0 * * * *"})
				p := newPipeline()
				opts := tc.opts // fewer renewals and reloads over the simulated hours
				opts.LeaseTTL, opts.ReloadInterval = 2*time.Minute, 15*time.Minute
				r1 := startReplica(t, db, "a", src, p, opts)
				sleepUntil(hour(2).Add(30 * time.Minute))
				r1.stop() // down from 02:30 to 05:30

				sleepUntil(hour(5).Add(30 * time.Minute))
				restart := time.Now()
				r2 := startReplica(t, db, "b", src, p, opts)
				sleepUntil(hour(6).Add(time.Second))
				r2.stop()

				want := []time.Time{hour(1), hour(2)}
				for _, h := range tc.want {
					want = append(want, hour(h))
				}
				want = append(want, hour(6))
				builds := p.builds()
				if got := scheduledOf(builds, "tr_hourly"); !equalTimes(got, want) {
					t.Fatalf("fired %v, want %v", fmtTimes(got), fmtTimes(want))
				}
				for _, b := range builds {
					if b.at.After(hour(2)) && b.at.Before(hour(6)) && b.when.After(restart.Add(time.Second)) {
						t.Errorf("missed run %s fired at %s, want at restart %s", b.at, b.when, restart)
					}
				}
				if len(p.allCalls()) != len(builds) {
					t.Fatal("a run was fired twice")
				}
			})
		})
	}
}

// Fire errors: temporary ones are retried with backoff until they succeed or the attempts run
// out; permanent ones fail the run at once; ErrConflict means it was queued already.
func TestFireErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		start := time.Now()
		src := newSource(
			Schedule{ID: "tr_flaky", Expression: "@hourly"},
			Schedule{ID: "tr_gone", Expression: "@hourly"},
			Schedule{ID: "tr_down", Expression: "@hourly"},
		)
		p := newPipeline()
		flaky := 0
		p.setHook(func(_ string, s Schedule, at time.Time) error {
			switch s.ID {
			case "tr_flaky":
				if flaky++; flaky <= 2 {
					return errors.New("pipeline service unavailable")
				}
			case "tr_gone":
				return fmt.Errorf("pipeline %s: %w", s.PipelineID, errdefs.ErrNotFound)
			case "tr_down":
				return errors.New("database is down")
			}
			return nil
		})
		r := startReplica(t, db, "a", src, p, Options{FireAttempts: 3})
		sleepUntil(start.Add(time.Hour + 10*time.Minute))
		r.stop()

		calls := map[string][]fired{}
		for _, c := range p.allCalls() {
			calls[c.schedule] = append(calls[c.schedule], c)
		}
		run := start.Add(time.Hour)
		if c := calls["tr_flaky"]; len(c) != 3 || !c[2].queued {
			t.Fatalf("flaky: %+v", c)
		} else if d1, d2 := c[1].when.Sub(c[0].when), c[2].when.Sub(c[1].when); d1 < retryBase*9/10 || d1 > retryBase*11/10 || d2 < 2*retryBase*9/10 || d2 > 2*retryBase*11/10 {
			t.Fatalf("retry delays %s, %s: want about %s then %s", d1, d2, retryBase, 2*retryBase)
		}
		if c := calls["tr_gone"]; len(c) != 1 {
			t.Fatalf("a permanent error was retried: %+v", c)
		}
		if c := calls["tr_down"]; len(c) != 3 {
			t.Fatalf("tr_down: %d attempts, want 3", len(c))
		}
		ctx := context.Background()
		for id, want := range map[string]struct {
			status   string
			attempts int
			msg      string
		}{
			"tr_flaky": {store.CronFired, 3, ""},
			"tr_gone":  {store.CronFailed, 1, "not found"},
			"tr_down":  {store.CronFailed, 3, "database is down"},
		} {
			fs, err := db.ListCronFires(ctx, id, 0)
			if err != nil || len(fs) != 1 || !fs[0].ScheduledAt.Equal(run) {
				t.Fatalf("%s records: %+v, %v", id, fs, err)
			}
			if f := fs[0]; f.Status != want.status || f.Attempts != want.attempts || (want.msg == "") != (f.LastError == "") ||
				want.msg != "" && !strings.Contains(f.LastError, want.msg) {
				t.Errorf("%s record %+v, want %+v", id, f, want)
			}
		}
	})
}

// Schedules change at runtime: Reload picks up new, changed and removed ones at once, the
// periodic reload without being told; an invalid expression is skipped until it is fixed.
func TestReload(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		start := time.Now()
		at := func(d time.Duration) time.Time { return start.Add(d) }
		src := newSource(Schedule{ID: "tr_a", Expression: "*/2 * * * *"})
		p := newPipeline()
		r := startReplica(t, db, "a", src, p, Options{ReloadInterval: 10 * time.Minute})

		sleepUntil(at(3*time.Minute + 30*time.Second))
		src.set(Schedule{ID: "tr_b", Expression: "* * * * *"})
		src.set(Schedule{ID: "tr_bad", Expression: "61 * * * *"})
		r.x.Reload()

		sleepUntil(at(6*time.Minute + 30*time.Second))
		// An edit counts from now: the new hourly expression's 06:00 is in the past, not missed.
		src.set(Schedule{ID: "tr_a", Expression: "0 * * * *"})
		r.x.Reload()

		sleepUntil(at(7*time.Minute + 30*time.Second))
		src.remove("tr_b") // no Reload: the periodic one, 10m after the last, notices
		src.set(Schedule{ID: "tr_bad", Expression: "*/30 * * * *"})

		sleepUntil(at(31 * time.Minute))
		r.stop()

		builds := p.builds()
		for id, want := range map[string][]time.Time{
			"tr_a":   {at(2 * time.Minute), at(4 * time.Minute), at(6 * time.Minute)},
			"tr_b":   times(at(3*time.Minute), time.Minute, 13), // 00:04 … 00:16; removed at the 16:30 reload
			"tr_bad": {at(30 * time.Minute)},                    // fixed at 07:30, picked up at 16:30
		} {
			if got := scheduledOf(builds, id); !equalTimes(got, want) {
				t.Errorf("%s fired at %v, want %v", id, fmtTimes(got), fmtTimes(want))
			}
		}
	})
}

// Schedules in a time zone with daylight saving time, on the days clocks change.
func TestTimeZones(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		utc := func(s string) time.Time {
			v, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		opts := Options{LeaseTTL: 10 * time.Minute, ReloadInterval: time.Hour} // few wake-ups over days
		p := newPipeline()

		sleepUntil(utc("2026-03-07T12:00:00Z"))
		spring := newSource(
			Schedule{ID: "tr_ny", Expression: "30 2 * * *", Timezone: "America/New_York"},
			Schedule{ID: "tr_berlin", Expression: "CRON_TZ=Europe/Berlin 0 2 * * *"},
		)
		r := startReplica(t, db, "a", spring, p, opts)
		sleepUntil(utc("2026-03-10T00:00:00Z"))
		r.stop()

		sleepUntil(utc("2026-10-31T12:00:00Z"))
		fall := newSource(
			Schedule{ID: "tr_ny_fall", Expression: "30 1 * * *", Timezone: "America/New_York"},
			Schedule{ID: "tr_ny_hourly", Expression: "0 * * * *", Timezone: "America/New_York"},
		)
		r = startReplica(t, db, "b", fall, p, opts)
		sleepUntil(utc("2026-11-01T08:00:00Z"))
		r.stop()

		builds := p.builds()
		for id, want := range map[string][]string{
			// 02:30 does not exist on 8 March: it fires at 03:00 EDT.
			"tr_ny":     {"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"},
			"tr_berlin": {"2026-03-08T01:00:00Z", "2026-03-09T01:00:00Z"},
			// 01:30 happens twice on 1 November: it fires once, at 01:30 EDT.
			"tr_ny_fall": {"2026-11-01T05:30:00Z"},
		} {
			var exp []time.Time
			for _, w := range want {
				exp = append(exp, utc(w))
			}
			if got := scheduledOf(builds, id); !equalTimes(got, exp) {
				t.Errorf("%s fired at %v, want %v", id, fmtTimes(got), fmtTimes(exp))
			}
		}
		// Hourly in New York on 1 November: 01:00 EDT (05:00Z) then 02:00 EST (07:00Z); 01:00 EST
		// (06:00Z) is the same wall-clock hour again and does not fire.
		var hourly []time.Time
		for _, b := range scheduledOf(builds, "tr_ny_hourly") {
			if !b.Before(utc("2026-11-01T04:00:00Z")) {
				hourly = append(hourly, b)
			}
		}
		if want := []time.Time{utc("2026-11-01T04:00:00Z"), utc("2026-11-01T05:00:00Z"), utc("2026-11-01T07:00:00Z"), utc("2026-11-01T08:00:00Z")}; !equalTimes(hourly, want) {
			t.Errorf("hourly fired at %v, want %v", fmtTimes(hourly), fmtTimes(want))
		}
		for _, b := range builds {
			if !b.when.Equal(b.at) {
				t.Errorf("%s run %s fired at %s, want on time", b.schedule, b.at, b.when)
			}
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	if err := (&Options{}).Validate(); err != nil {
		t.Fatalf("zero options: %v", err)
	}
	bad := Options{LeaseTTL: time.Millisecond, Missed: "sometimes", MissedWindow: 40 * 24 * time.Hour, MaxCatchUp: -1,
		ReloadInterval: time.Millisecond, FireTimeout: -1, FireAttempts: 1000}
	err := bad.Validate()
	for _, field := range []string{"cron-lease-ttl", "cron-missed", "cron-missed-window", "cron-max-catch-up", "cron-reload-interval",
		"cron-fire-timeout", "cron-fire-attempts"} {
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), field+": ") {
			t.Errorf("Validate() = %v: want %s named", err, field)
		}
	}
	if err := (&Options{Grace: 2 * time.Hour, MissedWindow: time.Hour}).Validate(); err == nil || !strings.Contains(err.Error(), "cron-grace") {
		t.Errorf("grace above the window: %v", err)
	}
	if _, err := NewExecutor(nil, nil, nil, nil, bad, nil); err == nil {
		t.Error("NewExecutor accepted invalid options")
	}

	var o Options
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--cron-missed=all", "--cron-lease-ttl=30s", "--cron-max-catch-up=3"}); err != nil {
		t.Fatal(err)
	}
	if o.Missed != MissedAll || o.LeaseTTL != 30*time.Second || o.MaxCatchUp != 3 {
		t.Fatalf("flags parsed into %+v", o)
	}
	if err := fs.Parse([]string{"--cron-missed=sometimes"}); err == nil || !strings.Contains(err.Error(), "skip, once or all") {
		t.Fatalf("bad policy flag: %v", err)
	}
}

// stuckLeader is a replica that believes it still leads at an old epoch: a process paused (or
// with a slow clock) through its lease's expiry that has not yet noticed.
type stuckLeader struct{ term Term }

func (s stuckLeader) Term() (Term, bool)       { return s.term, true }
func (s stuckLeader) Changed() <-chan struct{} { return nil }

// Split brain: a replica that wrongly believes it leads cannot fire, because every claim is
// fenced by the lease epoch in the same statement. The real leader fires each run once.
func TestSplitBrainIsFenced(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		start := time.Now()
		epoch, ok, err := db.TryAcquireLease(context.Background(), LeaseName, "stale", testTTL, start.Add(-time.Hour))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		src := newSource(Schedule{ID: "tr_minute", Expression: "* * * * *"})
		p := newPipeline()
		net := &netDB{db: db}
		stale, err := NewExecutor(net, stuckLeader{Term{Lease: LeaseName, Holder: "stale", Epoch: epoch}}, src, p.fireFunc("stale"), Options{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); stale.Run(ctx) }()
		r := startReplica(t, db, "b", src, p, Options{})

		sleepUntil(start.Add(10*time.Minute + time.Second))
		cancel()
		<-done
		r.stop()

		calls := p.allCalls()
		if got, want := scheduledOf(calls, "tr_minute"), times(start, time.Minute, 10); !equalTimes(got, want) {
			t.Fatalf("fired %v, want %v", fmtTimes(got), fmtTimes(want))
		}
		for _, c := range calls {
			if c.replica != "b" {
				t.Fatalf("the fenced-off replica fired %s", c.at)
			}
		}
	})
}
