-- Single sign-on for the CLI (freshet login --sso). A login in flight started by the CLI keeps
-- the port of the CLI's listener on 127.0.0.1 (1024-65535; 0: a browser login) and the CLI's
-- challenge, BASE64URL(SHA-256(verifier)), which only the CLI can answer.
ALTER TABLE sso_logins ADD COLUMN cli_port INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sso_logins ADD COLUMN cli_challenge TEXT NOT NULL DEFAULT '';

-- One-time codes the callback of a CLI login hands the CLI's loopback listener: the SHA-256 of
-- the code, the user the identity provider vouched for in which account, and the challenge the
-- exchange's verifier must answer. A row is deleted when it is exchanged (once, right or wrong)
-- and is worthless after expires_at.
CREATE TABLE sso_cli_codes (
    code_hash  TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    challenge  TEXT NOT NULL,
    issuer     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
