package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Key file constants.
const (
	// MasterKeyFileName is the key file LoadOrCreate keeps in the data directory.
	MasterKeyFileName = "master.key"
	// EnvMasterKey holds the keys themselves, in the key file format (entries may also be
	// separated by commas), for deployments that inject secrets as environment variables.
	EnvMasterKey = "FRESHET_MASTER_KEY"
	// KeyFileMode is the mode key files are created with; LoadFile refuses any group or other bit.
	KeyFileMode fs.FileMode = 0o600
	// maxKeyFileSize bounds what LoadFile reads: a key line is under 80 bytes.
	maxKeyFileSize = 1 << 20
)

// Key file errors. Each unwraps to errdefs.ErrInvalid.
var (
	// ErrInvalidKeyFile: a key file (or EnvMasterKey) is malformed; the error names the line.
	ErrInvalidKeyFile error = &kindError{"invalid master key file", errdefs.ErrInvalid}
	// ErrInsecureKeyFile: a key file can be read or written by its group or others.
	ErrInsecureKeyFile error = &kindError{"insecure master key file", errdefs.ErrInvalid}
	// ErrNoMasterKey: no key file was given and EnvMasterKey is unset or empty.
	ErrNoMasterKey error = &kindError{"no master key: set --master-key-file or " + EnvMasterKey, errdefs.ErrInvalid}

	// ErrNoSuchKey: Promote or Retire named a key the keyring does not hold (errdefs.ErrNotFound).
	ErrNoSuchKey error = &kindError{"no such key", errdefs.ErrNotFound}
	// ErrPrimaryKey: Retire named the primary key (errdefs.ErrConflict).
	ErrPrimaryKey error = &kindError{"it is the primary key", errdefs.ErrConflict}
)

// kindError is a sentinel that also belongs to an errdefs kind, without repeating its text.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

const keyFileHeader = `# Freshet master keys (see docs/secrets.md). Keep this file secret (mode 0600) and back it up:
# secrets encrypted under a lost key cannot be recovered.
# One key per line, ID:BASE64 of 32 random bytes. The first key is primary: it encrypts new
# secrets; the others only decrypt until they are retired.
`

// Parse reads keys in the key file format: one "ID:BASE64" entry per line, the first primary;
// blank lines and lines starting with '#' are ignored. BASE64 is 32 bytes in standard or URL
// base64, padded or not. source names the input in errors (a path, or EnvMasterKey, whose entries
// may also be separated by commas). The keyring is in memory: changes to it are not saved.
func Parse(data []byte, source string) (*Keyring, error) {
	keys, err := parseKeys(string(data), source, source == EnvMasterKey)
	if err != nil {
		return nil, err
	}
	kr := &Keyring{source: source}
	kr.set(keys)
	return kr, nil
}

func parseKeys(data, source string, env bool) ([]*key, error) {
	var entries []string
	if env {
		entries = strings.FieldsFunc(data, func(r rune) bool { return r == '\n' || r == ',' })
	} else {
		entries = strings.Split(data, "\n")
	}
	where := func(i int) string {
		if env {
			return fmt.Sprintf("%s: entry %d", source, i+1)
		}
		return fmt.Sprintf("%s:%d", source, i+1)
	}
	var keys []*key
	seen := map[string]int{}
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" || strings.HasPrefix(e, "#") {
			continue
		}
		// Never quote the entry: it may be a bare key.
		id, material, ok := strings.Cut(e, ":")
		id, material = strings.TrimSpace(id), strings.TrimSpace(material)
		if !ok {
			return nil, fmt.Errorf("%w: %s: want ID:BASE64 (no ':' found)", ErrInvalidKeyFile, where(i))
		}
		if !ValidKeyID(id) {
			return nil, fmt.Errorf("%w: %s: key ID %q: want 1 to %d letters, digits, '-' or '_'", ErrInvalidKeyFile, where(i), shorten(id), MaxKeyIDLen)
		}
		if first, dup := seen[id]; dup {
			return nil, fmt.Errorf("%w: %s: key ID %q repeats %s", ErrInvalidKeyFile, where(i), id, where(first))
		}
		seen[id] = i
		raw, err := decodeKey(material)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: key %q: not valid base64 (standard or URL alphabet); generate one with: head -c 32 /dev/urandom | base64", ErrInvalidKeyFile, where(i), id)
		}
		k, err := newKey(id, raw)
		clear(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidKeyFile, where(i), err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: %s holds no key: want one ID:BASE64 line per key, the first primary", ErrInvalidKeyFile, source)
	}
	return keys, nil
}

