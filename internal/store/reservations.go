package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LimitReservation holds one admitted creation a runtime has not reported yet (see
// internal/billing Reserve): resource is the plan's resource (applications,
// clusters-per-runtime), Name the application's or the cluster's in runtime RuntimeID.
type LimitReservation struct {
	ID        string
	AccountID string
	Resource  string
	RuntimeID string
	Name      string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Reserved is a pending reservation's object: a runtime and a name.
type Reserved struct {
	RuntimeID string
	Name      string
}

// The resources reservations are taken for, as the plan names them.
const (
	ReserveApplications = "applications"
	ReserveClusters     = "clusters-per-runtime"
)

// ReserveLimit stores r. Take it in the transaction that admitted it, under the account's plan
// row lock (LockAccountPlan). A runtime that is not the account's is ErrNotFound.
func (q *Queries) ReserveLimit(ctx context.Context, r LimitReservation) error {
	if err := q.ownRuntime(ctx, r.AccountID, r.RuntimeID); err != nil {
		return err
	}
	_, err := q.exec(ctx, `INSERT INTO limit_reservations (id, account_id, resource, runtime_id, name, created_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, r.AccountID, r.Resource, r.RuntimeID, r.Name, r.CreatedBy, micros(r.CreatedAt), micros(r.ExpiresAt))
	if err != nil {
		return fmt.Errorf("reserve %s %q: %w", r.Resource, r.Name, q.mapErr(err))
	}
	return nil
}

// PendingApplications returns accountID's application reservations unexpired at now whose
// application no runtime has reported yet, one per runtime and name.
func (q *Queries) PendingApplications(ctx context.Context, accountID string, now time.Time) ([]Reserved, error) {
	return q.reserved(ctx, `SELECT DISTINCT r.runtime_id, r.name FROM limit_reservations r
		WHERE r.account_id = ? AND r.resource = ? AND r.expires_at > ?
		AND NOT EXISTS (SELECT 1 FROM applications a WHERE a.runtime_id = r.runtime_id AND a.name = r.name)`,
		accountID, ReserveApplications, micros(now))
}

// PendingReservations returns accountID's reservations of resource in runtime runtimeID
// unexpired at now, one per name.
func (q *Queries) PendingReservations(ctx context.Context, accountID, resource, runtimeID string, now time.Time) ([]Reserved, error) {
	return q.reserved(ctx, `SELECT DISTINCT runtime_id, name FROM limit_reservations
		WHERE account_id = ? AND resource = ? AND runtime_id = ? AND expires_at > ?`,
		accountID, resource, runtimeID, micros(now))
}

func (q *Queries) reserved(ctx context.Context, query string, args ...any) ([]Reserved, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("pending reservations: %w", err)
	}
	defer rows.Close()
	var out []Reserved
	for rows.Next() {
		var r Reserved
		if err := rows.Scan(&r.RuntimeID, &r.Name); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ApplicationReported reports whether runtime runtimeID of accountID has reported application
// name.
func (q *Queries) ApplicationReported(ctx context.Context, accountID, runtimeID, name string) (bool, error) {
	var n int64
	err := q.queryRow(ctx, `SELECT COUNT(*) FROM applications WHERE account_id = ? AND runtime_id = ? AND name = ?`, accountID, runtimeID, name).Scan(&n)
	return n > 0, err
}

// ReleaseReservation deletes accountID's reservation id (the runtime refused the creation, or
// could not be reached). Releasing one twice is not an error.
func (q *Queries) ReleaseReservation(ctx context.Context, accountID, id string) error {
	_, err := q.exec(ctx, `DELETE FROM limit_reservations WHERE account_id = ? AND id = ?`, accountID, id)
	return err
}

// DeleteExpiredReservations deletes accountID's reservations expired at now.
func (q *Queries) DeleteExpiredReservations(ctx context.Context, accountID string, now time.Time) error {
	_, err := q.exec(ctx, `DELETE FROM limit_reservations WHERE account_id = ? AND expires_at <= ?`, accountID, micros(now))
	return err
}

// SettleApplicationReservations deletes the application reservations of accountID's runtime
// runtimeID whose application the runtime has reported: the reported row counts it now. Run it
// in the transaction of the report, after its applications are stored.
func (q *Queries) SettleApplicationReservations(ctx context.Context, accountID, runtimeID string) error {
	_, err := q.exec(ctx, `DELETE FROM limit_reservations WHERE account_id = ? AND resource = ? AND runtime_id = ?
		AND EXISTS (SELECT 1 FROM applications a WHERE a.runtime_id = limit_reservations.runtime_id AND a.name = limit_reservations.name)`,
		accountID, ReserveApplications, runtimeID)
	return err
}

// SettleReservations deletes accountID's reservations of resource in runtime runtimeID for
// the names the runtime reported (its heartbeat's clusters). Call it after the report is
// stored: until then the reservation counts the object.
func (q *Queries) SettleReservations(ctx context.Context, accountID, resource, runtimeID string, names []string) error {
	for len(names) > 0 {
		chunk := names[:min(len(names), 500)] // well within both databases' bound on parameters
		names = names[len(chunk):]
		args := []any{accountID, resource, runtimeID}
		for _, n := range chunk {
			args = append(args, n)
		}
		if _, err := q.exec(ctx, `DELETE FROM limit_reservations WHERE account_id = ? AND resource = ? AND runtime_id = ? AND name IN (?`+
			strings.Repeat(", ?", len(chunk)-1)+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}
