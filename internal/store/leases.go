package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Leader leases elect one replica to run a singleton job (the cron executor). Each lease is one
// row changed by single conditional statements, so contenders never race between a read and a
// write: on both backends exactly one of any number of concurrent TryAcquireLease calls for a
// free lease succeeds.
//
// Expiry is judged by the caller's clock (now is a parameter), so replicas' clocks must agree to
// well within a lease's TTL. Correctness does not rest on that alone: the epoch is a fencing
// token, and writes made on behalf of a lease (ClaimCronFire) check it in the same statement.

// Lease is the state of a named leader lease.
type Lease struct {
	Name    string
	Holder  string // empty after a release
	Expires time.Time
	Epoch   int64 // grows by one on every change of holder; never reset
}

// Fence names the lease term a write is made under: the write succeeds only while Holder still
// holds Lease at Epoch, unexpired at the write's time.
type Fence struct {
	Lease  string
	Holder string
	Epoch  int64
}

// TryAcquireLease takes the lease name for holder until now+ttl if it is free, released or
// expired at now, or renews it if holder already holds it. It reports the lease's epoch and
// whether holder holds it now; ok is false, with no error, when another holder's lease is
// current. The epoch grows by one whenever the holder changes, and stays the same on renewal.
func (q *Queries) TryAcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (epoch int64, ok bool, err error) {
	switch {
	case name == "":
		return 0, false, errdefs.Invalid("name", name, "is empty: name the lease, e.g. \"cron\"")
	case holder == "":
		return 0, false, errdefs.Invalid("holder", holder, "is empty: give this replica's unique identity")
	case ttl < time.Millisecond:
		return 0, false, errdefs.Invalid("ttl", ttl.String(), "must be at least 1ms")
	}
	// One statement: insert the lease, or take it over when it is ours or expired. When the
	// condition fails, no row is returned.
	err = q.queryRow(ctx, `INSERT INTO leader_leases (name, holder, expires, epoch) VALUES (?, ?, ?, 1)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires,
			epoch = CASE WHEN leader_leases.holder = excluded.holder THEN leader_leases.epoch ELSE leader_leases.epoch + 1 END
		WHERE leader_leases.holder = excluded.holder OR leader_leases.expires <= ?
		RETURNING epoch`, name, holder, now.Add(ttl).UnixMicro(), now.UnixMicro()).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("acquire lease %s: %w", name, q.mapErr(err))
	}
	return epoch, true, nil
}

