package git

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"

	"github.com/freshet-dev/freshet/internal/repourl"
)

// NormalizeURL is repourl.Normalize: the canonical form of a repository URL, the cache key.
func NormalizeURL(raw string) (string, error) { return repourl.Normalize(raw) }

func parseRepoURL(raw string) (*url.URL, error) { return repourl.Parse(raw) }
func redactURL(raw string) string               { return repourl.Redact(raw) }
func redactText(s string) string                { return repourl.RedactText(s) }

// cacheKey names a repository's directory in the cache: readable, unique and filesystem-safe.
func cacheKey(normalized string) string {
	sum := sha256.Sum256([]byte(normalized))
	readable := normalized
	if i := strings.Index(readable, "://"); i >= 0 {
		readable = readable[i+3:]
	}
	readable = unsafeChars.ReplaceAllString(readable, "_")
	if len(readable) > 60 {
		readable = readable[len(readable)-60:]
	}
	return strings.Trim(readable, "_.") + "-" + hex.EncodeToString(sum[:6])
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9.\-]+`)
