package cli

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/backup"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// `freshet admin backup` snapshots the SQLite database of a running server while clients write
// to it; `freshet admin restore` puts it in a fresh data directory only with the master key that
// decrypts its secrets, and a server started there reads the secret back through the API.
func TestAdminBackupAndRestore(t *testing.T) {
	var dataDir string
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { dataDir = o.DataDir }})
	ctx := context.Background()
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "creds", Type: "secret", Values: map[string]string{"TOKEN": "s3cret-value"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateNotificationChannel(ctx, client.CreateNotificationChannelRequest{Name: "hook", Kind: "webhook", URL: "https://hooks.example.com/freshet", Secret: "hook-signing-secret"}); err != nil {
		t.Fatal(err)
	}
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runIn(t, s.URL, key.Token, "", args...) }

	// Writers go on during the backup: secret contexts, each a transaction.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: fmt.Sprintf("during-%d", i), Type: "secret", Values: map[string]string{"V": fmt.Sprint(i)}}); err != nil {
				t.Errorf("write during the backup: %v", err)
				return
			}
			written.Add(1)
		}
	}()
	for written.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	out := filepath.Join(t.TempDir(), "backup.tar.gz")
	code, stdout, stderr := run("admin", "backup", "--out", out, "--data-dir", dataDir)
	withKey := filepath.Join(t.TempDir(), "with-key.tar.gz")
	code2, stdout2, stderr2 := run("admin", "backup", "--out", withKey, "--data-dir", dataDir, "--include-master-key")
	close(stop)
	wg.Wait()
	keyFile := filepath.Join(dataDir, secrets.MasterKeyFileName)
	if code != 0 || !strings.Contains(stdout, "back up "+keyFile+" separately") {
		t.Fatalf("admin backup: %d %s %s", code, stdout, stderr)
	}
	if code2 != 0 || !strings.Contains(stdout2, "holds the master key") {
		t.Fatalf("admin backup --include-master-key: %d %s %s", code2, stdout2, stderr2)
	}
	for _, f := range []string{out, withKey} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st.Mode(), err)
		}
	}
	kr, err := secrets.LoadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, out)
	if m.SchemaVersion != store.SchemaVersion() || len(m.KeyIDs) != 1 || m.KeyIDs[0] != kr.Primary() || m.MasterKey != nil {
		t.Fatalf("manifest: %+v (key %s)", m, kr.Primary())
	}
	if code, _, stderr := run("admin", "backup", "--out", out, "--data-dir", dataDir); code == 0 || !strings.Contains(stderr, "already exists") {
		t.Errorf("backup over an existing archive: %d %s", code, stderr)
	}

	// A server is using the database: restore refuses, even with --force.
	if code, _, stderr := run("admin", "restore", "--from", out, "--data-dir", dataDir, "--force"); code == 0 || !strings.Contains(stderr, "a freshet server is using") {
		t.Errorf("restore under a running server: %d %s", code, stderr)
	}

	// A fresh data directory without the key file: refused, nothing written.
	fresh := t.TempDir()
	if code, _, stderr := run("admin", "restore", "--from", out, "--data-dir", fresh); code == 0 || !strings.Contains(stderr, "no master key at") {
		t.Errorf("restore without a key: %d %s", code, stderr)
	}
	// Another key file: refused, naming the key the backup needs.
	other := t.TempDir()
	if _, err := secrets.GenerateKeyFile(filepath.Join(other, secrets.MasterKeyFileName)); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run("admin", "restore", "--from", out, "--data-dir", other); code == 0 ||
		!strings.Contains(stderr, "need master key "+kr.Primary()) || !strings.Contains(stderr, out) {
		t.Errorf("restore with another key: %d %s", code, stderr)
	}
	for _, d := range []string{fresh, other} {
		if _, err := os.Stat(filepath.Join(d, "freshet.db")); !os.IsNotExist(err) {
			t.Errorf("a refused restore wrote %s/freshet.db: %v", d, err)
		}
	}

	// With the key file copied beside it, the restore goes through; a server there reads the secret.
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fresh, secrets.MasterKeyFileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run("admin", "restore", "--from", out, "--data-dir", fresh)
	if code != 0 || !strings.Contains(stdout, "Restored") {
		t.Fatalf("restore: %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr := run("admin", "restore", "--from", out, "--data-dir", fresh); code == 0 || !strings.Contains(stderr, "--force") {
		t.Errorf("restore over an existing database: %d %s", code, stderr)
	}
	code, stdout, stderr = run("admin", "restore", "--from", out, "--data-dir", fresh, "--force")
	if code != 0 {
		t.Fatalf("restore --force: %d %s %s", code, stdout, stderr)
	}
	// Restore decrypted every secret: the contexts' values and the channel's signing secret.
	var checked int
	if _, rest, ok := strings.Cut(stdout, "); "); !ok {
		t.Fatalf("restore's report: %s", stdout)
	} else if _, err := fmt.Sscanf(rest, "%d secret values decrypt", &checked); err != nil {
		t.Fatalf("restore's report: %s: %v", stdout, err)
	}
	if n := checkRestored(t, fresh); checked != n+2 {
		t.Errorf("restore decrypted %d secrets; the snapshot holds %d contexts written during the backup, creds and the channel's", checked, n)
	}

	// The archive with the key restores into an empty directory and installs the key.
	empty := t.TempDir()
	code, stdout, stderr = run("admin", "restore", "--from", withKey, "--data-dir", empty)
	if code != 0 || !strings.Contains(stdout, "Installed the archive's master key") {
		t.Fatalf("restore with the key: %d %s %s", code, stdout, stderr)
	}
	checkRestored(t, empty)

	if code, _, stderr := run("admin", "backup", "--out", filepath.Join(t.TempDir(), "b.tgz"), "--db", "postgres://u@127.0.0.1/x"); code == 0 || !strings.Contains(stderr, "pg_dump") {
		t.Errorf("backup of PostgreSQL: %d %s", code, stderr)
	}
}

