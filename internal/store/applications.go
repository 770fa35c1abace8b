package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
)

// ID prefixes of GitOps records.
const (
	PrefixApplication = "app"
	PrefixAppSync     = "syn"
)

// Application is a GitOps application as its runtime last reported it. The string fields are
// copies of Data's for filtering; Data is the whole application as JSON, owned by the runtimes
// package (runtimev1.Application).
type Application struct {
	ID, AccountID, RuntimeID string
	Runtime                  string // the runtime's name; filled by reads
	RuntimeOwner             string // the runtime's owner team ID; filled by reads
	Name, Project            string
	RepoURL, Path            string
	TargetRevision           string
	DestServer, DestName     string
	DestNamespace            string
	Sync, Health             string
	HealthMessage, Revision  string
	Labels                   map[string]string
	Data                     string
	UpdatedAt                time.Time
}

// AppFilter narrows an application listing. Zero fields do not filter.
type AppFilter struct {
	Runtime string // the runtime's ID or name
	Cluster string // the destination's cluster name or server URL
	Health  string
	Sync    string
	Project string
	// Labels must all be on the application with these values.
	Labels map[string]string
	// Search is a case-insensitive substring of the name, repository URL, path or
	// destination namespace.
	Search string
}

// ApplicationSync is a finished sync of an application (not a dry run): a deployment record.
// SyncID is the runtime's ID of the sync, unique per application. Detail is the whole sync as
// JSON, owned by the runtimes package (runtimev1.SyncRecord).
type ApplicationSync struct {
	ID, AccountID, RuntimeID, App string
	SyncID                        int64
	Revision, Phase, Message      string
	InitiatedBy                   string
	CommitAuthor, CommitMessage   string
	CommitTime                    time.Time
	StartedAt, FinishedAt         time.Time
	Detail                        string
}

const appCols = `a.id, a.account_id, a.runtime_id, r.name, a.name, a.project, a.repo_url, a.path, a.target_revision,
	a.dest_server, a.dest_name, a.dest_namespace, a.sync_status, a.health_status, a.health_message, a.revision, a.labels, a.app, a.updated_at, r.owner_team_id`

const appFrom = ` FROM applications a JOIN runtimes r ON r.id = a.runtime_id AND r.account_id = a.account_id`

func scanApplication(s interface{ Scan(...any) error }) (Application, error) {
	var a Application
	var labels string
	var updated int64
	err := s.Scan(&a.ID, &a.AccountID, &a.RuntimeID, &a.Runtime, &a.Name, &a.Project, &a.RepoURL, &a.Path, &a.TargetRevision,
		&a.DestServer, &a.DestName, &a.DestNamespace, &a.Sync, &a.Health, &a.HealthMessage, &a.Revision, &labels, &a.Data, &updated, &a.RuntimeOwner)
	if err != nil {
		return a, err
	}
	a.UpdatedAt = fromMicros(updated)
	if labels != "" && labels != "{}" {
		if err := json.Unmarshal([]byte(labels), &a.Labels); err != nil {
			return a, fmt.Errorf("application %s: labels: %w", a.ID, err)
		}
	}
	return a, nil
}

// ownRuntime checks that runtimeID is accountID's runtime.
func (q *Queries) ownRuntime(ctx context.Context, accountID, runtimeID string) error {
	var one int
	err := q.queryRow(ctx, `SELECT 1 FROM runtimes WHERE account_id = ? AND id = ?`, accountID, runtimeID).Scan(&one)
	return notFound(err, "runtime", runtimeID)
}

// UpsertApplication stores a.AccountID's application a.Name of runtime a.RuntimeID, replacing
// what was stored for it, and reports whether anything changed: storing what is stored already
// changes nothing, not even UpdatedAt. a.ID is used only when the application is new. A runtime
// that is not the account's is ErrNotFound.
func (q *Queries) UpsertApplication(ctx context.Context, a Application) (changed bool, err error) {
	if err := q.ownRuntime(ctx, a.AccountID, a.RuntimeID); err != nil {
		return false, err
	}
	return q.upsertApplication(ctx, a)
}

