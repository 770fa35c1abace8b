package store

import (
	"context"
	"time"
)

// HostedCredential is a hosted runtime's token, encrypted under the master keys by the runtime
// registry (the store never sees it in clear).
type HostedCredential struct {
	RuntimeID, AccountID, Name string
	TokenEnc                   string
	UpdatedAt                  time.Time
}

// SetHostedCredential stores (or replaces) hosted runtime runtimeID's encrypted token.
func (q *Queries) SetHostedCredential(ctx context.Context, runtimeID, tokenEnc string, t time.Time) error {
	_, err := q.exec(ctx, `INSERT INTO hosted_credentials (runtime_id, token_enc, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (runtime_id) DO UPDATE SET token_enc = excluded.token_enc, updated_at = excluded.updated_at`,
		runtimeID, tokenEnc, micros(t))
	return err
}

// HostedCredentials lists the stored tokens of the hosted runtimes of every account, by
// runtime ID.
func (q *Queries) HostedCredentials(ctx context.Context) ([]HostedCredential, error) {
	rows, err := q.query(ctx, `SELECT h.runtime_id, r.account_id, r.name, h.token_enc, h.updated_at
		FROM hosted_credentials h JOIN runtimes r ON r.id = h.runtime_id ORDER BY h.runtime_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HostedCredential
	for rows.Next() {
		var c HostedCredential
		var at int64
		if err := rows.Scan(&c.RuntimeID, &c.AccountID, &c.Name, &c.TokenEnc, &at); err != nil {
			return nil, err
		}
		c.UpdatedAt = fromMicros(at)
		out = append(out, c)
	}
	return out, rows.Err()
}
