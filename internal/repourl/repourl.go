// Package repourl parses and normalizes git repository URLs the way users write them in
// Argo CD Applications: https, http, ssh, scp-like git@host:org/repo, file:// and absolute
// paths. The normalized form keys the repository cache and is what AppProject sourceRepos
// patterns and webhook payloads are matched against.
package repourl

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

var scpLike = regexp.MustCompile(`^(?:([^@/:]+)@)?([A-Za-z0-9.\-]+):([^/].*|/.*)$`)

// Normalize returns the canonical form of a repository URL, used as the cache key and for
// matching an application's repoURL against AppProject sourceRepos and webhook payloads:
// scheme and host lower-cased, credentials and default ports dropped, a trailing "/" or ".git"
// removed, the path escaped canonically, and scp-like addresses (git@host:org/repo) turned into ssh://git@host/org/repo.
// Absolute paths become file:// URLs.
func Normalize(raw string) (string, error) {
	u, err := Parse(raw)
	if err != nil {
		return "", err
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") { // an IPv6 literal keeps its brackets, or the port is ambiguous
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && !(u.Scheme == "https" && p == "443" || u.Scheme == "http" && p == "80" || u.Scheme == "ssh" && p == "22") {
		host += ":" + p
	}
	if u.Scheme == "ssh" && u.User != nil && u.User.Username() != "" {
		host = url.User(u.User.Username()).String() + "@" + host
	}
	// Trailing "/", ".git" and white space go until none is left, so that the normalized
	// form normalizes to itself (Parse trims white space around the whole URL).
	p := u.Path
	for {
		q := strings.TrimSuffix(strings.TrimRightFunc(p, func(r rune) bool { return r == '/' || unicode.IsSpace(r) }), ".git")
		if q == p {
			break
		}
		p = q
	}
	if p == "" && u.Scheme == "file" {
		p = "/" // file:// alone has no path, and Parse refuses it
	}
	// The path is escaped canonically from its decoded form: "%74" and "t" normalize alike (a
	// sourceRepos deny cannot be side-stepped by escaping), and the result parses back.
	return u.Scheme + "://" + host + (&url.URL{Path: p}).EscapedPath(), nil
}

// Parse parses raw, accepting scp-like ssh addresses and absolute paths.
func Parse(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errdefs.Invalid("repoURL", raw, "is empty; want an https://, ssh:// or file:// URL, or git@host:org/repo")
	}
	switch {
	case strings.HasPrefix(s, "/"):
		s = "file://" + s
	case !strings.Contains(s, "://"):
		m := scpLike.FindStringSubmatch(s)
		if m == nil {
			return nil, errdefs.Invalid("repoURL", raw, "is not a URL; want https://host/org/repo, ssh://git@host/org/repo, git@host:org/repo or file:///path")
		}
		user := m[1]
		if user == "" {
			user = "git"
		}
		s = "ssh://" + user + "@" + m[2] + "/" + strings.TrimPrefix(m[3], "/")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, errdefs.Invalid("repoURL", Redact(raw), "is not a valid URL: "+RedactText(err.Error()))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch u.Scheme {
	case "https", "http", "ssh", "git":
		if u.Hostname() == "" { // not u.Host: "ssh://:" has a port and no host
			return nil, errdefs.Invalid("repoURL", Redact(raw), "has no host")
		}
	case "file":
		// No host at all, not even localhost: file://localhost/… once slipped past a check
		// that refused file URLs with a host, and reached the control plane's own disk.
		if u.Host != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			return nil, errdefs.Invalid("repoURL", Redact(raw), "is not a local repository URL: file URLs must be file:///absolute/path, without a host (not even localhost)")
		}
		u.Path = path.Clean(u.Path)
	default:
		return nil, errdefs.Invalid("repoURL", Redact(raw), "has unsupported scheme "+u.Scheme+"; want https, http, ssh, git or file")
	}
	return u, nil
}

// Redact removes a password or token from a URL for messages and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return RedactText(raw)
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
		return strings.Replace(u.String(), ":REDACTED@", ":***@", 1)
	}
	return u.String()
}

var userinfoInText = regexp.MustCompile(`(://[^/:@\n]*):[^@/\n]+@`) // an empty user, or one with spaces, too

// RedactText masks credentials embedded in URLs inside free text (error messages).
func RedactText(s string) string {
	return userinfoInText.ReplaceAllString(s, "$1:***@")
}
