-- GitOps runtimes: hybrid ones installed by customers, one hosted one per account.
CREATE TABLE runtimes (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    type           TEXT NOT NULL,
    access_mode    TEXT NOT NULL,
    ingress_url    TEXT NOT NULL,
    repo           TEXT NOT NULL,
    token_prefix   TEXT NOT NULL UNIQUE,
    token_hash     TEXT NOT NULL,
    version        TEXT NOT NULL,
    status         TEXT NOT NULL,
    info           TEXT NOT NULL,
    last_heartbeat BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    UNIQUE (account_id, name)
);
CREATE UNIQUE INDEX runtimes_one_hosted ON runtimes (account_id) WHERE type = 'hosted';
