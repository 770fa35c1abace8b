package mask

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf16"
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
	// maxEncodedBytes bounds the total size of the encoded forms, which are about 20 to 40 times
	// the size of the secret, so that a few very large secrets cannot make the automaton huge. The
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
//     "user:secret"; at alignment 0 this is also the unpadded encoding without its last
//     character, which carries bits of the next byte or padding), each if at least
//     max(minLen, minEncodedLength) long;
//   - when encodings is set, hexadecimal in lower and upper case (xxd -p, hexdump), if at least
//     max(minLen, minEncodedLength) long;
//   - when encodings is set, the percent-encoded forms of the common encoders (see
//     percentEncoders), each with upper- and lower-case hex digits, and the JSON string forms
//     (see jsonForms), where they differ from the secret.
//
// Forms longer than maxPatternLen are split into pieces. Secrets get their encoded forms
// smallest first, as long as all encoded forms together stay within maxEncodedBytes.
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
			var forms []encoded
			size := 0
			for _, f := range uniq(s, strings.TrimSpace(s)) {
				for _, e := range encodedForms(f, minLen) {
					forms = append(forms, e)
					size += len(e.form)
				}
			}
			if size > budget {
				break // the rest are larger still
			}
			budget -= size
			for _, e := range forms {
				add(e.form, e.least)
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

// encoded is an encoded form of a secret and the length below which it is not masked.
type encoded struct {
	form  string
	least int
}

// encodedForms returns the encoded forms of f that differ from it.
func encodedForms(f string, minLen int) []encoded {
	var out []encoded
	minEnc := max(minLen, minEncodedLength)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, encoded{enc.EncodeToString([]byte(f)), minEnc})
		raw := enc.WithPadding(base64.NoPadding)
		for k := range 3 {
			out = append(out, encoded{base64Core(raw, []byte(f), k), minEnc})
		}
	}
	h := hex.EncodeToString([]byte(f))
	out = append(out, encoded{h, minEnc}, encoded{strings.ToUpper(h), minEnc})
	seen := map[string]bool{f: true}
	for _, form := range append(percentForms(f), jsonForms(f)...) {
		if !seen[form] {
			seen[form] = true
			out = append(out, encoded{form, minLen})
		}
	}
	return out
}

// percentEncoders are the ways common libraries percent-encode a string: the bytes besides
// ASCII letters and digits they leave as they are, and whether a space becomes '+'. Each
// escapes every other byte (UTF-8 bytes one by one) as %XX.
var percentEncoders = []struct {
	keep string
	plus bool
}{
	{"-_.~", true},                  // Go url.QueryEscape, Python quote_plus(safe='')
	{"-_.~", false},                 // Python quote(safe=''), PHP rawurlencode (RFC 3986)
	{"-_.~/", false},                // Python quote() (safe='/')
	{"-_.!~*'()", false},            // JavaScript encodeURIComponent
	{"-_.!~*'();,/?:@&=+$#", false}, // JavaScript encodeURI
	{"-_.*", true},                  // Java URLEncoder, PHP urlencode, HTML forms
}

// percentForms returns the percent-encoded forms of f: those of percentEncoders and Go's
// url.PathEscape, each with upper- and lower-case hex digits.
func percentForms(f string) []string {
	forms := []string{url.PathEscape(f)}
	for _, e := range percentEncoders {
		forms = append(forms, percentEncode(f, e.keep, e.plus))
	}
	for _, p := range forms[:len(forms):len(forms)] {
		forms = append(forms, lowerPercent(p))
	}
	return forms
}

func percentEncode(s, keep string, plus bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ' && plus:
			b.WriteByte('+')
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// lowerPercent writes the hex digits of every %XX escape in lower case.
func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// jsonForms returns f as the inside of a JSON string written by Go's encoding/json (with and
// without HTML escaping), JavaScript's JSON.stringify and Python's json.dumps (ASCII only).
func jsonForms(f string) []string {
	var forms []string
	if b, err := json.Marshal(f); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(f) == nil {
		b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		forms = append(forms, string(b[1:len(b)-1]))
	}
	return append(forms, jsonEscape(f, false), jsonEscape(f, true))
}

// jsonEscape escapes f as JSON.stringify does, or with ascii as Python's json.dumps does
// (every character beyond ASCII as \uXXXX, in UTF-16).
func jsonEscape(f string, ascii bool) string {
	var b strings.Builder
	for _, r := range f {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ascii && r > 0x7e && r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ascii && r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
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
