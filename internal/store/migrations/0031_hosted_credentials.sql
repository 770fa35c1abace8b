-- The tokens of hosted runtimes, encrypted under the master keys (an fsec1 ciphertext bound to
-- the runtime's ID), so that the replica owning the hosted-runtime lease can start them again
-- after any restart (internal/server hosted.go). Gone with the runtime, and with its account.
CREATE TABLE hosted_credentials (
    runtime_id TEXT PRIMARY KEY REFERENCES runtimes (id) ON DELETE CASCADE,
    token_enc  TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
