package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Token formats. API keys are "fsk_<prefix>_<secret>": the prefix identifies the key (and is
// shown in listings), the secret is checked against a SHA-256 hash. Session tokens are
// "fss_<secret>". Secrets carry 160 bits of randomness, so a fast hash is enough at rest.
const (
	APIKeyPrefix  = "fsk_"
	SessionPrefix = "fss_"
	keyIDLen      = 8
	secretLen     = 32
	alphabet      = "abcdefghijklmnopqrstuvwxyz0123456789"
)

func randomString(n int) string {
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

func hashSecret(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func secretMatches(hash, secret string) bool {
	return subtle.ConstantTimeCompare([]byte(hash), []byte(hashSecret(secret))) == 1
}

func newAPIKeyToken() (prefix, secret, token string) {
	prefix, secret = randomString(keyIDLen), randomString(secretLen)
	return prefix, secret, APIKeyPrefix + prefix + "_" + secret
}

func parseAPIKeyToken(tok string) (prefix, secret string, ok bool) {
	rest, ok := strings.CutPrefix(tok, APIKeyPrefix)
	if !ok {
		return "", "", false
	}
	prefix, secret, ok = strings.Cut(rest, "_")
	return prefix, secret, ok && len(prefix) == keyIDLen && len(secret) == secretLen
}

func newSessionToken() string { return SessionPrefix + randomString(secretLen+8) }

// CSRFToken derives the CSRF token of a session token. The UI sends it back in the
// X-CSRF-Token header; only a page that could read the CSRF cookie can know it.
func CSRFToken(sessionToken string) string {
	h := sha256.Sum256([]byte("csrf:" + sessionToken))
	return hex.EncodeToString(h[:16])
}
