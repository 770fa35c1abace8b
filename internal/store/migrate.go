package store

import (
	"context"
	"embed"
	"errors"
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
	// compatibleFrom is the oldest schema version whose freshet binary still runs against the
	// schema this migration leaves: the previous version (one step) unless the file says
	// otherwise in a line "-- freshet:compatible-from N" (docs/operations.md "Upgrades").
	compatibleFrom int
}

// compatibleFromMarker declares, in a migration file, how far back binaries stay compatible.
const compatibleFromMarker = "-- freshet:compatible-from "

// parseCompatibleFrom reads the file's compatible-from line, if any; def is the default.
func parseCompatibleFrom(name, sql string, version int) (int, error) {
	for line := range strings.Lines(sql) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), strings.TrimSpace(compatibleFromMarker))
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n < 0 || n >= version {
			return 0, fmt.Errorf("migration %s: %q: want a schema version below %d", name, strings.TrimSpace(line), version)
		}
		return n, nil
	}
	return version - 1, nil
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
		cf, err := parseCompatibleFrom(name, string(b), v)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b), compatibleFrom: cf})
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
	if err := db.addCompatibleFrom(ctx); err != nil {
		return err
	}
	var current int
	if err := db.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if latest := ms[len(ms)-1].version; current > latest {
		return db.checkNewerSchema(ctx, current, latest)
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
			_, err := tx.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at, compatible_from) VALUES (?, ?, ?, ?)`,
				m.version, m.name, time.Now().UnixMicro(), m.compatibleFrom)
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

// addCompatibleFrom gives schema_migrations the column compatible_from (each applied
// migration's oldest compatible schema version), once; rows applied before it have 0 (they are
// older than any binary that reads the column).
func (db *DB) addCompatibleFrom(ctx context.Context) error {
	return db.Tx(ctx, func(tx *Tx) error {
		if err := db.lockMigrations(ctx, tx); err != nil {
			return err
		}
		var n int
		q := `SELECT COUNT(*) FROM pragma_table_info('schema_migrations') WHERE name = 'compatible_from'`
		if db.d == Postgres {
			q = `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'compatible_from'`
		}
		if err := tx.queryRow(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("migrate: read schema_migrations' columns: %w", err)
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.exec(ctx, `ALTER TABLE schema_migrations ADD COLUMN compatible_from INTEGER NOT NULL DEFAULT 0`); err != nil {
			return fmt.Errorf("migrate: add schema_migrations.compatible_from: %w", err)
		}
		return nil
	})
}

// ErrSchemaTooNew is returned when the database's schema is newer than this binary knows and
// one of the migrations it does not know needs a newer binary.
var ErrSchemaTooNew = errors.New("the database schema is too new for this freshet binary")

// checkNewerSchema decides whether this binary, which knows schema version latest, may run
// against a database at version current > latest (a rolling upgrade: a newer replica migrated
// it). It may when every migration it does not know says binaries of schema latest stay
// compatible with it.
func (db *DB) checkNewerSchema(ctx context.Context, current, latest int) error {
	rows, err := db.query(ctx, `SELECT version, name, compatible_from FROM schema_migrations WHERE version > ? ORDER BY version`, latest)
	if err != nil {
		return fmt.Errorf("migrate: read schema versions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v, from int
		var name string
		if err := rows.Scan(&v, &name, &from); err != nil {
			return err
		}
		if from > latest {
			return fmt.Errorf("migrate: %w: the database is at schema version %d and this freshet binary knows version %d; migration %s needs a binary of schema version %d or newer (a binary runs against the next version only when its migrations stay compatible: see docs/operations.md \"Upgrades\"): run the newer freshet",
				ErrSchemaTooNew, current, latest, name, from)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	db.log.Warn("the database schema is newer than this freshet binary knows, and compatible with it: a rolling upgrade is under way; upgrade this replica",
		"schema", current, "known", latest)
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
