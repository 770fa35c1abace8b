package server_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A replica started with other master keys than its database's secrets were encrypted with, or
// on a schema newer than it can run on, refuses to start and says why.
func TestReplicaRefusesToStart(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, d)
			keyFile := filepath.Join(t.TempDir(), "master.key")
			kr, err := secrets.GenerateKeyFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			s := servertest.StartWith(t, d, servertest.Config{Edit: func(o *server.Options) { o.DB, o.MasterKeyFile = dsn, keyFile }})
			// A stored secret: the hosted runtime's token.
			if _, err := s.Admin.CreateHostedRuntime(ctx, ""); err != nil {
				t.Fatal(err)
			}
			s.Stop()

			start := func(keyFile string) error {
				opts := server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), DB: dsn, MasterKeyFile: keyFile, LogFormat: "text", LogLevel: "warn",
					ShutdownTimeout: server.DefaultShutdownTimeout}
				srv, err := server.New(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err == nil {
					srv.Close()
				}
				return err
			}
			// Other keys altogether.
			other := filepath.Join(t.TempDir(), "other.key")
			if _, err := secrets.GenerateKeyFile(other); err != nil {
				t.Fatal(err)
			}
			err = start(other)
			if err == nil {
				t.Fatal("a replica with other master keys started")
			}
			for _, w := range []string{kr.Primary(), other, "do not have", "same master keys"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			// The same key ID with other key material.
			forged := filepath.Join(t.TempDir(), "forged.key")
			material := make([]byte, secrets.KeySize)
			rand.Read(material)
			if err := os.WriteFile(forged, fmt.Appendf(nil, "%s:%s\n", kr.Primary(), base64.StdEncoding.EncodeToString(material)), 0o600); err != nil {
				t.Fatal(err)
			}
			err = start(forged)
			if err == nil || !strings.Contains(err.Error(), "does not decrypt") || !strings.Contains(err.Error(), kr.Primary()) {
				t.Fatalf("same key ID, other material: %v", err)
			}
			// The right keys start.
			if err := start(keyFile); err != nil {
				t.Fatalf("the right keys: %v", err)
			}

			// A schema two versions ahead whose newest migration needs a newer binary.
			latest := store.SchemaVersion()
			raw := openRaw(t, d, dsn)
			for v := latest + 1; v <= latest+2; v++ {
				if _, err := raw.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at, compatible_from) VALUES ($1, $2, 0, $3)`,
					v, fmt.Sprintf("%04d_future.sql", v), v-1); err != nil {
					t.Fatal(err)
				}
			}
			err = start(keyFile)
			for _, w := range []string{fmt.Sprintf("schema version %d", latest+2), fmt.Sprintf("knows version %d", latest), fmt.Sprintf("%04d_future.sql", latest+2)} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("schema %d under a binary of %d: %v, want it to say %q", latest+2, latest, err, w)
				}
			}
			// One compatible step ahead: it starts (a rolling upgrade).
			if _, err := raw.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = $1`, latest+2); err != nil {
				t.Fatal(err)
			}
			if err := start(keyFile); err != nil {
				t.Fatalf("schema %d under a binary of %d: %v", latest+1, latest, err)
			}
		})
	}
}
