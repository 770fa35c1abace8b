package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// PrefixRuntime is the ID prefix of runtimes.
const PrefixRuntime = "rt"

// Runtime is a registered GitOps runtime. Info is JSON owned by the runtimes package.
type Runtime struct {
	ID, AccountID, Name, Type, AccessMode, IngressURL, Repo string
	TokenPrefix, TokenHash                                  string
	Version, Status, Info                                   string
	LastHeartbeat, CreatedAt                                time.Time
	// OwnerTeamID is the team of the account that owns the runtime (and its clusters,
	// applications, git sources and workflows); empty when none does.
	OwnerTeamID string
	OwnerTeam   string // the owner team's name; reads fill it, writes ignore it
	// TokenExpiresAt is when its token stops working; zero: never.
	TokenExpiresAt time.Time
	// PrevTokenPrefix and PrevTokenHash are the token its last rotation replaced (empty before
	// one), at TokenRotatedAt: kept only to tell that token's holder it was replaced.
	PrevTokenPrefix, PrevTokenHash string
	TokenRotatedAt                 time.Time
	// The last refusal of its own token (expired or replaced): when, why and from where;
	// zero RefusedAt: none since its last successful handshake or heartbeat.
	RefusedAt                                 time.Time
	RefusedKind, RefusedReason, RefusedRemote string
}

const runtimeCols = `id, account_id, name, type, access_mode, ingress_url, repo, token_prefix, token_hash, version, status, info, last_heartbeat, created_at, owner_team_id, ` +
	`token_expires_at, prev_token_prefix, prev_token_hash, token_rotated_at, refused_at, refused_kind, refused_reason, refused_remote`

// runtimeSelect are what scanRuntime reads: the columns, and the owner team's name.
const runtimeSelect = runtimeCols + `, COALESCE((SELECT t.name FROM teams t WHERE t.id = runtimes.owner_team_id), '')`

func scanRuntime(s interface{ Scan(...any) error }) (Runtime, error) {
	var r Runtime
	var hb, created, expires, rotated, refused int64
	err := s.Scan(&r.ID, &r.AccountID, &r.Name, &r.Type, &r.AccessMode, &r.IngressURL, &r.Repo, &r.TokenPrefix, &r.TokenHash,
		&r.Version, &r.Status, &r.Info, &hb, &created, &r.OwnerTeamID,
		&expires, &r.PrevTokenPrefix, &r.PrevTokenHash, &rotated, &refused, &r.RefusedKind, &r.RefusedReason, &r.RefusedRemote, &r.OwnerTeam)
	r.LastHeartbeat, r.CreatedAt = fromMicros(hb), fromMicros(created)
	r.TokenExpiresAt, r.TokenRotatedAt, r.RefusedAt = fromMicros(expires), fromMicros(rotated), fromMicros(refused)
	return r, err
}

// CreateRuntime inserts a runtime. A second hosted runtime of an account is a conflict.
func (q *Queries) CreateRuntime(ctx context.Context, r Runtime) error {
	_, err := q.exec(ctx, `INSERT INTO runtimes (`+runtimeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.AccountID, r.Name, r.Type, r.AccessMode, r.IngressURL, r.Repo, r.TokenPrefix, r.TokenHash, r.Version, r.Status, r.Info,
		micros(r.LastHeartbeat), micros(r.CreatedAt), r.OwnerTeamID,
		micros(r.TokenExpiresAt), r.PrevTokenPrefix, r.PrevTokenHash, micros(r.TokenRotatedAt), micros(r.RefusedAt), r.RefusedKind, r.RefusedReason, r.RefusedRemote)
	if errors.Is(err, errdefs.ErrConflict) {
		if r.Type == "hosted" {
			if _, gerr := q.GetRuntime(ctx, r.AccountID, r.Name); gerr != nil {
				return fmt.Errorf("the account already has a hosted runtime (one per account): %w", errdefs.ErrConflict)
			}
		}
		return fmt.Errorf("name: runtime %q already exists: %w", r.Name, errdefs.ErrConflict)
	}
	return err
}

// GetRuntime returns account's runtime by ID or name.
func (q *Queries) GetRuntime(ctx context.Context, accountID, idOrName string) (Runtime, error) {
	r, err := scanRuntime(q.queryRow(ctx, `SELECT `+runtimeSelect+` FROM runtimes WHERE account_id = ? AND (id = ? OR name = ?)`, accountID, idOrName, idOrName))
	if err != nil {
		return Runtime{}, notFound(err, "runtime", idOrName)
	}
	return r, nil
}

// RuntimeByPrefix finds a runtime by its token prefix, for authentication.
func (q *Queries) RuntimeByPrefix(ctx context.Context, prefix string) (Runtime, error) {
	r, err := scanRuntime(q.queryRow(ctx, `SELECT `+runtimeSelect+` FROM runtimes WHERE token_prefix = ?`, prefix))
	if err != nil {
		return Runtime{}, notFound(err, "runtime", prefix)
	}
	return r, nil
}

// RuntimeByPrevPrefix finds a runtime by the prefix of the token its last rotation replaced,
// to tell that token's holder so.
func (q *Queries) RuntimeByPrevPrefix(ctx context.Context, prefix string) (Runtime, error) {
	if prefix == "" {
		return Runtime{}, fmt.Errorf("runtime with a replaced token: %w", errdefs.ErrNotFound)
	}
	r, err := scanRuntime(q.queryRow(ctx, `SELECT `+runtimeSelect+` FROM runtimes WHERE prev_token_prefix = ?`, prefix))
	if err != nil {
		return Runtime{}, notFound(err, "runtime", prefix)
	}
	return r, nil
}