// ReleaseLease gives up holder's lease name at once, so another replica can take it without
// waiting for it to expire. The epoch is kept. Releasing a lease holder does not hold does
// nothing.
func (q *Queries) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := q.exec(ctx, `UPDATE leader_leases SET holder = '', expires = 0 WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// GetLease returns the lease name, or ErrNotFound if it was never taken.
func (q *Queries) GetLease(ctx context.Context, name string) (Lease, error) {
	l := Lease{Name: name}
	var expires int64
	err := q.queryRow(ctx, `SELECT holder, expires, epoch FROM leader_leases WHERE name = ?`, name).Scan(&l.Holder, &expires, &l.Epoch)
	if err != nil {
		return Lease{}, notFound(err, "lease", name)
	}
	l.Expires = fromMicros(expires)
	return l, nil
}

// Statuses of a cron run.
const (
	CronClaimed = "claimed" // a leader is firing it, or died while firing it (in doubt)
	CronFired   = "fired"
	CronFailed  = "failed"
)

// CronFire records one run of a cron schedule: the exactly-once key (ScheduleID, ScheduledAt) and
// what became of it.
type CronFire struct {
	ScheduleID  string
	ScheduledAt time.Time
	Status      string // CronClaimed, CronFired or CronFailed
	Holder      string // the replica that made the latest attempt
	Epoch       int64  // its lease epoch
	Attempts    int
	ClaimedAt   time.Time // start of the latest attempt
	FinishedAt  time.Time
	LastError   string
}

// ClaimCronFire records that the run of scheduleID at scheduled is being fired under fence. It
// reports false when the run was claimed before (by any replica) or when fence's lease is no
// longer current at now: the caller must then not fire it. Claim and fence check are one
// statement.
func (q *Queries) ClaimCronFire(ctx context.Context, f Fence, scheduleID string, scheduled, now time.Time) (bool, error) {
	res, err := q.exec(ctx, `INSERT INTO cron_fires (schedule_id, scheduled_at, status, holder, epoch, attempts, claimed_at, finished_at, last_error)
		SELECT CAST(? AS TEXT), CAST(? AS BIGINT), 'claimed', CAST(? AS TEXT), CAST(? AS BIGINT), 1, CAST(? AS BIGINT), 0, ''
		FROM leader_leases WHERE name = ? AND holder = ? AND epoch = ? AND expires > ?
		ON CONFLICT (schedule_id, scheduled_at) DO NOTHING`,
		scheduleID, scheduled.UnixMicro(), f.Holder, f.Epoch, now.UnixMicro(),
		f.Lease, f.Holder, f.Epoch, now.UnixMicro())
	if err != nil {
		return false, fmt.Errorf("claim cron run %s at %s: %w", scheduleID, scheduled.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RetakeCronFire starts another attempt at a claimed run under fence: a retry after a temporary
// failure, or a run a previous leader claimed and never finished. It succeeds only if the run
// is still claimed, its latest attempt started at or before staleBefore, and fence is current
// at now.
func (q *Queries) RetakeCronFire(ctx context.Context, f Fence, scheduleID string, scheduled, staleBefore, now time.Time) (bool, error) {
	res, err := q.exec(ctx, `UPDATE cron_fires SET holder = ?, epoch = ?, attempts = attempts + 1, claimed_at = ?
		WHERE schedule_id = ? AND scheduled_at = ? AND status = 'claimed' AND claimed_at <= ?
		AND EXISTS (SELECT 1 FROM leader_leases WHERE name = ? AND holder = ? AND epoch = ? AND expires > ?)`,
		f.Holder, f.Epoch, now.UnixMicro(), scheduleID, scheduled.UnixMicro(), staleBefore.UnixMicro(),
		f.Lease, f.Holder, f.Epoch, now.UnixMicro())
	if err != nil {
		return false, fmt.Errorf("retake cron run %s at %s: %w", scheduleID, scheduled.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// FinishCronFire records the outcome of a claimed run: status CronFired or CronFailed (with the
// error), or CronClaimed to note a temporary error and keep the run claimed for a retry. A run
// that is no longer claimed is left as it is.
func (q *Queries) FinishCronFire(ctx context.Context, scheduleID string, scheduled time.Time, status, lastError string, now time.Time) error {
	finished := now.UnixMicro()
	switch status {
	case CronFired, CronFailed:
	case CronClaimed:
		finished = 0
	default:
		return errdefs.Invalid("status", status, "must be "+CronFired+", "+CronFailed+" or "+CronClaimed)
	}
	_, err := q.exec(ctx, `UPDATE cron_fires SET status = ?, finished_at = ?, last_error = ?
		WHERE schedule_id = ? AND scheduled_at = ? AND status = 'claimed'`,
		status, finished, lastError, scheduleID, scheduled.UnixMicro())
	if err != nil {
		return fmt.Errorf("finish cron run %s at %s: %w", scheduleID, scheduled.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// LastCronFires returns, per schedule, the latest scheduled time that has a record (claimed,
// fired or failed): the point a new leader continues from.
func (q *Queries) LastCronFires(ctx context.Context) (map[string]time.Time, error) {
	rows, err := q.query(ctx, `SELECT schedule_id, MAX(scheduled_at) FROM cron_fires GROUP BY schedule_id`)
	if err != nil {
		return nil, fmt.Errorf("list last cron runs: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		out[id] = fromMicros(at)
	}
	return out, rows.Err()
}

const cronFireCols = `schedule_id, scheduled_at, status, holder, epoch, attempts, claimed_at, finished_at, last_error`

func (q *Queries) listCronFires(ctx context.Context, query string, args ...any) ([]CronFire, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list cron runs: %w", err)
	}
	defer rows.Close()
	var out []CronFire
	for rows.Next() {
		var f CronFire
		var scheduled, claimed, finished int64
		if err := rows.Scan(&f.ScheduleID, &scheduled, &f.Status, &f.Holder, &f.Epoch, &f.Attempts, &claimed, &finished, &f.LastError); err != nil {
			return nil, err
		}
		f.ScheduledAt, f.ClaimedAt, f.FinishedAt = fromMicros(scheduled), fromMicros(claimed), fromMicros(finished)
		out = append(out, f)
	}
	return out, rows.Err()
}

// PendingCronFires lists runs scheduled at or after since that are still claimed: being fired,
// waiting for a retry, or left in doubt by a leader that stopped. Oldest first.
func (q *Queries) PendingCronFires(ctx context.Context, since time.Time) ([]CronFire, error) {
	return q.listCronFires(ctx, `SELECT `+cronFireCols+` FROM cron_fires WHERE status = 'claimed' AND scheduled_at >= ?
		ORDER BY scheduled_at, schedule_id`, since.UnixMicro())
}

// ListCronFires returns the latest runs of scheduleID, newest first, at most limit (0: 100).
func (q *Queries) ListCronFires(ctx context.Context, scheduleID string, limit int) ([]CronFire, error) {
	if limit <= 0 || limit > maxCronFireList {
		limit = maxCronFireList
	}
	return q.listCronFires(ctx, `SELECT `+cronFireCols+` FROM cron_fires WHERE schedule_id = ?
		ORDER BY scheduled_at DESC LIMIT ?`, scheduleID, limit)
}

const maxCronFireList = 100

// PruneCronFires deletes run records scheduled before t, except each schedule's latest, which
// LastCronFires needs. It reports how many it deleted.
func (q *Queries) PruneCronFires(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM cron_fires WHERE scheduled_at < ?
		AND scheduled_at < (SELECT MAX(f.scheduled_at) FROM cron_fires f WHERE f.schedule_id = cron_fires.schedule_id)`, t.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("prune cron runs: %w", err)
	}
	return res.RowsAffected()
}
