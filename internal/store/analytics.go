package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// Deployment is a row of the analytics deployments table: one change that reached an
// environment, derived by internal/analytics. Times are zero when unknown; LeadTime is -1 when
// the commit time is unknown. Images is JSON owned by the analytics package.
type Deployment struct {
	ID, AccountID, EventKey    string
	RuntimeID, Runtime, App    string
	Project, Cluster           string
	Namespace, Revision        string
	SyncID                     int64
	Trigger, InitiatedBy, User string
	Result, Message            string
	CommitAuthor               string
	CommitMessage              string
	CommitTime                 time.Time
	Images                     string
	Commits                    string // JSON owned by the analytics package; "" when none were reported
	StartedAt, FinishedAt      time.Time
	LeadTime                   time.Duration
	LeadBucket                 int64 // the analytics package's bucket of LeadTime; -1 when unknown
	DegradedAt, RolledBackAt   time.Time
}

// DeploymentFilter narrows a deployment listing or a DORA query. Zero fields do not filter.
type DeploymentFilter struct {
	App     string
	Runtime string // the runtime's ID or name
	// RuntimeIDs, when set, are the runtimes Runtime names (see RuntimeIDs): they filter
	// instead of Runtime, through the indexes on runtime IDs.
	RuntimeIDs []string
	Cluster    string // the destination's cluster name or server URL
	// Apps, when AppsSet, limits to these applications (a product's, by runtime ID and name):
	// an empty set selects nothing. At most MaxFilterApps.
	Apps    []AppRef
	AppsSet bool
	// Since and Until bound the finish time: Since <= finished < Until.
	Since, Until time.Time
}

// AppRef is an application by its runtime's ID and its name.
type AppRef struct{ RuntimeID, App string }

// MaxFilterApps bounds DeploymentFilter.Apps: two parameters each, well within SQLite's
// (32766) and PostgreSQL's (65535) limits on a statement's parameters.
const MaxFilterApps = 5000

// appSetWhere appends the condition that (runtime_id, app) of the table alias t ("" none) is in
// f.Apps, when f.AppsSet: a row-value IN over a VALUES list, one statement however many.
func appSetWhere(f DeploymentFilter, t, query string, args []any) (string, []any, error) {
	if !f.AppsSet {
		return query, args, nil
	}
	if len(f.Apps) == 0 {
		return query + ` AND 1 = 0`, args, nil
	}
	if len(f.Apps) > MaxFilterApps {
		return "", nil, fmt.Errorf("deployment filter: %d applications, more than %d", len(f.Apps), MaxFilterApps)
	}
	var b strings.Builder
	b.WriteString(query)
	fmt.Fprintf(&b, ` AND (%sruntime_id, %sapp) IN (VALUES `, t, t)
	for i, a := range f.Apps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?)")
		args = append(args, a.RuntimeID, a.App)
	}
	b.WriteString(")")
	return b.String(), args, nil
}

// HealthEvent is a row of app_health_events: an application's health transition.
type HealthEvent struct {
	AccountID, RuntimeID, Runtime string
	App, Cluster                  string
	At                            time.Time
	Health, From, Revision        string
}

const deploymentCols = `id, account_id, event_key, runtime_id, runtime, app, project, cluster, namespace, revision, sync_id,
	trigger_kind, initiated_by, user_email, result, message, commit_author, commit_message, commit_time, images,
	started_at, finished_at, lead_time_ms, lead_bucket, degraded_at, rolled_back_at, commits`

