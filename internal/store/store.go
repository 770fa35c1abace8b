// Package store is Freshet's one SQL layer. The same queries run on SQLite (modernc.org/sqlite,
// the embedded default) and PostgreSQL (pgx), behind database/sql.
//
// Queries are written with '?' placeholders and rebound for PostgreSQL. Times are stored as
// unix microseconds and identifiers are generated in Go, so no dialect-specific types are
// needed. Every method that reads or changes tenant data takes the account ID as a parameter and
// filters by it: tenant scoping is enforced here, not left to callers.
//
// Migrations are embedded SQL files applied at Open, each in its own transaction, so a failed
// migration leaves the schema as it was.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" database/sql driver
	_ "modernc.org/sqlite"             // "sqlite" database/sql driver

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Dialect names a supported SQL backend.
type Dialect string

// Supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Pool and timeout defaults.
const (
	DefaultSQLiteConns   = 8
	DefaultPostgresConns = 16
	sqliteBusyTimeout    = 10 * time.Second
	connectTimeout       = 10 * time.Second
)

// DB is an open Freshet database.
type DB struct {
	Queries
	sql *sql.DB
	log *slog.Logger
}

// Open connects to the database named by dsn and applies pending migrations. dsn is either a
// PostgreSQL URL (postgres://… or postgresql://…) or a SQLite file path, optionally prefixed with
// "sqlite://" or "file:". Errors say whether the database was unreachable or a migration failed.
func Open(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	db, err := open(ctx, dsn, log)
	if err != nil {
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func open(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, driver, conn, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	sdb, err := sql.Open(driver, conn)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", d, err)
	}
	switch d {
	case SQLite:
		sdb.SetMaxOpenConns(DefaultSQLiteConns)
		sdb.SetMaxIdleConns(DefaultSQLiteConns)
	case Postgres:
		sdb.SetMaxOpenConns(DefaultPostgresConns)
		sdb.SetMaxIdleConns(DefaultPostgresConns)
		sdb.SetConnMaxIdleTime(5 * time.Minute)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := sdb.PingContext(pctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("connect to %s database %s: %w: %s", d, Redact(dsn), errdefs.ErrUnavailable, oneLine(err))
	}
	return &DB{Queries: Queries{ex: sdb, d: d}, sql: sdb, log: log}, nil
}

func parseDSN(dsn string) (d Dialect, driver, conn string, err error) {
	switch {
	case dsn == "":
		return "", "", "", errdefs.Invalid("db", dsn, "is empty: give a SQLite file path or a postgres:// URL")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return Postgres, "pgx", dsn, nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if path == "" || strings.Contains(dsn, "://") && !strings.HasPrefix(dsn, "sqlite://") {
		return "", "", "", errdefs.Invalid("db", Redact(dsn), "is not a SQLite file path or a postgres:// URL")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", "", "", fmt.Errorf("create database directory: %w", err)
		}
	}
	// The file holds password hashes and encrypted secrets: only its owner reads it. SQLite
	// gives its -wal and -shm files the database file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", "", "", fmt.Errorf("open database file: %w", err)
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// A page cache of up to 32 MiB per connection (SQLite's default is 2 MiB): allocated as pages
	// are read, so a small database never reaches it; a large one (analytics over a million
	// deployments) reads its indexes from memory instead of a pread(2) per page.
	q.Add("_pragma", "cache_size(-32768)")
	q.Set("_txlock", "immediate")
	return SQLite, "sqlite", "file:" + path + "?" + q.Encode(), nil
}

// oneLine folds a multi-line driver error (pgx lists every address it tried) into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

// Redact hides the password in a database URL so it can be logged.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Dialect reports which backend db runs on.
func (db *DB) Dialect() Dialect { return db.d }

// Ping checks that the database answers, for readiness probes.
func (db *DB) Ping(ctx context.Context) error { return db.sql.PingContext(ctx) }

// Close closes the connection pool.
func (db *DB) Close() error { return db.sql.Close() }

// Tx runs fn in a transaction and commits if fn returns nil. Everything fn writes through tx,
// including audit records, commits or rolls back together.
func (db *DB) Tx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	stx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			stx.Rollback()
			panic(p)
		}
		if err != nil {
			stx.Rollback()
		}
	}()
	if err := fn(&Tx{Queries: Queries{ex: stx, d: db.d}}); err != nil {
		return err
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Tx is an open transaction. It has every query method of DB.
type Tx struct {
	Queries
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Queries holds the query methods shared by DB and Tx.
type Queries struct {
	ex execer
	d  Dialect
}

func (q *Queries) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := q.ex.ExecContext(ctx, rebind(q.d, query), args...)
	return res, q.mapErr(err)
}

func (q *Queries) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := q.ex.QueryContext(ctx, rebind(q.d, query), args...)
	return rows, q.mapErr(err)
}

func (q *Queries) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return q.ex.QueryRowContext(ctx, rebind(q.d, query), args...)
}

// mapErr turns unique-constraint violations into errdefs.ErrConflict. Their message is the
// conflict alone: the driver's text (table, constraint, SQLSTATE) stays in the chain for
// errors.As but never reaches a client through Error().
func (q *Queries) mapErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "SQLSTATE 23505") {
		return conflictError{driver: err}
	}
	return err
}

// conflictError is a unique-constraint violation: errdefs.ErrConflict, with the driver's error
// kept for errors.As.
type conflictError struct{ driver error }

func (conflictError) Error() string     { return errdefs.ErrConflict.Error() }
func (e conflictError) Unwrap() []error { return []error{errdefs.ErrConflict, e.driver} }

// rebind turns '?' placeholders into PostgreSQL's $1, $2, … Queries in this package never put a
// literal '?' inside a string.
func rebind(d Dialect, query string) string {
	if d != Postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// notFound maps sql.ErrNoRows to errdefs.ErrNotFound with what was looked for.
func notFound(err error, what, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s %q: %w", what, id, errdefs.ErrNotFound)
	}
	return err
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}
