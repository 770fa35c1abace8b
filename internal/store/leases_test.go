package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func acquire(t *testing.T, db *store.DB, name, holder string, ttl time.Duration, now time.Time) (int64, bool) {
	t.Helper()
	epoch, ok, err := db.TryAcquireLease(context.Background(), name, holder, ttl, now)
	if err != nil {
		t.Fatalf("TryAcquireLease(%s, %s): %v", name, holder, err)
	}
	return epoch, ok
}

func TestLeaseAcquireRenewExpireRelease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const ttl = 15 * time.Second
		if _, err := db.GetLease(ctx, "cron"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("GetLease before any acquire: %v, want ErrNotFound", err)
		}
		if e, ok := acquire(t, db, "cron", "a", ttl, t0); !ok || e != 1 {
			t.Fatalf("free lease: epoch %d ok %v, want 1 true", e, ok)
		}
		// Held by a: b is refused until it expires, even a microsecond before.
		if _, ok := acquire(t, db, "cron", "b", ttl, t0.Add(ttl-time.Microsecond)); ok {
			t.Fatal("b took a's current lease")
		}
		// Other names are independent.
		if e, ok := acquire(t, db, "other", "b", ttl, t0); !ok || e != 1 {
			t.Fatalf("second lease name: %d %v", e, ok)
		}
		// a renews: same epoch, later expiry; b is still refused at a's old expiry.
		if e, ok := acquire(t, db, "cron", "a", ttl, t0.Add(10*time.Second)); !ok || e != 1 {
			t.Fatalf("renewal: epoch %d ok %v, want 1 true", e, ok)
		}
		if _, ok := acquire(t, db, "cron", "b", ttl, t0.Add(ttl)); ok {
			t.Fatal("b took the lease at its pre-renewal expiry")
		}
		l, err := db.GetLease(ctx, "cron")
		if err != nil || l.Holder != "a" || l.Epoch != 1 || !l.Expires.Equal(t0.Add(10*time.Second+ttl)) {
			t.Fatalf("GetLease = %+v, %v", l, err)
		}
		// Expired: b takes it over and the epoch moves on; a's renewal is now refused.
		if e, ok := acquire(t, db, "cron", "b", ttl, t0.Add(25*time.Second)); !ok || e != 2 {
			t.Fatalf("takeover after expiry: epoch %d ok %v, want 2 true", e, ok)
		}
		if _, ok := acquire(t, db, "cron", "a", ttl, t0.Add(26*time.Second)); ok {
			t.Fatal("the old holder renewed a lease that was taken over")
		}
		// Releasing a lease one does not hold changes nothing.
		if err := db.ReleaseLease(ctx, "cron", "a"); err != nil {
			t.Fatal(err)
		}
		if _, ok := acquire(t, db, "cron", "c", ttl, t0.Add(27*time.Second)); ok {
			t.Fatal("a's release freed b's lease")
		}
		// b releases: c takes it at once, without waiting for the expiry.
		if err := db.ReleaseLease(ctx, "cron", "b"); err != nil {
			t.Fatal(err)
		}
		if e, ok := acquire(t, db, "cron", "c", ttl, t0.Add(28*time.Second)); !ok || e != 3 {
			t.Fatalf("after release: epoch %d ok %v, want 3 true", e, ok)
		}
		// A holder that released and comes back is a change of holder: a new epoch.
		if err := db.ReleaseLease(ctx, "cron", "c"); err != nil {
			t.Fatal(err)
		}
		if e, ok := acquire(t, db, "cron", "c", ttl, t0.Add(29*time.Second)); !ok || e != 4 {
			t.Fatalf("re-acquire after own release: epoch %d ok %v, want 4 true", e, ok)
		}
		// An expired lease renewed by its own holder (nobody took it meanwhile) keeps its epoch.
		if e, ok := acquire(t, db, "cron", "c", ttl, t0.Add(time.Hour)); !ok || e != 4 {
			t.Fatalf("late renewal by the holder: epoch %d ok %v, want 4 true", e, ok)
		}

		for _, bad := range []struct {
			name, holder string
			ttl          time.Duration
			field        string
		}{{"", "a", ttl, "name"}, {"cron", "", ttl, "holder"}, {"cron", "a", 0, "ttl"}} {
			_, _, err := db.TryAcquireLease(ctx, bad.name, bad.holder, bad.ttl, t0)
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != bad.field {
				t.Errorf("TryAcquireLease(%q, %q, %s) = %v, want invalid %s", bad.name, bad.holder, bad.ttl, err, bad.field)
			}
		}
	})
}

