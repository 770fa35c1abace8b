package store_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A migration that fails half-way leaves the schema exactly at the previous version, on both
// backends (both have transactional DDL).
func TestFailedMigrationLeavesNoHalfSchema(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, err := store.OpenUnmigrated(ctx, storetest.DSN(t, d))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			fsys := fstest.MapFS{
				"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a (id TEXT PRIMARY KEY);\n")},
				"migrations/0002_b.sql": {Data: []byte("CREATE TABLE b (id TEXT PRIMARY KEY);\nINSERT INTO a (nope) VALUES (1);\n")},
			}
			err = db.MigrateFS(ctx, fsys)
			if err == nil || !strings.Contains(err.Error(), "0002_b.sql") || !strings.Contains(err.Error(), "schema left at version 1") {
				t.Fatalf("err = %v, want the failing file and the version kept", err)
			}
			// The second migration's first statement (CREATE TABLE b) was rolled back with it:
			// applying a fixed 0002 that creates b again succeeds only if b does not exist.
			// Fixed, the migration applies.
			fsys["migrations/0002_b.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE b (id TEXT PRIMARY KEY);\n")}
			if err := db.MigrateFS(ctx, fsys); err != nil {
				t.Fatal(err)
			}
			// A binary one compatible step behind runs on it (the rolling-upgrade contract).
			older := fstest.MapFS{"migrations/0001_a.sql": fsys["migrations/0001_a.sql"]}
			if err := db.MigrateFS(ctx, older); err != nil {
				t.Fatalf("a binary one compatible version behind: %v", err)
			}
		})
	}
}

func TestSplitStatements(t *testing.T) {
	got := store.SplitStatements("-- c\nCREATE TABLE x (a INT);\n\nCREATE INDEX i\n  ON x (a);\n")
	if len(got) != 2 || got[1] != "CREATE INDEX i\n  ON x (a)" {
		t.Fatalf("%q", got)
	}
}

// Replicas that start together on an empty PostgreSQL database (the freshet chart starts N) all
// open and migrate it at once: every one succeeds, and the schema is applied once. (Replicas
// need PostgreSQL: an SQLite file belongs to one process.)
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := storetest.DSN(t, store.Postgres)
	const replicas = 6
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			db, err := store.Open(context.Background(), dsn, nil)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	db, err := store.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	latest, rows, err := db.Migrated(context.Background())
	if err != nil || latest != store.SchemaVersion() || rows != store.Migrations() {
		t.Fatalf("schema version %d with %d rows (%v), want %d with %d", latest, rows, err, store.SchemaVersion(), store.Migrations())
	}
}

