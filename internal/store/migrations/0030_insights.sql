-- Home's Delivery Pipelines runs per day (store.WorkflowRunCounts): an account's archived
-- workflows by finish time, with the phase, without reading the rows.
CREATE INDEX workflow_archive_finished ON workflow_archive (account_id, finished_at, phase);

-- DORA's incidents, each with its end (docs/analytics.md, "Time to restore"): an application's
-- stretch from a transition to Degraded to its next transition to Healthy (restored_at 0 while
-- it lasts), kept by store.PutHealthEvent as transitions arrive, in any order, so a report reads
-- the range's incidents instead of looking up each one's end. runtime and cluster are the first
-- transition's. Derived from app_health_events, here for the transitions stored before.
CREATE TABLE app_incidents (
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    runtime_id  TEXT NOT NULL,
    app         TEXT NOT NULL,
    runtime     TEXT NOT NULL,
    cluster     TEXT NOT NULL,
    started_at  BIGINT NOT NULL,
    restored_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, runtime_id, app, started_at)
);
CREATE INDEX app_incidents_time ON app_incidents (account_id, started_at, restored_at, runtime_id, app);
INSERT INTO app_incidents (account_id, runtime_id, app, runtime, cluster, started_at, restored_at)
SELECT account_id, runtime_id, app, MIN(runtime), MIN(cluster), MIN(at), COALESCE(restored, 0) FROM (
    SELECT d.account_id, d.runtime_id, d.app, d.runtime, d.cluster, d.at, (SELECT MIN(h.at) FROM app_health_events h
        WHERE h.account_id = d.account_id AND h.runtime_id = d.runtime_id AND h.app = d.app AND h.health = 'Healthy' AND h.at > d.at) AS restored
    FROM app_health_events d WHERE d.health = 'Degraded') x
GROUP BY account_id, runtime_id, app, restored;

-- A set of applications (a product's) or one runtime ID reads its deployments through
-- deployments_runtime: with the columns a DORA report aggregates, without a table lookup per row
-- (as deployments_app and deployments_time have them).
DROP INDEX deployments_runtime;
CREATE INDEX deployments_runtime ON deployments (account_id, runtime_id, app, finished_at, result, lead_time_ms, lead_bucket, degraded_at, rolled_back_at);
