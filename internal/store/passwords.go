package store

import (
	"context"
	"database/sql"
	"time"
)

// PasswordReset is a stored password reset token: only its secret's hash.
type PasswordReset struct {
	ID         string // the token's public id
	UserID     string
	AccountID  string // the account whose admin issued it
	SecretHash string
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	UsedAt     time.Time // zero: not used
}

// SetUserPassword replaces userID's password hash.
func (q *Queries) SetUserPassword(ctx context.Context, userID, hash string) error {
	res, err := q.exec(ctx, `UPDATE users SET password_hash = ? WHERE id = ?`, hash, userID)
	if err != nil {
		return err
	}
	return affected(res, "user", userID)
}

// SessionsOf lists userID's sessions that have not expired at now, in every account, oldest first.
func (q *Queries) SessionsOf(ctx context.Context, userID string, now time.Time) ([]Session, error) {
	rows, err := q.query(ctx, `SELECT id, token_hash, user_id, account_id, created_at, expires_at, sso_bound FROM sessions
		WHERE user_id = ? AND expires_at >= ? ORDER BY id`, userID, micros(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var s Session
		var created, expires, bound int64
		if err := rows.Scan(&s.ID, &s.TokenHash, &s.UserID, &s.AccountID, &created, &expires, &bound); err != nil {
			return nil, err
		}
		s.CreatedAt, s.ExpiresAt, s.SSOBound = fromMicros(created), fromMicros(expires), bound != 0
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteSessionOf ends userID's session id; another user's session is ErrNotFound.
func (q *Queries) DeleteSessionOf(ctx context.Context, userID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM sessions WHERE user_id = ? AND id = ?`, userID, id)
	if err != nil {
		return err
	}
	return affected(res, "session", id)
}

// DeleteSessionsOf ends every session of userID but except (empty: all) and reports how many.
func (q *Queries) DeleteSessionsOf(ctx context.Context, userID, except string) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM sessions WHERE user_id = ? AND id <> ?`, userID, except)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// CreatePasswordReset stores a reset token. Earlier unused tokens of the user stop working.
func (q *Queries) CreatePasswordReset(ctx context.Context, r PasswordReset) error {
	if _, err := q.exec(ctx, `DELETE FROM password_resets WHERE user_id = ? AND used_at IS NULL`, r.UserID); err != nil {
		return err
	}
	_, err := q.exec(ctx, `INSERT INTO password_resets (id, user_id, account_id, secret_hash, created_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, r.ID, r.UserID, r.AccountID, r.SecretHash, r.CreatedBy, micros(r.CreatedAt), micros(r.ExpiresAt))
	return err
}

// PasswordResetByID returns the reset token with public id.
func (q *Queries) PasswordResetByID(ctx context.Context, id string) (PasswordReset, error) {
	var r PasswordReset
	var created, expires int64
	var used sql.NullInt64
	err := q.queryRow(ctx, `SELECT id, user_id, account_id, secret_hash, created_by, created_at, expires_at, used_at FROM password_resets WHERE id = ?`, id).
		Scan(&r.ID, &r.UserID, &r.AccountID, &r.SecretHash, &r.CreatedBy, &created, &expires, &used)
	if err != nil {
		return PasswordReset{}, notFound(err, "password reset", id)
	}
	r.CreatedAt, r.ExpiresAt, r.UsedAt = fromMicros(created), fromMicros(expires), fromNullMicros(used)
	return r, nil
}

// UsePasswordReset marks reset id used at t; a token used before (or gone) is ErrNotFound, so of
// two uses at once exactly one succeeds.
func (q *Queries) UsePasswordReset(ctx context.Context, id string, t time.Time) error {
	res, err := q.exec(ctx, `UPDATE password_resets SET used_at = ? WHERE id = ? AND used_at IS NULL`, micros(t), id)
	if err != nil {
		return err
	}
	return affected(res, "password reset", id)
}
