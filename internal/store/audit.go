package store

import (
	"context"
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

// InsertAudit writes one audit record and queues it for the event relay (UnpublishedAudit).
// Call it on the Tx that makes the change it records.
func (q *Queries) InsertAudit(ctx context.Context, e AuditEvent) error {
	_, err := q.exec(ctx, `INSERT INTO audit_events (id, account_id, actor_id, actor, action, resource_type, resource_id,
		request_id, source_ip, result, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.AccountID, e.ActorID, e.Actor, e.Action, e.ResourceType, e.ResourceID, e.RequestID, e.SourceIP, e.Result, e.Detail, micros(e.CreatedAt))
	if err == nil {
		_, err = q.exec(ctx, `INSERT INTO audit_unpublished (id) VALUES (?)`, e.ID)
	}
	if err != nil {
		return fmt.Errorf("write audit record %s: %w", e.Action, err)
	}
	return nil
}

// InsertAudit writes one record outside any change (a denied or failed call) and queues it for
// the event relay, both in one transaction.
func (db *DB) InsertAudit(ctx context.Context, e AuditEvent) error {
	return db.Tx(ctx, func(tx *Tx) error { return tx.InsertAudit(ctx, e) })
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

// UnpublishedAudit returns up to limit audit records of every account that the event relay has
// not published, oldest first. A record is queued in its own transaction, whatever the order in
// which records with earlier IDs commit, so none is passed over. It is the relay's read, not a
// tenant query: never serve it to users.
func (q *Queries) UnpublishedAudit(ctx context.Context, limit int) ([]AuditEvent, error) {
	rows, err := q.query(ctx, `SELECT a.id, a.account_id, a.actor_id, a.actor, a.action, a.resource_type, a.resource_id, a.request_id,
		a.source_ip, a.result, a.detail, a.created_at
		FROM audit_unpublished u JOIN audit_events a ON a.id = u.id ORDER BY u.id LIMIT ?`, limit)
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

// MarkAuditPublished takes published records off the relay's queue. Marking one twice (two
// relays) is not an error.
func (q *Queries) MarkAuditPublished(ctx context.Context, ids ...string) error {
	return q.deleteIDs(ctx, "audit_unpublished", ids)
}
