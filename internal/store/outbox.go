package store

import (
	"context"
	"time"
)

// PrefixOutbox is the ID prefix of outbox messages.
const PrefixOutbox = "obx"

// OutboxMessage is a domain event waiting to be published: written in the transaction of the
// change it describes, published to Subject with idempotency key Key by the outbox relay
// (internal/events), then deleted. Payload is the event as JSON.
type OutboxMessage struct {
	ID, AccountID, Subject, Key, Payload string
	CreatedAt                            time.Time
}

// InsertOutbox queues m. Call it on the Tx that makes the change m describes.
func (q *Queries) InsertOutbox(ctx context.Context, m OutboxMessage) error {
	if m.ID == "" {
		m.ID = NewID(PrefixOutbox)
	}
	_, err := q.exec(ctx, `INSERT INTO outbox (id, account_id, subject, msg_key, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		m.ID, m.AccountID, m.Subject, m.Key, m.Payload, micros(m.CreatedAt))
	return err
}

// OutboxBatch returns up to limit queued messages of every account, oldest first. It is the
// relay's read, not a tenant query: never serve it to users.
func (q *Queries) OutboxBatch(ctx context.Context, limit int) ([]OutboxMessage, error) {
	rows, err := q.query(ctx, `SELECT id, account_id, subject, msg_key, payload, created_at FROM outbox ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []OutboxMessage
	for rows.Next() {
		var m OutboxMessage
		var created int64
		if err := rows.Scan(&m.ID, &m.AccountID, &m.Subject, &m.Key, &m.Payload, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = fromMicros(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// DeleteOutbox forgets published messages. Deleting one twice (two relays) is not an error.
func (q *Queries) DeleteOutbox(ctx context.Context, ids ...string) error {
	return q.deleteIDs(ctx, "outbox", ids)
}

// deleteIDs deletes the rows of table with the IDs, 500 to a statement.
func (q *Queries) deleteIDs(ctx context.Context, table string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		if _, err := q.exec(ctx, `DELETE FROM `+table+` WHERE id IN (?`+repeat(", ?", n-1)+`)`, args...); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// GitOpsWebhook is an account's GitOps push webhook secret, encrypted.
type GitOpsWebhook struct {
	AccountID, SecretEnc string
	CreatedAt            time.Time
}

// SetGitOpsWebhook sets (or replaces) account's GitOps webhook secret.
func (q *Queries) SetGitOpsWebhook(ctx context.Context, w GitOpsWebhook) error {
	_, err := q.exec(ctx, `INSERT INTO gitops_webhooks (account_id, secret_enc, created_at) VALUES (?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET secret_enc = excluded.secret_enc, created_at = excluded.created_at`,
		w.AccountID, w.SecretEnc, micros(w.CreatedAt))
	return err
}

// GetGitOpsWebhook returns account's GitOps webhook secret (ErrNotFound when none is set).
func (q *Queries) GetGitOpsWebhook(ctx context.Context, accountID string) (GitOpsWebhook, error) {
	w := GitOpsWebhook{AccountID: accountID}
	var created int64
	err := q.queryRow(ctx, `SELECT secret_enc, created_at FROM gitops_webhooks WHERE account_id = ?`, accountID).Scan(&w.SecretEnc, &created)
	if err != nil {
		return GitOpsWebhook{}, notFound(err, "GitOps webhook of account", accountID)
	}
	w.CreatedAt = fromMicros(created)
	return w, nil
}

// AllGitOpsWebhooks returns every account's GitOps webhook secret, for master-key rotation only.
func (q *Queries) AllGitOpsWebhooks(ctx context.Context) ([]GitOpsWebhook, error) {
	rows, err := q.query(ctx, `SELECT account_id, secret_enc, created_at FROM gitops_webhooks ORDER BY account_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []GitOpsWebhook
	for rows.Next() {
		var w GitOpsWebhook
		var created int64
		if err := rows.Scan(&w.AccountID, &w.SecretEnc, &created); err != nil {
			return nil, err
		}
		w.CreatedAt = fromMicros(created)
		out = append(out, w)
	}
	return out, rows.Err()
}
