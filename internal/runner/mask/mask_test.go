package mask

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// reference masks input all at once, by brute force: every byte inside an occurrence of a
// pattern is masked, and each maximal run of masked bytes becomes one replacement.
func reference(input []byte, pats [][]byte, repl string) []byte {
	return render(input, occurrences(input, pats), repl)
}

type occurrence struct{ start, end int }

func occurrences(input []byte, pats [][]byte) []occurrence {
	var occs []occurrence
	for _, p := range pats {
		for i := 0; i+len(p) <= len(input); i++ {
			if bytes.Equal(input[i:i+len(p)], p) {
				occs = append(occs, occurrence{i, i + len(p)})
			}
		}
	}
	return occs
}

// render masks the occurrences that lie inside input.
func render(input []byte, occs []occurrence, repl string) []byte {
	covered := make([]bool, len(input))
	for _, o := range occs {
		if o.end <= len(input) {
			for j := o.start; j < o.end; j++ {
				covered[j] = true
			}
		}
	}
	var out []byte
	for i := 0; i < len(input); {
		if !covered[i] {
			out = append(out, input[i])
			i++
			continue
		}
		out = append(out, repl...)
		for i < len(input) && covered[i] {
			i++
		}
	}
	return out
}

// longestHold is the length of the longest suffix of input that is a proper prefix of a pattern:
// what the Writer may hold back.
func longestHold(input []byte, pats [][]byte) int {
	best := 0
	for _, p := range pats {
		for n := min(len(p)-1, len(input)); n > best; n-- {
			if bytes.Equal(input[len(input)-n:], p[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

func mustWrite(t testing.TB, w *Writer, p string) {
	t.Helper()
	if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
		t.Fatalf("Write(%q) = %d, %v", p, n, err)
	}
}

func maskAll(t testing.TB, secrets []string, chunks []string, opts ...Option) string {
	t.Helper()
	var buf bytes.Buffer
	w := New(&buf, secrets, opts...)
	for _, c := range chunks {
		mustWrite(t, w, c)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestMask(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		opts    []Option
		in      string
		want    string
	}{
		{"no secrets", nil, nil, "plain output\n", "plain output\n"},
		{"one", []string{"hunter22"}, nil, "password=hunter22\n", "password=****\n"},
		{"twice", []string{"hunter22"}, nil, "hunter22 and hunter22", "**** and ****"},
		{"adjacent occurrences are one run", []string{"hunter22"}, nil, "hunter22hunter22!", "****!"},
		{"at the end", []string{"hunter22"}, nil, "x=hunter22", "x=****"},
		{"empty and short secrets ignored", []string{"", "a", "ab", "abc"}, nil, "a ab abc abcd", "a ab abc abcd"},
		{"exactly the minimum", []string{"abcd"}, nil, "xabcdx", "x****x"},
		{"custom minimum", []string{"abcd", "abcdefgh"}, []Option{WithMinLength(6)}, "abcd abcdefgh", "abcd ****"},
		{"white space only ignored", []string{"    ", "\n\n\n\n"}, nil, "a    b\n\n\n\n", "a    b\n\n\n\n"},
		{"prefix: longest wins", []string{"abcd", "abcdefgh"}, nil, "<abcdefgh> <abcdefg> <abcd>", "<****> <****efg> <****>"},
		{"overlap: union masked", []string{"abcdef", "defghi"}, nil, "_abcdefghi_", "_****_"},
		{"contained", []string{"secretvalue", "cretv"}, nil, "a cretv b secretvalue c", "a **** b **** c"},
		{"utf-8", []string{"pässwört", "日本語の秘密"}, nil, "x pässwört y 日本語の秘密!", "x **** y ****!"},
		{"utf-8 prefix only", []string{"日本語の秘密"}, nil, "日本語の", "日本語の"},
		{"trailing newline trimmed", []string{"tok3n-value\n"}, nil, "echo tok3n-value;", "echo ****;"},
		{"base64", []string{"supersecret"}, nil, "b64: " + b64("supersecret") + "\n", "b64: ****\n"},
		// The base64 character that straddles the end of the secret is shown (it carries 2 or 4
		// bits of the secret's last byte): only characters that depend on the secret alone match.
		{"base64 of secret and newline", []string{"supersecret"}, nil, b64("supersecret\n"), "****QK"},
		{"base64 inside data, aligned", []string{"supersecret"}, nil, "Authorization: Basic " + b64("us:supersecret"), "Authorization: Basic dXM6****"},
		{"base64 inside data, offset 1", []string{"supersecret"}, nil, b64("usr:supersecret"), "dXNyOn****"},
		{"base64 inside data, offset 2", []string{"supersecret"}, nil, b64("u:supersecret!"), "dTp****CE="},
		{"base64 url alphabet", []string{"\xfb\xff\xbf\xfb\xff\xbf"}, nil, "+/+/+/+/ -_-_-_-_", "**** ****"},
		{"url encoded", []string{"p@ss w/rd&x"}, nil, "q=p%40ss+w%2Frd%26x path=p@ss%20w%2Frd&x", "q=**** path=****"},
		{"without encodings", []string{"supersecret"}, []Option{WithoutEncodings()}, b64("supersecret") + " supersecret", b64("supersecret") + " ****"},
		{"multi-line secret, line by line", []string{"-----BEGIN KEY-----\nAAAAline1\nBBBBline2\n-----END KEY-----\n"}, nil,
			`{"key": "-----BEGIN KEY-----\nAAAAline1\nBBBBline2\n-----END KEY-----\n"}`, `{"key": "****"}`},
		{"multi-line secret, one line printed", []string{"-----BEGIN KEY-----\nAAAAline1\nBBBBline2\n-----END KEY-----\n"}, nil,
			"AAAAline1 and BBBBline2", "**** and ****"},
		{"custom replacement", []string{"hunter22"}, []Option{WithReplacement("[masked]")}, "p=hunter22", "p=[masked]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maskAll(t, tt.secrets, []string{tt.in}, tt.opts...); got != tt.want {
				t.Errorf("masked\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestSplitEverywhere writes each input in two and in three pieces, split at every possible
// position, and expects the same output as one write.
func TestSplitEverywhere(t *testing.T) {
	cases := []struct {
		secrets []string
		in      string
	}{
		{[]string{"hunter22"}, "user=admin password=hunter22 ok\n"},
		{[]string{"abcd", "abcdefgh", "cdefghij"}, "abcabcdefghijabcd_abcdefg"},
		{[]string{"aaaa", "aaaab"}, "aaaaaaaabaaa"},
		{[]string{"日本語の秘密"}, "x日本語の秘密y日本語の"},
		{[]string{"supersecret"}, "a " + b64("supersecret") + " b " + b64("x:supersecret")},
	}
	for _, c := range cases {
		pats := patterns(c.secrets, DefaultMinLength, true)
		want := string(reference([]byte(c.in), pats, DefaultReplacement))
		if got := maskAll(t, c.secrets, []string{c.in}); got != want {
			t.Fatalf("one write: %q, want %q", got, want)
		}
		for i := 0; i <= len(c.in); i++ {
			if got := maskAll(t, c.secrets, []string{c.in[:i], c.in[i:]}); got != want {
				t.Errorf("split at %d: %q, want %q", i, got, want)
			}
			for j := i; j <= len(c.in); j++ {
				if got := maskAll(t, c.secrets, []string{c.in[:i], c.in[i:j], c.in[j:]}); got != want {
					t.Errorf("split at %d, %d: %q, want %q", i, j, got, want)
				}
			}
		}
		chunks := strings.Split(c.in, "")
		if got := maskAll(t, c.secrets, chunks); got != want {
			t.Errorf("1-byte writes: %q, want %q", got, want)
		}
	}
}

// TestNoDelay checks what has been passed on after each Write: everything, except a tail that
// could still begin a secret.
func TestNoDelay(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, []string{"hunter22", "hunter22-long"})
	steps := []struct{ write, seen string }{
		{"line one\n", "line one\n"},
		{"password: hun", "line one\npassword: "},
		{"ter", "line one\npassword: "},
		{"22", "line one\npassword: ****"}, // could still become hunter22-long: already masked
		{"\n", "line one\npassword: ****\n"},
		{"hunter22-long and hunter22-lo", "line one\npassword: ****\n**** and ****"},
		{"x\n", "line one\npassword: ****\n**** and ****-lox\n"},
		{"ends with h", "line one\npassword: ****\n**** and ****-lox\nends with "},
	}
	for _, s := range steps {
		mustWrite(t, w, s.write)
		if buf.String() != s.seen {
			t.Fatalf("after writing %q, passed on\n%q\nwant\n%q", s.write, buf.String(), s.seen)
		}
	}
	if w.Held() != 1 {
		t.Errorf("Held = %d, want 1", w.Held())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := steps[len(steps)-1].seen + "h"; buf.String() != want {
		t.Errorf("after Close %q, want %q", buf.String(), want)
	}
}

func TestFlush(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, []string{"hunter22"})
	mustWrite(t, w, "a hunter2")
	if buf.String() != "a " {
		t.Fatalf("before Flush: %q", buf.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "a hunter2" {
		t.Fatalf("after Flush: %q, want the held tail in clear (it is not a secret yet)", buf.String())
	}
	mustWrite(t, w, "2 hunter22")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "a hunter22 ****"; buf.String() != want {
		t.Fatalf("after second Flush: %q, want %q", buf.String(), want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type flushRecorder struct {
	bytes.Buffer
	flushes int
}

func (f *flushRecorder) Flush() error { f.flushes++; return nil }

func TestFlushPassesOn(t *testing.T) {
	var f flushRecorder
	w := New(&f, []string{"hunter22"})
	mustWrite(t, w, "x")
	if err := w.Flush(); err != nil || f.flushes != 1 {
		t.Fatalf("Flush: %v, flushes = %d", err, f.flushes)
	}
	if err := w.Close(); err != nil || f.flushes != 2 {
		t.Fatalf("Close: %v, flushes = %d", err, f.flushes)
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriteErrorIsSticky(t *testing.T) {
	for _, secrets := range [][]string{nil, {"hunter22"}} {
		w := New(&failWriter{after: 1}, secrets)
		mustWrite(t, w, "ok\n")
		if _, err := w.Write([]byte("fails\n")); err == nil {
			t.Fatalf("secrets %v: Write to a failing writer succeeded", secrets)
		}
		if _, err := w.Write([]byte("again\n")); err == nil || err.Error() != "disk full" {
			t.Errorf("secrets %v: later Write: %v, want the first error", secrets, err)
		}
		if err := w.Close(); err == nil {
			t.Errorf("secrets %v: Close after a failure returned nil", secrets)
		}
	}
}

// TestManySecrets compares random output containing many secrets, written in random pieces,
// with the reference.
func TestManySecrets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefgh01234 \n"
	randStr := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for _, dense := range []int{maxDenseEntries, 1, 200} {
		for iter := range 20 {
			var secrets []string
			for range 1 + rng.IntN(60) {
				secrets = append(secrets, randStr(1+rng.IntN(12)))
			}
			var in []byte
			for range 200 {
				if rng.IntN(3) == 0 {
					in = append(in, secrets[rng.IntN(len(secrets))]...)
				} else {
					in = append(in, randStr(rng.IntN(10))...)
				}
			}
			pats := patterns(secrets, DefaultMinLength, true)
			want := reference(in, pats, DefaultReplacement)
			var buf bytes.Buffer
			w := New(&buf, nil)
			if len(pats) > 0 {
				w.m = newMatcher(pats, dense)
			}
			for rest := in; len(rest) > 0; {
				n := min(len(rest), rng.IntN(40))
				mustWrite(t, w, string(rest[:n]))
				if !bytes.HasPrefix(want, buf.Bytes()) {
					t.Fatalf("dense %d, iteration %d: passed on %q, not a prefix of the final %q", dense, iter, buf.Bytes(), want)
				}
				rest = rest[n:]
			}
			w.Close()
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("dense %d, iteration %d: secrets %q\ngot  %q\nwant %q", dense, iter, secrets, buf.Bytes(), want)
			}
		}
	}
}

func TestPatterns(t *testing.T) {
	got := patterns([]string{"abc", "", "supersecret\n"}, 4, true)
	var s []string
	for _, p := range got {
		s = append(s, string(p))
	}
	want := []string{
		b64("supersecret"),              // c3VwZXJzZWNyZXQ=
		b64("supersecret")[:14],         // core at alignment 0 (no partial last character)
		b64("supersecret\n"),            // the untrimmed secret
		b64("supersecret\n")[:16],       // its core
		b64("u" + "supersecret")[2:16],  // alignment 1
		b64("us" + "supersecret")[3:17], // alignment 2
		"supersecret", "supersecret\n", "supersecret%0A",
	}
	for _, w := range want {
		found := false
		for _, g := range s {
			if g == w {
				found = true
			}
		}
		if !found {
			t.Errorf("patterns lack %q; have %q", w, s)
		}
	}
	for _, g := range s {
		if strings.Contains(g, "abc") && !strings.Contains(g, "super") {
			t.Errorf("short secret masked: %q", g)
		}
		if len(g) < 8 && g != "" && strings.ContainsAny(g, "=") {
			t.Errorf("short encoded form %q", g)
		}
	}
}

func TestConcurrentWrites(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, []string{"hunter22", "s3cr3t-t0ken"})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				fmt.Fprintf(w, "goroutine %d line %d: hunter22 s3cr3t-t0ken\n", g, i)
			}
		})
	}
	wg.Wait()
	w.Close()
	out := buf.String()
	if strings.Contains(out, "hunter22") || strings.Contains(out, "s3cr3t") {
		t.Fatal("a secret got through")
	}
	if n := strings.Count(out, "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
}

func TestLongSecrets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	secret := make([]byte, 64<<10) // 64 KiB of random printable bytes: 256 pieces, most states sparse
	for i := range secret {
		secret[i] = byte('!' + rng.IntN('~'-'!'+1))
	}
	s := string(secret)
	var buf bytes.Buffer
	w := New(&buf, []string{s}, WithoutEncodings())
	if int(w.m.nDense) >= len(w.m.code) {
		t.Fatalf("all %d states are dense: the test does not reach sparse states", len(w.m.code))
	}
	in := "begin " + s + " end " + s[:100] + " " + s[:3000] + " " + s[1:] + s
	for len(in) > 0 {
		n := min(len(in), 1+rng.IntN(700))
		mustWrite(t, w, in[:n])
		if w.Held() >= maxPatternLen {
			t.Fatalf("held %d bytes, want < %d", w.Held(), maxPatternLen)
		}
		in = in[n:]
	}
	w.Close()
	// Whole occurrences are masked whole; a truncated print is masked piece by piece, up to the
	// last complete piece (s[:3000] holds 11 pieces of 256 bytes); s[1:] lacks only the first piece.
	want := "begin **** end " + s[:100] + " ****" + s[2816:3000] + " " + s[1:256] + "****"
	if buf.String() != want {
		t.Errorf("got %d bytes, want %d", buf.Len(), len(want))
	}
}

func TestEncodedFormsBudget(t *testing.T) {
	small := []string{"token-one-1234", "token-two-5678"}
	huge := strings.Repeat("x", maxEncodedBytes) // its encoded forms would pass the budget
	pats := patterns(append([]string{huge}, small...), DefaultMinLength, true)
	total := 0
	for _, p := range pats {
		total += len(p)
		if len(p) > maxPatternLen {
			t.Fatalf("pattern of %d bytes, want at most %d", len(p), maxPatternLen)
		}
	}
	has := func(p string) bool {
		for _, q := range pats {
			if string(q) == p {
				return true
			}
		}
		return false
	}
	for _, s := range small {
		if !has(b64(s)) {
			t.Errorf("small secret %q lost its base64 form to the huge one", s)
		}
	}
	if !has(strings.Repeat("x", maxPatternLen)) {
		t.Error("the huge secret's literal form is not masked")
	}
	if total > 4*maxEncodedBytes {
		t.Errorf("patterns total %d bytes", total)
	}
}

// TestEncodedForms masks a secret as each common encoder writes it (strings produced by the
// real Python, Node.js and Java functions named).
func TestEncodedForms(t *testing.T) {
	const secret = `p@ss w/rd&x!'()*~é"\;`
	forms := map[string]string{
		"Python quote(safe='')":          `p%40ss%20w%2Frd%26x%21%27%28%29%2A~%C3%A9%22%5C%3B`,
		"Python quote()":                 `p%40ss%20w/rd%26x%21%27%28%29%2A~%C3%A9%22%5C%3B`,
		"Python quote_plus(safe='')":     `p%40ss+w%2Frd%26x%21%27%28%29%2A~%C3%A9%22%5C%3B`,
		"JavaScript encodeURIComponent":  `p%40ss%20w%2Frd%26x!'()*~%C3%A9%22%5C%3B`,
		"JavaScript encodeURI":           `p@ss%20w/rd&x!'()*~%C3%A9%22%5C;`,
		"Java URLEncoder":                `p%40ss+w%2Frd%26x%21%27%28%29*%7E%C3%A9%22%5C%3B`,
		"lower-case hex":                 `p%40ss%20w%2frd%26x%21%27%28%29%2a~%c3%a9%22%5c%3b`,
		"lower-case encodeURIComponent":  `p%40ss%20w%2frd%26x!'()*~%c3%a9%22%5c%3b`,
		"Go url.PathEscape":              `p@ss%20w%2Frd&x%21%27%28%29%2A~%C3%A9%22%5C%3B`,
		"hex (xxd -p)":                   `7040737320772f72642678212728292a7ec3a9225c3b`,
		"HEX":                            `7040737320772F72642678212728292A7EC3A9225C3B`,
		"JSON.stringify":                 `p@ss w/rd&x!'()*~é\"\\;`,
		"Python json.dumps":              `p@ss w/rd&x!'()*~\u00e9\"\\;`,
		"Go encoding/json":               `p@ss w/rd\u0026x!'()*~é\"\\;`,
		"base64 url alphabet, unpadded":  strings.TrimRight(base64.URLEncoding.EncodeToString([]byte(secret)), "="),
		"base64 (standard alphabet)":     b64(secret),
		"Go url.QueryEscape (same as +)": url.QueryEscape(secret),
	}
	for name, form := range forms {
		got := maskAll(t, []string{secret}, []string{"a " + form + " b"})
		if got != "a **** b" && !(strings.HasPrefix(name, "base64 url") && got == "a ****"+form[len(form)-1:]+" b") {
			t.Errorf("%s: %q masked as %q", name, form, got)
		}
	}
}

// TestEncodedFormsBudgetRandom: a large secret whose encoded forms would pass the budget gets
// none (its literal form is still masked), and the small secrets keep theirs.
func TestEncodedFormsBudgetRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte('!' + rng.IntN('~'-'!'+1))
	}
	small := "token-one-1234"
	pats := patterns([]string{string(big), small}, DefaultMinLength, true)
	total := 0
	for _, p := range pats {
		total += len(p)
	}
	if total > maxEncodedBytes+len(big)+maxPatternLen {
		t.Errorf("patterns total %d bytes, want at most the budget and the literal forms", total)
	}
	var buf bytes.Buffer
	w := New(&buf, []string{string(big), small})
	fmt.Fprintf(w, "%s %s %s", big, b64(small), url.PathEscape(small+" x"))
	w.Close()
	if got := buf.String(); !strings.HasPrefix(got, "**** **** ") {
		t.Errorf("masked %q…", got[:min(len(got), 40)])
	}
}
