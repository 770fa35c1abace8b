package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// The executor and elector tests run in testing/synctest bubbles, so hours of schedules take
// milliseconds and every instant is exact. The database is real (SQLite, and PostgreSQL when
// FRESHET_TEST_POSTGRES is set), opened inside the bubble and closed before it ends; database
// I/O takes real time, during which the bubble's clock stands still. A bubble ends only when
// every goroutine in it has exited, so each test also proves that stopping leaks none.

// eachBackend runs fn once per backend, each in its own bubble with a fresh database.
func eachBackend(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { fn(t, storetest.Open(t, d)) })
		})
	}
}

var errPartitioned = errors.New("partitioned from the database (test)")

// netDB is a replica's connection to the shared database, which a test can cut to simulate a
// crashed or partitioned replica.
type netDB struct {
	db   *store.DB
	down atomic.Bool
}

func (n *netDB) check(ctx context.Context) error {
	if n.down.Load() {
		return errPartitioned
	}
	return ctx.Err()
}

func (n *netDB) TryAcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (int64, bool, error) {
	if err := n.check(ctx); err != nil {
		return 0, false, err
	}
	return n.db.TryAcquireLease(ctx, name, holder, ttl, now)
}

func (n *netDB) ReleaseLease(ctx context.Context, name, holder string) error {
	if err := n.check(ctx); err != nil {
		return err
	}
	return n.db.ReleaseLease(ctx, name, holder)
}

func (n *netDB) ClaimCronFire(ctx context.Context, f store.Fence, id string, at, now time.Time) (bool, error) {
	if err := n.check(ctx); err != nil {
		return false, err
	}
	return n.db.ClaimCronFire(ctx, f, id, at, now)
}

func (n *netDB) RetakeCronFire(ctx context.Context, f store.Fence, id string, at, staleBefore, now time.Time) (bool, error) {
	if err := n.check(ctx); err != nil {
		return false, err
	}
	return n.db.RetakeCronFire(ctx, f, id, at, staleBefore, now)
}

func (n *netDB) FinishCronFire(ctx context.Context, id string, at time.Time, status, msg string, now time.Time) error {
	if err := n.check(ctx); err != nil {
		return err
	}
	return n.db.FinishCronFire(ctx, id, at, status, msg, now)
}

func (n *netDB) LastCronFires(ctx context.Context) (map[string]time.Time, error) {
	if err := n.check(ctx); err != nil {
		return nil, err
	}
	return n.db.LastCronFires(ctx)
}

func (n *netDB) PendingCronFires(ctx context.Context, since time.Time) ([]store.CronFire, error) {
	if err := n.check(ctx); err != nil {
		return nil, err
	}
	return n.db.PendingCronFires(ctx, since)
}

func (n *netDB) PruneCronFires(ctx context.Context, before time.Time) (int64, error) {
	if err := n.check(ctx); err != nil {
		return 0, err
	}
	return n.db.PruneCronFires(ctx, before)
}

var (
	_ LeaseStore = (*netDB)(nil)
	_ Store      = (*netDB)(nil)
)

// source is a Source whose schedules a test changes at will.
type source struct {
	mu   sync.Mutex
	list map[string]Schedule
	err  error
}

func newSource(ss ...Schedule) *source {
	s := &source{list: map[string]Schedule{}}
	for _, x := range ss {
		s.list[x.ID] = x
	}
	return s
}

func (s *source) CronTriggers(ctx context.Context) ([]Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	return slices.Collect(maps.Values(s.list)), nil
}

func (s *source) set(x Schedule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list[x.ID] = x
}

func (s *source) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.list, id)
}

// fired is one call of the fire function.
type fired struct {
	replica  string
	schedule string
	at       time.Time // scheduled time
	when     time.Time // when fire was called
	queued   bool      // false: the key was queued before (idempotent no-op), or err
	err      error
}

// pipeline stands in for the pipeline service: it queues a build per run, idempotently by
// FireKey, and records every call.
type pipeline struct {
	mu     sync.Mutex
	queued map[string]bool
	calls  []fired
	hook   func(replica string, s Schedule, at time.Time) error // optional; runs first, an error queues nothing
}

func newPipeline() *pipeline { return &pipeline{queued: map[string]bool{}} }

func (p *pipeline) fireFunc(replica string) FireFunc {
	return func(ctx context.Context, s Schedule, at time.Time) error {
		p.mu.Lock()
		hook := p.hook
		p.mu.Unlock()
		var err error
		if hook != nil {
			err = hook(replica, s, at)
		}
		p.mu.Lock()
		key := FireKey(s.ID, at)
		dup := p.queued[key]
		if err == nil {
			p.queued[key] = true
		}
		p.calls = append(p.calls, fired{replica: replica, schedule: s.ID, at: at, when: time.Now(), queued: err == nil && !dup, err: err})
		p.mu.Unlock()
		if err != nil {
			return err
		}
		if dup {
			return fmt.Errorf("run %s: %w", key, errdefs.ErrConflict)
		}
		return nil
	}
}

// builds returns the runs queued, in call order.
func (p *pipeline) builds() []fired {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []fired
	for _, c := range p.calls {
		if c.queued {
			out = append(out, c)
		}
	}
	return out
}

func (p *pipeline) allCalls() []fired {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// replica is one control-plane replica: an elector and an executor on its own connection.
type replica struct {
	name   string
	net    *netDB
	el     *Elector
	x      *Executor
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startReplica(t *testing.T, db *store.DB, name string, src Source, p *pipeline, opts Options) *replica {
	t.Helper()
	r := &replica{name: name, net: &netDB{db: db}}
	log := testLogger(t).With("replica", name)
	r.el = NewElector(r.net, LeaseName, name, opts.LeaseTTL, log)
	x, err := NewExecutor(r.net, r.el, src, p.fireFunc(name), opts, log)
	if err != nil {
		t.Fatal(err)
	}
	r.x = x
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() { r.el.Run(ctx) })
	r.wg.Go(func() { r.x.Run(ctx) })
	t.Cleanup(r.stop)
	return r
}

// stop shuts the replica down gracefully (releasing its lease if the database is reachable) and
// waits for all its goroutines.
func (r *replica) stop() {
	r.cancel()
	r.wg.Wait()
}

// crash cuts the replica off from the database and stops it, leaving its lease to expire.
func (r *replica) crash() {
	r.net.down.Store(true)
	r.stop()
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func leaders(rs ...*replica) []string {
	var out []string
	for _, r := range rs {
		if r.el.IsLeader() {
			out = append(out, r.name)
		}
	}
	return out
}

// times returns n times, step apart, after start.
func times(start time.Time, step time.Duration, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = start.Add(time.Duration(i+1) * step)
	}
	return out
}

// scheduledOf returns the scheduled times of the builds of schedule id, in order.
func scheduledOf(bs []fired, id string) []time.Time {
	var out []time.Time
	for _, b := range bs {
		if b.schedule == id {
			out = append(out, b.at)
		}
	}
	return out
}

func equalTimes(a, b []time.Time) bool {
	return slices.EqualFunc(a, b, time.Time.Equal)
}

func fmtTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("01-02 15:04:05")
	}
	return out
}
