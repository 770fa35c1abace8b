-- Image enrichment (internal/images, docs/analytics.md "Images"): images reported through the
-- API (Codefresh's report-image is the model) with the commit they were built from and the
-- issue-tracker keys they carry; the account's issue-tracker integrations; and the issues'
-- titles fetched through them. Times are unix microseconds.

-- One row per account, repository (the full name, registry host included) and digest, whether a
-- build's runner reported it (build_id set) or an API call: a second report of the same image
-- merges its tags and issue keys into the row (JSON arrays) and replaces the git fields it gives.
CREATE TABLE image_reports (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    registry       TEXT NOT NULL,
    repository     TEXT NOT NULL,
    digest         TEXT NOT NULL,
    tags           TEXT NOT NULL,
    sha            TEXT NOT NULL,
    branch         TEXT NOT NULL,
    repo_url       TEXT NOT NULL,
    commit_message TEXT NOT NULL,
    commit_author  TEXT NOT NULL,
    commit_time    BIGINT NOT NULL,
    issues         TEXT NOT NULL,
    reported_by    TEXT NOT NULL,
    build_id       TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    UNIQUE (account_id, repository, digest)
);
CREATE INDEX image_reports_digest ON image_reports (account_id, digest);
CREATE INDEX image_reports_sha ON image_reports (account_id, sha);

-- An account's issue-tracker integrations: kind jira, github or gitlab; url the API base; token
-- a secrets ciphertext bound to the account and name; scope a JSON array of the Jira project
-- keys or repository path prefixes it answers for (empty: all of its kind).
CREATE TABLE issue_trackers (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    url        TEXT NOT NULL,
    username   TEXT NOT NULL,
    token      TEXT NOT NULL,
    scope      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

-- Issues (and pull requests) as a tracker last answered for them; error is why the last fetch
-- failed (then title may be from an earlier fetch).
CREATE TABLE issues (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    issue_key  TEXT NOT NULL,
    tracker    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    title      TEXT NOT NULL,
    state      TEXT NOT NULL,
    url        TEXT NOT NULL,
    error      TEXT NOT NULL,
    fetched_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, issue_key)
);
