package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/token"
)

// Argon2id parameters (OWASP's baseline: 19 MiB, 2 passes, 1 lane).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// Password hashing is bounded: each argon2id hash holds argonMemory (19 MiB) for its whole run,
// so hashes at once are what login floods turn into memory (80 parallel logins once took the
// server to 1.5 GB). hashMemoryBudget is what hashing may hold at once — 128 MiB, so that a
// control plane in a 512 MiB container keeps three quarters for everything else (the garbage of
// finished hashes can double it until the collector runs) — and maxConcurrentHashes follows
// from it: 6. That is still more hashes at once than a small server has cores (a hash is
// CPU-bound, about 50 ms of one core), so the bound costs no throughput there. A hash that finds
// every slot taken waits up to hashQueueWait — a burst of real logins takes turns — and is then
// refused with 429 and Retry-After, so a flood costs waiting goroutines, not memory.
const (
	hashMemoryBudget    = 128 << 20
	maxConcurrentHashes = hashMemoryBudget / (argonMemory << 10)
	hashQueueWait       = 500 * time.Millisecond
	hashRetryAfter      = time.Second
)

var errHashBusy = errdefs.RetryAfter(fmt.Errorf("the server is checking too many passwords at once: try again in a second: %w", errdefs.ErrRateLimited), hashRetryAfter)

// hasher hashes and checks passwords, at most maxConcurrentHashes at once. Every path that
// hashes a password (login, user creation, provisioning, invitations) goes through one.
type hasher struct {
	slots chan struct{}
	wait  time.Duration
}

func newHasher(n int, wait time.Duration) *hasher {
	return &hasher{slots: make(chan struct{}, n), wait: wait}
}

// acquire takes a hashing slot, waiting at most h.wait; release it when done.
func (h *hasher) acquire(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
		return h.release, nil
	default:
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return h.release, nil
	case <-t.C:
		return nil, errHashBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *hasher) release() { <-h.slots }

// hash is HashPassword within the bound.
func (h *hasher) hash(ctx context.Context, pw string) (string, error) {
	release, err := h.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	return HashPassword(pw)
}

// check is CheckPassword within the bound.
func (h *hasher) check(ctx context.Context, hash, pw string) (bool, error) {
	release, err := h.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	return CheckPassword(hash, pw), nil
}

// Password length bounds.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 256
)

// HashPassword returns a PHC-format argon2id hash of pw. It is unbounded: the Service hashes
// through its hasher; this is for tools that seed databases.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// CheckPassword reports whether pw matches hash. An empty or malformed hash never matches.
func CheckPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is compared against when a login names an unknown user, so that the answer takes
// as long as for a known one.
var dummyHash, _ = HashPassword("freshet-dummy-password")

// GeneratePassword returns a random 20-character password.
func GeneratePassword() string {
	return token.Random(20)
}
