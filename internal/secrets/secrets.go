// Package secrets encrypts secret values at rest with AES-256-GCM under a keyring of master keys,
// and loads, creates and rotates the master key file that holds them.
//
// A ciphertext is a self-describing string:
//
//	fsec1:<keyID>:<base64url(nonce || ciphertext || tag)>
//
// with a random 96-bit nonce per message, so a keyring that holds several keys decrypts values
// written under any of them and encrypts new values under its primary key. Callers bind each
// ciphertext to the record it belongs to with additional authenticated data built by AAD (for
// example the account ID, the context name and the key): a ciphertext copied to another record
// fails to decrypt. Every failure is an error wrapping ErrMalformed, ErrUnknownKey or ErrDecrypt;
// no error ever contains plaintext or key material.
//
// Secret values held in memory travel as Value, which prints, logs and marshals as "***".
//
// See docs/secrets.md for the key file format and the rotation procedure.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
)

// Format constants.
const (
	// Prefix is the version tag every ciphertext starts with, followed by ':'.
	Prefix = "fsec1"
	// KeySize is the size of a master key: AES-256.
	KeySize = 32
	// MaxKeyIDLen bounds a key ID, which appears in every ciphertext.
	MaxKeyIDLen = 32
	// Overhead is how many bytes a ciphertext adds to its plaintext before base64: the 96-bit
	// nonce and the 128-bit GCM tag.
	Overhead = nonceSize + tagSize

	nonceSize = 12
	tagSize   = 16
	// generatedIDBytes is the randomness in a generated key ID (8 hex characters).
	generatedIDBytes = 4
)

// Errors returned by Decrypt, Reencrypt and KeyID. Each is wrapped with context that names the
// key ID or the problem, never the plaintext.
var (
	// ErrMalformed: the string is not an fsec1 ciphertext (wrong prefix, bad base64, too short).
	ErrMalformed = errors.New("malformed ciphertext")
	// ErrUnknownKey: the ciphertext names a key the keyring does not hold (retired, or written
	// under another master key file).
	ErrUnknownKey = errors.New("unknown master key")
	// ErrDecrypt: the ciphertext did not authenticate: it was tampered with or truncated, or it
	// is bound to another record (wrong AAD).
	ErrDecrypt = errors.New("ciphertext did not authenticate (tampered, truncated, or bound to another record)")
)

// b64 is the payload encoding. Strict decoding rejects non-zero trailing bits; checkPayload
// rejects the CR and LF the decoder would otherwise skip. Together they make the encoding of a
// ciphertext unique: no other string decodes to the same bytes.
var b64 = base64.RawURLEncoding.Strict()

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ValidKeyID reports whether id can name a key: 1 to 32 letters, digits, '-' or '_'.
func ValidKeyID(id string) bool { return keyIDRE.MatchString(id) }

// AAD builds additional authenticated data from parts, each length-prefixed so that no two
// different lists give the same bytes (("ab", "c") and ("a", "bc") differ). Callers pass what
// identifies the record a ciphertext belongs to, e.g. AAD("context-secret", accountID, name, key).
func AAD(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += binary.MaxVarintLen64 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// key is one master key. material is kept only to write the key file.
type key struct {
	id       string
	material []byte
	aead     cipher.AEAD
}

func newKey(id string, material []byte) (*key, error) {
	if len(material) != KeySize {
		return nil, fmt.Errorf("key %q: material is %d bytes, want %d (256 bits)", id, len(material), KeySize)
	}
	block, err := aes.NewCipher(material)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", id, err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", id, err)
	}
	return &key{id: id, material: append([]byte(nil), material...), aead: aead}, nil
}

// Reencrypter re-encrypts a ciphertext under the current primary key and says whether it
// changed. Keyring has it; each domain that stores secrets takes one to rewrite its own on a
// master-key rotation.
type Reencrypter interface {
	Reencrypt(ciphertext string, aad []byte) (string, bool, error)
}

var _ Reencrypter = (*Keyring)(nil)

