// Package cron runs cron triggers: it parses and validates cron expressions, elects one replica
// through a lease in the database, and on that replica fires each schedule at its times, exactly
// once across replicas and failovers, with a documented policy for runs missed while no replica
// was leading. docs/cron.md describes the behaviour users see.
package cron

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	_ "time/tzdata" // time zones work on hosts and images without a zoneinfo database

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/schedule"
	"github.com/freshet-dev/freshet/internal/store"
)

// Log keys.
const (
	logLease     = "lease"
	logHolder    = "holder"
	logEpoch     = "epoch"
	logReason    = "reason"
	logError     = "error"
	logSchedule  = "schedule"
	logAccount   = "account"
	logPipeline  = "pipeline"
	logScheduled = "scheduled"
	logAttempt   = "attempt"
	logSkipped   = "skipped"
	logPolicy    = "policy"
	logCount     = "count"
)

// Internal timings.
const (
	retryBase     = 5 * time.Second // first retry of a failed fire or load
	retryMax      = 5 * time.Minute // longest wait between retries
	writeTimeout  = 10 * time.Second
	pruneInterval = time.Hour
	maxPlanSteps  = 100_000 // bound on the scheduled times examined for one schedule at once
)

// Schedule is one cron trigger as the trigger model stores it.
type Schedule struct {
	ID         string // trigger ID: with the scheduled time, the exactly-once key
	AccountID  string
	PipelineID string
	Expression string // see Parse
	Timezone   string // IANA name; empty means UTC (or the expression's CRON_TZ=)
	Branch     string
	Variables  map[string]string
	// LastFired is the latest scheduled time already handled as far as the caller knows, or the
	// trigger's creation (or last update) time: no run at or before it fires. The executor's own
	// record counts when later. Zero means unknown: the executor then counts from when it first
	// sees the schedule.
	LastFired time.Time
}

// Source lists the cron schedules to run. The trigger model implements it; the executor calls it
// when it becomes leader, every Options.ReloadInterval and after Reload.
type Source interface {
	CronTriggers(ctx context.Context) ([]Schedule, error)
}

// FireFunc queues the run of s scheduled at scheduled: a build of s.PipelineID on s.Branch with
// s.Variables. ctx ends after Options.FireTimeout, or when this replica stops leading.
//
// A run whose outcome is unknown (the leader stopped mid-call, or the call timed out) is
// attempted again, so FireFunc must be idempotent for the pair (s.ID, scheduled): record
// FireKey(s.ID, scheduled) in the transaction that queues the build, and when it is recorded
// already, queue nothing and return an error wrapping errdefs.ErrConflict, which counts as
// fired. Errors wrapping errdefs.ErrInvalid, ErrNotFound or ErrForbidden fail the run at once;
// other errors are retried with backoff up to Options.FireAttempts attempts.
type FireFunc func(ctx context.Context, s Schedule, scheduled time.Time) error

// FireKey is the idempotency key of the run of scheduleID scheduled at t.
func FireKey(scheduleID string, t time.Time) string {
	return "cron:" + scheduleID + ":" + t.UTC().Format(time.RFC3339)
}

// Store records cron runs. *store.DB implements it; ClaimCronFire and RetakeCronFire are fenced
// by the leader's lease.
type Store interface {
	ClaimCronFire(ctx context.Context, f store.Fence, scheduleID string, scheduled, now time.Time) (bool, error)
	RetakeCronFire(ctx context.Context, f store.Fence, scheduleID string, scheduled, staleBefore, now time.Time) (bool, error)
	FinishCronFire(ctx context.Context, scheduleID string, scheduled time.Time, status, lastError string, now time.Time) error
	LastCronFires(ctx context.Context) (map[string]time.Time, error)
	PendingCronFires(ctx context.Context, since time.Time) ([]store.CronFire, error)
	PruneCronFires(ctx context.Context, before time.Time) (int64, error)
}

var _ Store = (*store.DB)(nil)

// Leader tells the executor when this replica leads. *Elector implements it.
type Leader interface {
	// Term returns the current term and true while this replica leads.
	Term() (Term, bool)
	// Changed returns a channel closed at the next change of leadership.
	Changed() <-chan struct{}
}

var _ Leader = (*Elector)(nil)

// Executor fires cron schedules while, and only while, its Leader leads. Run drives it.
type Executor struct {
	db     Store
	leader Leader
	src    Source
	fire   FireFunc
	opts   Options
	log    *slog.Logger
	reload chan struct{}

	warned map[string]string // schedule ID → expression already reported invalid (Run's goroutine only)
}

