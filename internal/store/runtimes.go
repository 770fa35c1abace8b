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
}

const runtimeCols = `id, account_id, name, type, access_mode, ingress_url, repo, token_prefix, token_hash, version, status, info, last_heartbeat, created_at, owner_team_id`

// runtimeSelect are what scanRuntime reads: the columns, and the owner team's name.
const runtimeSelect = runtimeCols + `, COALESCE((SELECT t.name FROM teams t WHERE t.id = runtimes.owner_team_id), '')`

func scanRuntime(s interface{ Scan(...any) error }) (Runtime, error) {
	var r Runtime
	var hb, created int64
	err := s.Scan(&r.ID, &r.AccountID, &r.Name, &r.Type, &r.AccessMode, &r.IngressURL, &r.Repo, &r.TokenPrefix, &r.TokenHash,
		&r.Version, &r.Status, &r.Info, &hb, &created, &r.OwnerTeamID, &r.OwnerTeam)
	r.LastHeartbeat, r.CreatedAt = fromMicros(hb), fromMicros(created)
	return r, err
}

// CreateRuntime inserts a runtime. A second hosted runtime of an account is a conflict.
func (q *Queries) CreateRuntime(ctx context.Context, r Runtime) error {
	_, err := q.exec(ctx, `INSERT INTO runtimes (`+runtimeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.AccountID, r.Name, r.Type, r.AccessMode, r.IngressURL, r.Repo, r.TokenPrefix, r.TokenHash, r.Version, r.Status, r.Info,
		micros(r.LastHeartbeat), micros(r.CreatedAt), r.OwnerTeamID)
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

// SetRuntimeToken replaces a runtime's token (rotation).
func (q *Queries) SetRuntimeToken(ctx context.Context, accountID, id, prefix, hash string) error {
	res, err := q.exec(ctx, `UPDATE runtimes SET token_prefix = ?, token_hash = ? WHERE account_id = ? AND id = ?`, prefix, hash, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "runtime", id)
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