// ListRuntimes returns account's runtimes by name.
func (q *Queries) ListRuntimes(ctx context.Context, accountID string) ([]Runtime, error) {
	rows, err := q.query(ctx, `SELECT `+runtimeSelect+` FROM runtimes WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Runtime
	for rows.Next() {
		r, err := scanRuntime(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RuntimeHeartbeat records a runtime's heartbeat.
func (q *Queries) RuntimeHeartbeat(ctx context.Context, id, version, status, info string, t time.Time) error {
	res, err := q.exec(ctx, `UPDATE runtimes SET version = ?, status = ?, info = ?, last_heartbeat = ? WHERE id = ?`, version, status, info, micros(t), id)
	if err != nil {
		return err
	}
	return affected(res, "runtime", id)
}

// SetRuntimeInfo replaces a runtime's stored report (the hosted-runtime provisioner adds its
// own component to it while it cannot place the runtime).
func (q *Queries) SetRuntimeInfo(ctx context.Context, id, info string) error {
	_, err := q.exec(ctx, `UPDATE runtimes SET info = ? WHERE id = ?`, info, id)
	return err
}

// SetRuntimeStatus sets a runtime's status.
func (q *Queries) SetRuntimeStatus(ctx context.Context, id, status string) error {
	_, err := q.exec(ctx, `UPDATE runtimes SET status = ? WHERE id = ?`, status, id)
	return err
}

// StaleRuntimes lists runtimes of all accounts whose last heartbeat is older than t and that
// are not yet marked disconnected.
func (q *Queries) StaleRuntimes(ctx context.Context, t time.Time) ([]Runtime, error) {
	rows, err := q.query(ctx, `SELECT `+runtimeSelect+` FROM runtimes WHERE status IN ('healthy', 'degraded') AND last_heartbeat < ?`, micros(t))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Runtime
	for rows.Next() {
		r, err := scanRuntime(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SetRuntimeToken replaces a runtime's token (rotation) with one that expires at expires
// (zero: never), at now. The token replaced is kept as the previous one (RuntimeByPrevPrefix),
// and the runtime's last refusal stays until its new token is used.
func (q *Queries) SetRuntimeToken(ctx context.Context, accountID, id, prefix, hash string, expires, now time.Time) error {
	res, err := q.exec(ctx, `UPDATE runtimes SET prev_token_prefix = token_prefix, prev_token_hash = token_hash, token_rotated_at = ?,
		token_prefix = ?, token_hash = ?, token_expires_at = ? WHERE account_id = ? AND id = ?`,
		micros(now), prefix, hash, micros(expires), accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "runtime", id)
}

// SetRuntimeRefused records runtime id's last refusal: at t, of kind, why, from remote. A refusal for
// the same reason from the same address within RefusalRecordEvery of the recorded one is not
// written again, so a runtime retrying in a loop costs reads, not writes. It reports whether it
// wrote.
func (q *Queries) SetRuntimeRefused(ctx context.Context, id string, t time.Time, kind, reason, remote string) (bool, error) {
	res, err := q.exec(ctx, `UPDATE runtimes SET refused_at = ?, refused_kind = ?, refused_reason = ?, refused_remote = ?
		WHERE id = ? AND (refused_reason <> ? OR refused_remote <> ? OR refused_at < ?)`,
		micros(t), kind, reason, remote, id, reason, remote, micros(t.Add(-RefusalRecordEvery)))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RefusalRecordEvery is how often SetRuntimeRefused writes the same refusal again.
const RefusalRecordEvery = time.Minute

// ClearRuntimeRefused forgets runtime id's last refusal (its token worked since).
func (q *Queries) ClearRuntimeRefused(ctx context.Context, id string) error {
	_, err := q.exec(ctx, `UPDATE runtimes SET refused_at = 0, refused_kind = '', refused_reason = '', refused_remote = '' WHERE id = ? AND refused_at <> 0`, id)
	return err
}

// SetRuntimeOwner makes team ownerTeamID (empty: none) own accountID's runtime id.
func (q *Queries) SetRuntimeOwner(ctx context.Context, accountID, id, ownerTeamID string) error {
	res, err := q.exec(ctx, `UPDATE runtimes SET owner_team_id = ? WHERE account_id = ? AND id = ?`, ownerTeamID, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "runtime", id)
}

// DeleteRuntime deregisters account's runtime.
func (q *Queries) DeleteRuntime(ctx context.Context, accountID, id string) error {
	// Rules derived from the runtime's AppProject roles go with it (ON DELETE CASCADE); the
	// account's policy changes then, so compiled rules are rebuilt.
	var derived int
	if err := q.queryRow(ctx, `SELECT COUNT(*) FROM authz_rules WHERE account_id = ? AND source_runtime_id = ?`, accountID, id).Scan(&derived); err != nil {
		return err
	}
	res, err := q.exec(ctx, `DELETE FROM runtimes WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	if err := affected(res, "runtime", id); err != nil {
		return err
	}
	if derived > 0 {
		return q.BumpPolicyVersion(ctx, accountID)
	}
	return nil
}
