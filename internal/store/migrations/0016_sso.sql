-- Per-account OpenID Connect single sign-on. client_secret is a secrets.Keyring ciphertext (its
-- additional data is the account ID); scopes and allowed_domains are space-separated lists;
-- break_glass_user_id is the admin who may still log in with a password when require_sso is 1.
CREATE TABLE sso_configs (
    account_id          TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    issuer              TEXT NOT NULL,
    client_id           TEXT NOT NULL,
    client_secret       TEXT NOT NULL,
    scopes              TEXT NOT NULL,
    email_claim         TEXT NOT NULL,
    name_claim          TEXT NOT NULL,
    groups_claim        TEXT NOT NULL,
    allowed_domains     TEXT NOT NULL,
    require_sso         INTEGER NOT NULL DEFAULT 0,
    break_glass_user_id TEXT NOT NULL DEFAULT '',
    updated_at          BIGINT NOT NULL
);

-- Logins in flight: the SHA-256 of the state parameter, the nonce and the PKCE verifier the
-- callback needs. A row is deleted when its callback arrives (single use) and is worthless after
-- expires_at.
CREATE TABLE sso_logins (
    state_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    nonce      TEXT NOT NULL,
    verifier   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- A session opened through an account's SSO is bound to that account (1): it cannot switch to
-- the user's other accounts nor change the user's password.
ALTER TABLE sessions ADD COLUMN sso_bound INTEGER NOT NULL DEFAULT 0;
