package images

import (
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Ref is an image reference taken apart: [registry/]repository[:tag][@digest].
type Ref struct {
	Registry   string // "" for Docker Hub's default
	Repository string // as written, without the registry
	Tag        string
	Digest     string
}

// Name is registry/repository (or the repository alone, without a registry).
func (r Ref) Name() string {
	if r.Registry == "" {
		return r.Repository
	}
	return r.Registry + "/" + r.Repository
}

// maxRefLen bounds an image reference, as the distribution spec bounds a name (255) plus a
// tag (128) and a digest.
const maxRefLen = 512

// ParseRef reads an image reference for field: the first path component is a registry when it
// has a '.' or a ':' or is localhost (docker's rule); the repository's components are lower-case
// letters, digits and separators ('.', '_', '__', '-'); a tag is at most 128 word characters,
// '.' and '-'; a digest is checked by ValidDigest.
func ParseRef(field, s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, errdefs.Invalid(field, s, why+": use [registry/]repository[:tag][@sha256:…], e.g. ghcr.io/acme/web:1.2")
	}
	if s == "" {
		return bad("is empty")
	}
	if len(s) > maxRefLen {
		return bad("is too long")
	}
	var r Ref
	rest := s
	if at := strings.IndexByte(rest, '@'); at >= 0 {
		r.Digest = rest[at+1:]
		if err := ValidDigest(field, r.Digest); err != nil {
			return Ref{}, err
		}
		rest = rest[:at]
	}
	if colon := strings.LastIndexByte(rest, ':'); colon > strings.LastIndexByte(rest, '/') {
		r.Tag = rest[colon+1:]
		rest = rest[:colon]
		if !validTag(r.Tag) {
			return bad("has an invalid tag " + r.Tag)
		}
	}
	if first, after, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if !validRegistry(first) {
			return bad("has an invalid registry " + first)
		}
		r.Registry, rest = first, after
	}
	if !validRepository(rest) {
		return bad("has an invalid repository " + rest)
	}
	r.Repository = rest
	return r, nil
}

func validTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !isWord(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func validRegistry(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !isWord(c) && c != '.' && c != '-' && c != ':' && c != '[' && c != ']' {
			return false
		}
	}
	return true
}

// validRepository: components of [a-z0-9]+ joined by '.', '_', '__' or '-'+, separated by '/'.
func validRepository(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, comp := range strings.Split(s, "/") {
		if comp == "" {
			return false
		}
		prevSep := true
		for i := 0; i < len(comp); i++ {
			c := comp[i]
			switch {
			case c >= 'a' && c <= 'z' || isDigit(c):
				prevSep = false
			case c == '.' || c == '_' || c == '-':
				if prevSep && !(c == '_' && i > 0 && comp[i-1] == '_') && !(c == '-' && i > 0 && comp[i-1] == '-') {
					return false
				}
				prevSep = true
			default:
				return false
			}
		}
		if prevSep {
			return false
		}
	}
	return true
}

// ValidDigest checks a content digest for field: sha256: and 64, or sha512: and 128, lower-case
// hex digits (the OCI image spec's registered algorithms).
func ValidDigest(field, d string) error {
	algo, hex, ok := strings.Cut(d, ":")
	want := map[string]int{"sha256": 64, "sha512": 128}[algo]
	if !ok || want == 0 || len(hex) != want {
		return errdefs.Invalid(field, d, "is not a digest: use sha256: and 64 (or sha512: and 128) lower-case hex digits")
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return errdefs.Invalid(field, d, "is not a digest: use sha256: and 64 (or sha512: and 128) lower-case hex digits")
		}
	}
	return nil
}
