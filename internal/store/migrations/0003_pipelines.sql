-- CI: projects, pipelines, triggers, builds with their steps and logs, runners, contexts.
CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE pipelines (
    id                 TEXT PRIMARY KEY,
    account_id         TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    project_id         TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    spec_yaml          TEXT NOT NULL,
    spec_repo          TEXT NOT NULL,
    spec_path          TEXT NOT NULL,
    config             TEXT NOT NULL,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    UNIQUE (account_id, project_id, name)
);

CREATE TABLE triggers (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    pipeline_id TEXT NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    config      TEXT NOT NULL,
    secret_enc  TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX triggers_pipeline ON triggers (pipeline_id);

CREATE TABLE builds (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    pipeline_id    TEXT NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
    number         BIGINT NOT NULL,
    status         TEXT NOT NULL,
    trigger_type   TEXT NOT NULL,
    trigger_id     TEXT NOT NULL,
    triggered_by   TEXT NOT NULL,
    repo           TEXT NOT NULL,
    branch         TEXT NOT NULL,
    sha            TEXT NOT NULL,
    commit_message TEXT NOT NULL,
    commit_author  TEXT NOT NULL,
    variables      TEXT NOT NULL,
    spec_yaml      TEXT NOT NULL,
    labels         TEXT NOT NULL,
    runner_id      TEXT NOT NULL,
    lease_id       TEXT NOT NULL,
    lease_expires  BIGINT NOT NULL,
    attempt        INTEGER NOT NULL,
    restart_of     TEXT NOT NULL,
    reason         TEXT NOT NULL,
    log_size       BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    started_at     BIGINT NOT NULL,
    finished_at    BIGINT NOT NULL,
    UNIQUE (pipeline_id, number)
);
CREATE INDEX builds_account ON builds (account_id, id);
CREATE INDEX builds_status ON builds (status, id);

CREATE TABLE build_steps (
    build_id    TEXT NOT NULL REFERENCES builds (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    position    INTEGER NOT NULL,
    stage       TEXT NOT NULL,
    status      TEXT NOT NULL,
    exit_code   INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    message     TEXT NOT NULL,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT NOT NULL,
    PRIMARY KEY (build_id, name)
);

CREATE TABLE build_log_chunks (
    build_id TEXT NOT NULL REFERENCES builds (id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    data     ${blob} NOT NULL,
    PRIMARY KEY (build_id, position)
);

CREATE TABLE runners (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_prefix TEXT NOT NULL UNIQUE,
    token_hash   TEXT NOT NULL,
    labels       TEXT NOT NULL,
    info         TEXT NOT NULL,
    last_seen    BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE contexts (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE webhook_deliveries (
    trigger_id  TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    build_id    TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (trigger_id, delivery_id)
);
