package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// AuditEvent is one audit record.
type AuditEvent struct {
	ID           string
	AccountID    string
	ActorID      string // user ID, or "" for anonymous attempts
	Actor        string // what the actor is called: an email, "apikey:<name>", …
	Action       string // e.g. "user.create"
	ResourceType string
	ResourceID   string
	RequestID    string
	SourceIP     string
	Result       string // "success", "denied", "failure"
	Detail       string
	CreatedAt    time.Time
}

// AuditFilter narrows an audit listing. Zero fields do not filter.
type AuditFilter struct {
	Actor        string // matches ActorID or Actor
	Action       string // exact, or a prefix ending in '.' or '*' ("user." / "user.*")
	ResourceType string
	ResourceID   string
	Result       string
	Since        time.Time
	Until        time.Time
}

// InsertAudit writes one audit record. Call it on the Tx that makes the change it records.
func (q *Queries) InsertAudit(ctx context.Context, e AuditEvent) error {
	_, err := q.exec(ctx, `INSERT INTO audit_events (id, account_id, actor_id, actor, action, resource_type, resource_id,
		request_id, source_ip, result, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.AccountID, e.ActorID, e.Actor, e.Action, e.ResourceType, e.ResourceID, e.RequestID, e.SourceIP, e.Result, e.Detail, micros(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("write audit record %s: %w", e.Action, err)
	}
	return nil
}

// ListAudit returns account's audit records, newest first. p.After is the last ID of the
// previous page (records older than it follow).
func (q *Queries) ListAudit(ctx context.Context, accountID string, f AuditFilter, p paging.Page) ([]AuditEvent, error) {
	query := `SELECT id, account_id, actor_id, actor, action, resource_type, resource_id, request_id, source_ip, result, detail, created_at
		FROM audit_events WHERE account_id = ?`
	args := []any{accountID}
	if p.After != "" {
		query += ` AND id < ?`
		args = append(args, p.After)
	}
	if f.Actor != "" {
		query += ` AND (actor_id = ? OR actor = ?)`
		args = append(args, f.Actor, f.Actor)
	}
	if f.Action != "" {
		if n := len(f.Action); f.Action[n-1] == '*' || f.Action[n-1] == '.' {
			prefix := f.Action[:n-1] // "user.*" and "user." both match "user.create"
			if f.Action[n-1] == '.' {
				prefix = f.Action
			}
			query += ` AND substr(action, 1, ?) = ?`
			args = append(args, len(prefix), prefix)
		} else {
			query += ` AND action = ?`
			args = append(args, f.Action)
		}
	}
	for _, c := range []struct{ col, v string }{{"resource_type", f.ResourceType}, {"resource_id", f.ResourceID}, {"result", f.Result}} {
		if c.v != "" {
			query += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	if !f.Since.IsZero() {
		query += ` AND created_at >= ?`
		args = append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		query += ` AND created_at < ?`
		args = append(args, micros(f.Until))
	}
	query += ` ORDER BY id DESC LIMIT ?`
	args = append(args, p.Size())
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		var created int64
		if err := rows.Scan(&e.ID, &e.AccountID, &e.ActorID, &e.Actor, &e.Action, &e.ResourceType, &e.ResourceID,
			&e.RequestID, &e.SourceIP, &e.Result, &e.Detail, &created); err != nil {
			return nil, err
		}
		e.CreatedAt = fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// AuditAfter returns up to limit audit records of every account with IDs after afterID, oldest
// first. It is the outbox read of the event relay, not a tenant query: never serve it to users.
func (q *Queries) AuditAfter(ctx context.Context, afterID string, limit int) ([]AuditEvent, error) {
	rows, err := q.query(ctx, `SELECT id, account_id, actor_id, actor, action, resource_type, resource_id, request_id, source_ip, result, detail, created_at
		FROM audit_events WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		var created int64
		if err := rows.Scan(&e.ID, &e.AccountID, &e.ActorID, &e.Actor, &e.Action, &e.ResourceType, &e.ResourceID,
			&e.RequestID, &e.SourceIP, &e.Result, &e.Detail, &created); err != nil {
			return nil, err
		}
		e.CreatedAt = fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// RelayCursor returns how far relay name has published ("" before the first record).
func (q *Queries) RelayCursor(ctx context.Context, name string) (string, error) {
	var pos string
	err := q.queryRow(ctx, `SELECT position FROM relay_cursors WHERE name = ?`, name).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return pos, err
}

// AdvanceRelayCursor moves relay name forward to pos; it never moves a cursor back, so two
// replicas relaying at once cannot lose each other's progress.
func (q *Queries) AdvanceRelayCursor(ctx context.Context, name, pos string) error {
	_, err := q.exec(ctx, `INSERT INTO relay_cursors (name, position) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET position = excluded.position WHERE relay_cursors.position < excluded.position`, name, pos)
	return err
}

// ResetRelayCursor forgets relay name's progress, so it publishes everything again (operators
// use it to replay events; duplicates within the bus's window are dropped).
func (q *Queries) ResetRelayCursor(ctx context.Context, name string) error {
	_, err := q.exec(ctx, `DELETE FROM relay_cursors WHERE name = ?`, name)
	return err
}
