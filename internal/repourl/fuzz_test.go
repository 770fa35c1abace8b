package repourl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// FuzzNormalize feeds arbitrary repository URLs (Application repoURL, git source input, webhook
// payloads) to Normalize: it never panics, a refusal is invalid input naming "repoURL" without
// the password of the URL, and normalizing is idempotent (the cache key and the project match
// see one form), keeps the scheme allowed and never yields a file URL with a host.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"https://github.com/acme/app.git", "HTTPS://GitHub.com:443/acme/app/", "git@github.com:acme/app.git",
		"ssh://git@host:22/org/repo", "/srv/git/repo", "file:///srv/git/../repo", "file://localhost/etc", "http://u:secret@h/x",
		"ftp://h/x", "git@h:/abs", "https://", "https://h/a/.git/", "https://[::1]:8443/r", "h:o", "ssh://u:p@h/r",
		"https://h/%zz", "https://u:pa%ss@h/", " git://h/r ", "git@@h:r", "file:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := repourl.Normalize(raw)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "repoURL" {
				t.Fatalf("Normalize(%q): %v is not invalid input naming repoURL", raw, err)
			}
			if _, pw, ok := strings.Cut(password(raw), ":"); ok && len(pw) >= 4 && strings.Contains(err.Error(), ":"+pw+"@") {
				t.Fatalf("Normalize(%q): error %q shows the password", raw, err)
			}
			return
		}
		again, err := repourl.Normalize(n)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which is refused: %v", raw, n, err)
		}
		if again != n {
			t.Fatalf("Normalize is not idempotent: %q -> %q -> %q", raw, n, again)
		}
		scheme, rest, _ := strings.Cut(n, "://")
		switch scheme {
		case "https", "http", "ssh", "git":
		case "file":
			if !strings.HasPrefix(rest, "/") {
				t.Fatalf("Normalize(%q) = %q: a file URL with a host", raw, n)
			}
		default:
			t.Fatalf("Normalize(%q) = %q: scheme %q", raw, n, scheme)
		}
	})
}

// password returns the user:password part of raw's authority, if any.
func password(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	userinfo, _, ok := strings.Cut(rest, "@")
	if !ok || strings.ContainsAny(userinfo, "/") {
		return ""
	}
	return userinfo
}
