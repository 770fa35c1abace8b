// Package backup writes and reads Freshet's SQLite backup archives: `freshet admin backup` takes an
// online, consistent snapshot of the database a server is using (VACUUM INTO) into a tar.gz with
// a manifest, and `freshet admin restore` checks an archive (checksum, schema version, and that
// the master keys at hand decrypt every secret in it) before it atomically replaces the database.
// docs/operations.md describes the procedure for both stores.
package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/secrets"
)

// The archive's entries, in this order: the manifest, the database, then the key file if included.
const (
	ManifestName  = "manifest.json"
	DatabaseName  = "freshet.db"
	MasterKeyName = "master.key"
	// Format is the archive layout version this binary writes and reads.
	Format = 1

	maxManifest  = 64 << 10
	maxKeyFile   = 64 << 10
	maxKeyIDs    = 1024
	maxVersion   = 200
	maxDatabase  = 1 << 40
	sha256HexLen = 64
)

// File is an archive entry's size and SHA-256 (lower-case hex).
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest describes a backup: what wrote it, the database's schema version, when, the database
// file's checksum, and the master key IDs its stored secrets are encrypted under.
type Manifest struct {
	Format         int       `json:"format"`
	FreshetVersion string    `json:"freshet_version"`
	SchemaVersion  int       `json:"schema_version"`
	CreatedAt      time.Time `json:"created_at"`
	Database       File      `json:"database"`
	// KeyIDs are the master keys the database's secrets need (empty: it stores none).
	KeyIDs []string `json:"key_ids"`
	// MasterKey is set when the archive holds the key file (--include-master-key).
	MasterKey *File `json:"master_key,omitempty"`
}

func invalid(source, what string) error {
	return fmt.Errorf("backup %s: %w: %s", source, errdefs.ErrInvalid, what)
}

// validate checks the manifest's fields, naming the first bad one.
func (m *Manifest) validate(source string) error {
	switch {
	case m.Format != Format:
		return invalid(source, fmt.Sprintf("manifest format %d: this freshet reads format %d", m.Format, Format))
	case m.SchemaVersion < 1:
		return invalid(source, fmt.Sprintf("manifest schema_version %d: want a migration number of at least 1", m.SchemaVersion))
	case m.CreatedAt.IsZero():
		return invalid(source, "manifest created_at is missing")
	case len(m.FreshetVersion) > maxVersion:
		return invalid(source, fmt.Sprintf("manifest freshet_version is %d bytes long: want at most %d", len(m.FreshetVersion), maxVersion))
	case len(m.KeyIDs) > maxKeyIDs:
		return invalid(source, fmt.Sprintf("manifest lists %d key IDs: want at most %d", len(m.KeyIDs), maxKeyIDs))
	}
	if err := m.Database.validate(source, DatabaseName, maxDatabase); err != nil {
		return err
	}
	if m.MasterKey != nil {
		if err := m.MasterKey.validate(source, MasterKeyName, maxKeyFile); err != nil {
			return err
		}
	}
	for _, id := range m.KeyIDs {
		if !secrets.ValidKeyID(id) {
			return invalid(source, fmt.Sprintf("manifest key ID %q: want 1 to %d letters, digits, '-' or '_'", trim(id), secrets.MaxKeyIDLen))
		}
	}
	return nil
}

func (f *File) validate(source, name string, max int64) error {
	switch {
	case f.Name != name:
		return invalid(source, fmt.Sprintf("manifest entry name %q: want %q", trim(f.Name), name))
	case f.Size < 0 || f.Size > max:
		return invalid(source, fmt.Sprintf("manifest %s size %d: want 0 to %d bytes", name, f.Size, max))
	case len(f.SHA256) != sha256HexLen:
		return invalid(source, fmt.Sprintf("manifest %s sha256 %q: want %d lower-case hex digits", name, trim(f.SHA256), sha256HexLen))
	}
	if _, err := hex.DecodeString(f.SHA256); err != nil || f.SHA256 != lowerHex(f.SHA256) {
		return invalid(source, fmt.Sprintf("manifest %s sha256 %q: want %d lower-case hex digits", name, trim(f.SHA256), sha256HexLen))
	}
	return nil
}

