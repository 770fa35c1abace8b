-- Teams, and attribute-based rules for a team or a user. accounts.policy_version is bumped in
-- the transaction of every change to an account's teams, team members or rules (and when a
-- member leaves), so that a server holding the account's rules in memory sees, when it reads a
-- request's member, that they changed.
ALTER TABLE accounts ADD COLUMN policy_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE teams (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

-- A team's members are members of its account: leaving the account leaves its teams.
CREATE TABLE team_members (
    team_id    TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    account_id TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (team_id, user_id),
    FOREIGN KEY (account_id, user_id) REFERENCES memberships (account_id, user_id) ON DELETE CASCADE
);
CREATE INDEX team_members_user ON team_members (account_id, user_id);

-- A rule is for one team (team_id) or one member (user_id); attrs is a JSON object of the
-- attributes a resource must have (tags, runtime, cluster, namespace).
CREATE TABLE authz_rules (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    team_id    TEXT REFERENCES teams (id) ON DELETE CASCADE,
    user_id    TEXT,
    action     TEXT NOT NULL,
    kind       TEXT NOT NULL,
    attrs      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    FOREIGN KEY (account_id, user_id) REFERENCES memberships (account_id, user_id) ON DELETE CASCADE
);
CREATE INDEX authz_rules_account ON authz_rules (account_id, id);
