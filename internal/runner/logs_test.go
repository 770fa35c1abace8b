package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

func TestLineLimiterCutsLongLines(t *testing.T) {
	var out bytes.Buffer
	l := &lineLimiter{w: &out}
	long := strings.Repeat("x", MaxLineBytes+500)
	// The long line arrives in three writes; the short lines around it stay whole.
	l.Write([]byte("before\n" + long[:100]))
	l.Write([]byte(long[100 : MaxLineBytes+200]))
	l.Write([]byte(long[MaxLineBytes+200:] + "\nafter\n"))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "before" || lines[2] != "after" {
		t.Fatalf("lines = %d: %q … %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if !strings.HasSuffix(lines[1], strings.TrimSuffix(string(longLineMarker), "\n")) || len(lines[1]) != MaxLineBytes+len(longLineMarker)-1 {
		t.Fatalf("cut line is %d bytes, ends %q", len(lines[1]), lines[1][len(lines[1])-40:])
	}
}

func TestLineLimiterPassesShortLines(t *testing.T) {
	var out bytes.Buffer
	l := &lineLimiter{w: &out}
	in := "a\nbb\n" + strings.Repeat("c", MaxLineBytes) + "\n"
	for i := 0; i < len(in); i += 7 {
		l.Write([]byte(in[i:min(i+7, len(in))]))
	}
	if out.String() != in {
		t.Fatal("a line of exactly the limit was changed")
	}
}

func TestUploaderTruncatesAtTheLimitWithAMarker(t *testing.T) {
	u := newUploader(nil, runnerv1.Lease{BuildID: "b", LeaseID: "l"}, MaxLogBytes-10)
	n, err := u.Write([]byte(strings.Repeat("y", 100)))
	if err != nil || n != 100 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	u.Write([]byte("more that is dropped"))
	got := u.buf.String()
	if !strings.HasPrefix(got, strings.Repeat("y", 10)) || !strings.HasSuffix(got, string(truncatedMarker)) || len(got) != 10+len(truncatedMarker) {
		t.Fatalf("buffer = %q", got)
	}
}
