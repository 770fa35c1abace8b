package store

import (
	"context"
	"time"
)

// PrefixHelmRelease is the ID prefix of the Helm releases' rows.
const PrefixHelmRelease = "hlm"

// HelmRelease is a Helm release a runtime reported of one of its clusters. Detail is the
// reported record as JSON, owned by the runtimes domain.
type HelmRelease struct {
	ID, AccountID, RuntimeID string
	Cluster, Namespace, Name string
	Chart, ChartVersion      string
	AppVersion, Status       string
	Revision                 int
	UpdatedAt, ReportedAt    time.Time
	Detail                   string
}

// HelmReleaseFilter narrows a list of Helm releases; empty fields match anything.
type HelmReleaseFilter struct {
	RuntimeID, Cluster, Namespace, Name string
}

// PutHelmRelease stores r (account r.AccountID, runtime r.RuntimeID), replacing what is kept of
// the same release (runtime, cluster, namespace, name). r.ID is used only for a new row.
func (q *Queries) PutHelmRelease(ctx context.Context, r HelmRelease) error {
	if err := q.ownRuntime(ctx, r.AccountID, r.RuntimeID); err != nil {
		return err
	}
	if r.ID == "" {
		r.ID = NewID(PrefixHelmRelease)
	}
	_, err := q.exec(ctx, `INSERT INTO helm_releases (id, account_id, runtime_id, cluster, namespace, name, chart, chart_version, app_version,
		status, revision, updated_at, reported_at, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (runtime_id, cluster, namespace, name) DO UPDATE SET chart = excluded.chart, chart_version = excluded.chart_version,
			app_version = excluded.app_version, status = excluded.status, revision = excluded.revision, updated_at = excluded.updated_at,
			reported_at = excluded.reported_at, detail = excluded.detail
		WHERE helm_releases.account_id = excluded.account_id`,
		r.ID, r.AccountID, r.RuntimeID, r.Cluster, r.Namespace, r.Name, r.Chart, r.ChartVersion, r.AppVersion, r.Status, r.Revision,
		micros(r.UpdatedAt), micros(r.ReportedAt), r.Detail)
	return q.mapErr(err)
}

// DeleteHelmRelease forgets a release of account's runtime; it reports whether there was one.
func (q *Queries) DeleteHelmRelease(ctx context.Context, accountID, runtimeID, cluster, namespace, name string) (bool, error) {
	res, err := q.exec(ctx, `DELETE FROM helm_releases WHERE account_id = ? AND runtime_id = ? AND cluster = ? AND namespace = ? AND name = ?`,
		accountID, runtimeID, cluster, namespace, name)
	if err != nil {
		return false, q.mapErr(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// KeepHelmReleases deletes the releases of account's runtime in cluster whose "namespace/name"
// is not in keep, and returns how many it deleted.
func (q *Queries) KeepHelmReleases(ctx context.Context, accountID, runtimeID, cluster string, keep map[string]bool) (int, error) {
	rows, err := q.query(ctx, `SELECT namespace, name FROM helm_releases WHERE account_id = ? AND runtime_id = ? AND cluster = ?`,
		accountID, runtimeID, cluster)
	if err != nil {
		return 0, err
	}
	var gone [][2]string
	for rows.Next() {
		var ns, name string
		if err := rows.Scan(&ns, &name); err != nil {
			rows.Close()
			return 0, err
		}
		if !keep[ns+"/"+name] {
			gone = append(gone, [2]string{ns, name})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, g := range gone {
		if _, err := q.DeleteHelmRelease(ctx, accountID, runtimeID, cluster, g[0], g[1]); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}

const helmReleaseColumns = `id, account_id, runtime_id, cluster, namespace, name, chart, chart_version, app_version, status, revision,
	updated_at, reported_at, detail`

func scanHelmRelease(sc interface{ Scan(...any) error }) (HelmRelease, error) {
	var r HelmRelease
	var updated, reported int64
	if err := sc.Scan(&r.ID, &r.AccountID, &r.RuntimeID, &r.Cluster, &r.Namespace, &r.Name, &r.Chart, &r.ChartVersion, &r.AppVersion,
		&r.Status, &r.Revision, &updated, &reported, &r.Detail); err != nil {
		return r, err
	}
	r.UpdatedAt, r.ReportedAt = fromMicros(updated), fromMicros(reported)
	return r, nil
}

// ListHelmReleases returns account's Helm releases that pass f, by cluster, namespace, name and
// runtime, at most limit of them.
func (q *Queries) ListHelmReleases(ctx context.Context, accountID string, f HelmReleaseFilter, limit int) ([]HelmRelease, error) {
	query := `SELECT ` + helmReleaseColumns + ` FROM helm_releases WHERE account_id = ?`
	args := []any{accountID}
	for _, c := range []struct{ col, v string }{{"runtime_id", f.RuntimeID}, {"cluster", f.Cluster}, {"namespace", f.Namespace}, {"name", f.Name}} {
		if c.v != "" {
			query += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	query += ` ORDER BY cluster, namespace, name, runtime_id LIMIT ?`
	rows, err := q.query(ctx, query, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HelmRelease
	for rows.Next() {
		r, err := scanHelmRelease(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
