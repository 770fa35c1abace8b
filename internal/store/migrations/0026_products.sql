-- Products and environments (internal/products, docs/products.md). An environment is a named
-- set of targets (runtime, cluster, namespace glob) with a kind (prod, non-prod) and a place in
-- the promotion order; a product groups applications by annotation or by app-name globs.
-- targets and patterns are JSON arrays owned by internal/products. Times are unix microseconds.
CREATE TABLE environments (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    position   INTEGER NOT NULL,
    targets    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE products (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    patterns   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);