// Many replicas contend at the same instant, for a new lease and for an expired one: exactly one
// wins each round, and every loser is told no without an error.
func TestLeaseConcurrentContenders(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const contenders = 24
		const ttl = 10 * time.Second
		ctx := context.Background()
		var lastEpoch int64
		var lastHolder string
		for round := range 4 {
			now := t0.Add(time.Duration(round) * time.Minute) // each round the previous lease has expired
			var wg sync.WaitGroup
			start := make(chan struct{})
			type result struct {
				holder string
				epoch  int64
				ok     bool
				err    error
			}
			results := make(chan result, contenders)
			for i := range contenders {
				holder := fmt.Sprintf("replica-%d", i)
				wg.Go(func() {
					<-start
					e, ok, err := db.TryAcquireLease(ctx, "cron", holder, ttl, now)
					results <- result{holder, e, ok, err}
				})
			}
			close(start)
			wg.Wait()
			close(results)
			var winners []result
			for r := range results {
				if r.err != nil {
					t.Fatalf("round %d: %s: %v", round, r.holder, r.err)
				}
				if r.ok {
					winners = append(winners, r)
				}
			}
			if len(winners) != 1 {
				t.Fatalf("round %d: %d winners %+v, want exactly 1", round, len(winners), winners)
			}
			w := winners[0]
			want := lastEpoch + 1
			if w.holder == lastHolder { // the previous winner renewed its own expired lease
				want = lastEpoch
			}
			if w.epoch != want {
				t.Fatalf("round %d: %s won with epoch %d, want %d (previous: %s at %d)", round, w.holder, w.epoch, want, lastHolder, lastEpoch)
			}
			lastEpoch, lastHolder = w.epoch, w.holder
			l, err := db.GetLease(ctx, "cron")
			if err != nil || l.Holder != w.holder || l.Epoch != w.epoch {
				t.Fatalf("round %d: stored lease %+v, %v; winner %+v", round, l, err, w)
			}
		}
	})
}

