-- Invitations: an account's admin added a user who already has a login (in another account).
-- The membership exists only once the user accepts. Until then the inviting account sees the
-- invitation as one of its users under member_id, an ID of its own, so it cannot tell an
-- invited user from a new one. Expired rows are ignored by every read and deleted lazily.
CREATE TABLE invitations (
    id         TEXT PRIMARY KEY,
    member_id  TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    role       TEXT NOT NULL,
    invited_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    UNIQUE (account_id, user_id)
);
CREATE INDEX invitations_user ON invitations (user_id);
CREATE INDEX invitations_account ON invitations (account_id, member_id);
CREATE INDEX invitations_expires ON invitations (expires_at);
