package store

import (
	"context"
	"time"
)

// WorkflowRunCount is how many of an account's archived workflows finished on one UTC day
// (days since 1970-01-01) in one phase.
type WorkflowRunCount struct {
	Day   int64
	Phase string
	N     int64
}

// WorkflowRunCounts counts account's archived workflows that finished in [since, until) by UTC
// day and phase (through workflow_archive_finished).
func (q *Queries) WorkflowRunCounts(ctx context.Context, accountID string, since, until time.Time) ([]WorkflowRunCount, error) {
	rows, err := q.query(ctx, `SELECT finished_at / 86400000000 AS day, phase, COUNT(*) FROM workflow_archive
		WHERE account_id = ? AND finished_at >= ? AND finished_at < ? GROUP BY finished_at / 86400000000, phase ORDER BY day, phase`,
		accountID, micros(since), micros(until))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []WorkflowRunCount
	for rows.Next() {
		var c WorkflowRunCount
		if err := rows.Scan(&c.Day, &c.Phase, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