func (q *Queries) upsertApplication(ctx context.Context, a Application) (bool, error) {
	labels := "{}"
	if len(a.Labels) > 0 {
		b, err := json.Marshal(a.Labels)
		if err != nil {
			return false, err
		}
		labels = string(b)
	}
	if a.ID == "" {
		a.ID = NewID(PrefixApplication)
	}
	var id string
	err := q.queryRow(ctx, `INSERT INTO applications (id, account_id, runtime_id, name, project, repo_url, path, target_revision,
		dest_server, dest_name, dest_namespace, sync_status, health_status, health_message, revision, labels, app, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (runtime_id, name) DO UPDATE SET project = excluded.project, repo_url = excluded.repo_url, path = excluded.path,
			target_revision = excluded.target_revision, dest_server = excluded.dest_server, dest_name = excluded.dest_name,
			dest_namespace = excluded.dest_namespace, sync_status = excluded.sync_status, health_status = excluded.health_status,
			health_message = excluded.health_message, revision = excluded.revision, labels = excluded.labels, app = excluded.app,
			updated_at = excluded.updated_at
		WHERE applications.account_id = excluded.account_id AND (applications.app <> excluded.app OR applications.labels <> excluded.labels)
		RETURNING id`,
		a.ID, a.AccountID, a.RuntimeID, a.Name, a.Project, a.RepoURL, a.Path, a.TargetRevision,
		a.DestServer, a.DestName, a.DestNamespace, a.Sync, a.Health, a.HealthMessage, a.Revision, labels, a.Data, micros(a.UpdatedAt)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // stored as it is already
	}
	if err != nil {
		return false, q.mapErr(err)
	}
	if _, err := q.exec(ctx, `DELETE FROM application_labels WHERE application_id = ?`, id); err != nil {
		return false, err
	}
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := q.exec(ctx, `INSERT INTO application_labels (application_id, account_id, label_key, label_value) VALUES (?, ?, ?, ?)`,
			id, a.AccountID, k, a.Labels[k]); err != nil {
			return false, err
		}
	}
	return true, nil
}

// DeleteApplication forgets account's application name of runtime runtimeID and its syncs. It
// reports whether there was one: deleting an application twice is not an error.
func (q *Queries) DeleteApplication(ctx context.Context, accountID, runtimeID, name string) (bool, error) {
	if err := q.ownRuntime(ctx, accountID, runtimeID); err != nil {
		return false, err
	}
	return q.deleteApplication(ctx, accountID, runtimeID, name)
}

