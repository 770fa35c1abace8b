package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockID is the PostgreSQL advisory lock key that serialises migrations across replicas.
const migrateLockID = 0x66726573686574 // "freshet"

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", name)
		}
		b, err := fs.ReadFile(fsys, "migrations/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int {
	ms, err := loadMigrations(migrationFS)
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies pending migrations, each in its own transaction together with its row in
// schema_migrations, so a failure leaves no half-applied version behind.
func (db *DB) migrate(ctx context.Context) error { return db.migrateFS(ctx, migrationFS) }

func (db *DB) migrateFS(ctx context.Context, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	// Replicas starting together on an empty PostgreSQL database race here too: concurrent
	// CREATE TABLE IF NOT EXISTS can fail on the table's type ("already exists"), so it is
	// created under the lock every migration takes.
	if err := db.Tx(ctx, func(tx *Tx) error {
		if err := db.lockMigrations(ctx, tx); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
		return err
	}); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var current int
	if err := db.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if latest := ms[len(ms)-1].version; current > latest {
		return fmt.Errorf("migrate: database schema version %d is newer than this freshet binary knows (%d): upgrade freshet", current, latest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		err := db.Tx(ctx, func(tx *Tx) error {
			if err := db.lockMigrations(ctx, tx); err != nil {
				return err
			}
			var done int
			if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&done); err != nil {
				return err
			}
			if done > 0 { // another replica applied it while we waited for the lock
				return nil
			}
			for i, stmt := range splitStatements(dialectSQL(db.d, m.sql)) {
				if _, err := tx.exec(ctx, stmt); err != nil {
					return fmt.Errorf("statement %d: %w", i+1, err)
				}
			}
			_, err := tx.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: apply %s: %w (schema left at version %d)", m.name, err, current)
		}
		db.log.Info("applied migration", "version", m.version, "name", m.name)
		current = m.version
	}
	return nil
}

// lockMigrations takes, on PostgreSQL, the lock that makes replicas migrate one at a time
// (held until tx ends). SQLite's writes are serialized already.
func (db *DB) lockMigrations(ctx context.Context, tx *Tx) error {
	if db.d != Postgres {
		return nil
	}
	_, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(migrateLockID))
	return err
}

// dialectSQL fills the few type placeholders migrations may use where SQLite and PostgreSQL
// differ: ${blob} is BLOB or BYTEA.
func dialectSQL(d Dialect, src string) string {
	blob := "BLOB"
	if d == Postgres {
		blob = "BYTEA"
	}
	return strings.ReplaceAll(src, "${blob}", blob)
}

// splitStatements splits a migration file on semicolons that end a line. Comments ('--') are dropped.
func splitStatements(src string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			if s := strings.TrimSpace(cur.String()); s != ";" {
				out = append(out, strings.TrimSuffix(s, ";"))
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