func lowerHex(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'F' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func trim(s string) string {
	if len(s) > 72 {
		return s[:72] + "…"
	}
	return s
}

// Archive is what ReadArchive found besides the database it copied out.
type Archive struct {
	Manifest Manifest
	// MasterKey is the included key file's contents (nil when not included); it parsed as a key file.
	MasterKey []byte
}

// ReadArchive reads a backup archive from r (source names it in errors), writes the database
// entry to db, and checks the manifest, each entry's size and SHA-256, the entries' order and that
// nothing else is in the archive. Any error means the archive is unusable: the caller discards
// what it wrote to db. An archive is untrusted input (FuzzReadArchive).
func ReadArchive(r io.Reader, source string, db io.Writer) (*Archive, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, invalid(source, "not a gzip file ("+err.Error()+"): a backup is the .tar.gz 'freshet admin backup' writes")
	}
	gz.Multistream(false)
	tr := tar.NewReader(gz)
	next := func(want string) (*tar.Header, error) {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, invalid(source, "ends before its "+want+" entry: the file is truncated")
		}
		if err != nil {
			return nil, invalid(source, "reading the "+want+" entry: "+truncated(err))
		}
		if h.Typeflag != tar.TypeReg {
			return nil, invalid(source, fmt.Sprintf("entry %q is not a regular file", trim(h.Name)))
		}
		return h, nil
	}
	h, err := next(ManifestName)
	if err != nil {
		return nil, err
	}
	if h.Name != ManifestName {
		return nil, invalid(source, fmt.Sprintf("first entry is %q: want %s", trim(h.Name), ManifestName))
	}
	if h.Size > maxManifest {
		return nil, invalid(source, fmt.Sprintf("%s is %d bytes: want at most %d", ManifestName, h.Size, maxManifest))
	}
	raw, err := io.ReadAll(io.LimitReader(tr, maxManifest))
	if err != nil {
		return nil, invalid(source, "reading "+ManifestName+": "+truncated(err))
	}
	a := &Archive{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a.Manifest); err != nil {
		return nil, invalid(source, ManifestName+" is not a backup manifest: "+err.Error())
	}
	if dec.More() {
		return nil, invalid(source, ManifestName+" has data after its JSON object")
	}
	m := &a.Manifest
	if err := m.validate(source); err != nil {
		return nil, err
	}
	if h, err = next(DatabaseName); err != nil {
		return nil, err
	}
	if h.Name != DatabaseName {
		return nil, invalid(source, fmt.Sprintf("second entry is %q: want %s", trim(h.Name), DatabaseName))
	}
	if h.Size != m.Database.Size {
		return nil, invalid(source, fmt.Sprintf("%s entry is %d bytes but the manifest says %d", DatabaseName, h.Size, m.Database.Size))
	}
	sum := sha256.New()
	rd := &readErr{r: io.LimitReader(tr, m.Database.Size)}
	n, err := io.Copy(io.MultiWriter(db, sum), rd)
	if rd.err != nil {
		return nil, invalid(source, "reading "+DatabaseName+": "+truncated(rd.err))
	}
	if err != nil {
		return nil, fmt.Errorf("backup %s: copy out %s: %w", source, DatabaseName, err)
	}
	if n != m.Database.Size {
		return nil, invalid(source, fmt.Sprintf("%s ends after %d of %d bytes: the file is truncated", DatabaseName, n, m.Database.Size))
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != m.Database.SHA256 {
		return nil, invalid(source, fmt.Sprintf("%s has SHA-256 %s but the manifest says %s: the file is corrupted", DatabaseName, got, m.Database.SHA256))
	}
	h, err = tr.Next()
	switch {
	case err == io.EOF && m.MasterKey != nil:
		return nil, invalid(source, "ends before its "+MasterKeyName+" entry, which the manifest lists: the file is truncated")
	case err == io.EOF:
	case err != nil:
		return nil, invalid(source, "after "+DatabaseName+": "+truncated(err))
	case h.Name != MasterKeyName || m.MasterKey == nil:
		return nil, invalid(source, fmt.Sprintf("unexpected entry %q after %s", trim(h.Name), DatabaseName))
	default:
		if h.Size != m.MasterKey.Size {
			return nil, invalid(source, fmt.Sprintf("%s entry is %d bytes but the manifest says %d", MasterKeyName, h.Size, m.MasterKey.Size))
		}
		key, err := io.ReadAll(io.LimitReader(tr, m.MasterKey.Size))
		if err != nil || int64(len(key)) != m.MasterKey.Size {
			return nil, invalid(source, MasterKeyName+" is truncated")
		}
		ks := sha256.Sum256(key)
		if got := hex.EncodeToString(ks[:]); got != m.MasterKey.SHA256 {
			return nil, invalid(source, fmt.Sprintf("%s has SHA-256 %s but the manifest says %s: the file is corrupted", MasterKeyName, got, m.MasterKey.SHA256))
		}
		if _, err := secrets.Parse(key, source+":"+MasterKeyName); err != nil {
			return nil, invalid(source, err.Error())
		}
		a.MasterKey = key
		if h, err := tr.Next(); err != io.EOF {
			if err != nil {
				return nil, invalid(source, "after "+MasterKeyName+": "+truncated(err))
			}
			return nil, invalid(source, fmt.Sprintf("unexpected entry %q after %s", trim(h.Name), MasterKeyName))
		}
	}
	// The gzip trailer's CRC and length are checked only when the stream is read to its end.
	if _, err := io.Copy(io.Discard, io.LimitReader(gz, 1<<20)); err != nil {
		return nil, invalid(source, "the gzip stream is damaged: "+truncated(err))
	}
	return a, nil
}

func truncated(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of file: the file is truncated"
	}
	return err.Error()
}

// writeArchive writes the archive to w: the manifest, the database from db, and the key file.
func writeArchive(w io.Writer, m *Manifest, db io.Reader, key []byte) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	put := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: m.CreatedAt, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		n, err := io.Copy(tw, r)
		if err == nil && n != size {
			err = fmt.Errorf("%s: wrote %d of %d bytes", name, n, size)
		}
		return err
	}
	if err := put(ManifestName, int64(len(raw)), bytes.NewReader(raw)); err != nil {
		return err
	}
	if err := put(DatabaseName, m.Database.Size, db); err != nil {
		return err
	}
	if key != nil {
		if err := put(MasterKeyName, int64(len(key)), bytes.NewReader(key)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// readErr remembers its reader's error, to tell a damaged archive from a failing destination.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}
