package store_test

import (
	"context"
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
			// A database newer than the binary refuses to start.
			older := fstest.MapFS{"migrations/0001_a.sql": fsys["migrations/0001_a.sql"]}
			if err := db.MigrateFS(ctx, older); err == nil || !strings.Contains(err.Error(), "newer") {
				t.Fatalf("newer schema: %v", err)
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
