package webhook

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// ReplayWindow is how long a verified delivery is remembered, by its delivery id and by its
// payload's identity ([Digest]), so that sending it again — a provider's redelivery, or an
// attacker's replay of a captured signed body with a new or no delivery id — starts nothing
// new. It is as long as any provider lets a user redeliver (GitHub.com 3 days, GitHub
// Enterprise Server 7 days), so a redelivery never builds twice. A replay after the window is
// not caught: providers sign the body only, with no time, so nothing else tells an old delivery
// from a new one; a longer window would only delay such a replay, at the cost of a row per
// delivery for longer.
const ReplayWindow = 7 * 24 * time.Hour

// Digest is the identity of a verified delivery's payload: the hex SHA-256 of the provider, the
// scope the delivery was addressed to (a trigger ID, an account's GitOps webhook) and the raw
// body. The same signed body sent again has the same digest whatever its delivery id; push
// payloads name the commits before and after the push, so two real pushes never share one.
func Digest(p Provider, scope string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", p, scope)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// signatureHeaders names where each provider carries its signature or token, for the one answer
// to an unverified delivery.
var signatureHeaders = map[Provider]string{
	GitHub:    "X-Hub-Signature-256",
	GitLab:    "X-Gitlab-Token",
	Gitea:     "X-Gitea-Signature",
	Bitbucket: "X-Hub-Signature",
}

// Unauthenticated is the one answer to every delivery not proven to come from the holder of
// the secret of the webhook it names: an unknown trigger or account, a trigger of another kind
// or provider, a deleted pipeline's trigger, a missing, malformed or wrong signature. It wraps
// [ErrSignature] and depends on the provider named in the URL only, so the answer tells a
// prober nothing about what exists. (The precise reason belongs in the server's log.)
func Unauthenticated(p Provider) error {
	return fmt.Errorf("the %s delivery is not signed with the secret of a webhook at this URL (%s): %w", p, signatureHeaders[p], ErrSignature)
}

// Keyring encrypts and decrypts secrets at rest; secrets.Keyring is one.
type Keyring interface {
	Encrypt(plaintext, aad []byte) (string, error)
	Decrypt(ciphertext string, aad []byte) ([]byte, error)
}

// decoyAAD binds a decoy's ciphertext; nothing else is encrypted with it.
var decoyAAD = []byte("freshet webhook decoy")

// A Decoy stands in for the secret of a webhook that does not exist: a random secret nobody
// knows, and its ciphertext under the server's keys. A handler verifies a delivery addressed to
// an unknown trigger or account with the secret Open returns, after the same decryption a real
// secret needs, so that the delivery costs the same work (a decrypt and an HMAC of the body)
// whatever it targets, and is answered in about the same time.
type Decoy struct {
	secret string
	enc    string
}

// NewDecoy makes a decoy sealed with keys (nil: nothing to decrypt, the decoy still refuses
// every delivery).
func NewDecoy(keys Keyring) Decoy {
	var b [32]byte
	rand.Read(b[:])
	d := Decoy{secret: hex.EncodeToString(b[:])}
	if keys != nil {
		d.enc, _ = keys.Encrypt([]byte(d.secret), decoyAAD)
	}
	return d
}

// Open decrypts the decoy as a real webhook secret is decrypted, and returns its secret.
func (d Decoy) Open(keys Keyring) string {
	if keys != nil && d.enc != "" {
		keys.Decrypt(d.enc, decoyAAD)
	}
	return d.secret
}

// Recent remembers keys (payload digests) for a window, up to a bound, in memory: the replay
// filter of actions whose repetition is harmless but costly (a push notification to every
// runtime of an account). It is per process and forgets on restart; actions that must happen
// once (builds) are deduplicated in the database. The zero value is not usable; see NewRecent.
type Recent struct {
	window time.Duration
	max    int

	mu    sync.Mutex
	seen  map[string]time.Time
	order []recentKey // oldest first
}

type recentKey struct {
	key string
	at  time.Time
}

// DefaultRecentMax bounds a Recent's keys: beyond it the oldest are forgotten early.
const DefaultRecentMax = 10_000

// NewRecent returns a Recent that remembers keys for window, at most max of them (max <= 0
// means DefaultRecentMax).
func NewRecent(window time.Duration, max int) *Recent {
	if max <= 0 {
		max = DefaultRecentMax
	}
	return &Recent{window: window, max: max, seen: map[string]time.Time{}}
}

// First records key at now and reports whether it is new: false when key was recorded within
// the window before now.
func (r *Recent) First(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.order) > 0 && (len(r.order) >= r.max || now.Sub(r.order[0].at) >= r.window) {
		old := r.order[0]
		r.order = r.order[1:]
		if r.seen[old.key] == old.at {
			delete(r.seen, old.key)
		}
	}
	if at, ok := r.seen[key]; ok && now.Sub(at) < r.window {
		return false
	}
	r.seen[key] = now
	r.order = append(r.order, recentKey{key: key, at: now})
	return true
}