func manifestOf(t *testing.T, path string) backup.Manifest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := backup.ReadArchive(f, path, discard{})
	if err != nil {
		t.Fatal(err)
	}
	return a.Manifest
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// checkRestored starts a server on dir and reads the secret back, and every context the
// snapshot holds decrypts (a consistent snapshot).
func checkRestored(t *testing.T, dir string) int {
	t.Helper()
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.DataDir = dir }})
	ctx := context.Background()
	c, err := s.Admin.GetContext(ctx, "creds", true)
	if err != nil || c.Values["TOKEN"] != "s3cret-value" {
		t.Fatalf("the restored secret: %+v %v", c, err)
	}
	if chs, err := s.Admin.ListNotificationChannels(ctx); err != nil || len(chs.Items) != 1 || chs.Items[0].Name != "hook" {
		t.Errorf("the restored notification channels: %+v %v", chs, err)
	}
	cs, err := s.Admin.ListContexts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs.Items {
		if strings.HasPrefix(c.Name, "during-") {
			if d, err := s.Admin.GetContext(ctx, c.Name, true); err != nil || d.Values["V"] != strings.TrimPrefix(c.Name, "during-") {
				t.Errorf("restored context %s: %+v %v", c.Name, d, err)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("the snapshot holds none of the contexts written before it")
	}
	return n
}

// The documented PostgreSQL procedure (docs/operations.md, "Backup and restore"): pg_dump of a
// running server's database, pg_restore into a fresh database, the master key file beside it; a
// server started there reads the secret back. `freshet admin backup` refuses PostgreSQL.
func TestPostgresBackupProcedure(t *testing.T) {
	base := os.Getenv(storetest.EnvPostgres)
	if base == "" {
		t.Skipf("%s is not set", storetest.EnvPostgres)
	}
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the PostgreSQL procedure needs the PostgreSQL client tools", tool)
		}
	}
	var opts server.Options
	s := servertest.StartWith(t, store.Postgres, servertest.Config{Edit: func(o *server.Options) { opts = *o }})
	ctx := context.Background()
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "creds", Type: "secret", Values: map[string]string{"TOKEN": "pg-s3cret"}}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(opts.DB)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path") // the test's own schema in the shared test database
	dump := filepath.Join(t.TempDir(), "freshet.dump")
	if out, err := exec.Command("pg_dump", "--format=custom", "--schema="+schema, "--file="+dump, base).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v: %s", err, out)
	}
	code, _, stderr := runIn(t, s.URL, "", "", "admin", "backup", "--out", filepath.Join(t.TempDir(), "b.tar.gz"), "--db", opts.DB)
	if code == 0 || !strings.Contains(stderr, "pg_dump") {
		t.Errorf("admin backup of PostgreSQL: %d %s", code, stderr)
	}

	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	dbName := fmt.Sprintf("restore_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	if _, err := admin.Exec(`CREATE DATABASE ` + dbName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP DATABASE ` + dbName + ` WITH (FORCE)`) })
	ru := *u
	ru.Path = "/" + dbName
	q := ru.Query()
	q.Del("search_path")
	ru.RawQuery = q.Encode()
	if out, err := exec.Command("pg_restore", "--no-owner", "--exit-on-error", "--dbname="+ru.String(), dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v: %s", err, out)
	}
	q.Set("search_path", schema)
	ru.RawQuery = q.Encode()
	keyCopy := filepath.Join(t.TempDir(), "master.key")
	b, err := os.ReadFile(opts.MasterKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyCopy, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := servertest.StartWith(t, store.Postgres, servertest.Config{Edit: func(o *server.Options) { o.DB = ru.String(); o.MasterKeyFile = keyCopy }})
	c, err := r.Admin.GetContext(ctx, "creds", true)
	if err != nil || c.Values["TOKEN"] != "pg-s3cret" {
		t.Fatalf("the restored secret: %+v %v", c, err)
	}
}