// Keyring holds the master keys. The first is primary: Encrypt uses it. The others only decrypt,
// until they are retired. A Keyring is safe for concurrent use; Rotate, Retire and the other
// changes are saved to the key file it was loaded from (see LoadFile).
type Keyring struct {
	mu   sync.RWMutex
	keys []*key // primary first
	byID map[string]*key

	// path is the key file changes are saved to; "" for a keyring from the environment or memory.
	path string
	// source names where the keys came from, for errors: a path, EnvMasterKey or "memory".
	source string
}

// Generate returns an in-memory keyring with one new random key. Changes to it are not saved
// anywhere; use GenerateKeyFile for a keyring that persists.
func Generate() *Keyring {
	kr := &Keyring{source: "memory"}
	k := kr.randomKey()
	kr.set([]*key{k})
	return kr
}

// set replaces the keys. The caller holds mu (or owns kr exclusively).
func (kr *Keyring) set(keys []*key) {
	kr.keys = keys
	kr.byID = make(map[string]*key, len(keys))
	for _, k := range keys {
		kr.byID[k.id] = k
	}
}

// randomKey returns a new key whose ID is not in the keyring. The caller holds mu.
func (kr *Keyring) randomKey() *key {
	material := make([]byte, KeySize)
	rand.Read(material)
	for {
		idb := make([]byte, generatedIDBytes)
		rand.Read(idb)
		id := hex.EncodeToString(idb)
		if _, taken := kr.byID[id]; taken {
			continue
		}
		k, err := newKey(id, material)
		if err != nil {
			panic(err) // unreachable: the material has the right size
		}
		return k
	}
}

// Primary returns the ID of the key Encrypt uses.
func (kr *Keyring) Primary() string {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	if len(kr.keys) == 0 {
		return ""
	}
	return kr.keys[0].id
}

// KeyIDs returns the IDs of every key, primary first.
func (kr *Keyring) KeyIDs() []string {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	ids := make([]string, len(kr.keys))
	for i, k := range kr.keys {
		ids[i] = k.id
	}
	return ids
}

// Source names where the keys came from: the key file's path, EnvMasterKey, or "memory".
func (kr *Keyring) Source() string {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	return kr.source
}

func (kr *Keyring) primary() (*key, error) {
	if len(kr.keys) == 0 {
		return nil, errors.New("encrypt: the keyring has no keys")
	}
	return kr.keys[0], nil
}

// Encrypt encrypts plaintext under the primary key, binding it to aad, and returns an fsec1
// ciphertext string. Decrypt needs the same aad.
func (kr *Keyring) Encrypt(plaintext, aad []byte) (string, error) {
	kr.mu.RLock()
	k, err := kr.primary()
	kr.mu.RUnlock()
	if err != nil {
		return "", err
	}
	return k.seal(plaintext, aad), nil
}

func (k *key) seal(plaintext, aad []byte) string {
	sealed := k.aead.Seal(nil, nil, plaintext, additionalData(k.id, aad))
	header := len(Prefix) + 2 + len(k.id)
	out := make([]byte, header+b64.EncodedLen(len(sealed)))
	copy(out, Prefix+":"+k.id+":")
	b64.Encode(out[header:], sealed)
	return string(out)
}

// additionalData binds the version and key ID as well as the caller's AAD. The ID cannot contain
// ':', so the header is unambiguous.
func additionalData(id string, aad []byte) []byte {
	ad := make([]byte, 0, len(Prefix)+2+len(id)+len(aad))
	ad = append(ad, Prefix...)
	ad = append(ad, ':')
	ad = append(ad, id...)
	ad = append(ad, ':')
	return append(ad, aad...)
}

// parse splits an fsec1 string into its key ID and decoded payload.
func parse(s string) (id string, sealed []byte, err error) {
	rest, ok := strings.CutPrefix(s, Prefix+":")
	if !ok {
		return "", nil, fmt.Errorf("%w: want %q, got a string of %d bytes without it", ErrMalformed, Prefix+":<key>:<data>", len(s))
	}
	id, payload, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, fmt.Errorf("%w: want %q: no ':' after the key ID", ErrMalformed, Prefix+":<key>:<data>")
	}
	if !ValidKeyID(id) {
		return "", nil, fmt.Errorf("%w: key ID %q: want 1 to %d letters, digits, '-' or '_'", ErrMalformed, shorten(id), MaxKeyIDLen)
	}
	if i := indexNotB64(payload); i >= 0 {
		return id, nil, fmt.Errorf("%w: key %q: data has a byte outside the base64url alphabet at offset %d", ErrMalformed, id, i)
	}
	sealed, err = b64.DecodeString(payload)
	if err != nil {
		return id, nil, fmt.Errorf("%w: key %q: data is not valid unpadded base64url (%d characters)", ErrMalformed, id, len(payload))
	}
	if len(sealed) < Overhead {
		return id, nil, fmt.Errorf("%w: key %q: data is %d bytes, shorter than the %d-byte nonce and tag (truncated?)", ErrMalformed, id, len(sealed), Overhead)
	}
	return id, sealed, nil
}

