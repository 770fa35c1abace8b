-- Billing (internal/billing, docs/billing.md): the plan each account is on. The catalogue of
-- plans and their limits is the operator's configuration, not a table; an account without a
-- row is on the catalogue's default plan. The row is also what a limit check locks: every
-- admission of a limited resource (a build claimed, a runner registered, a member added, ...)
-- takes it FOR UPDATE on PostgreSQL in the transaction that creates the resource, so two
-- admissions of one account never count the same free slot. Times are unix microseconds.
CREATE TABLE account_plans (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    plan       TEXT NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at BIGINT NOT NULL
);
