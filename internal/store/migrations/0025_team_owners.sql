-- Team-owned resources (docs/security.md, "Teams own resources"): the team of the account that
-- owns a project (its pipelines and builds inherit it) or a runtime (its clusters, applications,
-- git sources and workflows inherit it); empty when no team owns it. A team that owns something
-- cannot be deleted (identity.DeleteTeam refuses naming what it owns), so the ID always names a
-- team of the same account.
ALTER TABLE projects ADD COLUMN owner_team_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runtimes ADD COLUMN owner_team_id TEXT NOT NULL DEFAULT '';
CREATE INDEX projects_owner ON projects (account_id, owner_team_id);
CREATE INDEX runtimes_owner ON runtimes (account_id, owner_team_id);