// PutDeployment stores d unless a deployment with its event key is stored already (the same
// sync derived again), and reports whether it stored it. A deployment of an account that does
// not exist (deleted since) is not stored either.
func (q *Queries) PutDeployment(ctx context.Context, d Deployment) (bool, error) {
	lead := leadMillis(d)
	res, err := q.exec(ctx, `INSERT INTO deployments (`+deploymentCols+`)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
		WHERE EXISTS (SELECT 1 FROM accounts WHERE id = ?)
		ON CONFLICT DO NOTHING`,
		d.ID, d.AccountID, d.EventKey, d.RuntimeID, d.Runtime, d.App, d.Project, d.Cluster, d.Namespace, d.Revision, d.SyncID,
		d.Trigger, d.InitiatedBy, d.User, d.Result, d.Message, d.CommitAuthor, d.CommitMessage, micros(d.CommitTime), d.Images,
		micros(d.StartedAt), micros(d.FinishedAt), lead, leadBucket(d, lead), micros(d.DegradedAt), micros(d.RolledBackAt), d.Commits, d.AccountID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PutHealthEvent stores a health transition unless it is stored already, and reports whether
// it stored it. A transition of an account that does not exist is not stored.
func (q *Queries) PutHealthEvent(ctx context.Context, h HealthEvent) (bool, error) {
	res, err := q.exec(ctx, `INSERT INTO app_health_events (account_id, runtime_id, runtime, app, cluster, at, health, from_health, revision)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM accounts WHERE id = ?)
		ON CONFLICT DO NOTHING`,
		h.AccountID, h.RuntimeID, h.Runtime, h.App, h.Cluster, micros(h.At), h.Health, h.From, h.Revision, h.AccountID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 {
		return false, err
	}
	return true, q.refreshIncidents(ctx, h.AccountID, h.RuntimeID, h.App, micros(h.At))
}

// incidentsOf derives incidents from app_health_events d (filtered by the caller's WHERE, which
// follows): the transitions to Degraded grouped by the next transition to Healthy (none: open).
const incidentsOf = `SELECT account_id, runtime_id, app, MIN(runtime), MIN(cluster), MIN(at), COALESCE(restored, 0) FROM (
	SELECT d.account_id, d.runtime_id, d.app, d.runtime, d.cluster, d.at, (SELECT MIN(h.at) FROM app_health_events h
		WHERE h.account_id = d.account_id AND h.runtime_id = d.runtime_id AND h.app = d.app AND h.health = 'Healthy' AND h.at > d.at) AS restored
	FROM app_health_events d WHERE d.health = 'Degraded' AND d.account_id = ? AND d.runtime_id = ? AND d.app = ? AND d.at >= ?) x
	GROUP BY account_id, runtime_id, app, restored`

// refreshIncidents derives again the incidents of an application that a transition at at
// (unix microseconds), just stored, can change: those that end after the last transition to
// Healthy before it, or have not ended. Every transition to Degraded of those incidents is at
// or after that one (an incident ends at the first Healthy after its transitions), and every
// later one belongs to them, so they are derived from those; the earlier incidents keep their
// bounds. Out-of-order
// transitions land the same as in order.
func (q *Queries) refreshIncidents(ctx context.Context, accountID, runtimeID, app string, at int64) error {
	var from int64
	if err := q.queryRow(ctx, `SELECT COALESCE(MAX(at), -1) FROM app_health_events
		WHERE account_id = ? AND runtime_id = ? AND app = ? AND health = 'Healthy' AND at < ?`, accountID, runtimeID, app, at).Scan(&from); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `DELETE FROM app_incidents WHERE account_id = ? AND runtime_id = ? AND app = ? AND (restored_at = 0 OR restored_at > ?)`,
		accountID, runtimeID, app, from); err != nil {
		return err
	}
	_, err := q.exec(ctx, `INSERT INTO app_incidents (account_id, runtime_id, app, runtime, cluster, started_at, restored_at) `+incidentsOf,
		accountID, runtimeID, app, from)
	return err
}

// InsertDeployments stores ds in multi-row statements, for loading many at once (the bench);
// a deployment with the event key of one stored is left out.
func (q *Queries) InsertDeployments(ctx context.Context, ds []Deployment) error {
	const per = 500 // 27 values each: within SQLite's and PostgreSQL's parameter limits
	for len(ds) > 0 {
		n := min(per, len(ds))
		var b strings.Builder
		b.WriteString(`INSERT INTO deployments (` + deploymentCols + `) VALUES `)
		args := make([]any, 0, n*27)
		for i, d := range ds[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			lead := leadMillis(d)
			args = append(args, d.ID, d.AccountID, d.EventKey, d.RuntimeID, d.Runtime, d.App, d.Project, d.Cluster, d.Namespace, d.Revision, d.SyncID,
				d.Trigger, d.InitiatedBy, d.User, d.Result, d.Message, d.CommitAuthor, d.CommitMessage, micros(d.CommitTime), d.Images,
				micros(d.StartedAt), micros(d.FinishedAt), lead, leadBucket(d, lead), micros(d.DegradedAt), micros(d.RolledBackAt), d.Commits)
		}
		b.WriteString(" ON CONFLICT DO NOTHING")
		if _, err := q.exec(ctx, b.String(), args...); err != nil {
			return err
		}
		ds = ds[n:]
	}
	return nil
}

// ReplaceDeployments stores ds, replacing the deployments with their event keys if there are
// any (a rebuild deriving them again): one delete and one insert per 500.
func (q *Queries) ReplaceDeployments(ctx context.Context, ds []Deployment) error {
	for rest := ds; len(rest) > 0; {
		n := min(500, len(rest))
		byAccount := map[string][]any{}
		for _, d := range rest[:n] {
			byAccount[d.AccountID] = append(byAccount[d.AccountID], d.EventKey)
		}
		for acc, keys := range byAccount {
			if _, err := q.exec(ctx, `DELETE FROM deployments WHERE account_id = ? AND event_key IN (`+placeholders(len(keys))+`)`,
				append([]any{acc}, keys...)...); err != nil {
				return err
			}
		}
		rest = rest[n:]
	}
	return q.InsertDeployments(ctx, ds)
}

// LockAnalytics holds account's analytics for writing until the transaction ends, so that
// transactions deriving analytics of one account (on one replica or several) run one after the
// other and each recomputes from what the previous committed.
func (q *Queries) LockAnalytics(ctx context.Context, accountID string) error {
	_, err := q.exec(ctx, `UPDATE accounts SET name = name WHERE id = ?`, accountID)
	return err
}

// AppCluster returns the destination cluster (name, else server URL) and namespace of
// account's application app of runtime runtimeID: as the runtime last reported it, else as its
// latest deployment recorded them (the application may be deleted), else empty.
func (q *Queries) AppCluster(ctx context.Context, accountID, runtimeID, app string) (cluster, namespace string, err error) {
	err = q.queryRow(ctx, `SELECT cluster, namespace FROM (
			SELECT CASE WHEN dest_name <> '' THEN dest_name ELSE dest_server END AS cluster, dest_namespace AS namespace, 0 AS o
				FROM applications WHERE account_id = ? AND runtime_id = ? AND name = ?
			UNION ALL
			SELECT cluster, namespace, 1 AS o FROM (SELECT cluster, namespace FROM deployments
				WHERE account_id = ? AND runtime_id = ? AND app = ? ORDER BY finished_at DESC LIMIT 1) l
		) c ORDER BY o LIMIT 1`, accountID, runtimeID, app, accountID, runtimeID, app).Scan(&cluster, &namespace)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return cluster, namespace, err
}

// refreshFailures is the UPDATE of RefreshDeploymentFailures and RefreshAllDeploymentFailures
// up to their WHERE: degraded_at and rolled_back_at from the health events and deployments that
// followed each deployment within the window (bound three times: window, +inf, window).
const refreshFailures = `UPDATE deployments SET
		degraded_at = COALESCE((SELECT MIN(h.at) FROM app_health_events h
			WHERE h.account_id = deployments.account_id AND h.runtime_id = deployments.runtime_id AND h.app = deployments.app
			AND h.health = 'Degraded' AND h.at >= deployments.finished_at AND h.at < deployments.finished_at + ?
			AND h.at < COALESCE((SELECT MIN(n.finished_at) FROM deployments n WHERE n.account_id = deployments.account_id
				AND n.runtime_id = deployments.runtime_id AND n.app = deployments.app AND n.finished_at > deployments.finished_at), ?)), 0),
		rolled_back_at = COALESCE((SELECT MIN(n.finished_at) FROM deployments n
			WHERE n.account_id = deployments.account_id AND n.runtime_id = deployments.runtime_id AND n.app = deployments.app
			AND n.finished_at > deployments.finished_at AND n.finished_at < deployments.finished_at + ? AND n.trigger_kind = 'rollback'
			AND NOT EXISTS (SELECT 1 FROM deployments m WHERE m.account_id = n.account_id AND m.runtime_id = n.runtime_id AND m.app = n.app
				AND m.finished_at > deployments.finished_at AND m.finished_at < n.finished_at)), 0)
		`

// RefreshDeploymentFailures recomputes, for account's deployments of runtimeID's application
// app that finished between from and to, what followed them within window: the first
// transition to Degraded before the application's next deployment (degraded_at), and the next
// deployment when it is a rollback (rolled_back_at). Whatever order the events arrived in, the
// result is what their times say.
func (q *Queries) RefreshDeploymentFailures(ctx context.Context, accountID, runtimeID, app string, from, to time.Time, window time.Duration) error {
	w := window.Microseconds()
	_, err := q.exec(ctx, refreshFailures+`WHERE account_id = ? AND runtime_id = ? AND app = ? AND finished_at >= ? AND finished_at <= ?`,
		w, int64(math.MaxInt64), w, accountID, runtimeID, app, micros(from), micros(to))
	return err
}

// RefreshAllDeploymentFailures recomputes degraded_at and rolled_back_at of every deployment
// of account, as RefreshDeploymentFailures does for one application.
func (q *Queries) RefreshAllDeploymentFailures(ctx context.Context, accountID string, window time.Duration) error {
	w := window.Microseconds()
	_, err := q.exec(ctx, refreshFailures+`WHERE account_id = ?`, w, int64(math.MaxInt64), w, accountID)
	return err
}

// deploymentWhere appends f's conditions on the deployments table.
func (q *Queries) deploymentWhere(f DeploymentFilter, query string, args []any) (string, []any, error) {
	query, args, err := appSetWhere(f, "", query, args)
	if err != nil {
		return "", nil, err
	}
	if f.AppsSet && len(f.Apps) > 0 && q.d == SQLite {
		// A set of applications is a seek per application in deployments_runtime. SQLite,
		// without statistics, would rather read the account's every deployment through
		// deployments_lead for a lead-time histogram and filter them by the set (11 s for
		// 200 applications at 1,000,000 deployments); PostgreSQL seeks by itself.
		query = strings.Replace(query, ` FROM deployments WHERE `, ` FROM deployments INDEXED BY deployments_runtime WHERE `, 1)
	}
	if f.App != "" {
		query += ` AND app = ?`
		args = append(args, f.App)
	}
	switch {
	case len(f.RuntimeIDs) > 0:
		query += ` AND runtime_id IN (` + placeholders(len(f.RuntimeIDs)) + `)`
		for _, id := range f.RuntimeIDs {
			args = append(args, id)
		}
	case strings.HasPrefix(f.Runtime, PrefixRuntime+"_"): // runtime names have no '_'
		query += ` AND runtime_id = ?`
		args = append(args, f.Runtime)
	case f.Runtime != "":
		query += ` AND runtime = ?`
		args = append(args, f.Runtime)
	}
	if f.Cluster != "" {
		query += ` AND cluster = ?`
		args = append(args, f.Cluster)
	}
	if !f.Since.IsZero() {
		query += ` AND finished_at >= ?`
		args = append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		query += ` AND finished_at < ?`
		args = append(args, micros(f.Until))
	}
	return query, args, nil
}

// ListDeployments returns account's deployments that f selects, newest first (IDs sort by
// finish time).
func (q *Queries) ListDeployments(ctx context.Context, accountID string, f DeploymentFilter, p paging.Page) ([]Deployment, error) {
	query, args, err := q.deploymentWhere(f, `SELECT `+deploymentCols+` FROM deployments WHERE account_id = ?`, []any{accountID})
	if err != nil {
		return nil, err
	}
	if p.After != "" {
		query += ` AND id < ?`
		args = append(args, p.After)
	}
	query += ` ORDER BY id DESC LIMIT ?`
	rows, err := q.query(ctx, query, append(args, p.Size())...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Deployment
	for rows.Next() {
		var d Deployment
		var commit, started, finished, lead, degraded, rolled int64
		if err := rows.Scan(&d.ID, &d.AccountID, &d.EventKey, &d.RuntimeID, &d.Runtime, &d.App, &d.Project, &d.Cluster, &d.Namespace,
			&d.Revision, &d.SyncID, &d.Trigger, &d.InitiatedBy, &d.User, &d.Result, &d.Message, &d.CommitAuthor, &d.CommitMessage,
			&commit, &d.Images, &started, &finished, &lead, &d.LeadBucket, &degraded, &rolled, &d.Commits); err != nil {
			return nil, err
		}
		d.CommitTime, d.StartedAt, d.FinishedAt = fromMicros(commit), fromMicros(started), fromMicros(finished)
		d.DegradedAt, d.RolledBackAt = fromMicros(degraded), fromMicros(rolled)
		d.LeadTime = -1
		if lead >= 0 {
			d.LeadTime = time.Duration(lead) * time.Millisecond
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// leadMillis is d's lead time in milliseconds, -1 when unknown.
func leadMillis(d Deployment) int64 {
	if d.LeadTime >= 0 && !d.CommitTime.IsZero() {
		return d.LeadTime.Milliseconds()
	}
	return -1
}

// leadBucket is d's lead-time bucket, kept for successful deployments whose lead time is
// known only: a bucket's rows are the ones the median is taken over.
func leadBucket(d Deployment, lead int64) int64 {
	if lead < 0 || d.Result != "succeeded" {
		return -1
	}
	return d.LeadBucket
}

// DORADay is one UTC day's deployments: all finished syncs, the successful ones, all of them by
// failure mask (Masks[m] counts those whose failure kinds are exactly m: 1 the sync failed, 2
// degraded after, 4 rolled back), and the successful ones whose lead time is known with its
// sum.
type DORADay struct {
	Day                     int64 // days since 1970-01-01
	Deployments, Successful int64
	Masks                   [8]int64
	LeadCount               int64
	LeadSum                 time.Duration
}

const (
	dayMicros = 86400000000
	maskExpr  = `((CASE WHEN result = 'failed' THEN 1 ELSE 0 END) + (CASE WHEN degraded_at > 0 THEN 2 ELSE 0 END) + (CASE WHEN rolled_back_at > 0 THEN 4 ELSE 0 END))`
	leadCond  = `result = 'succeeded' AND lead_time_ms >= 0`
)

// dayAggregates are the aggregate columns of a DORADay over deployments.
var dayAggregates = func() string {
	var b strings.Builder
	b.WriteString(`COUNT(*), SUM(CASE WHEN result = 'succeeded' THEN 1 ELSE 0 END)`)
	for m := 1; m < 8; m++ {
		fmt.Fprintf(&b, `, SUM(CASE WHEN %s = %d THEN 1 ELSE 0 END)`, maskExpr, m)
	}
	b.WriteString(`, SUM(CASE WHEN ` + leadCond + ` THEN 1 ELSE 0 END), SUM(CASE WHEN ` + leadCond + ` THEN lead_time_ms ELSE 0 END)`)
	return b.String()
}()

func scanDays(rows *sql.Rows) ([]DORADay, error) {
	defer rows.Close()
	var out []DORADay
	for rows.Next() {
		var d DORADay
		var leadSum int64
		dst := []any{&d.Day, &d.Deployments, &d.Successful}
		for m := 1; m < 8; m++ {
			dst = append(dst, &d.Masks[m])
		}
		if err := rows.Scan(append(dst, &d.LeadCount, &leadSum)...); err != nil {
			return nil, err
		}
		d.LeadSum = time.Duration(leadSum) * time.Millisecond
		d.Masks[0] = d.Deployments
		for m := 1; m < 8; m++ {
			d.Masks[0] -= d.Masks[m]
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DORADays aggregates account's deployments that f selects per UTC day of their finish time,
// oldest day first, from the deployments themselves. Days without deployments are left out.
func (q *Queries) DORADays(ctx context.Context, accountID string, f DeploymentFilter) ([]DORADay, error) {
	query, args, err := q.doraDaysQuery(accountID, f)
	if err != nil {
		return nil, err
	}
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanDays(rows)
}

func (q *Queries) doraDaysQuery(accountID string, f DeploymentFilter) (string, []any, error) {
	query, args, err := q.deploymentWhere(f, `SELECT finished_at / 86400000000 AS day, `+dayAggregates+` FROM deployments WHERE account_id = ?`, []any{accountID})
	return query + ` GROUP BY finished_at / 86400000000 ORDER BY day`, args, err
}

// deploymentQueries are the statements on deployments a DORA report of f runs (for the
// tests of their plans): DORADays's, LeadHistogram's, LeadInBucket's.
func (q *Queries) deploymentQueries(accountID string, f DeploymentFilter) ([]string, [][]any, error) {
	d, da, err := q.doraDaysQuery(accountID, f)
	if err != nil {
		return nil, nil, err
	}
	h, ha, err := q.leadHistogramQuery(accountID, f)
	if err != nil {
		return nil, nil, err
	}
	b, ba, err := q.leadInBucketQuery(accountID, f, 3, 10)
	if err != nil {
		return nil, nil, err
	}
	return []string{d, h, b}, [][]any{da, ha, ba}, nil
}

// StatsDays is DORADays for the whole days from fromDay to toDay (days since 1970-01-01) of
// scopes (the account's is empty; 'runtime:<id>', 'cluster:<cluster>'), summed, from deployment_stats.
func (q *Queries) StatsDays(ctx context.Context, accountID string, scopes []string, fromDay, toDay int64) ([]DORADay, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	cols := `SUM(deployments), SUM(successful)`
	for m := 1; m < 8; m++ {
		cols += fmt.Sprintf(`, SUM(f%d)`, m)
	}
	args := []any{accountID}
	for _, sc := range scopes {
		args = append(args, sc)
	}
	rows, err := q.query(ctx, `SELECT day, `+cols+`, SUM(lead_count), SUM(lead_sum_ms) FROM deployment_stats
		WHERE account_id = ? AND scope IN (`+placeholders(len(scopes))+`) AND day >= ? AND day <= ? GROUP BY day ORDER BY day`,
		append(args, fromDay, toDay)...)
	if err != nil {
		return nil, err
	}
	return scanDays(rows)
}

// LeadHistogram counts account's successful deployments that f selects by lead-time bucket.
func (q *Queries) LeadHistogram(ctx context.Context, accountID string, f DeploymentFilter) (map[int64]int64, error) {
	query, args, err := q.leadHistogramQuery(accountID, f)
	if err != nil {
		return nil, err
	}
	return q.histogram(ctx, query, args...)
}

func (q *Queries) leadHistogramQuery(accountID string, f DeploymentFilter) (string, []any, error) {
	query, args, err := q.deploymentWhere(f, `SELECT lead_bucket, COUNT(*) FROM deployments WHERE account_id = ? AND `+leadCond, []any{accountID})
	return query + ` GROUP BY lead_bucket`, args, err
}

// StatsLeadHistogram is LeadHistogram for whole days of scopes, from lead_stats.
func (q *Queries) StatsLeadHistogram(ctx context.Context, accountID string, scopes []string, fromDay, toDay int64) (map[int64]int64, error) {
	if len(scopes) == 0 {
		return map[int64]int64{}, nil
	}
	args := []any{accountID}
	for _, sc := range scopes {
		args = append(args, sc)
	}
	return q.histogram(ctx, `SELECT bucket, SUM(n) FROM lead_stats WHERE account_id = ? AND scope IN (`+placeholders(len(scopes))+`)
		AND day >= ? AND day <= ? GROUP BY bucket`, append(args, fromDay, toDay)...)
}

func (q *Queries) histogram(ctx context.Context, query string, args ...any) (map[int64]int64, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var b, n int64
		if err := rows.Scan(&b, &n); err != nil {
			return nil, err
		}
		out[b] += n
	}
	return out, rows.Err()
}

// LeadInBucket returns the offset-th smallest lead time (from 0) of account's successful
// deployments that f selects in lead-time bucket bucket.
func (q *Queries) LeadInBucket(ctx context.Context, accountID string, f DeploymentFilter, bucket, offset int64) (time.Duration, error) {
	query, args, err := q.leadInBucketQuery(accountID, f, bucket, offset)
	if err != nil {
		return 0, err
	}
	var ms int64
	if err := q.queryRow(ctx, query, args...).Scan(&ms); err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (q *Queries) leadInBucketQuery(accountID string, f DeploymentFilter, bucket, offset int64) (string, []any, error) {
	query, args, err := q.deploymentWhere(f, `SELECT lead_time_ms FROM deployments WHERE account_id = ? AND lead_bucket = ?`, []any{accountID, bucket})
	return query + ` ORDER BY lead_time_ms LIMIT 1 OFFSET ?`, append(args, offset), err
}

// RuntimeIDs returns the IDs of account's runtimes that ref (an ID, or a name) names among the
// deployments: a name can have been several runtimes' over time.
func (q *Queries) RuntimeIDs(ctx context.Context, accountID, ref string) ([]string, error) {
	// A loose index scan of deployments_runtime_name: one seek per runtime ID, not a read of
	// every deployment of the name (SELECT DISTINCT reads them all).
	rows, err := q.query(ctx, `WITH RECURSIVE ids (id) AS (
			SELECT MIN(runtime_id) FROM deployments WHERE account_id = ? AND runtime = ?
			UNION ALL
			SELECT (SELECT MIN(runtime_id) FROM deployments WHERE account_id = ? AND runtime = ? AND runtime_id > ids.id) FROM ids WHERE ids.id IS NOT NULL)
		SELECT id FROM ids WHERE id IS NOT NULL`, accountID, ref, accountID, ref)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// statScopes are the scopes deployment_stats and lead_stats keep, as SQL over deployments.
var statScopes = []string{`''`, `'runtime:' || runtime_id`, `'cluster:' || cluster`}

// RefreshDeploymentStats recomputes account's deployment_stats and lead_stats of the days from
// fromDay to toDay (days since 1970-01-01) from its deployments.
func (q *Queries) RefreshDeploymentStats(ctx context.Context, accountID string, fromDay, toDay int64) error {
	for _, t := range []string{"deployment_stats", "lead_stats"} {
		if _, err := q.exec(ctx, `DELETE FROM `+t+` WHERE account_id = ? AND day >= ? AND day <= ?`, accountID, fromDay, toDay); err != nil {
			return err
		}
	}
	from, to := fromDay*dayMicros, (toDay+1)*dayMicros
	if toDay >= math.MaxInt64/dayMicros-1 {
		to = math.MaxInt64
	}
	fcols := ""
	for m := 1; m < 8; m++ {
		fcols += fmt.Sprintf(", f%d", m)
	}
	for _, sc := range statScopes {
		group := "account_id, " + sc + ", "
		if sc == `''` { // PostgreSQL refuses a constant in GROUP BY
			group = "account_id, "
		}
		if _, err := q.exec(ctx, `INSERT INTO deployment_stats (account_id, scope, day, deployments, successful`+fcols+`, lead_count, lead_sum_ms)
			SELECT account_id, `+sc+`, finished_at / 86400000000, `+dayAggregates+` FROM deployments
			WHERE account_id = ? AND finished_at >= ? AND finished_at < ?
			GROUP BY `+group+`finished_at / 86400000000`, accountID, from, to); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `INSERT INTO lead_stats (account_id, scope, day, bucket, n)
			SELECT account_id, `+sc+`, finished_at / 86400000000, lead_bucket, COUNT(*) FROM deployments
			WHERE account_id = ? AND finished_at >= ? AND finished_at < ? AND `+leadCond+`
			GROUP BY `+group+`finished_at / 86400000000, lead_bucket`, accountID, from, to); err != nil {
			return err
		}
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Incident is a stretch of an application's degraded health: from the first transition to
// Degraded to the next transition to Healthy (zero while it lasts).
type Incident struct {
	RuntimeID, App    string
	Start, RestoredAt time.Time
}

// Incidents returns account's incidents that f selects (f's times bound the incidents'
// starts), oldest first, from app_incidents.
func (q *Queries) Incidents(ctx context.Context, accountID string, f DeploymentFilter) ([]Incident, error) {
	query := `SELECT runtime_id, app, started_at, restored_at FROM app_incidents WHERE account_id = ?`
	args := []any{accountID}
	query, args, err := appSetWhere(f, "", query, args)
	if err != nil {
		return nil, err
	}
	if f.App != "" {
		query += ` AND app = ?`
		args = append(args, f.App)
	}
	switch {
	case len(f.RuntimeIDs) > 0:
		query += ` AND runtime_id IN (` + placeholders(len(f.RuntimeIDs)) + `)`
		for _, id := range f.RuntimeIDs {
			args = append(args, id)
		}
	case strings.HasPrefix(f.Runtime, PrefixRuntime+"_"):
		query += ` AND runtime_id = ?`
		args = append(args, f.Runtime)
	case f.Runtime != "":
		query += ` AND runtime = ?`
		args = append(args, f.Runtime)
	}
	if f.Cluster != "" {
		query += ` AND cluster = ?`
		args = append(args, f.Cluster)
	}
	if !f.Since.IsZero() {
		query += ` AND started_at >= ?`
		args = append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		query += ` AND started_at < ?`
		args = append(args, micros(f.Until))
	}
	rows, err := q.query(ctx, query+` ORDER BY started_at`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Incident
	for rows.Next() {
		var i Incident
		var start, restored int64
		if err := rows.Scan(&i.RuntimeID, &i.App, &start, &restored); err != nil {
			return nil, err
		}
		i.Start, i.RestoredAt = fromMicros(start), fromMicros(restored)
		out = append(out, i)
	}
	return out, rows.Err()
}

// AddActivity counts one API event of account on the UTC day of at.
func (q *Queries) AddActivity(ctx context.Context, accountID string, at time.Time, action, result string) error {
	_, err := q.exec(ctx, `INSERT INTO activity_daily (account_id, day, action, result, n)
		SELECT ?, ?, ?, ?, 1 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = ?)
		ON CONFLICT (account_id, day, action, result) DO UPDATE SET n = activity_daily.n + 1`,
		accountID, at.UTC().Unix()/86400, action, result, accountID)
	return err
}

// RebuildActivity recounts account's activity_daily from its audit records.
func (q *Queries) RebuildActivity(ctx context.Context, accountID string) error {
	if _, err := q.exec(ctx, `DELETE FROM activity_daily WHERE account_id = ?`, accountID); err != nil {
		return err
	}
	_, err := q.exec(ctx, `INSERT INTO activity_daily (account_id, day, action, result, n)
		SELECT account_id, created_at / 86400000000, action, result, COUNT(*) FROM audit_events WHERE account_id = ?
		GROUP BY account_id, created_at / 86400000000, action, result`, accountID)
	return err
}

// AnalyticsSync is a finished sync as the source tables hold it, for rebuilding deployments:
// the sync with its runtime's name and, while the application exists, its project and
// destination.
type AnalyticsSync struct {
	ApplicationSync
	Runtime                       string
	Project, DestServer, DestName string
	DestNamespace                 string
}

// analyticsSyncsQuery reads a page of recorded syncs in ID order. The CROSS JOIN makes SQLite
// walk application_syncs by its primary key from the page's start (its planner otherwise
// starts from the account's runtimes, reads every sync of each and sorts them all: a rebuild of
// 1,000,000 syncs read 10⁹ rows); PostgreSQL plans it as the inner join it is.
const analyticsSyncsQuery = `SELECT s.id, s.account_id, s.runtime_id, s.app, s.sync_id, s.revision, s.phase, s.message, s.initiated_by,
		s.commit_author, s.commit_message, s.commit_time, s.started_at, s.finished_at, s.detail, r.name,
		COALESCE(a.project, ''), COALESCE(a.dest_server, ''), COALESCE(a.dest_name, ''), COALESCE(a.dest_namespace, '')
		FROM application_syncs s CROSS JOIN runtimes r
		LEFT JOIN applications a ON a.account_id = s.account_id AND a.runtime_id = s.runtime_id AND a.name = s.app
		WHERE r.id = s.runtime_id AND r.account_id = s.account_id AND s.account_id = ? AND s.id > ? ORDER BY s.id LIMIT ?`

// AnalyticsSyncs returns up to limit of account's recorded syncs with IDs after after, in ID
// order.
func (q *Queries) AnalyticsSyncs(ctx context.Context, accountID, after string, limit int) ([]AnalyticsSync, error) {
	rows, err := q.query(ctx, analyticsSyncsQuery, accountID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AnalyticsSync
	for rows.Next() {
		var s AnalyticsSync
		var commit, started, finished int64
		if err := rows.Scan(&s.ID, &s.AccountID, &s.RuntimeID, &s.App, &s.SyncID, &s.Revision, &s.Phase, &s.Message, &s.InitiatedBy,
			&s.CommitAuthor, &s.CommitMessage, &commit, &started, &finished, &s.Detail, &s.Runtime,
			&s.Project, &s.DestServer, &s.DestName, &s.DestNamespace); err != nil {
			return nil, err
		}
		s.CommitTime, s.StartedAt, s.FinishedAt = fromMicros(commit), fromMicros(started), fromMicros(finished)
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteDeployments deletes account's deployments (before a rebuild).
func (q *Queries) DeleteDeployments(ctx context.Context, accountID string) error {
	_, err := q.exec(ctx, `DELETE FROM deployments WHERE account_id = ?`, accountID)
	return err
}

// ImagesOfCommit returns the images account's builds of commit sha pushed, oldest first, then
// the images reported through the API as built from sha that no build pushed (BuildID empty).
func (q *Queries) ImagesOfCommit(ctx context.Context, accountID, sha string) ([]BuildImage, error) {
	m, err := q.ImagesOfCommits(ctx, accountID, []string{sha})
	return m[sha], err
}

// ImagesOfCommits is ImagesOfCommit for many commits at once (a rebuild's batch): two queries
// per 500 commits. Commits without images are not in the map; each has at most 100 images of
// builds and 100 reported.
func (q *Queries) ImagesOfCommits(ctx context.Context, accountID string, shas []string) (map[string][]BuildImage, error) {
	var uniq []any
	seen := map[string]bool{"": true}
	for _, sha := range shas {
		if !seen[sha] {
			seen[sha] = true
			uniq = append(uniq, sha)
		}
	}
	out := map[string][]BuildImage{}
	reported := map[string][]ImageReport{}
	for len(uniq) > 0 {
		n := min(500, len(uniq))
		where := `WHERE account_id = ? AND sha IN (` + placeholders(n) + `) ORDER BY id`
		args := append([]any{accountID}, uniq[:n]...)
		built, err := q.buildImages(ctx, where, args...)
		if err != nil {
			return nil, err
		}
		for _, b := range built {
			if len(out[b.SHA]) < 100 {
				out[b.SHA] = append(out[b.SHA], b)
			}
		}
		reps, err := q.imageReports(ctx, where, args...)
		if err != nil {
			return nil, err
		}
		for _, r := range reps {
			if len(reported[r.SHA]) < 100 {
				reported[r.SHA] = append(reported[r.SHA], r)
			}
		}
		uniq = uniq[n:]
	}
	for sha, reps := range reported {
		for _, r := range reps {
			if !slices.ContainsFunc(out[sha], func(b BuildImage) bool { return b.Repository == r.Repository && b.Digest == r.Digest }) {
				out[sha] = append(out[sha], BuildImage{ID: r.ID, AccountID: accountID, Registry: r.Registry, Repository: r.Repository, Tags: r.Tags,
					Digest: r.Digest, SHA: r.SHA, Branch: r.Branch, CreatedAt: r.CreatedAt})
			}
		}
	}
	return out, nil
}

// AccountIDs returns the IDs of every account, in ID order.
func (q *Queries) AccountIDs(ctx context.Context) ([]string, error) {
	rows, err := q.query(ctx, `SELECT id FROM accounts ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Analyze updates the planner's statistics (PostgreSQL's ANALYZE), as autovacuum does some
// time after a bulk load; for benchmarks that measure right after one.
func (db *DB) Analyze(ctx context.Context) error {
	_, err := db.sql.ExecContext(ctx, `ANALYZE`)
	return err
}