// b64Alphabet marks the bytes of the base64url alphabet.
var b64Alphabet = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		t[c] = true
	}
	return t
}()

// indexNotB64 returns the offset of the first byte of s outside the base64url alphabet, or -1.
func indexNotB64(s string) int {
	for i := 0; i < len(s); i++ {
		if !b64Alphabet[s[i]] {
			return i
		}
	}
	return -1
}

func shorten(s string) string {
	if len(s) > MaxKeyIDLen+8 {
		return s[:MaxKeyIDLen+8] + "…"
	}
	return s
}

// KeyID returns the ID of the key s was encrypted under, without decrypting it.
func KeyID(s string) (string, error) {
	id, _, err := parse(s)
	return id, err
}

// Decrypt authenticates and decrypts an fsec1 ciphertext made by Encrypt with the same aad, using
// the key it names. It returns an error wrapping ErrMalformed, ErrUnknownKey or ErrDecrypt.
func (kr *Keyring) Decrypt(s string, aad []byte) ([]byte, error) {
	_, plaintext, err := kr.open(s, aad)
	return plaintext, err
}

func (kr *Keyring) open(s string, aad []byte) (*key, []byte, error) {
	id, sealed, err := parse(s)
	if err != nil {
		return nil, nil, fmt.Errorf("decrypt: %w", err)
	}
	kr.mu.RLock()
	k := kr.byID[id]
	source := kr.source
	kr.mu.RUnlock()
	if k == nil {
		return nil, nil, fmt.Errorf("decrypt: %w %q: the keyring from %s does not hold it (retired, or encrypted under another master key)", ErrUnknownKey, id, source)
	}
	plaintext, err := k.aead.Open(nil, nil, sealed, additionalData(id, aad))
	if err != nil {
		return nil, nil, fmt.Errorf("decrypt under key %q: %w", id, ErrDecrypt)
	}
	return k, plaintext, nil
}

// Reencrypt decrypts s and, unless it already is under the primary key, encrypts it again under
// the primary key with the same aad. changed reports whether out differs from s; a rotation
// stores out only when changed. s is authenticated either way.
func (kr *Keyring) Reencrypt(s string, aad []byte) (out string, changed bool, err error) {
	k, plaintext, err := kr.open(s, aad)
	if err != nil {
		return "", false, fmt.Errorf("reencrypt: %w", err)
	}
	kr.mu.RLock()
	p, err := kr.primary()
	kr.mu.RUnlock()
	if err != nil {
		return "", false, fmt.Errorf("reencrypt: %w", err)
	}
	if k == p {
		return s, false, nil
	}
	out = p.seal(plaintext, aad)
	clear(plaintext)
	return out, true, nil
}

// String describes the keyring without its key material.
func (kr *Keyring) String() string {
	ids := kr.KeyIDs()
	return fmt.Sprintf("secrets.Keyring{source: %s, keys: %s (primary first)}", kr.Source(), strings.Join(ids, ","))
}

// GoString is String: %#v must not print key material either.
func (kr *Keyring) GoString() string { return kr.String() }

// Format prints String for every verb, so that no fmt verb (%d, %x, %+v…) reaches the key material.
func (kr *Keyring) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(kr.String())) }

// LogValue logs the description, never the key material.
func (kr *Keyring) LogValue() slog.Value { return slog.StringValue(kr.String()) }

var (
	_ fmt.Formatter  = (*Keyring)(nil)
	_ slog.LogValuer = (*Keyring)(nil)
)
