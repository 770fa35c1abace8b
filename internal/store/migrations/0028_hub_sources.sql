-- The template Hub's sources (internal/hub, docs/hub.md): git repositories an account's admin
-- adds to the catalogue Freshet ships with — a URL, a branch, tag or commit, and the directory
-- of templates in it. Times are unix microseconds.
CREATE TABLE hub_sources (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    url        TEXT NOT NULL,
    revision   TEXT NOT NULL,
    path       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);
