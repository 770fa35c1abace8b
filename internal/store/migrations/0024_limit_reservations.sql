-- Limit reservations (internal/billing, docs/billing.md "Enforcement"): applications and
-- managed clusters are created by a runtime, outside the control plane's transactions, so a
-- create through a runtime's app-proxy is admitted by taking a reservation here, under the
-- account's plan row lock (account_plans), before the request is forwarded. A limit counts what
-- the runtimes reported plus the unexpired reservations they have not reported yet (matched by
-- runtime and name). A reservation is deleted when the runtime refuses or cannot be reached,
-- when its report or heartbeat includes the object, or lazily once expired. resource is the
-- plan's resource name (applications, clusters-per-runtime); name the application's or the
-- cluster's. Times are unix microseconds.
CREATE TABLE limit_reservations (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    resource   TEXT NOT NULL,
    runtime_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    FOREIGN KEY (account_id, runtime_id) REFERENCES runtimes (account_id, id) ON DELETE CASCADE
);
CREATE INDEX limit_reservations_account ON limit_reservations (account_id, resource, runtime_id, name);
