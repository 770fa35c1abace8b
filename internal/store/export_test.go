package store

import (
	"context"
	"fmt"
	"io/fs"
)

// Test hooks for the external store_test package.

// OpenUnmigrated opens dsn without applying migrations.
func OpenUnmigrated(ctx context.Context, dsn string) (*DB, error) { return open(ctx, dsn, nil) }

// MigrateFS applies the migrations in fsys.
func (db *DB) MigrateFS(ctx context.Context, fsys fs.FS) error { return db.migrateFS(ctx, fsys) }

// AnalyticsSyncsQuery exposes the statement AnalyticsSyncs runs, for its plan test.
const AnalyticsSyncsQuery = analyticsSyncsQuery

// SplitStatements exposes splitStatements.
var SplitStatements = splitStatements

// Exec runs one statement outside the query methods, for tests that set up rows the methods
// cannot make (an older schema's, a half-written one's).
func (db *DB) Exec(ctx context.Context, query string, args ...any) error {
	_, err := db.exec(ctx, query, args...)
	return err
}

// Migrated answers the highest migration applied and how many rows schema_migrations holds.
func (db *DB) Migrated(ctx context.Context) (latest, rows int, err error) {
	err = db.queryRow(ctx, `SELECT COALESCE(MAX(version), 0), COUNT(*) FROM schema_migrations`).Scan(&latest, &rows)
	return latest, rows, err
}

// Migrations is how many migrations the binary holds.
func Migrations() int {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		return -1
	}
	return len(ms)
}

// MigrationFS is the binary's own migrations.
var MigrationFS fs.FS = migrationFS

// Plan answers EXPLAIN QUERY PLAN (SQLite) or EXPLAIN (PostgreSQL) of query, one line a row.
func (db *DB) Plan(ctx context.Context, query string, args ...any) ([]string, error) {
	explain := `EXPLAIN QUERY PLAN `
	if db.d == Postgres {
		explain = `EXPLAIN `
	}
	rows, err := db.query(ctx, explain+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprint(vals[len(vals)-1]))
	}
	return out, rows.Err()
}

// DeploymentQueries are the statements a DORA report of f runs on deployments, with their
// arguments: DORADays, LeadHistogram, LeadInBucket.
func (db *DB) DeploymentQueries(accountID string, f DeploymentFilter) ([]string, [][]any, error) {
	return db.deploymentQueries(accountID, f)
}
