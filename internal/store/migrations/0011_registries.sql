-- Registry contexts are contexts of type 'registry'. An account's default registry (where build
-- steps push unless told otherwise) is one row here: at most one per account by the primary key,
-- switched by one upsert, and gone with its context.
CREATE TABLE registry_defaults (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    context_id TEXT NOT NULL UNIQUE REFERENCES contexts (id) ON DELETE CASCADE
);

-- Images that build steps pushed, as their runner reported them with the step's final state:
-- one row per step, repository and digest (a retried report adds nothing; more tags for the same
-- image are merged into tags, a JSON array). sha and branch are the build's, copied so that a
-- listing of an account's images by repository needs no join.
CREATE TABLE build_images (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    build_id   TEXT NOT NULL REFERENCES builds (id) ON DELETE CASCADE,
    step       TEXT NOT NULL,
    registry   TEXT NOT NULL,
    repository TEXT NOT NULL,
    tags       TEXT NOT NULL,
    digest     TEXT NOT NULL,
    size       BIGINT NOT NULL,
    sha        TEXT NOT NULL,
    branch     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (build_id, step, repository, digest)
);
CREATE INDEX build_images_repository ON build_images (account_id, repository, id);