// NewExecutor returns an executor that fires src's schedules through fire while leader leads,
// recording runs in db. It fails only when opts are invalid.
func NewExecutor(db Store, leader Leader, src Source, fire FireFunc, opts Options, log *slog.Logger) (*Executor, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("cron options: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Executor{db: db, leader: leader, src: src, fire: fire, opts: opts.withDefaults(), log: log,
		reload: make(chan struct{}, 1), warned: map[string]string{}}, nil
}

// Reload makes the leader reload the schedules now rather than at the next ReloadInterval. It
// never blocks; on a replica that is not leading it does nothing until it leads.
func (x *Executor) Reload() {
	select {
	case x.reload <- struct{}{}:
	default:
	}
}

// Run fires schedules during each of the leader's terms until ctx ends. It returns nil once
// every goroutine it started has ended.
func (x *Executor) Run(ctx context.Context) error {
	for {
		changed := x.leader.Changed()
		if term, ok := x.leader.Term(); ok {
			x.lead(ctx, term)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// lead runs one term, until it or ctx ends.
func (x *Executor) lead(ctx context.Context, term Term) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-term.Done:
			cancel() // interrupts a fire in progress
		case <-stop:
		}
	})
	defer wg.Wait()
	defer close(stop)

	log := x.log.With(logEpoch, term.Epoch)
	log.Info("cron executor leading")
	t := &termState{x: x, fence: term.Fence(), log: log, entries: map[string]*entry{}, retries: map[runKey]*retry{}}
	t.run(ctx)
	log.Info("cron executor stopped leading")
}

// entry is a schedule being fired.
type entry struct {
	s      Schedule
	expr   schedule.Expr
	cursor time.Time // runs at or before cursor are handled (fired, claimed or skipped)
	next   time.Time // expr.Next(cursor)
}

type runKey struct {
	id string
	at int64 // unix microseconds
}

// retry is a run to attempt again: claimed (by this term, or left in doubt by an earlier one)
// or not yet claimed because the claim failed.
type retry struct {
	id          string
	at          time.Time
	claimed     bool
	staleBefore time.Time // claimed: the start of the latest attempt known
	attempts    int
	due         time.Time
}

// termState is the state of one term; it lives on Run's goroutine only.
type termState struct {
	x         *Executor
	fence     store.Fence
	log       *slog.Logger
	entries   map[string]*entry
	retries   map[runKey]*retry
	nextLoad  time.Time
	loadFails int
	nextPrune time.Time
}

