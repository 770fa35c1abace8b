package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AccountPlan is the plan an account is on (internal/billing reads the plan's limits from the
// operator's catalogue). An account without a row is on the catalogue's default plan: Plan "".
type AccountPlan struct {
	AccountID string
	Plan      string
	ChangedBy string
	ChangedAt time.Time
}

// GetAccountPlan returns accountID's plan row; an account without one gets AccountPlan{Plan: ""}.
func (q *Queries) GetAccountPlan(ctx context.Context, accountID string) (AccountPlan, error) {
	p := AccountPlan{AccountID: accountID}
	var at int64
	err := q.queryRow(ctx, `SELECT plan, changed_by, changed_at FROM account_plans WHERE account_id = ?`, accountID).Scan(&p.Plan, &p.ChangedBy, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	p.ChangedAt = fromMicros(at)
	return p, err
}

// LockAccountPlan returns accountID's plan ("" for the default plan) and, on PostgreSQL, holds
// the row locked until the transaction ends (SQLite's transactions hold the database's one
// write lock from their start). Call it on the Tx that creates a limited resource, before
// counting what the account has: admissions of one account then happen one after another, and
// each counts what the one before it committed.
func (q *Queries) LockAccountPlan(ctx context.Context, accountID string) (string, error) {
	if _, err := q.exec(ctx, `INSERT INTO account_plans (account_id, plan, changed_by, changed_at) VALUES (?, '', '', 0)
		ON CONFLICT (account_id) DO NOTHING`, accountID); err != nil {
		return "", fmt.Errorf("lock plan of account %s: %w", accountID, err)
	}
	query := `SELECT plan FROM account_plans WHERE account_id = ?`
	if q.d == Postgres {
		query += ` FOR UPDATE`
	}
	var plan string
	if err := q.queryRow(ctx, query, accountID).Scan(&plan); err != nil {
		return "", fmt.Errorf("lock plan of account %s: %w", accountID, err)
	}
	return plan, nil
}

// SetAccountPlan puts accountID on plan (locking its row like LockAccountPlan, so no admission
// is between reading the old plan and committing).
func (q *Queries) SetAccountPlan(ctx context.Context, p AccountPlan) error {
	_, err := q.exec(ctx, `INSERT INTO account_plans (account_id, plan, changed_by, changed_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET plan = excluded.plan, changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
		p.AccountID, p.Plan, p.ChangedBy, micros(p.ChangedAt))
	return err
}

// Countable resources, as CountUse names them.
const (
	UseMembers          = "members"
	UseRunners          = "runners"
	UseActiveBuilds     = "active-builds" // running, waiting for approval or terminating
	UseBuildMinutes     = "build-minutes" // since a time: ended builds' run time, plus running ones' so far
	UseHostedRuntimes   = "hosted-runtimes"
	UseApplications     = "applications" // as the account's runtimes reported them
	activeBuildStatuses = `('running', 'pending-approval', 'terminating')`
)

// CountUse counts what accountID has of what (one of the Use* names). since bounds
// UseBuildMinutes (the start of the billing period) and now is the end of running builds'
// time; both are ignored by the others. Build minutes are whole minutes rounded down.
func (q *Queries) CountUse(ctx context.Context, accountID, what string, since, now time.Time) (int64, error) {
	var query string
	args := []any{accountID}
	switch what {
	case UseMembers:
		query = `SELECT COUNT(*) FROM memberships WHERE account_id = ?`
	case UseRunners:
		query = `SELECT COUNT(*) FROM runners WHERE account_id = ?`
	case UseActiveBuilds:
		query = `SELECT COUNT(*) FROM builds WHERE account_id = ? AND status IN ` + activeBuildStatuses
	case UseHostedRuntimes:
		query = `SELECT COUNT(*) FROM runtimes WHERE account_id = ? AND type = 'hosted'`
	case UseApplications:
		query = `SELECT COUNT(*) FROM applications WHERE account_id = ?`
	case UseBuildMinutes:
		// A build's time counts in the period it started in; one still running counts until now.
		query = `SELECT COALESCE(SUM(CASE WHEN finished_at > 0 THEN finished_at ELSE ? END - started_at), 0)
			FROM builds WHERE account_id = ? AND started_at >= ? AND (finished_at > 0 OR status IN ` + activeBuildStatuses + `)`
		args = []any{micros(now), accountID, micros(since)}
	default:
		return 0, fmt.Errorf("count use of %q: no such count", what)
	}
	var n int64
	if err := q.queryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s of account %s: %w", what, accountID, err)
	}
	if what == UseBuildMinutes {
		n /= int64(time.Minute / time.Microsecond)
	}
	return n, nil
}

// UsageDay is one UTC day of an account's metered use.
type UsageDay struct {
	Day          time.Time // midnight UTC
	BuildSeconds int64     // run time of the builds that ended that day
	Builds       int64     // builds that ended that day
	Deployments  int64     // finished syncs (not dry runs) that ended that day
	ActiveUsers  int64     // distinct users with an audited action that day (a login counts)
}

// UsageDays meters accountID's use per UTC day in [from, to), from the records themselves:
// builds, the syncs runtimes reported, audit records. Days with no use are left out.
func (q *Queries) UsageDays(ctx context.Context, accountID string, from, to time.Time) ([]UsageDay, error) {
	days := map[int64]*UsageDay{}
	get := func(d int64) *UsageDay {
		u := days[d]
		if u == nil {
			u = &UsageDay{Day: fromMicros(d * dayMicros)}
			days[d] = u
		}
		return u
	}
	f, t := micros(from), micros(to)
	type part struct {
		query string
		set   func(u *UsageDay, a, b int64)
	}
	parts := []part{
		{`SELECT finished_at / ? AS d, COUNT(*), COALESCE(SUM(finished_at - started_at), 0) FROM builds
			WHERE account_id = ? AND finished_at >= ? AND finished_at < ? AND started_at > 0 GROUP BY d`,
			func(u *UsageDay, a, b int64) { u.Builds, u.BuildSeconds = a, b/int64(time.Second/time.Microsecond) }},
		{`SELECT finished_at / ? AS d, COUNT(*), 0 FROM application_syncs
			WHERE account_id = ? AND finished_at >= ? AND finished_at < ? GROUP BY d`,
			func(u *UsageDay, a, _ int64) { u.Deployments = a }},
		{`SELECT created_at / ? AS d, COUNT(DISTINCT actor_id), 0 FROM audit_events
			WHERE account_id = ? AND created_at >= ? AND created_at < ? AND substr(actor_id, 1, 4) = 'usr_' GROUP BY d`,
			func(u *UsageDay, a, _ int64) { u.ActiveUsers = a }},
	}
	for _, p := range parts {
		rows, err := q.query(ctx, p.query, dayMicros, accountID, f, t)
		if err != nil {
			return nil, fmt.Errorf("meter usage of account %s: %w", accountID, err)
		}
		for rows.Next() {
			var d, a, b int64
			if err := rows.Scan(&d, &a, &b); err != nil {
				rows.Close()
				return nil, err
			}
			p.set(get(d), a, b)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]UsageDay, 0, len(days))
	for d := f / dayMicros; d <= t/dayMicros; d++ {
		if u := days[d]; u != nil {
			out = append(out, *u)
		}
	}
	return out, nil
}
