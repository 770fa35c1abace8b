// Package storetest opens fresh Freshet databases for tests: always SQLite in a temp dir, and
// PostgreSQL too when FRESHET_TEST_POSTGRES holds a DSN. Each PostgreSQL database is a new
// schema, dropped when the test ends, so tests never see each other's rows.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
)

// EnvPostgres names the variable holding a PostgreSQL DSN for tests.
const EnvPostgres = "FRESHET_TEST_POSTGRES"

var schemaSeq atomic.Int64

// Backends lists the backends tests run on here: "sqlite", plus "postgres" when configured.
func Backends() []store.Dialect {
	if os.Getenv(EnvPostgres) != "" {
		return []store.Dialect{store.SQLite, store.Postgres}
	}
	return []store.Dialect{store.SQLite}
}

// Each runs fn as a subtest once per backend with a freshly migrated database.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, d := range Backends() {
		t.Run(string(d), func(t *testing.T) { fn(t, Open(t, d)) })
	}
}

// Open returns a freshly migrated, empty database on backend d, closed when t ends.
func Open(t testing.TB, d store.Dialect) *store.DB {
	t.Helper()
	dsn := DSN(t, d)
	db, err := store.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// DSN returns the DSN of a new empty database on backend d that is removed when t ends.
func DSN(t testing.TB, d store.Dialect) string {
	t.Helper()
	if d == store.SQLite {
		return filepath.Join(t.TempDir(), "freshet.db")
	}
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Skipf("%s is not set", EnvPostgres)
	}
	schema := fmt.Sprintf("t_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, schemaSeq.Add(1))
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema on %s: %v", store.Redact(base), err)
	}
	t.Cleanup(func() {
		c, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer c.Close()
		c.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
	})
	return withSearchPath(t, base, schema)
}

func withSearchPath(t testing.TB, dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("%s must be a postgres:// URL, got %q", EnvPostgres, store.Redact(dsn))
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