func (t *termState) run(ctx context.Context) {
	t.load(ctx)
	t.prune(ctx)
	for {
		t.fireDue(ctx)
		if ctx.Err() != nil {
			return
		}
		timer := time.NewTimer(time.Until(t.nextWake()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-t.x.reload:
			timer.Stop()
			t.load(ctx)
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(t.nextLoad) {
			t.load(ctx)
		}
		if !now.Before(t.nextPrune) {
			t.prune(ctx)
		}
	}
}

// nextWake is the earliest time something is due.
func (t *termState) nextWake() time.Time {
	wake := t.nextLoad
	if t.nextPrune.Before(wake) {
		wake = t.nextPrune
	}
	for _, e := range t.entries {
		if !e.next.IsZero() && e.next.Before(wake) {
			wake = e.next
		}
	}
	for _, r := range t.retries {
		if r.due.Before(wake) {
			wake = r.due
		}
	}
	return wake
}

// load (re)reads the schedules. New schedules continue from their latest recorded run; a
// schedule whose expression or time zone changed counts from now, so an edit never fires runs
// of the new expression that fell in the past. Runs left claimed by an earlier term are queued
// for a retry.
func (t *termState) load(ctx context.Context) {
	x := t.x
	list, err := x.src.CronTriggers(ctx)
	var last map[string]time.Time
	var pending []store.CronFire
	if err == nil {
		last, err = x.db.LastCronFires(ctx)
	}
	now := time.Now()
	if err == nil {
		pending, err = x.db.PendingCronFires(ctx, now.Add(-x.opts.MissedWindow))
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		t.loadFails++
		wait := min(backoff(t.loadFails), x.opts.ReloadInterval)
		t.log.Warn("load cron triggers", logError, err, logAttempt, t.loadFails)
		t.nextLoad = now.Add(wait)
		return
	}
	t.loadFails = 0
	t.nextLoad = now.Add(x.opts.ReloadInterval)

	seen := make(map[string]bool, len(list))
	for _, s := range list {
		seen[s.ID] = true
		old := t.entries[s.ID]
		if old != nil && old.s.Expression == s.Expression && old.s.Timezone == s.Timezone {
			old.s = s
			continue
		}
		expr, err := schedule.Parse(s.Expression, s.Timezone)
		if err != nil {
			t.dropEntry(s.ID)
			if key := s.Expression + "\x00" + s.Timezone; x.warned[s.ID] != key {
				x.warned[s.ID] = key
				t.log.Warn("cron trigger not scheduled: invalid expression", logSchedule, s.ID, logAccount, s.AccountID,
					logPipeline, s.PipelineID, logError, err)
			}
			continue
		}
		delete(x.warned, s.ID)
		e := &entry{s: s, expr: expr}
		switch {
		case old != nil:
			e.cursor = now
		default:
			e.cursor = last[s.ID]
			if s.LastFired.After(e.cursor) {
				e.cursor = s.LastFired
			}
			if e.cursor.IsZero() {
				e.cursor = now
			}
		}
		e.next = expr.Next(e.cursor)
		t.entries[s.ID] = e
	}
	for id := range t.entries {
		if !seen[id] {
			t.dropEntry(id)
		}
	}
	for id := range x.warned {
		if !seen[id] {
			delete(x.warned, id)
		}
	}

	for _, p := range pending {
		k := runKey{p.ScheduleID, p.ScheduledAt.UnixMicro()}
		if t.entries[p.ScheduleID] == nil || t.retries[k] != nil {
			continue
		}
		due := p.ClaimedAt.Add(x.opts.FireTimeout) // the attempt in doubt has surely ended by then
		t.retries[k] = &retry{id: p.ScheduleID, at: p.ScheduledAt, claimed: true, staleBefore: p.ClaimedAt, attempts: p.Attempts, due: due}
		t.log.Info("cron run in doubt: will retry", logSchedule, p.ScheduleID, logScheduled, p.ScheduledAt,
			logHolder, p.Holder, logAttempt, p.Attempts)
	}
}

func (t *termState) dropEntry(id string) {
	delete(t.entries, id)
	for k := range t.retries {
		if k.id == id {
			delete(t.retries, k)
		}
	}
}

func (t *termState) prune(ctx context.Context) {
	now := time.Now()
	t.nextPrune = now.Add(pruneInterval)
	n, err := t.x.db.PruneCronFires(ctx, now.Add(-t.x.opts.retention()))
	if err != nil {
		if ctx.Err() == nil {
			t.log.Warn("prune cron run records", logError, err)
		}
		return
	}
	if n > 0 {
		t.log.Debug("pruned cron run records", logCount, n)
	}
}

// fireDue fires the runs that are due, schedule by schedule in time order, then the due retries.
func (t *termState) fireDue(ctx context.Context) {
	now := time.Now()
	var due []*entry
	for _, e := range t.entries {
		if !e.next.IsZero() && !e.next.After(now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *entry) int {
		if c := a.next.Compare(b.next); c != 0 {
			return c
		}
		return cmp.Compare(a.s.ID, b.s.ID)
	})
	for _, e := range due {
		if t.entries[e.s.ID] != e { // dropped meanwhile
			continue
		}
		for _, at := range t.plan(e, now) {
			if ctx.Err() != nil {
				return
			}
			t.claimAndFire(ctx, e, at, 0)
		}
	}

	var retries []*retry
	for _, r := range t.retries {
		if !r.due.After(time.Now()) {
			retries = append(retries, r)
		}
	}
	slices.SortFunc(retries, func(a, b *retry) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for _, r := range retries {
		if ctx.Err() != nil {
			return
		}
		delete(t.retries, runKey{r.id, r.at.UnixMicro()})
		e := t.entries[r.id]
		if e == nil {
			continue
		}
		if !r.claimed {
			t.claimAndFire(ctx, e, r.at, r.attempts)
			continue
		}
		if r.attempts >= t.x.opts.FireAttempts {
			t.finish(ctx, e, r.at, store.CronFailed, fmt.Sprintf("gave up after %d attempts; the outcome of the last one is unknown", r.attempts))
			continue
		}
		claimedAt := time.Now()
		ok, err := t.x.db.RetakeCronFire(ctx, t.fence, r.id, r.at, r.staleBefore, claimedAt)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			t.log.Warn("retake cron run", logSchedule, r.id, logScheduled, r.at, logError, err)
			r.due = time.Now().Add(backoff(r.attempts + 1))
			t.retries[runKey{r.id, r.at.UnixMicro()}] = r
		case !ok:
			t.log.Info("cron run finished or taken by another leader", logSchedule, r.id, logScheduled, r.at)
		default:
			t.attempt(ctx, e, r.at, r.attempts+1, claimedAt)
		}
	}
}

// plan returns the runs of e to fire now, oldest first, by the missed-run policy, and moves e's
// cursor past every run up to now.
func (t *termState) plan(e *entry, now time.Time) []time.Time {
	o := t.x.opts
	lower, keep := now.Add(-o.MissedWindow), 1
	switch o.Missed {
	case MissedSkip:
		lower, keep = now.Add(-o.Grace), maxPlanSteps
	case MissedAll:
		keep = o.MaxCatchUp
	}
	from := e.cursor
	tooOld := false
	if from.Before(lower) {
		tooOld = e.next.Before(lower) || e.next.Equal(lower)
		from = lower
	}
	var runs []time.Time
	total := 0
	at := e.expr.Next(from)
	for steps := 0; !at.IsZero() && !at.After(now) && steps < maxPlanSteps; steps++ {
		total++
		runs = append(runs, at)
		if len(runs) > keep {
			runs = runs[1:]
		}
		at = e.expr.Next(at)
	}
	if skipped := total - len(runs); skipped > 0 || tooOld {
		args := []any{logSchedule, e.s.ID, logPolicy, o.Missed, logSkipped, skipped}
		if tooOld {
			args = append(args, logReason, "runs before "+lower.UTC().Format(time.RFC3339)+" are outside the missed-run window")
		}
		t.log.Info("skipped missed cron runs", args...)
	}
	e.cursor = from
	if len(runs) > 0 {
		e.cursor = runs[len(runs)-1]
	}
	if !at.IsZero() && !at.After(now) { // maxPlanSteps reached
		e.cursor = now
	}
	e.next = e.expr.Next(e.cursor)
	return runs
}

// claimAndFire claims the run of e at at and, if this replica got it, fires it. attempts is the
// number of attempts already made (0 for a new run).
func (t *termState) claimAndFire(ctx context.Context, e *entry, at time.Time, attempts int) {
	claimedAt := time.Now()
	ok, err := t.x.db.ClaimCronFire(ctx, t.fence, e.s.ID, at, claimedAt)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return
		}
		t.log.Warn("claim cron run", logSchedule, e.s.ID, logScheduled, at, logError, err)
		t.retries[runKey{e.s.ID, at.UnixMicro()}] = &retry{id: e.s.ID, at: at, attempts: attempts, due: time.Now().Add(backoff(attempts + 1))}
	case !ok:
		// Claimed before (by this or another leader), or this replica's lease is gone.
		t.log.Debug("cron run already claimed or lease lost", logSchedule, e.s.ID, logScheduled, at)
	default:
		t.attempt(ctx, e, at, attempts+1, claimedAt)
	}
}