func decodeKey(s string) ([]byte, error) {
	var firstErr error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// ExportKeyFile returns the keyring in the key file format, with a header comment. It contains the
// key material: write it only to a file of mode 0600 (or to EnvMasterKey).
func (kr *Keyring) ExportKeyFile() []byte {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	return format(kr.keys)
}

func format(keys []*key) []byte {
	var b bytes.Buffer
	b.WriteString(keyFileHeader)
	for _, k := range keys {
		b.WriteString(k.id)
		b.WriteByte(':')
		b.WriteString(base64.StdEncoding.EncodeToString(k.material))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// LoadFile reads the key file at path. It refuses a file that its group or others may read or
// write (on Unix), asking for chmod 600. Rotate, Add, Promote and Retire save to this file.
func LoadFile(path string) (*Keyring, error) {
	keys, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	kr := &Keyring{path: path, source: path}
	kr.set(keys)
	return kr, nil
}

func readKeyFile(path string) ([]*key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", ErrInvalidKeyFile, path, fileKind(fi.Mode()))
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o: it must be readable and writable by its owner only; run: chmod 600 %s",
			ErrInsecureKeyFile, path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes: is it the right file?", ErrInvalidKeyFile, path, maxKeyFileSize)
	}
	defer clear(data)
	return parseKeys(string(data), path, false)
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}

// LoadEnv reads the keys from the EnvMasterKey environment variable. Such a keyring cannot be
// changed in place (Rotate and the others return an error): edit the variable instead.
func LoadEnv() (*Keyring, error) {
	v := os.Getenv(EnvMasterKey)
	if strings.TrimSpace(v) == "" {
		return nil, ErrNoMasterKey
	}
	return Parse([]byte(v), EnvMasterKey)
}

// GenerateKeyFile creates a key file at path, of mode 0600, holding one new random key, and
// returns its keyring. It never overwrites: if path exists the error wraps fs.ErrExist (and
// errdefs.ErrConflict). The file appears complete or not at all.
func GenerateKeyFile(path string) (*Keyring, error) {
	kr := &Keyring{path: path, source: path}
	kr.set([]*key{kr.randomKey()})
	if err := createExclusive(path, format(kr.keys)); err != nil {
		return nil, err
	}
	return kr, nil
}

// LoadOrCreate loads MasterKeyFileName in dataDir, creating the directory and a new key file on
// first start (created is then true: tell the operator to back the file up). It is the
// convenience of `freshet up`; production installations pass their key explicitly.
func LoadOrCreate(dataDir string) (kr *Keyring, created bool, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("master key: %w", err)
	}
	path := filepath.Join(dataDir, MasterKeyFileName)
	kr, err = LoadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return kr, false, err
	}
	kr, err = GenerateKeyFile(path)
	if errors.Is(err, fs.ErrExist) { // another process created it first
		kr, err = LoadFile(path)
		return kr, false, err
	}
	return kr, err == nil, err
}