func (q *Queries) deleteApplication(ctx context.Context, accountID, runtimeID, name string) (bool, error) {
	if _, err := q.exec(ctx, `DELETE FROM application_syncs WHERE account_id = ? AND runtime_id = ? AND app = ?`, accountID, runtimeID, name); err != nil {
		return false, err
	}
	res, err := q.exec(ctx, `DELETE FROM applications WHERE account_id = ? AND runtime_id = ? AND name = ?`, accountID, runtimeID, name)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ReplaceApplications makes apps the whole set of account's runtime runtimeID's applications:
// each is stored as UpsertApplication does, and every other application of the runtime is
// deleted with its syncs. It returns how many applications changed (stored or deleted). Run it
// in a transaction.
func (q *Queries) ReplaceApplications(ctx context.Context, accountID, runtimeID string, apps []Application) (int, error) {
	if err := q.ownRuntime(ctx, accountID, runtimeID); err != nil {
		return 0, err
	}
	keep := make(map[string]bool, len(apps))
	changed := 0
	for _, a := range apps {
		a.AccountID, a.RuntimeID = accountID, runtimeID
		ch, err := q.upsertApplication(ctx, a)
		if err != nil {
			return changed, err
		}
		if ch {
			changed++
		}
		keep[a.Name] = true
	}
	// Applications and sync records (a sync may be reported before its application) of names
	// not in the set.
	names, err := q.strings(ctx, `SELECT name FROM applications WHERE account_id = ? AND runtime_id = ?
		UNION SELECT app FROM application_syncs WHERE account_id = ? AND runtime_id = ?`, accountID, runtimeID, accountID, runtimeID)
	if err != nil {
		return changed, err
	}
	for _, name := range names {
		if keep[name] {
			continue
		}
		gone, err := q.deleteApplication(ctx, accountID, runtimeID, name)
		if err != nil {
			return changed, err
		}
		if gone {
			changed++
		}
	}
	return changed, nil
}

func (q *Queries) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// GetApplication returns account's application name of the runtime with ID or name runtime.
func (q *Queries) GetApplication(ctx context.Context, accountID, runtime, name string) (Application, error) {
	a, err := scanApplication(q.queryRow(ctx, `SELECT `+appCols+appFrom+` WHERE a.account_id = ? AND (r.id = ? OR r.name = ?) AND a.name = ?`,
		accountID, runtime, runtime, name))
	if err != nil {
		return Application{}, notFound(err, "application", runtime+"/"+name)
	}
	return a, nil
}

// likePattern makes a LIKE pattern (with ESCAPE '\') matching s anywhere, case-insensitively
// against a lower-cased column.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// appWhere is the WHERE clause (and its arguments) of account's applications that pass f.
func appWhere(accountID string, f AppFilter) (string, []any) {
	where := ` WHERE a.account_id = ?`
	args := []any{accountID}
	if f.Runtime != "" {
		where += ` AND (r.id = ? OR r.name = ?)`
		args = append(args, f.Runtime, f.Runtime)
	}
	if f.Cluster != "" {
		where += ` AND (a.dest_name = ? OR a.dest_server = ?)`
		args = append(args, f.Cluster, f.Cluster)
	}
	for _, c := range []struct{ col, v string }{{"a.health_status", f.Health}, {"a.sync_status", f.Sync}, {"a.project", f.Project}} {
		if c.v != "" {
			where += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	keys := make([]string, 0, len(f.Labels))
	for k := range f.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		where += ` AND EXISTS (SELECT 1 FROM application_labels l WHERE l.application_id = a.id AND l.account_id = a.account_id
			AND l.label_key = ? AND l.label_value = ?)`
		args = append(args, k, f.Labels[k])
	}
	if f.Search != "" {
		pat := likePattern(f.Search)
		where += ` AND (lower(a.name) LIKE ? ESCAPE '\' OR lower(a.repo_url) LIKE ? ESCAPE '\' OR lower(a.path) LIKE ? ESCAPE '\'
			OR lower(a.dest_namespace) LIKE ? ESCAPE '\')`
		args = append(args, pat, pat, pat, pat)
	}
	return where, args
}

// ListApplications returns account's applications that pass f, in the order they were first
// reported (by ID). p.After is the last ID of the previous page.
func (q *Queries) ListApplications(ctx context.Context, accountID string, f AppFilter, p paging.Page) ([]Application, error) {
	where, args := appWhere(accountID, f)
	query := `SELECT ` + appCols + appFrom + where
	if p.After != "" {
		query += ` AND a.id > ?`
		args = append(args, p.After)
	}
	query += ` ORDER BY a.id LIMIT ?`
	args = append(args, p.Size())
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Application
	for rows.Next() {
		a, err := scanApplication(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AppCounts are how many of an account's applications have each health and each sync status.
type AppCounts struct {
	Total  int
	Health map[string]int
	Sync   map[string]int
}

// CountApplications counts account's applications that pass f by health and by sync status,
// in the database (Home's summary does not page through thousands of rows).
func (q *Queries) CountApplications(ctx context.Context, accountID string, f AppFilter) (AppCounts, error) {
	where, args := appWhere(accountID, f)
	rows, err := q.query(ctx, `SELECT a.health_status, a.sync_status, COUNT(*) `+appFrom+where+` GROUP BY a.health_status, a.sync_status`, args...)
	if err != nil {
		return AppCounts{}, err
	}
	defer rows.Close()
	out := AppCounts{Health: map[string]int{}, Sync: map[string]int{}}
	for rows.Next() {
		var h, s string
		var n int
		if err := rows.Scan(&h, &s, &n); err != nil {
			return AppCounts{}, err
		}
		out.Total += n
		out.Health[h] += n
		out.Sync[s] += n
	}
	return out, rows.Err()
}

// RecordSync stores a finished sync of s.AccountID's runtime s.RuntimeID and reports whether it
// is new. A sync with the runtime's ID of one recorded already is the same sync (a report sent
// twice) and changes nothing, unless it started at another time: then the runtime's history
// began again (the application was deleted and created while the control plane did not
// hear of it) and the record is replaced. s.ID is used only for a new record.
func (q *Queries) RecordSync(ctx context.Context, s ApplicationSync) (bool, error) {
	if err := q.ownRuntime(ctx, s.AccountID, s.RuntimeID); err != nil {
		return false, err
	}
	if s.ID == "" {
		s.ID = NewID(PrefixAppSync)
	}
	var id string
	err := q.queryRow(ctx, `INSERT INTO application_syncs (id, account_id, runtime_id, app, sync_id, revision, phase, message, initiated_by,
		commit_author, commit_message, commit_time, started_at, finished_at, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (runtime_id, app, sync_id) DO UPDATE SET revision = excluded.revision, phase = excluded.phase, message = excluded.message,
			initiated_by = excluded.initiated_by, commit_author = excluded.commit_author, commit_message = excluded.commit_message,
			commit_time = excluded.commit_time, started_at = excluded.started_at, finished_at = excluded.finished_at, detail = excluded.detail
		WHERE application_syncs.account_id = excluded.account_id AND application_syncs.started_at <> excluded.started_at
		RETURNING id`,
		s.ID, s.AccountID, s.RuntimeID, s.App, s.SyncID, s.Revision, s.Phase, s.Message, s.InitiatedBy,
		s.CommitAuthor, s.CommitMessage, micros(s.CommitTime), micros(s.StartedAt), micros(s.FinishedAt), s.Detail).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, q.mapErr(err)
	}
	return true, nil
}

// InsertSyncs stores recorded syncs in bulk (a load: the analytics bench, an import), in
// multi-row statements; a sync whose (runtime, application, sync ID) is recorded already is
// skipped. Unlike RecordSync it checks nothing: the caller vouches for the runtimes. Run it in
// a transaction.
func (q *Queries) InsertSyncs(ctx context.Context, ss []ApplicationSync) error {
	const per = 500 // 15 values each: within SQLite's and PostgreSQL's parameter limits
	for len(ss) > 0 {
		n := min(per, len(ss))
		var b strings.Builder
		b.WriteString(`INSERT INTO application_syncs (id, account_id, runtime_id, app, sync_id, revision, phase, message, initiated_by,
		commit_author, commit_message, commit_time, started_at, finished_at, detail) VALUES `)
		args := make([]any, 0, n*15)
		for i, s := range ss[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			if s.ID == "" {
				s.ID = NewID(PrefixAppSync)
			}
			args = append(args, s.ID, s.AccountID, s.RuntimeID, s.App, s.SyncID, s.Revision, s.Phase, s.Message, s.InitiatedBy,
				s.CommitAuthor, s.CommitMessage, micros(s.CommitTime), micros(s.StartedAt), micros(s.FinishedAt), s.Detail)
		}
		b.WriteString(" ON CONFLICT DO NOTHING")
		if _, err := q.exec(ctx, b.String(), args...); err != nil {
			return q.mapErr(err)
		}
		ss = ss[n:]
	}
	return nil
}

// ListSyncs returns the finished syncs of account's application app of runtime runtimeID,
// newest first (by the runtime's sync ID). p.After is the sync ID (decimal) the previous page
// ended with.
func (q *Queries) ListSyncs(ctx context.Context, accountID, runtimeID, app string, p paging.Page) ([]ApplicationSync, error) {
	query := `SELECT id, account_id, runtime_id, app, sync_id, revision, phase, message, initiated_by, commit_author, commit_message,
		commit_time, started_at, finished_at, detail FROM application_syncs WHERE account_id = ? AND runtime_id = ? AND app = ?`
	args := []any{accountID, runtimeID, app}
	if p.After != "" {
		after, err := strconv.ParseInt(p.After, 10, 64)
		if err != nil {
			return nil, errdefs.Invalid("after", p.After, "is not a cursor of this list")
		}
		query += ` AND sync_id < ?`
		args = append(args, after)
	}
	query += ` ORDER BY sync_id DESC LIMIT ?`
	rows, err := q.query(ctx, query, append(args, p.Size())...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ApplicationSync
	for rows.Next() {
		var s ApplicationSync
		var commit, started, finished int64
		if err := rows.Scan(&s.ID, &s.AccountID, &s.RuntimeID, &s.App, &s.SyncID, &s.Revision, &s.Phase, &s.Message, &s.InitiatedBy,
			&s.CommitAuthor, &s.CommitMessage, &commit, &started, &finished, &s.Detail); err != nil {
			return nil, err
		}
		s.CommitTime, s.StartedAt, s.FinishedAt = fromMicros(commit), fromMicros(started), fromMicros(finished)
		out = append(out, s)
	}
	return out, rows.Err()
}
