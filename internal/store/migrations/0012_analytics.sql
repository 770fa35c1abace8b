-- Analytics (internal/analytics, docs/analytics.md): tables derived from bus events by the
-- analytics consumers, and rebuilt from the source tables by `freshet admin analytics rebuild`.
-- Times are unix microseconds; 0 is "unknown" or "never".

-- One row per change that reached an environment: a finished, non-dry-run sync. The ID is
-- derived from the finish time and the event's identity (event_key), so the same sync derived
-- twice — a redelivered event, a rebuild — is the same row. No foreign key to runtimes or
-- applications: the record outlives a deleted application or runtime.
CREATE TABLE deployments (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    event_key      TEXT NOT NULL,
    runtime_id     TEXT NOT NULL,
    runtime        TEXT NOT NULL,
    app            TEXT NOT NULL,
    project        TEXT NOT NULL,
    cluster        TEXT NOT NULL,
    namespace      TEXT NOT NULL,
    revision       TEXT NOT NULL,
    sync_id        BIGINT NOT NULL,
    trigger_kind   TEXT NOT NULL,
    initiated_by   TEXT NOT NULL,
    user_email     TEXT NOT NULL,
    result         TEXT NOT NULL,
    message        TEXT NOT NULL,
    commit_author  TEXT NOT NULL,
    commit_message TEXT NOT NULL,
    commit_time    BIGINT NOT NULL,
    images         TEXT NOT NULL,
    started_at     BIGINT NOT NULL,
    finished_at    BIGINT NOT NULL,
    lead_time_ms   BIGINT NOT NULL,
    degraded_at    BIGINT NOT NULL,
    rolled_back_at BIGINT NOT NULL,
    UNIQUE (account_id, event_key)
);
-- The DORA query scans an account's (or an application's, runtime's, cluster's) deployments
-- in a time range; these indexes cover what it reads.
CREATE INDEX deployments_time ON deployments (account_id, finished_at, result, lead_time_ms, degraded_at, rolled_back_at);
CREATE INDEX deployments_app ON deployments (account_id, app, finished_at, result, lead_time_ms, degraded_at, rolled_back_at);
CREATE INDEX deployments_runtime ON deployments (account_id, runtime_id, app, finished_at);
CREATE INDEX deployments_cluster ON deployments (account_id, cluster, finished_at);

-- Applications' health transitions, placed by the time the runtime saw them.
CREATE TABLE app_health_events (
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    runtime_id  TEXT NOT NULL,
    runtime     TEXT NOT NULL,
    app         TEXT NOT NULL,
    cluster     TEXT NOT NULL,
    at          BIGINT NOT NULL,
    health      TEXT NOT NULL,
    from_health TEXT NOT NULL,
    revision    TEXT NOT NULL,
    PRIMARY KEY (account_id, runtime_id, app, at, health)
);
CREATE INDEX app_health_events_time ON app_health_events (account_id, health, at);

-- Counts of API events (audit records: builds run, runtimes registered, ...) per account, UTC
-- day, action and result.
CREATE TABLE activity_daily (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day        BIGINT NOT NULL,
    action     TEXT NOT NULL,
    result     TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (account_id, day, action, result)
);

-- Deployments find the images their revision's builds pushed.
CREATE INDEX build_images_sha ON build_images (account_id, sha);