// Reload reads the key file again, so that a running server picks up keys added by another
// process. A keyring not loaded from a file has nothing to reload.
func (kr *Keyring) Reload() error {
	kr.mu.RLock()
	path := kr.path
	kr.mu.RUnlock()
	if path == "" {
		return fmt.Errorf("reload: keys from %s were not loaded from a file", kr.Source())
	}
	keys, err := readKeyFile(path)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	kr.mu.Lock()
	kr.set(keys)
	kr.mu.Unlock()
	return nil
}

// Rotate adds a new random key and makes it primary, keeping the old keys for decryption, and
// saves the key file. It returns the new key's ID. Then re-encrypt every stored secret (Reencrypt)
// and Retire the old key.
func (kr *Keyring) Rotate() (string, error) {
	var id string
	err := kr.change("rotate", func(keys []*key) ([]*key, error) {
		k := kr.randomKey()
		id = k.id
		return append([]*key{k}, keys...), nil
	})
	return id, err
}

// Add adds a new random key that decrypts but does not yet encrypt, and saves the key file. With
// several replicas sharing a key file, Add, Reload everywhere, then Promote: no replica then sees a
// ciphertext under a key it does not hold.
func (kr *Keyring) Add() (string, error) {
	var id string
	err := kr.change("add key", func(keys []*key) ([]*key, error) {
		k := kr.randomKey()
		id = k.id
		return append(keys, k), nil
	})
	return id, err
}

// Promote makes the key id primary and saves the key file.
func (kr *Keyring) Promote(id string) error {
	return kr.change("promote key "+quote(id), func(keys []*key) ([]*key, error) {
		i, err := indexOf(keys, id)
		if err != nil {
			return nil, err
		}
		out := []*key{keys[i]}
		out = append(out, keys[:i]...)
		return append(out, keys[i+1:]...), nil
	})
}

// Retire removes the key id and saves the key file. It refuses the primary key. Ciphertexts still
// under id can no longer be decrypted: re-encrypt them first.
func (kr *Keyring) Retire(id string) error {
	return kr.change("retire key "+quote(id), func(keys []*key) ([]*key, error) {
		i, err := indexOf(keys, id)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			return nil, fmt.Errorf("%w (it encrypts new secrets): Rotate, or Promote another key, first", ErrPrimaryKey)
		}
		out := append([]*key(nil), keys[:i]...)
		return append(out, keys[i+1:]...), nil
	})
}

func quote(id string) string { return fmt.Sprintf("%q", shorten(id)) }

func indexOf(keys []*key, id string) (int, error) {
	for i, k := range keys {
		if k.id == id {
			return i, nil
		}
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	return 0, fmt.Errorf("%w: the keyring holds %s", ErrNoSuchKey, strings.Join(ids, ", "))
}

// change applies edit to a copy of the keys, saves the result to the key file (if any), then
// swaps it in. Changes are serialised by the write lock, so Encrypt and Decrypt wait for the
// (rare) save.
func (kr *Keyring) change(what string, edit func([]*key) ([]*key, error)) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if kr.source == EnvMasterKey {
		return fmt.Errorf("%s: keys from %s cannot be changed in place: edit the variable (or use --master-key-file)", what, EnvMasterKey)
	}
	keys, err := edit(append([]*key(nil), kr.keys...))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if kr.path != "" {
		if err := replaceFile(kr.path, format(keys)); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	kr.set(keys)
	return nil
}

// replaceFile writes data to path atomically: a reader sees the old file or the new one.
func replaceFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save master key file: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// createExclusive creates path holding data, failing if it exists. The data is written and synced
// under a temporary name first and then hard-linked into place, so the file never appears
// half-written; on file systems without hard links it falls back to O_EXCL.
func createExclusive(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		err = writeExclusive(path, data)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create master key file %s: %w (%w)", path, fs.ErrExist, errdefs.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("create master key file: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func writeExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, KeyFileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("save master key file: %w", err)
	}
	name := f.Name()
	err = f.Chmod(KeyFileMode) // CreateTemp uses 0600 already; be explicit
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("save master key file: %w", err)
	}
	return name, nil
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
