package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// newBackup makes a real archive of a migrated SQLite database in a data directory with a key file.
func newBackup(t *testing.T) (Options, string) {
	t.Helper()
	dir := t.TempDir()
	o := Options{DSN: filepath.Join(dir, "freshet.db"), DataDir: dir}
	db, err := store.Open(context.Background(), o.DSN, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := secrets.GenerateKeyFile(filepath.Join(dir, secrets.MasterKeyFileName)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	if _, err := Backup(context.Background(), o, out, false); err != nil {
		t.Fatal(err)
	}
	return o, out
}

// rewrite writes a copy of the archive at from with its manifest and database changed by edit.
func rewrite(t *testing.T, from string, edit func(m *Manifest, db []byte) []byte) string {
	t.Helper()
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var db bytes.Buffer
	a, err := ReadArchive(f, from, &db)
	if err != nil {
		t.Fatal(err)
	}
	b := edit(&a.Manifest, db.Bytes())
	var out bytes.Buffer
	if err := writeArchive(&out, &a.Manifest, bytes.NewReader(b), a.MasterKey); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "edited.tar.gz")
	if err := os.WriteFile(p, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Each bad archive is refused with an error naming the file and what is wrong, and no database
// (nor anything else) is written in the target directory.
func TestRestoreRefusesBadArchives(t *testing.T) {
	src, good := newBackup(t)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) string {
		p := filepath.Join(t.TempDir(), "bad.tar.gz")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]struct {
		file string
		want string
	}{
		"truncated": {write(raw[:len(raw)/2]), "truncated"},
		"not gzip":  {write([]byte("PK\x03\x04 a zip file")), "not a gzip file"},
		"wrong checksum": {rewrite(t, good, func(_ *Manifest, db []byte) []byte {
			db[len(db)/2] ^= 0xff
			return db
		}), "has SHA-256"},
		"newer schema": {rewrite(t, good, func(m *Manifest, db []byte) []byte {
			m.SchemaVersion = store.SchemaVersion() + 1
			return db
		}), "newer than this freshet binary's"},
		"missing key": {rewrite(t, good, func(m *Manifest, db []byte) []byte {
			m.KeyIDs = []string{"retired-key"}
			return db
		}), "need master key retired-key"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// The key file the source server used: only the manifest's missing key is wrong.
			key, err := os.ReadFile(filepath.Join(src.DataDir, secrets.MasterKeyFileName))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, secrets.MasterKeyFileName), key, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Restore(context.Background(), Options{DSN: filepath.Join(dir, "freshet.db"), DataDir: dir}, c.file, false)
			if err == nil || !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error naming %s and %q, got %v", c.file, c.want, err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("a refused restore left %v in %s", ents, dir)
			}
		})
	}
	// The good archive restores.
	if _, err := Restore(context.Background(), Options{DSN: filepath.Join(t.TempDir(), "freshet.db"), MasterKeyFile: filepath.Join(src.DataDir, secrets.MasterKeyFileName)}, good, false); err != nil {
		t.Fatal(err)
	}
}

func fuzzArchive(t testing.TB, m Manifest, db, key []byte) []byte {
	var b bytes.Buffer
	if err := writeArchive(&b, &m, bytes.NewReader(db), key); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzReadArchive: a backup archive is an untrusted file. ReadArchive never panics, accepts only
// an archive whose manifest validates and whose database matches its size and checksum, and
// copies out no more than the manifest's size.
func FuzzReadArchive(f *testing.F) {
	db := []byte("SQLite format 3\x00 not really")
	s := sha256.Sum256(db)
	m := Manifest{Format: Format, FreshetVersion: "dev", SchemaVersion: 22, CreatedAt: time.Unix(1e9, 0).UTC(),
		Database: File{Name: DatabaseName, Size: int64(len(db)), SHA256: hex.EncodeToString(s[:])}, KeyIDs: []string{"k1"}}
	good := fuzzArchive(f, m, db, nil)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("\x1f\x8b\x08\x00garbage"))
	key := []byte("# freshet master keys\n")
	if kr, err := secrets.Parse(secrets.Generate().ExportKeyFile(), "gen"); err == nil {
		key = kr.ExportKeyFile()
	}
	ks := sha256.Sum256(key)
	m.MasterKey = &File{Name: MasterKeyName, Size: int64(len(key)), SHA256: hex.EncodeToString(ks[:])}
	f.Add(fuzzArchive(f, m, db, key))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		a, err := ReadArchive(bytes.NewReader(b), "fuzz.tar.gz", &out)
		if err != nil {
			return
		}
		if err := a.Manifest.validate("again"); err != nil {
			t.Fatalf("accepted a manifest that does not validate: %v", err)
		}
		sum := sha256.Sum256(out.Bytes())
		if int64(out.Len()) != a.Manifest.Database.Size || hex.EncodeToString(sum[:]) != a.Manifest.Database.SHA256 {
			t.Fatalf("accepted a database that does not match its manifest")
		}
		if (a.MasterKey != nil) != (a.Manifest.MasterKey != nil) {
			t.Fatalf("master key presence disagrees with the manifest")
		}
	})
}
