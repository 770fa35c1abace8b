package store

import (
	"context"
	"time"
)

// PrefixHubSource is the ID prefix of hub sources.
const PrefixHubSource = "hbs"

// HubSource is a row of hub_sources.
type HubSource struct {
	ID, AccountID, Name, URL, Revision, Path string
	CreatedAt                                time.Time
}

const hubSourceCols = `id, account_id, name, url, revision, path, created_at`

func scanHubSource(s interface{ Scan(...any) error }) (HubSource, error) {
	var h HubSource
	var created int64
	err := s.Scan(&h.ID, &h.AccountID, &h.Name, &h.URL, &h.Revision, &h.Path, &created)
	h.CreatedAt = fromMicros(created)
	return h, err
}

// CreateHubSource stores h; a source of the same name is errdefs.ErrConflict.
func (q *Queries) CreateHubSource(ctx context.Context, h HubSource) error {
	_, err := q.exec(ctx, `INSERT INTO hub_sources (`+hubSourceCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		h.ID, h.AccountID, h.Name, h.URL, h.Revision, h.Path, micros(h.CreatedAt))
	return err
}

// ListHubSources returns account's hub sources by name.
func (q *Queries) ListHubSources(ctx context.Context, accountID string) ([]HubSource, error) {
	rows, err := q.query(ctx, `SELECT `+hubSourceCols+` FROM hub_sources WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HubSource
	for rows.Next() {
		h, err := scanHubSource(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// CountHubSources counts account's hub sources.
func (q *Queries) CountHubSources(ctx context.Context, accountID string) (int, error) {
	var n int
	err := q.queryRow(ctx, `SELECT COUNT(*) FROM hub_sources WHERE account_id = ?`, accountID).Scan(&n)
	return n, err
}

// DeleteHubSource deletes account's hub source name; none is errdefs.ErrNotFound.
func (q *Queries) DeleteHubSource(ctx context.Context, accountID, name string) error {
	res, err := q.exec(ctx, `DELETE FROM hub_sources WHERE account_id = ? AND name = ?`, accountID, name)
	if err != nil {
		return err
	}
	return affected(res, "hub source", name)
}
