package mask

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzMask writes random output in random pieces through a Writer with random secrets (most of
// them cut from the output, so they occur) and compares with reference, which masks the whole
// output at once. After every Write, what was passed on must be a prefix of the final output, at
// most the longest tail that could begin a secret may be held back, and when no tail could, the
// output so far must be complete.
func FuzzMask(f *testing.F) {
	f.Add([]byte("password=hunter22\nagain hunter22"), []byte{9, 8}, "", []byte{3, 5, 1}, uint8(3))
	f.Add([]byte("abcabcdefghijabcd_abcdefg"), []byte{3, 4, 3, 8, 5, 8}, "abcd", []byte{1}, uint8(0))
	f.Add([]byte("aaaaaaaabaaa"), []byte{0, 4, 4, 5}, "", []byte{2, 0, 7}, uint8(16))
	f.Add([]byte("x日本語の秘密y日本語の"), []byte{1, 18}, "", []byte{5}, uint8(3))
	f.Add([]byte("c3VwZXJzZWNyZXQ= dXNyOnN1cGVyc2VjcmV0 p%40ss"), []byte{}, "supersecret,p@ss", []byte{4, 9}, uint8(8|3))
	f.Add([]byte("one\ntwo\nthree\n"), []byte{0, 7, 4, 9}, "two\nthree", []byte{}, uint8(8|16))
	// encodeURIComponent, lower-case percent, JSON and hex forms.
	f.Add([]byte(`u=p%40ss%20w%2frd!'()x j=p@ss w/rd\"x h=70407373207720 P=p%40ss+w%2Frd%21%27`), []byte{}, `p@ss w/rd!'()x,p@ss w/rd"x,p@ss w`, []byte{5, 11, 2}, uint8(8|3))
	long := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), 20)
	f.Add(append(append(bytes.Clone(long), " and "...), long[:250]...), []byte{0, 200}, "", []byte{100, 37}, uint8(64|3))

	f.Fuzz(func(t *testing.T, input []byte, spans []byte, extra string, splits []byte, mode uint8) {
		if len(input) > 1024 || len(spans) > 64 || len(extra) > 256 {
			return
		}
		var secrets []string
		for i := 0; i+1 < len(spans) && len(input) > 0; i += 2 {
			off := int(spans[i]) % len(input)
			n := int(spans[i+1]) % 24
			if mode&64 != 0 {
				n = int(spans[i+1]) * 4 // long secrets, split into pieces of maxPatternLen
			}
			secrets = append(secrets, string(input[off:min(off+n, len(input))]))
		}
		if extra != "" {
			secrets = append(secrets, strings.Split(extra, ",")...)
		}
		minLen := 1 + int(mode%6)
		opts := []Option{WithMinLength(minLen)}
		encodings := mode&8 != 0
		if !encodings {
			opts = append(opts, WithoutEncodings())
		}
		pats := patterns(secrets, minLen, encodings)
		occs := occurrences(input, pats)
		want := render(input, occs, DefaultReplacement)

		var buf bytes.Buffer
		w := New(&buf, secrets, opts...)
		if mode&16 != 0 && w.m != nil {
			w.m = newMatcher(pats, 1+int(mode>>5)*64) // mostly sparse states
		}
		pos := 0
		for i := 0; pos < len(input); i++ {
			n := len(input) - pos
			if len(splits) > 0 {
				n = min(n, int(splits[i%len(splits)]))
			}
			if _, err := w.Write(input[pos : pos+n]); err != nil {
				t.Fatal(err)
			}
			pos += n
			out := buf.Bytes()
			if !bytes.HasPrefix(want, out) {
				t.Fatalf("after %d bytes passed on %q: not a prefix of the final %q", pos, out, want)
			}
			hold := longestHold(input[:pos], pats)
			if w.Held() > hold {
				t.Fatalf("after %d bytes: held %d bytes, but only the last %d could begin a secret", pos, w.Held(), hold)
			}
			if hold == 0 {
				if so := render(input[:pos], occs, DefaultReplacement); !bytes.Equal(out, so) {
					t.Fatalf("after %d bytes, with no tail that could begin a secret: passed on %q, want %q", pos, out, so)
				}
			}
			if i > 4*len(input)+8 { // splits of zeros: finish in one write
				splits = nil
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := buf.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("secrets %q (min %d, encodings %v)\ninput %q\ngot  %q\nwant %q", secrets, minLen, encodings, input, got, want)
		}
	})
}
