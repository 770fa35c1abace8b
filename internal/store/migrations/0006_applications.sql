-- GitOps applications as their runtimes report them (runtime protocol Report), their finished
-- syncs, the account's push webhook secret, and an outbox of domain events for the bus.

-- (account_id, id) is unique already (id is); the index lets tables reference a runtime
-- together with its account, so a row can never pair one account with another's runtime.
CREATE UNIQUE INDEX runtimes_account_id ON runtimes (account_id, id);

-- One row per application of a runtime. app is the whole application as reported (JSON); the
-- other columns are copies of its fields for filtering. Rows go with their runtime.
CREATE TABLE applications (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    runtime_id      TEXT NOT NULL,
    name            TEXT NOT NULL,
    project         TEXT NOT NULL,
    repo_url        TEXT NOT NULL,
    path            TEXT NOT NULL,
    target_revision TEXT NOT NULL,
    dest_server     TEXT NOT NULL,
    dest_name       TEXT NOT NULL,
    dest_namespace  TEXT NOT NULL,
    sync_status     TEXT NOT NULL,
    health_status   TEXT NOT NULL,
    health_message  TEXT NOT NULL,
    revision        TEXT NOT NULL,
    labels          TEXT NOT NULL,
    app             TEXT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (runtime_id, name),
    FOREIGN KEY (account_id, runtime_id) REFERENCES runtimes (account_id, id) ON DELETE CASCADE
);
CREATE INDEX applications_account ON applications (account_id, id);

-- The applications' labels, one row each, for label selectors.
CREATE TABLE application_labels (
    application_id TEXT NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
    account_id     TEXT NOT NULL,
    label_key      TEXT NOT NULL,
    label_value    TEXT NOT NULL,
    PRIMARY KEY (application_id, label_key)
);
CREATE INDEX application_labels_kv ON application_labels (account_id, label_key, label_value);

-- Finished syncs that were not dry runs: the deployment records. sync_id is the runtime's ID
-- of the sync, unique per application, so a report sent twice records a sync once.
CREATE TABLE application_syncs (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL,
    runtime_id     TEXT NOT NULL,
    app            TEXT NOT NULL,
    sync_id        BIGINT NOT NULL,
    revision       TEXT NOT NULL,
    phase          TEXT NOT NULL,
    message        TEXT NOT NULL,
    initiated_by   TEXT NOT NULL,
    commit_author  TEXT NOT NULL,
    commit_message TEXT NOT NULL,
    commit_time    BIGINT NOT NULL,
    started_at     BIGINT NOT NULL,
    finished_at    BIGINT NOT NULL,
    detail         TEXT NOT NULL,
    UNIQUE (runtime_id, app, sync_id),
    FOREIGN KEY (account_id, runtime_id) REFERENCES runtimes (account_id, id) ON DELETE CASCADE
);

-- The account's GitOps push webhook secret (encrypted with the master key).
CREATE TABLE gitops_webhooks (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    secret_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- Domain events written in the transaction of the change they describe; the outbox relay
-- publishes them to the bus and deletes them.
CREATE TABLE outbox (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    subject    TEXT NOT NULL,
    msg_key    TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
