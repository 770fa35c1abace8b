package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzParse feeds arbitrary cron expressions and time zones (trigger API input) to Parse: it
// never panics, every refusal is invalid input naming "expression" or "timezone", and what is
// accepted fires strictly after the time asked, parses again from its String, and schedules the
// same times then.
func FuzzParse(f *testing.F) {
	for _, s := range [][2]string{
		{"0 3 * * *", ""}, {"*/15 * * * 1-5", "Europe/Berlin"}, {"@every 5m", ""}, {"@daily", "America/New_York"},
		{"CRON_TZ=Asia/Tokyo 30 2 * * *", ""}, {"TZ=UTC 0 0 1 1 *", "UTC"}, {"0 0 30 2 *", ""}, {"CRON_TZ=", ""},
		{"* * * * * *", ""}, {"@every 1.5s", ""}, {"@every 9999999h", ""}, {"0 0 29 2 *", "Australia/Lord_Howe"},
		{"30 2 * * *", "Europe/London"}, {"0-59/7 0-23/5 1-31/3 */2 0-6", "Pacific/Chatham"}, {"@weekly", "Local"},
		{"0 0 * * *", "../../etc/passwd"}, {"@hourly", "/etc/localtime"}, {"5 4 * * SUN", ""}, {"1 2 3 JAN-MAR ?", ""},
	} {
		f.Add(s[0], s[1])
	}
	t0 := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // a night clocks change in Europe
	f.Fuzz(func(t *testing.T, expr, tz string) {
		e, err := Parse(expr, tz)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("Parse(%q, %q): %v is not invalid input", expr, tz, err)
			}
			if f := errdefs.Field(err); f != FieldExpression && f != FieldTimezone {
				t.Fatalf("Parse(%q, %q): error %v names field %q", expr, tz, err, f)
			}
			return
		}
		next := e.Next(t0)
		if !next.IsZero() && !next.After(t0) {
			t.Fatalf("Parse(%q, %q).Next(%v) = %v, not after it", expr, tz, t0, next)
		}
		again, err := Parse(e.String(), tz)
		if err != nil {
			t.Fatalf("Parse(%q, %q) accepted, but its String %q is refused: %v", expr, tz, e.String(), err)
		}
		if n2 := again.Next(t0); !n2.Equal(next) {
			t.Fatalf("%q: Next after re-parsing is %v, was %v", expr, n2, next)
		}
		if !next.IsZero() {
			if n3 := e.Next(next); !n3.IsZero() && !n3.After(next) {
				t.Fatalf("%q: Next(%v) = %v, not after it", expr, next, n3)
			}
		}
	})
}
