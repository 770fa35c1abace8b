-- The workflow archive (docs/runtimes.md, "Delivery Pipelines"): every Argo Workflow a hybrid
-- runtime reports finished (runtimev1.WorkflowFinished), kept after the runtime deletes it.
-- One row per runtime and Workflow UID: a workflow retried and finished again replaces its row.
-- detail is the reported record (runtimev1.WorkflowRecord, nodes included) as JSON. Times are
-- unix microseconds.
CREATE TABLE workflow_archive (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL,
    runtime_id   TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    name         TEXT NOT NULL,
    uid          TEXT NOT NULL,
    phase        TEXT NOT NULL,
    message      TEXT NOT NULL,
    template     TEXT NOT NULL,
    trigger_kind TEXT NOT NULL,
    triggered_by TEXT NOT NULL,
    node_count   INTEGER NOT NULL,
    started_at   BIGINT NOT NULL,
    finished_at  BIGINT NOT NULL,
    archived_at  BIGINT NOT NULL,
    detail       TEXT NOT NULL,
    UNIQUE (runtime_id, uid),
    FOREIGN KEY (account_id, runtime_id) REFERENCES runtimes (account_id, id) ON DELETE CASCADE
);
CREATE INDEX workflow_archive_account ON workflow_archive (account_id, id);
CREATE INDEX workflow_archive_name ON workflow_archive (account_id, runtime_id, namespace, name);
