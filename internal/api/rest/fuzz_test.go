package rest

import (
	"testing"
	"time"
)

// FuzzParseTime feeds arbitrary "since"/"until" values (audit list query, GraphQL arguments,
// CLI flags) to ParseTime: it never panics, and an accepted value is an RFC 3339 time that
// formats back to the same instant, or a duration ago, which is never after now.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-01-02T15:04:05Z", "2026-01-02T15:04:05.123456789+02:00", "24h", "0", "-1h", "1.5h", "9999999h",
		"2026-13-01T00:00:00Z", "10000-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-02T15:04:05+24:00", "now"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseTime(s, now)
		if err != nil {
			if !v.IsZero() {
				t.Fatalf("ParseTime(%q) failed but returned %v", s, v)
			}
			return
		}
		if _, perr := time.Parse(time.RFC3339Nano, s); perr == nil {
			back, err := time.Parse(time.RFC3339Nano, v.Format(time.RFC3339Nano))
			if err != nil || !back.Equal(v) {
				t.Fatalf("ParseTime(%q) = %v, which formats to %q and parses to %v, %v", s, v, v.Format(time.RFC3339Nano), back, err)
			}
			return
		}
		if v.After(now) {
			t.Fatalf("ParseTime(%q) = %v, after now %v", s, v, now)
		}
	})
}
