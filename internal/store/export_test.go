package store

import (
	"context"
	"io/fs"
)

// Test hooks for the external store_test package.

// OpenUnmigrated opens dsn without applying migrations.
func OpenUnmigrated(ctx context.Context, dsn string) (*DB, error) { return open(ctx, dsn, nil) }

// MigrateFS applies the migrations in fsys.
func (db *DB) MigrateFS(ctx context.Context, fsys fs.FS) error { return db.migrateFS(ctx, fsys) }

// SplitStatements exposes splitStatements.
var SplitStatements = splitStatements
