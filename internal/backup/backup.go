package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/version"
)

// pgDocs is where a PostgreSQL operator is sent: Freshet does not dump PostgreSQL itself.
const pgDocs = "back PostgreSQL up with pg_dump and restore it with pg_restore, plus the master key file (docs/operations.md, \"Backup and restore\")"

// Options are the server's database and key settings and what to write.
type Options struct {
	DSN           string // the server's database: a SQLite path (--db, or freshet.db in DataDir)
	DataDir       string // the server's --data-dir (the default key file is master.key in it)
	MasterKeyFile string // the server's --master-key-file, if any
}

// keyFilePath is the key file the server reads ("" when the keys come from FRESHET_MASTER_KEY).
func (o Options) keyFilePath() string {
	switch {
	case o.MasterKeyFile != "":
		return o.MasterKeyFile
	case os.Getenv(secrets.EnvMasterKey) != "":
		return ""
	default:
		return filepath.Join(o.DataDir, secrets.MasterKeyFileName)
	}
}

// keySource names where the master keys come from, for messages.
func (o Options) keySource() string {
	if p := o.keyFilePath(); p != "" {
		return p
	}
	return secrets.EnvMasterKey
}

// loadKeyring loads the server's keys without creating a key file (nil, nil when there is none).
func (o Options) loadKeyring() (*secrets.Keyring, error) {
	if o.MasterKeyFile != "" && os.Getenv(secrets.EnvMasterKey) != "" {
		return nil, errdefs.Invalid("master-key-file", o.MasterKeyFile, "and "+secrets.EnvMasterKey+" are both set: give the master keys one way")
	}
	p := o.keyFilePath()
	if p == "" {
		return secrets.LoadEnv()
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return secrets.LoadFile(p)
}

func sqlitePath(dsn string) (string, error) {
	p, ok := store.SQLitePath(dsn)
	if !ok {
		return "", errdefs.Invalid("db", store.Redact(dsn), "is not a SQLite database: "+pgDocs)
	}
	return p, nil
}

// BackupResult says what Backup wrote.
type BackupResult struct {
	Path     string
	Manifest Manifest
	// KeyFile is the key file to keep apart ("" when the keys come from FRESHET_MASTER_KEY).
	KeyFile string
}

// Backup writes an archive of the SQLite database to out: a consistent snapshot taken while the
// server runs (VACUUM INTO), its manifest, and with includeKey the key file. The archive is
// written to a temporary file beside out and renamed into place, mode 0600; out must not exist.
func Backup(ctx context.Context, o Options, out string, includeKey bool) (*BackupResult, error) {
	path, err := sqlitePath(o.DSN)
	if err != nil {
		return nil, err
	}
	if out == "" {
		return nil, errdefs.Invalid("out", out, "is empty: give the archive's path (backup.tar.gz)")
	}
	if _, err := os.Lstat(out); err == nil {
		return nil, errdefs.Invalid("out", out, "already exists: give a new file name (a backup never overwrites)")
	}
	live, err := store.OpenExistingSQLite(ctx, path)
	if err != nil {
		return nil, err
	}
	defer live.Close()
	dir := filepath.Dir(out)
	work, err := os.MkdirTemp(dir, ".freshet-backup-*")
	if err != nil {
		return nil, fmt.Errorf("backup to %s: %w", out, err)
	}
	defer os.RemoveAll(work)
	snap := filepath.Join(work, DatabaseName)
	created := time.Now().UTC().Truncate(time.Second)
	if err := live.SnapshotTo(ctx, snap); err != nil {
		return nil, err
	}
	live.Close()
	m := Manifest{Format: Format, FreshetVersion: version.String(), CreatedAt: created, KeyIDs: []string{}}
	if m.SchemaVersion, m.KeyIDs, err = inspect(ctx, snap); err != nil {
		return nil, err
	}
	if m.Database, err = sum(snap, DatabaseName); err != nil {
		return nil, err
	}
	res := &BackupResult{Path: out, KeyFile: o.keyFilePath()}
	var key []byte
	if includeKey {
		if res.KeyFile == "" {
			return nil, errdefs.Invalid("include-master-key", "true", "the master keys come from "+secrets.EnvMasterKey+", not a file: back that value up apart instead")
		}
		if key, err = os.ReadFile(res.KeyFile); err != nil {
			return nil, fmt.Errorf("include the master key: %w", err)
		}
		kr, err := secrets.Parse(key, res.KeyFile)
		if err != nil {
			return nil, err
		}
		if missing := missingKeys(kr, m.KeyIDs); len(missing) > 0 {
			return nil, fmt.Errorf("include the master key: %s lacks key %s, which the database's secrets need", res.KeyFile, missing[0])
		}
		s := sha256.Sum256(key)
		m.MasterKey = &File{Name: MasterKeyName, Size: int64(len(key)), SHA256: hex.EncodeToString(s[:])}
	}
	f, err := os.CreateTemp(dir, ".freshet-backup-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("backup to %s: %w", out, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	db, err := os.Open(snap)
	if err != nil {
		f.Close()
		return nil, err
	}
	err = f.Chmod(0o600)
	if err == nil {
		err = writeArchive(f, &m, db, key)
	}
	db.Close()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("backup to %s: %w", out, err)
	}
	if _, err := os.Lstat(out); err == nil {
		return nil, errdefs.Invalid("out", out, "appeared while the backup ran: give a new file name")
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("backup to %s: %w", out, err)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	res.Manifest = m
	return res, nil
}

// inspect reads a snapshot's schema version and the key IDs its secrets are encrypted under.
func inspect(ctx context.Context, path string) (int, []string, error) {
	db, err := store.OpenExistingSQLite(ctx, path)
	if err != nil {
		return 0, nil, err
	}
	defer db.Close()
	v, err := db.AppliedSchemaVersion(ctx)
	if err != nil {
		return 0, nil, err
	}
	if v != store.SchemaVersion() {
		return 0, nil, fmt.Errorf("the database is at schema version %d and this freshet binary knows %d: run the backup with the server's own freshet binary", v, store.SchemaVersion())
	}
	if err := db.ReleaseAllLeases(ctx); err != nil {
		return 0, nil, err
	}
	rec := &keyRecorder{}
	if _, err := server.ReencryptSecrets(ctx, db, rec); err != nil {
		return 0, nil, fmt.Errorf("read the key IDs of the stored secrets: %w", err)
	}
	slices.Sort(rec.ids)
	return v, slices.Compact(rec.ids), nil
}

// keyRecorder collects the key IDs of the ciphertexts it sees and changes none.
type keyRecorder struct{ ids []string }

func (k *keyRecorder) Reencrypt(s string, _ []byte) (string, bool, error) {
	id, err := secrets.KeyID(s)
	if err != nil {
		return "", false, err
	}
	k.ids = append(k.ids, id)
	return s, false, nil
}

// decryptChecker decrypts every ciphertext it sees with kr and changes none.
type decryptChecker struct {
	kr     *secrets.Keyring
	source string
	n      int
}

func (c *decryptChecker) Reencrypt(s string, aad []byte) (string, bool, error) {
	p, err := c.kr.Decrypt(s, aad)
	if err != nil {
		if id, kerr := secrets.KeyID(s); kerr == nil && !slices.Contains(c.kr.KeyIDs(), id) {
			return "", false, fmt.Errorf("the backup's secrets need master key %s, which %s does not have", id, c.source)
		}
		return "", false, fmt.Errorf("the master keys in %s do not decrypt the backup's secrets: %w", c.source, err)
	}
	clear(p)
	c.n++
	return s, false, nil
}

func missingKeys(kr *secrets.Keyring, need []string) []string {
	var out []string
	have := kr.KeyIDs()
	for _, id := range need {
		if !slices.Contains(have, id) {
			out = append(out, id)
		}
	}
	return out
}

func sum(path, name string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, err
	}
	return File{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	Path      string
	Manifest  Manifest
	Secrets   int    // secret values decrypted with the master keys to check them
	KeySource string // where the keys that decrypted them come from
	// InstalledKey is the key file Restore wrote from the archive ("" when it used the existing keys).
	InstalledKey string
}

// Restore replaces the SQLite database with the archive's, after checking the archive (its
// checksum, that its schema is not newer than this binary's) and that the master keys the server
// would use decrypt every secret in it. It refuses while a server holds the database's cron lease
// (a running server), and refuses to replace an existing database unless force. It writes the
// database beside its place, syncs it and renames it over; on any error nothing is replaced.
func Restore(ctx context.Context, o Options, from string, force bool) (_ *RestoreResult, err error) {
	path, err := sqlitePath(o.DSN)
	if err != nil {
		return nil, err
	}
	if err := checkStopped(ctx, path, force); err != nil {
		return nil, err
	}
	in, err := os.Open(from)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", from, err)
	}
	defer in.Close()
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		// A refused restore leaves no empty directory behind either.
		defer func() {
			if err != nil {
				os.Remove(dir)
			}
		}()
	}
	work, err := os.MkdirTemp(dir, ".freshet-restore-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, DatabaseName)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	a, err := ReadArchive(in, from, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	m := a.Manifest
	if m.SchemaVersion > store.SchemaVersion() {
		return nil, invalid(from, fmt.Sprintf("its database is at schema version %d, newer than this freshet binary's %d (the backup was made by freshet %s): restore it with that version or newer", m.SchemaVersion, store.SchemaVersion(), m.FreshetVersion))
	}
	res := &RestoreResult{Path: path, Manifest: m, KeySource: o.keySource()}
	kr, err := o.loadKeyring()
	if err != nil {
		return nil, err
	}
	if kr == nil {
		if a.MasterKey == nil {
			return nil, fmt.Errorf("no master key at %s and backup %s holds none: put the key file that was backed up with it there (or give --master-key-file) and run restore again", o.keySource(), from)
		}
		if kr, err = secrets.Parse(a.MasterKey, from+":"+MasterKeyName); err != nil {
			return nil, err
		}
		res.InstalledKey = o.keyFilePath()
		res.KeySource = from + ":" + MasterKeyName
	}
	if missing := missingKeys(kr, m.KeyIDs); len(missing) > 0 {
		return nil, fmt.Errorf("backup %s: its secrets need master key %s, which %s does not have: restore the key file that was backed up with it (nothing was restored)", from, missing[0], res.KeySource)
	}
	// Open migrates the copy to this binary's schema, as the server's next start would, so that
	// every stored secret can be read and decrypted here.
	db, err := store.Open(ctx, tmp, nil)
	if err != nil {
		return nil, fmt.Errorf("backup %s: its database does not open: %w", from, err)
	}
	chk := &decryptChecker{kr: kr, source: res.KeySource}
	err = db.ReleaseAllLeases(ctx)
	if err == nil {
		_, err = server.ReencryptSecrets(ctx, db, chk)
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w (nothing was restored)", from, err)
	}
	res.Secrets = chk.n
	if err := fsyncFile(tmp); err != nil {
		return nil, err
	}
	// Check again: a server may have started while the archive was read.
	if err := checkStopped(ctx, path, force); err != nil {
		return nil, err
	}
	if res.InstalledKey != "" {
		if err := writeKeyFile(res.InstalledKey, a.MasterKey); err != nil {
			return nil, err
		}
	}
	// The replaced database's write-ahead log must not be replayed into the restored one.
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(path + s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return res, syncDir(dir)
}

// checkStopped refuses while a server holds the database's cron lease, and refuses an existing
// database without force.
func checkStopped(ctx context.Context, path string, force bool) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Size() > 0 {
		db, err := store.OpenExistingSQLite(ctx, path)
		if err != nil {
			return err
		}
		l, err := db.GetLease(ctx, cron.LeaseName)
		db.Close()
		if err == nil && l.Holder != "" && l.Expires.After(time.Now()) {
			return fmt.Errorf("a freshet server is using %s (it holds the %q lease until %s): stop every server on this database first; a server that was killed lets go within the lease's TTL", path, cron.LeaseName, l.Expires.UTC().Format(time.RFC3339))
		}
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return fmt.Errorf("check whether a server is using %s: %w", path, err)
		}
	}
	if !force {
		return errdefs.Invalid("db", path, "already exists: give --force to replace it with the backup (stop the server first)")
	}
	return nil
}

func fsyncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func writeKeyFile(path string, key []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("install the backup's master key: %w", err)
	}
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("install the backup's master key: %w", err)
	}
	return syncDir(filepath.Dir(path))
}
