// Package token mints, parses and checks Freshet's bearer tokens, one way for every kind: API
// keys, runner tokens, runtime tokens, password reset tokens and session tokens.
//
// A keyed token is "<kind prefix><id>_<secret>" (fsk_, frn_, frt_, fpr_): the id finds the record and
// is shown in listings; the secret is stored only as its SHA-256 hash and checked in constant
// time. A session token is "fss_<secret>" and is looked up by its hash. Secrets carry 160 bits
// of randomness or more, so a fast hash is enough at rest. Tokens are shown once.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Kind is a kind of keyed token.
type Kind struct {
	Prefix    string // starts every token of the kind, e.g. "fsk_"
	IDLen     int    // characters of the id
	SecretLen int    // characters of the secret
}

// The kinds of keyed tokens.
var (
	APIKey  = Kind{Prefix: "fsk_", IDLen: 8, SecretLen: 32}
	Runner  = Kind{Prefix: "frn_", IDLen: 8, SecretLen: 40}
	Runtime = Kind{Prefix: "frt_", IDLen: 8, SecretLen: 40}
	// PasswordReset is a one-time token an account admin issues so a user can set a new password.
	PasswordReset = Kind{Prefix: "fpr_", IDLen: 8, SecretLen: 40}
)

// SessionPrefix starts every session token.
const SessionPrefix = "fss_"

const (
	sessionSecretLen = 40
	alphabet         = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// Minted is a new keyed token: what to store (ID, Hash) and what to show once (Token).
type Minted struct {
	ID    string // the public id, stored and shown in listings
	Hash  string // the SHA-256 of the secret, stored
	Token string // the whole token, shown once and never stored
}

// New mints a token of kind k.
func (k Kind) New() Minted {
	id, secret := Random(k.IDLen), Random(k.SecretLen)
	return Minted{ID: id, Hash: Hash(secret), Token: k.Prefix + id + "_" + secret}
}

// Parse splits a token of kind k into its id and secret. ok is false for anything that is not a
// well-formed token of the kind, without saying why.
func (k Kind) Parse(tok string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(tok, k.Prefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != k.IDLen || len(secret) != k.SecretLen || !inAlphabet(id) || !inAlphabet(secret) {
		return "", "", false
	}
	return id, secret, true
}

// Is reports whether tok looks like a token of kind k (its prefix), for choosing how to check it.
func (k Kind) Is(tok string) bool { return strings.HasPrefix(tok, k.Prefix) }

// NewSession mints a session token and the hash it is stored and looked up by.
func NewSession() (tok, hash string) {
	tok = SessionPrefix + Random(sessionSecretLen)
	return tok, Hash(tok)
}

// Hash is the SHA-256 of a secret, hex-encoded, as stored.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// Verify reports whether secret hashes to hash, in time that does not depend on where they
// differ. An empty hash never matches.
func Verify(hash, secret string) bool {
	return hash != "" && subtle.ConstantTimeCompare([]byte(hash), []byte(Hash(secret))) == 1
}

// Random returns n characters of [a-z0-9] from crypto/rand, uniformly (about 5.17 bits each).
func Random(n int) string {
	b := make([]byte, n)
	buf := make([]byte, n*2)
	i := 0
	for i < n {
		rand.Read(buf)
		for _, c := range buf {
			if c >= 252 { // 252 = 7*36: reject to keep the distribution uniform
				continue
			}
			b[i] = alphabet[int(c)%len(alphabet)]
			i++
			if i == n {
				break
			}
		}
	}
	return string(b)
}

func inAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
