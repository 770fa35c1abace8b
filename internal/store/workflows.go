package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
)

// PrefixArchivedWorkflow is the ID prefix of the workflow archive's rows.
const PrefixArchivedWorkflow = "wfa"

// ArchivedWorkflow is a finished Argo Workflow a runtime reported, kept after the runtime
// deleted it. Detail is the reported record as JSON, owned by the runtimes domain.
type ArchivedWorkflow struct {
	ID, AccountID, RuntimeID string
	Namespace, Name, UID     string
	Phase, Message           string
	Template                 string
	Trigger, TriggeredBy     string
	NodeCount                int
	StartedAt, FinishedAt    time.Time
	ArchivedAt               time.Time
	Detail                   string
}

// ArchivedWorkflowFilter narrows a list of archived workflows; empty fields match anything.
type ArchivedWorkflowFilter struct {
	RuntimeID, Namespace, Name, Phase string
}

// ArchiveWorkflow stores w (account w.AccountID, runtime w.RuntimeID) and reports whether it is
// new or changed. The same Workflow (runtime and UID) reported again replaces its row only when
// it finished at another time or in another phase (retried): a report sent twice changes
// nothing. w.ID is used only
// for a new row.
func (q *Queries) ArchiveWorkflow(ctx context.Context, w ArchivedWorkflow) (bool, error) {
	if err := q.ownRuntime(ctx, w.AccountID, w.RuntimeID); err != nil {
		return false, err
	}
	if w.ID == "" {
		w.ID = NewID(PrefixArchivedWorkflow)
	}
	var id string
	err := q.queryRow(ctx, `INSERT INTO workflow_archive (id, account_id, runtime_id, namespace, name, uid, phase, message, template,
		trigger_kind, triggered_by, node_count, started_at, finished_at, archived_at, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (runtime_id, uid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name, phase = excluded.phase,
			message = excluded.message, template = excluded.template, trigger_kind = excluded.trigger_kind, triggered_by = excluded.triggered_by,
			node_count = excluded.node_count, started_at = excluded.started_at, finished_at = excluded.finished_at,
			archived_at = excluded.archived_at, detail = excluded.detail
		WHERE workflow_archive.account_id = excluded.account_id AND (workflow_archive.finished_at <> excluded.finished_at
			OR workflow_archive.phase <> excluded.phase)
		RETURNING id`,
		w.ID, w.AccountID, w.RuntimeID, w.Namespace, w.Name, w.UID, w.Phase, w.Message, w.Template, w.Trigger, w.TriggeredBy, w.NodeCount,
		micros(w.StartedAt), micros(w.FinishedAt), micros(w.ArchivedAt), w.Detail).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, q.mapErr(err)
	}
	return true, nil
}

const archivedWorkflowColumns = `id, account_id, runtime_id, namespace, name, uid, phase, message, template, trigger_kind, triggered_by,
	node_count, started_at, finished_at, archived_at, detail`

func scanArchivedWorkflow(sc interface{ Scan(...any) error }, withDetail bool) (ArchivedWorkflow, error) {
	var w ArchivedWorkflow
	var started, finished, archived int64
	var detail sql.NullString
	if err := sc.Scan(&w.ID, &w.AccountID, &w.RuntimeID, &w.Namespace, &w.Name, &w.UID, &w.Phase, &w.Message, &w.Template, &w.Trigger,
		&w.TriggeredBy, &w.NodeCount, &started, &finished, &archived, &detail); err != nil {
		return w, err
	}
	w.StartedAt, w.FinishedAt, w.ArchivedAt = fromMicros(started), fromMicros(finished), fromMicros(archived)
	if withDetail {
		w.Detail = detail.String
	}
	return w, nil
}

// ListArchivedWorkflows returns account's archived workflows that pass f, newest archived
// first (by ID); page.After is the ID the previous page ended with. Detail is left empty.
func (q *Queries) ListArchivedWorkflows(ctx context.Context, accountID string, f ArchivedWorkflowFilter, page paging.Page) ([]ArchivedWorkflow, error) {
	query := `SELECT ` + archivedWorkflowColumns + ` FROM workflow_archive WHERE account_id = ?`
	args := []any{accountID}
	for _, c := range []struct{ col, v string }{{"runtime_id", f.RuntimeID}, {"namespace", f.Namespace}, {"name", f.Name}, {"phase", f.Phase}} {
		if c.v != "" {
			query += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	if page.After != "" {
		query += ` AND id < ?`
		args = append(args, page.After)
	}
	query += ` ORDER BY id DESC LIMIT ?`
	rows, err := q.query(ctx, query, append(args, page.Size())...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ArchivedWorkflow
	for rows.Next() {
		w, err := scanArchivedWorkflow(rows, false)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// GetArchivedWorkflow returns account's archived workflow by its ID or its Workflow's UID.
func (q *Queries) GetArchivedWorkflow(ctx context.Context, accountID, idOrUID string) (ArchivedWorkflow, error) {
	w, err := scanArchivedWorkflow(q.queryRow(ctx, `SELECT `+archivedWorkflowColumns+` FROM workflow_archive
		WHERE account_id = ? AND (id = ? OR uid = ?) ORDER BY archived_at DESC LIMIT 1`, accountID, idOrUID, idOrUID), true)
	if errors.Is(err, sql.ErrNoRows) {
		return w, notFound(err, "archived workflow", idOrUID)
	}
	if err != nil {
		return w, q.mapErr(err)
	}
	return w, nil
}
