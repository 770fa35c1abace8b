package identity

import (
	"crypto/sha256"
	"encoding/hex"
)

// CSRFToken derives the CSRF token of a session token. The UI sends it back in the
// X-CSRF-Token header; only a page that could read the CSRF cookie can know it.
func CSRFToken(sessionToken string) string {
	h := sha256.Sum256([]byte("csrf:" + sessionToken))
	return hex.EncodeToString(h[:16])
}
