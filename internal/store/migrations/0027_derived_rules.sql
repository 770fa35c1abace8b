-- Rules derived from a runtime's Argo CD AppProject roles (docs/security.md, "Rules derived from
-- AppProject roles"): source_runtime_id names the runtime that reported them (they go with it),
-- origin says where each comes from ("AppProject P of runtime R, role X"). A report replaces
-- all of a runtime's derived rules; they are not edited through the rules API. Empty origin:
-- a rule an admin wrote.
ALTER TABLE authz_rules ADD COLUMN source_runtime_id TEXT REFERENCES runtimes (id) ON DELETE CASCADE;
ALTER TABLE authz_rules ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE INDEX authz_rules_source ON authz_rules (account_id, source_runtime_id);
