-- Runtime tokens that expire, and why a runtime was last refused (docs/runtimes.md, "Tokens").
-- token_expires_at is 0 for a token that never expires (every token minted before this
-- migration, hosted runtimes' tokens, and all tokens while --runtime-token-ttl is 0).
-- prev_token_prefix/prev_token_hash/token_rotated_at keep the token a rotation replaced, only
-- so that its holder is told it was replaced rather than that it is unknown; it never
-- authenticates. refused_* record the last refused handshake or heartbeat with the runtime's
-- own (expired or replaced) token, cleared by its next successful one. Columns with defaults
-- only: binaries of schema 31 keep working against it.
ALTER TABLE runtimes ADD COLUMN token_expires_at BIGINT DEFAULT 0 NOT NULL;
ALTER TABLE runtimes ADD COLUMN prev_token_prefix TEXT DEFAULT '' NOT NULL;
ALTER TABLE runtimes ADD COLUMN prev_token_hash TEXT DEFAULT '' NOT NULL;
ALTER TABLE runtimes ADD COLUMN token_rotated_at BIGINT DEFAULT 0 NOT NULL;
ALTER TABLE runtimes ADD COLUMN refused_at BIGINT DEFAULT 0 NOT NULL;
ALTER TABLE runtimes ADD COLUMN refused_kind TEXT DEFAULT '' NOT NULL;
ALTER TABLE runtimes ADD COLUMN refused_reason TEXT DEFAULT '' NOT NULL;
ALTER TABLE runtimes ADD COLUMN refused_remote TEXT DEFAULT '' NOT NULL;
CREATE INDEX runtimes_prev_token_prefix ON runtimes (prev_token_prefix);
