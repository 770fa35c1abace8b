package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// PrefixImageReport and PrefixIssueTracker are the ID prefixes of reported images and
// issue-tracker integrations.
const (
	PrefixImageReport  = "imr"
	PrefixIssueTracker = "itr"
)

// ImageReport is an image reported through the API with the commit it was built from. Tags
// and Issues are sets kept in the order first seen.
type ImageReport struct {
	ID, AccountID                string
	Registry, Repository, Digest string
	Tags                         []string
	SHA, Branch, RepoURL         string
	CommitMessage, CommitAuthor  string
	CommitTime                   time.Time
	Issues                       []string
	ReportedBy                   string
	BuildID                      string // the build whose runner reported it; empty for an API report
	CreatedAt, UpdatedAt         time.Time
}

// PutImageReport records r, or merges it into the report of the same account, repository and
// digest: its tags and issues are added to the stored ones, and the git fields it sets replace
// the stored ones. It returns the stored report and whether it is new. Run it in a transaction:
// the upsert locks the row (on PostgreSQL) until the merge is written.
func (q *Queries) PutImageReport(ctx context.Context, r ImageReport) (ImageReport, bool, error) {
	tags, _ := json.Marshal(nonNil(r.Tags))
	issues, _ := json.Marshal(nonNil(r.Issues))
	now := micros(r.UpdatedAt)
	_, err := q.exec(ctx, `INSERT INTO image_reports (id, account_id, registry, repository, digest, tags, sha, branch, repo_url,
		commit_message, commit_author, commit_time, issues, reported_by, build_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, repository, digest) DO UPDATE SET updated_at = image_reports.updated_at`,
		r.ID, r.AccountID, r.Registry, r.Repository, r.Digest, string(tags), r.SHA, r.Branch, r.RepoURL, r.CommitMessage, r.CommitAuthor,
		micros(r.CommitTime), string(issues), r.ReportedBy, r.BuildID, now, now)
	if err != nil {
		return ImageReport{}, false, err
	}
	have, err := q.imageReports(ctx, `WHERE account_id = ? AND repository = ? AND digest = ?`, r.AccountID, r.Repository, r.Digest)
	if err != nil {
		return ImageReport{}, false, err
	}
	if len(have) != 1 {
		return ImageReport{}, false, fmt.Errorf("image %s@%s: not stored", r.Repository, r.Digest)
	}
	cur := have[0]
	if cur.ID == r.ID {
		return cur, true, nil
	}
	cur.Tags, cur.Issues = union(cur.Tags, r.Tags), union(cur.Issues, r.Issues)
	for _, f := range []struct {
		dst *string
		v   string
	}{{&cur.Registry, r.Registry}, {&cur.SHA, r.SHA}, {&cur.Branch, r.Branch},
		{&cur.RepoURL, r.RepoURL}, {&cur.CommitMessage, r.CommitMessage}, {&cur.CommitAuthor, r.CommitAuthor}, {&cur.ReportedBy, r.ReportedBy}, {&cur.BuildID, r.BuildID}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if !r.CommitTime.IsZero() {
		cur.CommitTime = r.CommitTime
	}
	cur.UpdatedAt = r.UpdatedAt
	tags, _ = json.Marshal(cur.Tags)
	issues, _ = json.Marshal(cur.Issues)
	_, err = q.exec(ctx, `UPDATE image_reports SET registry = ?, tags = ?, sha = ?, branch = ?, repo_url = ?, commit_message = ?,
		commit_author = ?, commit_time = ?, issues = ?, reported_by = ?, build_id = ?, updated_at = ? WHERE id = ?`,
		cur.Registry, string(tags), cur.SHA, cur.Branch, cur.RepoURL, cur.CommitMessage, cur.CommitAuthor, micros(cur.CommitTime),
		string(issues), cur.ReportedBy, cur.BuildID, now, cur.ID)
	return cur, false, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// union returns a followed by the elements of b it does not hold, in order.
func union(a, b []string) []string {
	out := slices.Clone(nonNil(a))
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// ImageReportFilter narrows a listing of reported images. Zero fields do not filter.
type ImageReportFilter struct {
	Repository string
	Digest     string
	SHA        string
}

// ListImageReports returns account's reported images that f selects, newest report first (by
// ID), after p.After.
func (q *Queries) ListImageReports(ctx context.Context, accountID string, f ImageReportFilter, p paging.Page) ([]ImageReport, error) {
	where, args := `WHERE account_id = ?`, []any{accountID}
	for _, c := range []struct{ col, v string }{{"repository", f.Repository}, {"digest", f.Digest}, {"sha", f.SHA}} {
		if c.v != "" {
			where += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	if p.After != "" {
		where += ` AND id < ?`
		args = append(args, p.After)
	}
	return q.imageReports(ctx, where+` ORDER BY id DESC LIMIT ?`, append(args, p.Size())...)
}

// ImageReportsByDigest returns account's reported images with one of digests.
func (q *Queries) ImageReportsByDigest(ctx context.Context, accountID string, digests []string) ([]ImageReport, error) {
	if len(digests) == 0 {
		return nil, nil
	}
	args := []any{accountID}
	for _, d := range digests {
		args = append(args, d)
	}
	return q.imageReports(ctx, `WHERE account_id = ? AND digest IN (?`+strings.Repeat(`, ?`, len(digests)-1)+`) ORDER BY id`, args...)
}

const imageReportCols = `id, account_id, registry, repository, digest, tags, sha, branch, repo_url, commit_message, commit_author,
	commit_time, issues, reported_by, build_id, created_at, updated_at`

func (q *Queries) imageReports(ctx context.Context, where string, args ...any) ([]ImageReport, error) {
	rows, err := q.query(ctx, `SELECT `+imageReportCols+` FROM image_reports `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ImageReport
	for rows.Next() {
		var r ImageReport
		var tags, issues string
		var ct, created, updated int64
		if err := rows.Scan(&r.ID, &r.AccountID, &r.Registry, &r.Repository, &r.Digest, &tags, &r.SHA, &r.Branch, &r.RepoURL,
			&r.CommitMessage, &r.CommitAuthor, &ct, &issues, &r.ReportedBy, &r.BuildID, &created, &updated); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
			return nil, fmt.Errorf("image %s: decode tags: %w", r.ID, err)
		}
		if err := json.Unmarshal([]byte(issues), &r.Issues); err != nil {
			return nil, fmt.Errorf("image %s: decode issues: %w", r.ID, err)
		}
		r.CommitTime, r.CreatedAt, r.UpdatedAt = fromMicros(ct), fromMicros(created), fromMicros(updated)
		out = append(out, r)
	}
	return out, rows.Err()
}

// IssueTracker is an account's issue-tracker integration. Token is a secrets ciphertext.
type IssueTracker struct {
	ID, AccountID, Name, Kind, URL, Username, Token string
	Scope                                           []string
	CreatedAt                                       time.Time
}

// CreateIssueTracker stores t; a tracker of the same name is errdefs.ErrConflict.
func (q *Queries) CreateIssueTracker(ctx context.Context, t IssueTracker) error {
	scope, _ := json.Marshal(nonNil(t.Scope))
	_, err := q.exec(ctx, `INSERT INTO issue_trackers (id, account_id, name, kind, url, username, token, scope, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.ID, t.AccountID, t.Name, t.Kind, t.URL, t.Username, t.Token, string(scope), micros(t.CreatedAt))
	return err
}

// ListIssueTrackers returns account's issue trackers by name.
func (q *Queries) ListIssueTrackers(ctx context.Context, accountID string) ([]IssueTracker, error) {
	rows, err := q.query(ctx, `SELECT id, account_id, name, kind, url, username, token, scope, created_at FROM issue_trackers
		WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []IssueTracker
	for rows.Next() {
		var t IssueTracker
		var scope string
		var created int64
		if err := rows.Scan(&t.ID, &t.AccountID, &t.Name, &t.Kind, &t.URL, &t.Username, &t.Token, &scope, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(scope), &t.Scope); err != nil {
			return nil, fmt.Errorf("issue tracker %s: decode scope: %w", t.Name, err)
		}
		t.CreatedAt = fromMicros(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// AllIssueTrackers returns every account's trackers (for re-encrypting their tokens).
func (q *Queries) AllIssueTrackers(ctx context.Context) ([]IssueTracker, error) {
	rows, err := q.query(ctx, `SELECT id, account_id, name, kind, url, username, token, scope, created_at FROM issue_trackers ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []IssueTracker
	for rows.Next() {
		var t IssueTracker
		var scope string
		var created int64
		if err := rows.Scan(&t.ID, &t.AccountID, &t.Name, &t.Kind, &t.URL, &t.Username, &t.Token, &scope, &created); err != nil {
			return nil, err
		}
		t.CreatedAt = fromMicros(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// SetIssueTrackerToken replaces the token ciphertext of tracker id.
func (q *Queries) SetIssueTrackerToken(ctx context.Context, id, token string) error {
	_, err := q.exec(ctx, `UPDATE issue_trackers SET token = ? WHERE id = ?`, token, id)
	return err
}

// DeleteIssueTracker deletes account's tracker name; none is errdefs.ErrNotFound.
func (q *Queries) DeleteIssueTracker(ctx context.Context, accountID, name string) error {
	res, err := q.exec(ctx, `DELETE FROM issue_trackers WHERE account_id = ? AND name = ?`, accountID, name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound(sql.ErrNoRows, "issue tracker", name)
	}
	return nil
}

// Issue is an issue or pull request as its tracker last answered.
type Issue struct {
	AccountID, Key, Tracker, Kind, Title, State, URL, Error string
	FetchedAt                                               time.Time
}

// PutIssue stores what a tracker answered for an issue, replacing what was stored. A failed
// fetch (Error set) keeps the title, state and URL stored before.
func (q *Queries) PutIssue(ctx context.Context, is Issue) error {
	_, err := q.exec(ctx, `INSERT INTO issues (account_id, issue_key, tracker, kind, title, state, url, error, fetched_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, issue_key) DO UPDATE SET tracker = excluded.tracker, error = excluded.error, fetched_at = excluded.fetched_at,
		kind = CASE WHEN excluded.error = '' THEN excluded.kind ELSE issues.kind END,
		title = CASE WHEN excluded.error = '' THEN excluded.title ELSE issues.title END,
		state = CASE WHEN excluded.error = '' THEN excluded.state ELSE issues.state END,
		url = CASE WHEN excluded.error = '' THEN excluded.url ELSE issues.url END`,
		is.AccountID, is.Key, is.Tracker, is.Kind, is.Title, is.State, is.URL, is.Error, micros(is.FetchedAt))
	return err
}

// Issues returns account's stored issues with one of keys.
func (q *Queries) Issues(ctx context.Context, accountID string, keys []string) ([]Issue, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	args := []any{accountID}
	for _, k := range keys {
		args = append(args, k)
	}
	rows, err := q.query(ctx, `SELECT issue_key, tracker, kind, title, state, url, error, fetched_at FROM issues
		WHERE account_id = ? AND issue_key IN (?`+strings.Repeat(`, ?`, len(keys)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Issue
	for rows.Next() {
		is := Issue{AccountID: accountID}
		var fetched int64
		if err := rows.Scan(&is.Key, &is.Tracker, &is.Kind, &is.Title, &is.State, &is.URL, &is.Error, &fetched); err != nil {
			return nil, err
		}
		is.FetchedAt = fromMicros(fetched)
		out = append(out, is)
	}
	return out, rows.Err()
}
