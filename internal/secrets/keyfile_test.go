package secrets

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

var (
	key1 = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	key2 = base64.RawURLEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210"))
)

func writeKeyFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is subject to the umask
		t.Fatal(err)
	}
	return path
}

func TestLoadFile(t *testing.T) {
	path := writeKeyFile(t, "# comment\n\n  k1:"+key1+"  \r\nk2:"+key2+"\n", 0o600)
	kr, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := kr.KeyIDs(); len(got) != 2 || got[0] != "k1" || got[1] != "k2" {
		t.Fatalf("KeyIDs = %v, want [k1 k2]", got)
	}
	if kr.Source() != path {
		t.Errorf("Source = %q", kr.Source())
	}
}

func TestMalformedKeyFiles(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string // substrings of the error
	}{
		{"empty", "", []string{"holds no key"}},
		{"comments only", "# nothing\n\n", []string{"holds no key"}},
		{"bare key", "# c\n" + key1 + "\n", []string{":2:", "want ID:BASE64"}},
		{"bad id", "k1:" + key1 + "\nbad id!:" + key2, []string{":2:", `key ID "bad id!"`, "letters, digits"}},
		{"empty id", ":" + key1, []string{":1:", `key ID ""`}},
		{"long id", strings.Repeat("k", 33) + ":" + key1, []string{":1:", "1 to 32"}},
		{"duplicate", "k1:" + key1 + "\n\nk1:" + key2, []string{":3:", `"k1" repeats`, ":1"}},
		{"bad base64", "k1:" + key1 + "\nk2:not*base64", []string{":2:", `key "k2"`, "not valid base64"}},
		{"short key", "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 16)), []string{":1:", "16 bytes, want 32"}},
		{"long key", "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 64)), []string{":1:", "64 bytes, want 32"}},
		{"empty key", "k1:", []string{":1:", "0 bytes, want 32"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeKeyFile(t, tt.content, 0o600)
			_, err := LoadFile(path)
			if !errors.Is(err, ErrInvalidKeyFile) || !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalidKeyFile", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, key1) || strings.Contains(msg, key2) {
				t.Errorf("error %q contains key material", msg)
			}
		})
	}
}

func TestFilePermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o620, 0o602} {
		path := writeKeyFile(t, "k1:"+key1, mode)
		_, err := LoadFile(path)
		if !errors.Is(err, ErrInsecureKeyFile) {
			t.Errorf("mode %04o: err = %v, want ErrInsecureKeyFile", mode, err)
			continue
		}
		if want := "chmod 600 " + path; !strings.Contains(err.Error(), want) {
			t.Errorf("mode %04o: error %q does not say %q", mode, err, want)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if _, err := LoadFile(writeKeyFile(t, "k1:"+key1, mode)); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	if _, err := LoadFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: err = %v", err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
}

func TestGenerateKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	kr, err := GenerateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}
	ct, _ := kr.Encrypt([]byte("v"), nil)
	again, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := again.Decrypt(ct, nil); err != nil || string(pt) != "v" {
		t.Fatalf("reloaded keyring: %q, %v", pt, err)
	}
	if _, err := GenerateKeyFile(path); !errors.Is(err, fs.ErrExist) || !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("second GenerateKeyFile: err = %v, want fs.ErrExist", err)
	}
	if again2, _ := LoadFile(path); again2.Primary() != kr.Primary() {
		t.Error("second GenerateKeyFile replaced the file")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestLoadOrCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	kr, created, err := LoadOrCreate(dir)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate: created = %v, err = %v", created, err)
	}
	kr2, created, err := LoadOrCreate(dir)
	if err != nil || created {
		t.Fatalf("second LoadOrCreate: created = %v, err = %v", created, err)
	}
	if kr2.Primary() != kr.Primary() {
		t.Errorf("second start got key %q, want %q", kr2.Primary(), kr.Primary())
	}
	// Many processes starting at once agree on one key.
	dir = filepath.Join(t.TempDir(), "race")
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			kr, _, err := LoadOrCreate(dir)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = kr.Primary()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent LoadOrCreate gave different keys: %v", ids)
		}
	}
	// A broken file is an error, never silently replaced.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, MasterKeyFileName), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreate(bad); !errors.Is(err, ErrInvalidKeyFile) {
		t.Errorf("broken file: err = %v, want ErrInvalidKeyFile", err)
	}
}

func TestRotationSavesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.key")
	kr, err := GenerateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := kr.Primary()
	ct, _ := kr.Encrypt([]byte("v"), nil)
	newID, err := kr.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := onDisk.KeyIDs(); len(got) != 2 || got[0] != newID || got[1] != old {
		t.Fatalf("file after Rotate holds %v, want [%s %s]", got, newID, old)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after Rotate %04o, want 0600", fi.Mode().Perm())
	}
	out, _, err := kr.Reencrypt(ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := kr.Retire(old); err != nil {
		t.Fatal(err)
	}
	onDisk, _ = LoadFile(path)
	if got := onDisk.KeyIDs(); len(got) != 1 || got[0] != newID {
		t.Fatalf("file after Retire holds %v", got)
	}
	if _, err := onDisk.Decrypt(ct, nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old ciphertext after Retire: err = %v, want ErrUnknownKey", err)
	}
	if pt, err := onDisk.Decrypt(out, nil); err != nil || string(pt) != "v" {
		t.Errorf("re-encrypted value: %q, %v", pt, err)
	}
	assertNoTempFiles(t, filepath.Dir(path))

	// Another process adds a key; Reload picks it up.
	other, _ := LoadFile(path)
	added, err := other.Add()
	if err != nil {
		t.Fatal(err)
	}
	if err := kr.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := kr.KeyIDs(); len(got) != 2 || got[1] != added {
		t.Errorf("after Reload KeyIDs = %v, want the added key %s", got, added)
	}
}

func TestFailedSaveKeepsKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	kr, err := GenerateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the file by a non-empty directory: renaming over it fails, even for root.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := kr.KeyIDs()
	if _, err := kr.Rotate(); err == nil {
		t.Fatal("Rotate succeeded although the file could not be saved")
	}
	if got := kr.KeyIDs(); len(got) != len(before) || got[0] != before[0] {
		t.Errorf("keys changed after a failed save: %v, want %v", got, before)
	}
	assertNoTempFiles(t, dir)
}

func TestEnvKeys(t *testing.T) {
	t.Setenv(EnvMasterKey, "k1:"+key1+", k2:"+key2)
	kr, err := LoadEnv()
	if err != nil {
		t.Fatal(err)
	}
	if got := kr.KeyIDs(); len(got) != 2 || got[0] != "k1" {
		t.Fatalf("KeyIDs = %v", got)
	}
	if _, err := kr.Rotate(); err == nil || !strings.Contains(err.Error(), EnvMasterKey) {
		t.Errorf("Rotate of env keys: err = %v, want a refusal naming %s", err, EnvMasterKey)
	}
	if err := kr.Reload(); err == nil {
		t.Error("Reload of env keys succeeded")
	}

	t.Setenv(EnvMasterKey, "k1:"+key1+",k2:short")
	_, err = LoadEnv()
	if !errors.Is(err, ErrInvalidKeyFile) || !strings.Contains(err.Error(), EnvMasterKey+": entry 2") {
		t.Errorf("bad env entry: err = %v, want one naming %s entry 2", err, EnvMasterKey)
	}
	t.Setenv(EnvMasterKey, "")
	if _, err := LoadEnv(); !errors.Is(err, ErrNoMasterKey) {
		t.Errorf("empty env: err = %v, want ErrNoMasterKey", err)
	}
}

func TestOptionsOpen(t *testing.T) {
	t.Setenv(EnvMasterKey, "")
	file := writeKeyFile(t, "kf:"+key1, 0o600)

	kr, _, err := (&Options{MasterKeyFile: file}).Open("")
	if err != nil || kr.Primary() != "kf" {
		t.Fatalf("from file: %v, %v", kr, err)
	}
	if _, _, err := (&Options{}).Open(""); !errors.Is(err, ErrNoMasterKey) {
		t.Errorf("nothing configured: err = %v, want ErrNoMasterKey", err)
	}
	dir := t.TempDir()
	kr, created, err := (&Options{}).Open(dir)
	if err != nil || !created {
		t.Fatalf("create in data dir: created = %v, err = %v", created, err)
	}
	if onDisk, err := LoadFile(filepath.Join(dir, MasterKeyFileName)); err != nil || onDisk.Primary() != kr.Primary() {
		t.Errorf("created key file: %v, %v", onDisk, err)
	}

	t.Setenv(EnvMasterKey, "ke:"+key2)
	kr, created, err = (&Options{}).Open(dir)
	if err != nil || created || kr.Primary() != "ke" {
		t.Fatalf("env wins over the data dir: %v, %v, %v", kr, created, err)
	}
	_, _, err = (&Options{MasterKeyFile: file}).Open("")
	if err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("file and env: err = %v, want a refusal", err)
	}
	if err := (&Options{MasterKeyFile: "  "}).Validate(); err == nil || !strings.Contains(err.Error(), "MasterKeyFile") {
		t.Errorf("blank path: err = %v", err)
	}
}
