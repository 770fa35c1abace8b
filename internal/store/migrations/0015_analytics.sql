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
    lead_bucket    BIGINT NOT NULL,
    degraded_at    BIGINT NOT NULL,
    rolled_back_at BIGINT NOT NULL,
    UNIQUE (account_id, event_key)
);
-- Listings and the DORA query's direct path scan an account's (or an application's, a
-- runtime's, a cluster's) deployments in a time range; the exact median lead time reads one
-- lead-time bucket (of the account, a runtime, a cluster); the consumers recompute what followed an application's deployments.
CREATE INDEX deployments_time ON deployments (account_id, finished_at, result, lead_time_ms, lead_bucket, degraded_at, rolled_back_at);
CREATE INDEX deployments_app ON deployments (account_id, app, finished_at, result, lead_time_ms, lead_bucket, degraded_at, rolled_back_at);
CREATE INDEX deployments_runtime ON deployments (account_id, runtime_id, app, finished_at);
CREATE INDEX deployments_runtime_name ON deployments (account_id, runtime, runtime_id);
CREATE INDEX deployments_cluster ON deployments (account_id, cluster, finished_at);
CREATE INDEX deployments_lead ON deployments (account_id, lead_bucket, finished_at, lead_time_ms);
CREATE INDEX deployments_runtime_lead ON deployments (account_id, runtime_id, lead_bucket, finished_at, lead_time_ms);
CREATE INDEX deployments_cluster_lead ON deployments (account_id, cluster, lead_bucket, finished_at, lead_time_ms);

-- Per UTC day (days since 1970-01-01) and scope ('' the account, 'runtime:<id>',
-- 'cluster:<cluster>'), the deployments' counts, recomputed from deployments for the days an
-- event touched: f1 … f7 count the deployments whose failure kinds are exactly that bit mask
-- (1 the sync failed, 2 degraded after, 4 rolled back), so a query sums the masks its failure
-- definition selects.
CREATE TABLE deployment_stats (
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    scope       TEXT NOT NULL,
    day         BIGINT NOT NULL,
    deployments BIGINT NOT NULL,
    successful  BIGINT NOT NULL,
    f1 BIGINT NOT NULL, f2 BIGINT NOT NULL, f3 BIGINT NOT NULL, f4 BIGINT NOT NULL,
    f5 BIGINT NOT NULL, f6 BIGINT NOT NULL, f7 BIGINT NOT NULL,
    lead_count  BIGINT NOT NULL,
    lead_sum_ms BIGINT NOT NULL,
    PRIMARY KEY (account_id, scope, day)
);
CREATE INDEX deployment_stats_day ON deployment_stats (account_id, day);
-- The same days' and scopes' successful deployments by lead-time bucket (8 per doubling), for
-- the median.
CREATE TABLE lead_stats (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    day        BIGINT NOT NULL,
    bucket     BIGINT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (account_id, scope, day, bucket)
);
CREATE INDEX lead_stats_day ON lead_stats (account_id, day);

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