// attempt calls the fire function for a run this replica has claimed and records the outcome.
func (t *termState) attempt(ctx context.Context, e *entry, at time.Time, attempt int, claimedAt time.Time) {
	fctx, cancel := context.WithTimeout(ctx, t.x.opts.FireTimeout)
	err := t.x.fire(fctx, e.s, at)
	cancel()
	log := t.log.With(logSchedule, e.s.ID, logAccount, e.s.AccountID, logPipeline, e.s.PipelineID, logScheduled, at, logAttempt, attempt)
	switch {
	case err == nil || errors.Is(err, errdefs.ErrConflict):
		t.finish(ctx, e, at, store.CronFired, "")
		log.Info("fired cron trigger")
	case ctx.Err() != nil:
		// The term ended mid-fire: the run stays claimed, and the next leader retries it once
		// this attempt is older than the fire timeout.
		log.Warn("cron run interrupted: leadership lost", logError, err)
	case permanent(err) || attempt >= t.x.opts.FireAttempts:
		t.finish(ctx, e, at, store.CronFailed, err.Error())
		log.Error("cron run failed", logError, err)
	default:
		t.note(ctx, e, at, err.Error())
		wait := backoff(attempt)
		log.Warn("cron run failed: will retry", logError, err, "retry_in", wait)
		t.retries[runKey{e.s.ID, at.UnixMicro()}] = &retry{id: e.s.ID, at: at, claimed: true, staleBefore: claimedAt,
			attempts: attempt, due: time.Now().Add(wait)}
	}
}

// finish records a run's outcome. It outlives the term's context: a fire that happened must be
// recorded even if leadership was lost just after.
func (t *termState) finish(ctx context.Context, e *entry, at time.Time, status, msg string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := t.x.db.FinishCronFire(wctx, e.s.ID, at, status, msg, time.Now()); err != nil {
		t.log.Warn("record cron run", logSchedule, e.s.ID, logScheduled, at, logError, err)
	}
}

func (t *termState) note(ctx context.Context, e *entry, at time.Time, msg string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := t.x.db.FinishCronFire(wctx, e.s.ID, at, store.CronClaimed, msg, time.Now()); err != nil {
		t.log.Warn("record cron run error", logSchedule, e.s.ID, logScheduled, at, logError, err)
	}
}

// permanent reports whether a fire error will not go away by retrying.
func permanent(err error) bool {
	return errors.Is(err, errdefs.ErrInvalid) || errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, errdefs.ErrForbidden)
}

// backoff returns the wait before attempt n+1 (n ≥ 1): retryBase doubling up to retryMax, with
// jitter.
func backoff(n int) time.Duration {
	d := retryBase
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return jitter(min(d, retryMax))
}
