package cron

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
)

const testTTL = 15 * time.Second

type electorUnderTest struct {
	name   string
	net    *netDB
	el     *Elector
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startElector(t *testing.T, db *store.DB, name string) *electorUnderTest {
	e := &electorUnderTest{name: name, net: &netDB{db: db}}
	e.el = NewElector(e.net, LeaseName, name, testTTL, testLogger(t).With("replica", name))
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.wg.Go(func() { e.el.Run(ctx) })
	t.Cleanup(e.stop)
	return e
}

func (e *electorUnderTest) stop() { e.cancel(); e.wg.Wait() }

func leading(es ...*electorUnderTest) []*electorUnderTest {
	var out []*electorUnderTest
	for _, e := range es {
		if e.el.IsLeader() {
			out = append(out, e)
		}
	}
	return out
}

func TestElector(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		es := []*electorUnderTest{startElector(t, db, "a"), startElector(t, db, "b"), startElector(t, db, "c")}
		synctest.Wait()
		// Exactly one leads, at epoch 1, and keeps leading through many renewals.
		for range 20 {
			ls := leading(es...)
			if len(ls) != 1 {
				t.Fatalf("%d leaders, want 1", len(ls))
			}
			if term, ok := ls[0].el.Term(); !ok || term.Epoch != 1 || term.Holder != ls[0].name || term.Lease != LeaseName {
				t.Fatalf("term = %+v %v", term, ok)
			}
			time.Sleep(testTTL / 2)
			synctest.Wait()
		}
		first := leading(es...)[0]
		term, _ := first.el.Term()
		changed := first.el.Changed()

		// Graceful stop: the lease is released, so another replica leads within one acquire
		// period (TTL/3 + 10% jitter), long before the TTL.
		stopAt := time.Now()
		first.stop()
		select {
		case <-term.Done:
		default:
			t.Fatal("term not ended by stop")
		}
		select {
		case <-changed:
		default:
			t.Fatal("Changed not closed by stop")
		}
		rest := slices.DeleteFunc(slices.Clone(es), func(e *electorUnderTest) bool { return e == first })
		var second *electorUnderTest
		for second == nil {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if ls := leading(rest...); len(ls) == 1 {
				second = ls[0]
			}
		}
		if took := time.Since(stopAt); took > testTTL/3+testTTL/30+time.Second {
			t.Fatalf("takeover after a graceful stop took %s", took)
		}
		if term, _ := second.el.Term(); term.Epoch != 2 {
			t.Fatalf("epoch after takeover = %d, want 2", term.Epoch)
		}

		// The leader is partitioned from the database: it steps down before its lease can
		// expire, and another takes over only after the TTL; the epoch moves on.
		lease, _ := db.GetLease(ctx, LeaseName)
		second.net.down.Store(true)
		term, _ = second.el.Term()
		var third *electorUnderTest
		for third == nil {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			now := time.Now()
			if second.el.IsLeader() && !now.Before(lease.Expires.Add(-testTTL/5+testTTL/3)) {
				// Its last renewal was at most TTL/3 (+jitter) after lease was read.
				t.Fatalf("partitioned leader still leading at %s, lease read expiring %s", now, lease.Expires)
			}
			ls := leading(rest...)
			if len(ls) > 1 {
				t.Fatalf("two leaders: %s and %s", ls[0].name, ls[1].name)
			}
			if len(ls) == 1 && ls[0] != second {
				third = ls[0]
			}
		}
		select {
		case <-term.Done:
		default:
			t.Fatal("the partitioned leader's term did not end")
		}
		l, err := db.GetLease(ctx, LeaseName)
		if err != nil || l.Holder != third.name || l.Epoch != 3 {
			t.Fatalf("lease after expiry takeover = %+v, %v", l, err)
		}
		// It comes back: it stays a follower.
		second.net.down.Store(false)
		time.Sleep(2 * testTTL)
		synctest.Wait()
		if ls := leading(rest...); len(ls) != 1 || ls[0] != third {
			t.Fatalf("leaders after the partition healed: %v", ls)
		}

		// Someone else takes the lease behind the leader's back (an operator, or a replica
		// whose clock runs fast): its next renewal is refused and it steps down at once.
		if _, ok, err := db.TryAcquireLease(ctx, LeaseName, "intruder", time.Hour, time.Now().Add(testTTL)); err != nil || !ok {
			t.Fatalf("intruder: %v %v", ok, err)
		}
		time.Sleep(testTTL/3 + testTTL/30 + time.Millisecond)
		synctest.Wait()
		if ls := leading(rest...); len(ls) != 0 {
			t.Fatalf("%s still leads after its renewal was refused", ls[0].name)
		}
	})
}
