package server_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// waitHeartbeat waits until runtime name is healthy with a heartbeat after since.
func waitHeartbeat(t *testing.T, c *client.Client, name string, since time.Time, timeout time.Duration) client.Runtime {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := c.GetRuntime(context.Background(), name)
		if err == nil && r.Status == "healthy" && r.LastHeartbeat != nil && r.LastHeartbeat.After(since) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime %s: %+v (%v), want healthy with a heartbeat after %s", name, r, err, since.Format(time.RFC3339Nano))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openRaw opens the server's database directly, as an operator's SQL client would.
func openRaw(t *testing.T, d store.Dialect, dsn string) *sql.DB {
	t.Helper()
	driver := "pgx"
	if d == store.SQLite {
		driver, dsn = "sqlite", "file:"+dsn+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A hosted runtime is started again by the platform after the control plane restarts, with
// the token it kept (encrypted), without anyone's action; deleting it, or its account, stops
// it and removes its data.
func TestHostedRuntimeSurvivesRestart(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, d)
			dataDir := t.TempDir()
			keyFile := filepath.Join(t.TempDir(), "master.key")
			if _, err := secrets.GenerateKeyFile(keyFile); err != nil {
				t.Fatal(err)
			}
			cfg := servertest.Config{Edit: func(o *server.Options) { o.DB, o.DataDir, o.MasterKeyFile = dsn, dataDir, keyFile }}
			s1 := servertest.StartWith(t, d, cfg)
			h, err := s1.Admin.CreateHostedRuntime(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			waitRuntime(t, s1.Admin, h.Name, 30*time.Second, "healthy")
			s1.Stop()
			stopped := time.Now()

			s2 := servertest.StartWith(t, d, cfg)
			r := waitHeartbeat(t, s2.Admin, h.Name, stopped, 30*time.Second)
			if !slices.Contains(s2.HostedRunning(), h.ID) {
				t.Fatalf("the restarted server runs hosted runtimes %v, not %s", s2.HostedRunning(), h.ID)
			}
			if len(r.Capabilities) != 1 || r.Capabilities[0] != "cd" {
				t.Fatalf("capabilities after the restart = %v", r.Capabilities)
			}

			// A rotated token restarts it with the new one (the old one stops working at once).
			rotated := time.Now()
			if _, err := s2.Admin.RotateRuntimeToken(ctx, h.Name); err != nil {
				t.Fatal(err)
			}
			waitHeartbeat(t, s2.Admin, h.Name, rotated, 30*time.Second)

			// Deleting the runtime stops it and removes its data.
			hostedDir := filepath.Join(dataDir, "hosted", h.ID)
			if _, err := os.Stat(hostedDir); err != nil {
				t.Fatalf("the hosted runtime's data: %v", err)
			}
			if err := s2.Admin.DeleteRuntime(ctx, h.Name); err != nil {
				t.Fatal(err)
			}
			if running := s2.HostedRunning(); len(running) != 0 {
				t.Fatalf("still running after delete: %v", running)
			}
			if _, err := os.Stat(hostedDir); !os.IsNotExist(err) {
				t.Fatalf("the deleted hosted runtime's data is still there: %v", err)
			}

			// Deleting the account (its rows cascade) stops the account's hosted runtime too.
			if _, err := s2.Admin.CreateAccount(ctx, "leaving"); err != nil {
				t.Fatal(err)
			}
			if _, err := s2.Admin.SwitchAccount(ctx, "leaving"); err != nil {
				t.Fatal(err)
			}
			h2, err := s2.Admin.CreateHostedRuntime(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			waitRuntime(t, s2.Admin, h2.Name, 30*time.Second, "healthy")
			raw := openRaw(t, d, dsn)
			if _, err := raw.ExecContext(ctx, `DELETE FROM accounts WHERE name = 'leaving'`); err != nil {
				t.Fatalf("delete the account: %v", err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				_, err := os.Stat(filepath.Join(dataDir, "hosted", h2.ID))
				running := slices.Contains(s2.HostedRunning(), h2.ID)
				if !running && os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the deleted account's hosted runtime: running %v, its data: %v", running, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// Two replicas on one PostgreSQL: one holds the hosted-runtime lease and runs the hosted
// runtime; when it stops, the other takes the lease and runs it.
func TestHostedRuntimeHandover(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	keyFile := filepath.Join(t.TempDir(), "master.key")
	if _, err := secrets.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	edit := func(o *server.Options) { o.DB, o.MasterKeyFile = dsn, keyFile; o.Cron.LeaseTTL = 2 * time.Second }
	a := servertest.StartWith(t, store.Postgres, servertest.Config{Edit: edit})
	b := servertest.StartWith(t, store.Postgres, servertest.Config{Edit: edit})
	// Created through b: the holder (whichever it is) starts it.
	h, err := b.Admin.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	waitRuntime(t, a.Admin, h.Name, 30*time.Second, "healthy")
	holder, other := a, b
	if !slices.Contains(a.HostedRunning(), h.ID) {
		holder, other = b, a
	}
	if !slices.Contains(holder.HostedRunning(), h.ID) || len(other.HostedRunning()) != 0 {
		t.Fatalf("running: a %v, b %v; want it on exactly one", a.HostedRunning(), b.HostedRunning())
	}
	holder.Stop()
	stopped := time.Now()
	waitHeartbeat(t, other.Admin, h.Name, stopped, 30*time.Second)
	if !slices.Contains(other.HostedRunning(), h.ID) {
		t.Fatalf("the remaining replica runs %v", other.HostedRunning())
	}
	if took := time.Since(stopped); took > 20*time.Second {
		t.Errorf("handover took %s", took)
	}
}
