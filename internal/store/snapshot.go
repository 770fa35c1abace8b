package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// SQLitePath returns the file path of a SQLite dsn, or ok false for a PostgreSQL URL or a dsn
// that is not a SQLite path.
func SQLitePath(dsn string) (path string, ok bool) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return "", false
	}
	if strings.Contains(dsn, "://") && !strings.HasPrefix(dsn, "sqlite://") {
		return "", false
	}
	path = strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path, path != ""
}

// OpenExistingSQLite opens the SQLite database file at path as it is: it applies no migrations
// and, unlike Open, does not create a missing file (that is errdefs.ErrNotFound). Backup and
// restore use it to read a database whose schema they must not change.
func OpenExistingSQLite(ctx context.Context, path string) (*DB, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("SQLite database %s: %w: no such file", path, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("SQLite database %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, errdefs.Invalid("db", path, "is not a regular file: give the SQLite database file")
	}
	return open(ctx, path, nil)
}

// SnapshotTo writes a consistent copy of the SQLite database to path with VACUUM INTO: one read
// transaction, so writers go on and the copy holds every transaction committed before it began
// and none after. path must not exist. It is the online backup of a database a server is using.
func (db *DB) SnapshotTo(ctx context.Context, path string) error {
	if db.d != SQLite {
		return errdefs.Invalid("db", string(db.d), "cannot be snapshotted by Freshet: back PostgreSQL up with pg_dump (docs/operations.md)")
	}
	if _, err := db.sql.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("snapshot the SQLite database into %s: %w", path, err)
	}
	return nil
}

// AppliedSchemaVersion returns the newest migration applied to the database (0 when none).
func (db *DB) AppliedSchemaVersion(ctx context.Context) (int, error) {
	var v *int64
	if err := db.sql.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the schema version (is this a Freshet database?): %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return int(*v), nil
}

// ReleaseAllLeases releases every leader lease, as their holders would on a clean stop. A backup
// snapshot holds the leases of the server it was taken from; no server holds them in the copy.
func (db *DB) ReleaseAllLeases(ctx context.Context) error {
	if _, err := db.sql.ExecContext(ctx, `UPDATE leader_leases SET holder = '', expires = 0 WHERE holder <> ''`); err != nil {
		return fmt.Errorf("release the snapshot's leader leases: %w", err)
	}
	return nil
}
