package store

import (
	"context"
	"time"
)

// BuildDay is what one pipeline's builds created on one day (UTC) add up to. Durations are in
// microseconds; a build counts towards the run durations once it has started and finished, and
// towards the queue wait once it has started.
type BuildDay struct {
	PipelineID string
	// Day is the number of whole days since the listing's start.
	Day                  int64
	Total, Finished      int64
	Succeeded, Failed    int64
	Timed                int64 // builds with a run duration
	RunMicros, MaxMicros int64
	Waited               int64 // builds with a queue wait
	WaitMicros           int64
}

// BuildStats adds up account's builds created at or after since (a day boundary), per pipeline
// and per day, in the database: one row per pipeline and day that has builds. pipelineID ""
// means every pipeline. success and failed are the status words that count as such.
func (q *Queries) BuildStats(ctx context.Context, accountID, pipelineID string, since time.Time, success, failed string) ([]BuildDay, error) {
	s := micros(since)
	// The CASTs keep PostgreSQL's SUM of BIGINT (a NUMERIC) an integer on both databases.
	query := `SELECT pipeline_id, CAST((created_at - ?) / ? AS BIGINT) AS day, COUNT(*),
		CAST(SUM(CASE WHEN finished_at > 0 THEN 1 ELSE 0 END) AS BIGINT),
		CAST(SUM(CASE WHEN finished_at > 0 AND status = ? THEN 1 ELSE 0 END) AS BIGINT),
		CAST(SUM(CASE WHEN finished_at > 0 AND status = ? THEN 1 ELSE 0 END) AS BIGINT),
		CAST(SUM(CASE WHEN started_at > 0 AND finished_at >= started_at THEN 1 ELSE 0 END) AS BIGINT),
		CAST(SUM(CASE WHEN started_at > 0 AND finished_at >= started_at THEN finished_at - started_at ELSE 0 END) AS BIGINT),
		CAST(MAX(CASE WHEN started_at > 0 AND finished_at >= started_at THEN finished_at - started_at ELSE 0 END) AS BIGINT),
		CAST(SUM(CASE WHEN started_at >= created_at THEN 1 ELSE 0 END) AS BIGINT),
		CAST(SUM(CASE WHEN started_at >= created_at THEN started_at - created_at ELSE 0 END) AS BIGINT)
		FROM builds WHERE account_id = ? AND created_at >= ?`
	args := []any{s, int64(dayMicros), success, failed, accountID, s}
	if pipelineID != "" {
		query += ` AND pipeline_id = ?`
		args = append(args, pipelineID)
	}
	query += ` GROUP BY pipeline_id, day ORDER BY pipeline_id, day`
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BuildDay
	for rows.Next() {
		var d BuildDay
		if err := rows.Scan(&d.PipelineID, &d.Day, &d.Total, &d.Finished, &d.Succeeded, &d.Failed, &d.Timed, &d.RunMicros, &d.MaxMicros, &d.Waited, &d.WaitMicros); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// CountBuilds counts account's builds (of pipelineID, or all when "") by status, for the given
// statuses only.
func (q *Queries) CountBuilds(ctx context.Context, accountID, pipelineID string, statuses ...string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(statuses) == 0 {
		return out, nil
	}
	query := `SELECT status, COUNT(*) FROM builds WHERE account_id = ? AND status IN (?` + repeat(", ?", len(statuses)-1) + `)`
	args := []any{accountID}
	for _, s := range statuses {
		args = append(args, s)
	}
	if pipelineID != "" {
		query += ` AND pipeline_id = ?`
		args = append(args, pipelineID)
	}
	rows, err := q.query(ctx, query+` GROUP BY status`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}
