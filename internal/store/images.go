package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// PrefixImage is the ID prefix of a pushed image's record.
const PrefixImage = "img"

// BuildImage is an image a build step pushed, as its runner reported it. SHA and Branch are the
// build's.
type BuildImage struct {
	ID, AccountID, BuildID, Step string
	Registry, Repository         string
	Tags                         []string
	Digest                       string
	Size                         int64
	SHA, Branch                  string
	CreatedAt                    time.Time
}

// HoldLease reports whether runnerID still holds leaseID on account's build, which is not
// final. Inside a transaction it also keeps the build's row locked until the transaction ends
// (on PostgreSQL; SQLite's write transactions exclude each other anyway), so the lease cannot be
// lost — reaped, requeued, completed — before what the transaction writes under it commits.
func (q *Queries) HoldLease(ctx context.Context, accountID, buildID, runnerID, leaseID string) (bool, error) {
	res, err := q.exec(ctx, `UPDATE builds SET lease_id = lease_id WHERE account_id = ? AND id = ? AND runner_id = ? AND lease_id = ?
		AND status IN ('running', 'pending-approval', 'terminating')`, accountID, buildID, runnerID, leaseID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PutBuildImage records an image a step pushed. The same image of the same step (repository and
// digest) reported again — a retried report — stores nothing new: its tags are merged into the
// ones recorded, in the order first seen. It reports whether anything changed.
func (q *Queries) PutBuildImage(ctx context.Context, im BuildImage) (bool, error) {
	tags := im.Tags
	if tags == nil {
		tags = []string{}
	}
	enc, err := json.Marshal(tags)
	if err != nil {
		return false, err
	}
	res, err := q.exec(ctx, `INSERT INTO build_images (id, account_id, build_id, step, registry, repository, tags, digest, size, sha, branch, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (build_id, step, repository, digest) DO NOTHING`,
		im.ID, im.AccountID, im.BuildID, im.Step, im.Registry, im.Repository, string(enc), im.Digest, im.Size, im.SHA, im.Branch, micros(im.CreatedAt))
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	var id, stored string
	err = q.queryRow(ctx, `SELECT id, tags FROM build_images WHERE build_id = ? AND step = ? AND repository = ? AND digest = ?`,
		im.BuildID, im.Step, im.Repository, im.Digest).Scan(&id, &stored)
	if err != nil {
		return false, notFound(err, "image", im.Repository+"@"+im.Digest)
	}
	var have []string
	if err := json.Unmarshal([]byte(stored), &have); err != nil {
		return false, fmt.Errorf("image %s: decode tags: %w", id, err)
	}
	merged := have
	for _, t := range tags {
		if !slices.Contains(merged, t) {
			merged = append(merged, t)
		}
	}
	if len(merged) == len(have) {
		return false, nil
	}
	enc, _ = json.Marshal(merged)
	_, err = q.exec(ctx, `UPDATE build_images SET tags = ? WHERE id = ?`, string(enc), id)
	return err == nil, err
}

// ListBuildImages returns the images account's build pushed, in the order they were recorded.
func (q *Queries) ListBuildImages(ctx context.Context, accountID, buildID string) ([]BuildImage, error) {
	return q.buildImages(ctx, `WHERE account_id = ? AND build_id = ? ORDER BY id`, accountID, buildID)
}

// buildImages returns the build_images rows that where (a WHERE clause with its ORDER BY and
// LIMIT) selects.
func (q *Queries) buildImages(ctx context.Context, where string, args ...any) ([]BuildImage, error) {
	rows, err := q.query(ctx, `SELECT id, account_id, build_id, step, registry, repository, tags, digest, size, sha, branch, created_at
		FROM build_images `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BuildImage
	for rows.Next() {
		var im BuildImage
		var tags string
		var created int64
		if err := rows.Scan(&im.ID, &im.AccountID, &im.BuildID, &im.Step, &im.Registry, &im.Repository, &tags, &im.Digest, &im.Size,
			&im.SHA, &im.Branch, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tags), &im.Tags); err != nil {
			return nil, fmt.Errorf("image %s: decode tags: %w", im.ID, err)
		}
		im.CreatedAt = fromMicros(created)
		out = append(out, im)
	}
	return out, rows.Err()
}
