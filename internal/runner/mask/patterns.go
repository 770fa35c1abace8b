package mask

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strings"
)

const (
	// minEncodedLength is the shortest base64 form that is masked: shorter runs of base64 letters
	// occur in ordinary output too often.
	minEncodedLength = 8
	// maxPatternLen bounds a pattern. A longer form is masked as consecutive pieces of this length
	// (the last one ending at the form's end): a complete occurrence is still masked whole, a
	// partial one (a truncated print) is masked piece by piece, and no more than maxPatternLen-1
	// bytes are ever held back.
	maxPatternLen = 256
	// maxEncodedBytes bounds the total size of the encoded forms, which are about 13 times the
	// size of the secret, so that a few very large secrets cannot make the automaton huge. The
	// smallest secrets get their encoded forms first; the literal forms are always masked.
	maxEncodedBytes = 1 << 20
)

// patterns returns the byte strings to mask for secrets, sorted and without duplicates. For each
// secret at least minLen bytes long:
//
//   - the secret itself, and the secret with surrounding white space trimmed (a value read from a
//     file often ends in a newline that the printed value lacks);
//   - for a secret of several lines, each line (trimmed) of at least minLen bytes, so that a
//     key printed line by line, or JSON-escaped with \n, is still masked;
//   - when encodings is set, the base64 forms of the secret and of its trimmed form, in the
//     standard and the URL alphabet: the whole encoding with padding, and the part of the
//     encoding that depends only on the secret when it is encoded inside longer data at each of
//     the three byte alignments (as in `echo $SECRET | base64`, or a Basic auth header of
//     "user:secret"), each if at least max(minLen, minEncodedLength) long;
//   - when encodings is set, the URL-encoded forms (query escaping, where space is '+', and path
//     escaping, where space is %20) where they differ from the secret.
//
// Forms longer than maxPatternLen are split into pieces; encoded forms stop once they would pass
// maxEncodedBytes.
func patterns(secrets []string, minLen int, encodings bool) [][]byte {
	set := map[string]bool{}
	add := func(p string, least int) int {
		if len(p) < least || len(p) == 0 {
			return 0
		}
		if len(p) <= maxPatternLen {
			set[p] = true
			return len(p)
		}
		for i := 0; i < len(p); i += maxPatternLen {
			j := min(i+maxPatternLen, len(p))
			set[p[j-maxPatternLen:j]] = true
		}
		return len(p)
	}
	var kept []string
	for _, s := range secrets {
		if len(s) < minLen || strings.TrimSpace(s) == "" {
			continue // too short, or only white space: masking it would mangle every log
		}
		kept = append(kept, s)
		add(s, minLen)
		add(strings.TrimSpace(s), minLen)
		if strings.ContainsAny(s, "\r\n") {
			for line := range strings.Lines(s) {
				add(strings.TrimSpace(line), minLen)
			}
		}
	}
	if encodings {
		// Smallest first, so that the budget favours the many small secrets over one huge one.
		sort.Slice(kept, func(i, j int) bool {
			return len(kept[i]) < len(kept[j]) || len(kept[i]) == len(kept[j]) && kept[i] < kept[j]
		})
		budget := maxEncodedBytes
		for _, s := range kept {
			if budget < 0 {
				break
			}
			for _, f := range uniq(s, strings.TrimSpace(s)) {
				budget -= addEncoded(f, minLen, add)
			}
		}
	}
	out := make([][]byte, 0, len(set))
	for p := range set {
		out = append(out, []byte(p))
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i]) < string(out[j]) })
	return out
}

// addEncoded adds the encoded forms of f and returns their total size.
func addEncoded(f string, minLen int, add func(string, int) int) int {
	n := 0
	minEnc := max(minLen, minEncodedLength)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		n += add(enc.EncodeToString([]byte(f)), minEnc)
		raw := enc.WithPadding(base64.NoPadding)
		for k := range 3 {
			n += add(base64Core(raw, []byte(f), k), minEnc)
		}
	}
	if q := url.QueryEscape(f); q != f {
		n += add(q, minLen)
	}
	if p := url.PathEscape(f); p != f {
		n += add(p, minLen)
	}
	return n
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// base64Core returns the characters of the (unpadded) encoding of secret placed after k other
// bytes that depend on the secret alone: those whose 6 bits all fall inside the secret's bytes.
func base64Core(enc *base64.Encoding, secret []byte, k int) string {
	buf := make([]byte, k+len(secret))
	copy(buf[k:], secret)
	e := enc.EncodeToString(buf)
	first := (8*k + 5) / 6
	last := 8 * len(buf) / 6
	if first >= last {
		return ""
	}
	return e[first:last]
}