// The rolling-upgrade contract (docs/operations.md "Upgrades"): a binary runs against a schema
// newer than it knows only when every migration it does not know stays compatible with it. By
// default a migration is compatible with the version before it (one step); a file can say
// otherwise. A refusal names both versions and the migration.
func TestNewerSchemaCompatibility(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, err := store.OpenUnmigrated(ctx, storetest.DSN(t, d))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			m := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
			v1 := fstest.MapFS{"migrations/0001_a.sql": m("CREATE TABLE a (id TEXT PRIMARY KEY);\n")}
			v2 := fstest.MapFS{"migrations/0002_b.sql": m("ALTER TABLE a ADD COLUMN b TEXT NOT NULL DEFAULT '';\n")}
			v3 := fstest.MapFS{"migrations/0003_c.sql": m("-- drops what binaries of schema 1 read\n-- freshet:compatible-from 2\nCREATE TABLE c (id TEXT PRIMARY KEY);\n")}
			upTo := func(parts ...fstest.MapFS) fstest.MapFS {
				out := fstest.MapFS{}
				for _, p := range parts {
					for k, v := range p {
						out[k] = v
					}
				}
				return out
			}
			if err := db.MigrateFS(ctx, upTo(v1, v2)); err != nil {
				t.Fatal(err)
			}
			// N+1, compatible by default: the previous binary runs.
			if err := db.MigrateFS(ctx, v1); err != nil {
				t.Fatalf("schema 2 under a binary of schema 1: %v", err)
			}
			if err := db.MigrateFS(ctx, upTo(v1, v2, v3)); err != nil {
				t.Fatal(err)
			}
			// Two steps ahead, the second not compatible with 1: refused, saying why.
			err = db.MigrateFS(ctx, v1)
			if !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("schema 3 under a binary of schema 1: %v, want ErrSchemaTooNew", err)
			}
			for _, w := range []string{"schema version 3", "knows version 1", "0003_c.sql", "schema version 2 or newer"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			// The binary of schema 2 runs on 3 (0003 declared it compatible).
			if err := db.MigrateFS(ctx, upTo(v1, v2)); err != nil {
				t.Fatalf("schema 3 under a binary of schema 2: %v", err)
			}
			// A compatible-from line that is not a version below the migration's is refused.
			bad := upTo(v1, fstest.MapFS{"migrations/0002_b.sql": m("-- freshet:compatible-from 7\nSELECT 1;\n")})
			if err := db.MigrateFS(ctx, bad); err == nil || !strings.Contains(err.Error(), "0002_b.sql") || !strings.Contains(err.Error(), "below 2") {
				t.Fatalf("bad compatible-from: %v", err)
			}
		})
	}
}

// This release's binary's predecessor (which knows every migration but the newest) runs against
// this release's schema: the newest migration is compatible with it.
func TestPreviousBinaryRunsOnThisSchema(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, d)
			db, err := store.Open(ctx, dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			entries, err := fs.ReadDir(store.MigrationFS, "migrations")
			if err != nil {
				t.Fatal(err)
			}
			previous := fstest.MapFS{}
			for _, e := range entries[:len(entries)-1] {
				b, _ := fs.ReadFile(store.MigrationFS, "migrations/"+e.Name())
				previous["migrations/"+e.Name()] = &fstest.MapFile{Data: b}
			}
			if err := db.MigrateFS(ctx, previous); err != nil {
				t.Fatalf("the previous binary (without %s) refuses this schema: %v", entries[len(entries)-1].Name(), err)
			}
		})
	}
}

// Migrations from 0030 on, unless they declare otherwise, change the schema only in ways the
// previous binary survives: no dropped or renamed tables or columns, no new NOT NULL column
// without a default.
func TestMigrationsStayCompatible(t *testing.T) {
	entries, err := fs.ReadDir(store.MigrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	breaking := regexp.MustCompile(`(?i)\b(DROP\s+(TABLE|COLUMN)|RENAME\b|ALTER\s+COLUMN)`)
	notNullNoDefault := regexp.MustCompile(`(?i)ADD\s+COLUMN\s+[^;]*NOT\s+NULL`)
	for _, e := range entries {
		var v int
		fmt.Sscanf(e.Name(), "%d_", &v)
		if v < 30 {
			continue // before the contract
		}
		b, _ := fs.ReadFile(store.MigrationFS, "migrations/"+e.Name())
		src := string(b)
		if strings.Contains(src, "-- freshet:compatible-from ") {
			continue // it says how far back binaries stay compatible
		}
		var code []string
		for line := range strings.Lines(src) {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				code = append(code, line)
			}
		}
		sql := strings.Join(code, "")
		if m := breaking.FindString(sql); m != "" {
			t.Errorf("%s: %q breaks the previous binary: declare '-- freshet:compatible-from N' (docs/operations.md \"Upgrades\")", e.Name(), m)
		}
		for _, m := range notNullNoDefault.FindAllString(sql, -1) {
			if !strings.Contains(strings.ToUpper(m), "DEFAULT") {
				t.Errorf("%s: %q: the previous binary's inserts do not set it; give it a DEFAULT", e.Name(), m)
			}
		}
	}
}