func TestCronFires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const ttl = 15 * time.Second
		epochA, _ := acquire(t, db, "cron", "a", ttl, t0)
		fa := store.Fence{Lease: "cron", Holder: "a", Epoch: epochA}
		run := t0.Add(-time.Minute)

		claim := func(f store.Fence, id string, at, now time.Time) bool {
			t.Helper()
			ok, err := db.ClaimCronFire(ctx, f, id, at, now)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim(fa, "tr_1", run, t0) {
			t.Fatal("leader could not claim a new run")
		}
		if claim(fa, "tr_1", run, t0.Add(time.Second)) {
			t.Fatal("the same run was claimed twice")
		}
		// Fencing: a wrong epoch, a non-holder, or the holder after its lease expired cannot claim.
		if claim(store.Fence{Lease: "cron", Holder: "a", Epoch: epochA + 1}, "tr_1", run.Add(time.Minute), t0) {
			t.Fatal("claimed under a stale epoch")
		}
		if claim(store.Fence{Lease: "cron", Holder: "b", Epoch: epochA}, "tr_1", run.Add(time.Minute), t0) {
			t.Fatal("a non-holder claimed")
		}
		if claim(fa, "tr_1", run.Add(time.Minute), t0.Add(ttl)) {
			t.Fatal("claimed after the lease expired")
		}
		// b takes over: a's fence is dead, b's works, and the run a claimed stays a's.
		epochB, ok := acquire(t, db, "cron", "b", ttl, t0.Add(ttl))
		if !ok || epochB != epochA+1 {
			t.Fatalf("takeover: %d %v", epochB, ok)
		}
		fb := store.Fence{Lease: "cron", Holder: "b", Epoch: epochB}
		now := t0.Add(ttl + time.Second)
		if claim(fa, "tr_1", run.Add(2*time.Minute), now) {
			t.Fatal("the old leader claimed after a takeover")
		}
		if claim(fb, "tr_1", run, now) {
			t.Fatal("the new leader re-claimed a run the old leader claimed")
		}
		if !claim(fb, "tr_1", run.Add(2*time.Minute), now) || !claim(fb, "tr_2", run, now) {
			t.Fatal("new leader could not claim new runs")
		}

		// a's claim of tr_1@run is in doubt. Pending lists it (and b's own); a retake needs the
		// latest attempt to be older than staleBefore.
		pending, err := db.PendingCronFires(ctx, run)
		if err != nil || len(pending) != 3 || pending[0].ScheduleID != "tr_1" || !pending[0].ScheduledAt.Equal(run) ||
			pending[0].Holder != "a" || pending[0].Attempts != 1 || !pending[0].ClaimedAt.Equal(t0) {
			t.Fatalf("PendingCronFires = %+v, %v", pending, err)
		}
		if ok, err := db.RetakeCronFire(ctx, fb, "tr_1", run, t0.Add(-time.Second), now); err != nil || ok {
			t.Fatalf("retake of a fresh attempt: %v %v, want false", ok, err)
		}
		if ok, err := db.RetakeCronFire(ctx, fa, "tr_1", run, now, now); err != nil || ok {
			t.Fatalf("retake under a dead fence: %v %v, want false", ok, err)
		}
		if ok, err := db.RetakeCronFire(ctx, fb, "tr_1", run, t0, now); err != nil || !ok {
			t.Fatalf("retake of an in-doubt run: %v %v, want true", ok, err)
		}
		if err := db.FinishCronFire(ctx, "tr_1", run, store.CronClaimed, "pipeline service unavailable", now); err != nil {
			t.Fatal(err)
		}
		if err := db.FinishCronFire(ctx, "tr_1", run, store.CronFired, "", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// Finished runs are final: neither retaken nor finished again.
		if ok, _ := db.RetakeCronFire(ctx, fb, "tr_1", run, now.Add(time.Hour), now.Add(2*time.Second)); ok {
			t.Fatal("a fired run was retaken")
		}
		if err := db.FinishCronFire(ctx, "tr_1", run, store.CronFailed, "late", now.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := db.FinishCronFire(ctx, "tr_2", run, "bogus", "", now); !errors.Is(err, errdefs.ErrInvalid) {
			t.Fatalf("bad status: %v", err)
		}
		fires, err := db.ListCronFires(ctx, "tr_1", 0)
		if err != nil || len(fires) != 2 {
			t.Fatalf("ListCronFires = %+v, %v", fires, err)
		}
		f := fires[1] // oldest
		if f.Status != store.CronFired || f.Holder != "b" || f.Epoch != epochB || f.Attempts != 2 ||
			f.LastError != "" || !f.FinishedAt.Equal(now.Add(time.Second)) || !f.ClaimedAt.Equal(now) {
			t.Fatalf("fired run = %+v", f)
		}
		last, err := db.LastCronFires(ctx)
		if err != nil || len(last) != 2 || !last["tr_1"].Equal(run.Add(2*time.Minute)) || !last["tr_2"].Equal(run) {
			t.Fatalf("LastCronFires = %v, %v", last, err)
		}

		// Pruning drops old records but keeps each schedule's latest.
		for i := range 5 {
			if !claim(fb, "tr_3", run.Add(time.Duration(i)*time.Hour), now) {
				t.Fatal("claim tr_3")
			}
		}
		n, err := db.PruneCronFires(ctx, run.Add(10*time.Hour))
		if err != nil || n != 5 { // tr_1: 1 of 2, tr_2: 0 of 1, tr_3: 4 of 5
			t.Fatalf("PruneCronFires = %d, %v, want 5", n, err)
		}
		last, _ = db.LastCronFires(ctx)
		if len(last) != 3 || !last["tr_3"].Equal(run.Add(4*time.Hour)) || !last["tr_1"].Equal(run.Add(2*time.Minute)) {
			t.Fatalf("LastCronFires after prune = %v", last)
		}
	})
}
