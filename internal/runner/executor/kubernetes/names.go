package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// labelValue returns s if it is a valid label value, else a valid label value derived from it:
// its allowed characters (at most 54) and 8 hex digits of its hash, so that two different
// values never map to the same label (short of a hash collision).
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	return shortened(s, 54, false)
}

// dnsLabel returns a lowercase DNS-1123 label part of at most max characters for s: s itself
// when it is one already, else its allowed characters and a hash of s.
func dnsLabel(s string, max int) string {
	if len(s) <= max && len(validation.IsDNS1123Label(s)) == 0 {
		return s
	}
	return shortened(s, max-9, true)
}

// shortened keeps the first n characters of s that are allowed (lowercased when lower; others
// become '-'), trims separators at both ends and appends "-" and 8 hex digits of the hash of s.
func shortened(s string, n int, lower bool) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= n {
			break
		}
		if lower {
			r = toLower(r)
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case !lower && (r >= 'A' && r <= 'Z' || r == '_' || r == '.'):
		default:
			r = '-'
		}
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(s))
	head := strings.Trim(b.String(), "-_.")
	if head == "" {
		return "x" + hex.EncodeToString(sum[:4])
	}
	return head + "-" + hex.EncodeToString(sum[:4])
}

func toLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}
