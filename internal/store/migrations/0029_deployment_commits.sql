-- The commits a deployment brought from its application's source repository, as its runtime
-- walked them (`git log previous..revision`, runtimev1.SyncCommits): JSON owned by the
-- analytics package. '' for deployments of runtimes that do not report them (and older rows).
ALTER TABLE deployments ADD COLUMN commits TEXT NOT NULL DEFAULT '';
