package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestNext(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		expr, tz string
		after    string
		want     []string // successive Next results, RFC3339 in UTC
	}{
		{"0 3 * * *", "", "2026-03-01T12:00:00Z", []string{"2026-03-02T03:00:00Z", "2026-03-03T03:00:00Z"}},
		{"*/15 * * * 1-5", "", "2026-03-06T23:50:00Z", []string{"2026-03-09T00:00:00Z", "2026-03-09T00:15:00Z"}}, // Friday night → Monday
		{"0 12 * jan,jul mon", "", "2026-01-05T12:00:00Z", []string{"2026-01-12T12:00:00Z"}},
		{"@hourly", "", "2026-03-01T12:00:00Z", []string{"2026-03-01T13:00:00Z", "2026-03-01T14:00:00Z"}},
		{"@daily", "Europe/Berlin", "2026-03-01T12:00:00Z", []string{"2026-03-01T23:00:00Z"}},                     // midnight CET
		{"CRON_TZ=America/New_York 0 9 * * *", "", "2026-03-01T12:00:00Z", []string{"2026-03-01T14:00:00Z"}},      // 09:00 EST
		{"TZ=Asia/Kolkata  30 9 * * *", "Asia/Kolkata", "2026-03-01T00:00:00Z", []string{"2026-03-01T04:00:00Z"}}, // +05:30
		{"  @every 5m ", "", "2026-03-01T12:03:10Z", []string{"2026-03-01T12:05:00Z", "2026-03-01T12:10:00Z"}},    // on multiples of 5m
		{"@every 5m", "America/New_York", "2026-03-01T12:05:00Z", []string{"2026-03-01T12:10:00Z"}},               // zone-independent
		{"@every 90m", "", "2026-03-01T00:00:00Z", []string{"2026-03-01T01:30:00Z", "2026-03-01T03:00:00Z"}},
		{"0 0 29 2 *", "", "2026-03-01T00:00:00Z", []string{"2028-02-29T00:00:00Z"}},
		// Spring forward in New York (2026-03-08 02:00 EST → 03:00 EDT): 02:30 does not exist and
		// fires at the jump, 03:00 EDT (07:00Z); the next day is normal again.
		{"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		// Every 30 minutes across the jump: 01:30 EST, then 02:00 and 02:30 collapse into 03:00 EDT.
		{"*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z", []string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		// Fall back (2026-11-01 02:00 EDT → 01:00 EST): 01:30 happens twice and fires once, the first time.
		{"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		// Hourly across the repeated hour: 01:00 EDT, then 02:00 EST; 01:00 EST does not fire again.
		{"0 * * * *", "America/New_York", "2026-11-01T04:30:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"}},
		// From inside the repeated hour (01:10 EST), nothing fires until 02:00 EST.
		{"*/15 * * * *", "America/New_York", "2026-11-01T06:10:00Z", []string{"2026-11-01T07:00:00Z"}},
		// Europe: 2026-03-29 02:00 CET → 03:00 CEST.
		{"0 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}},
	} {
		e, err := Parse(tc.expr, tc.tz)
		if err != nil {
			t.Errorf("Parse(%q, %q): %v", tc.expr, tc.tz, err)
			continue
		}
		at := utc(tc.after)
		for i, w := range tc.want {
			at = e.Next(at)
			if !at.Equal(utc(w)) {
				t.Errorf("%q in %q: Next #%d after %s = %s, want %s", tc.expr, tc.tz, i+1, tc.after, at.UTC().Format(time.RFC3339), w)
				break
			}
		}
	}
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		expr, tz string
		field    string
		contains string
	}{
		{"", "", FieldExpression, "is empty"},
		{"61 * * * *", "", FieldExpression, `"61 * * * *" is not a valid cron expression`},
		{"* * * *", "", FieldExpression, "has 4 fields, want 5"},
		{"0 0 3 * * *", "", FieldExpression, "seconds field is not supported"},
		{"0 3 * * * 2026", "", FieldExpression, "seconds field is not supported"},
		{"@fortnightly", "", FieldExpression, "not a known descriptor"},
		{"@every 30s", "", FieldExpression, "more often than once a minute"},
		{"@every banana", "", FieldExpression, "invalid @every interval"},
		{"@every 90500ms", "", FieldExpression, "whole number of seconds"},
		{"0 0 30 2 *", "", FieldExpression, "never matches a date"},
		{"0 3 * * *", "Mars/Olympus_Mons", FieldTimezone, `"Mars/Olympus_Mons" is not a known time zone: use an IANA`},
		{"0 3 * * *", "Local", FieldTimezone, "is not a known time zone"},
		{"CRON_TZ=Nowhere/City 0 3 * * *", "", FieldExpression, `unknown time zone "Nowhere/City"`},
		{"CRON_TZ=UTC", "", FieldExpression, "no schedule after it"},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", "UTC", FieldTimezone, "conflicts with CRON_TZ=Europe/Berlin"},
		{strings.Repeat("1,", 150) + "1 * * * *", "", FieldExpression, "longer than 200"},
	} {
		err := Validate(tc.expr, tc.tz)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("Validate(%q, %q) = %v; want invalid %s containing %q", tc.expr, tc.tz, err, tc.field, tc.contains)
			continue
		}
		// Every expression error says what would be valid, with an example.
		if tc.field == FieldExpression && !strings.Contains(err.Error(), `"0 3 * * *"`) && !strings.Contains(err.Error(), "@every 5m") &&
			!strings.Contains(err.Error(), "IANA") {
			t.Errorf("Validate(%q) = %q: no example of a valid expression", tc.expr, err)
		}
	}
	for _, ok := range []struct{ expr, tz string }{
		{"CRON_TZ=Europe/Berlin 0 3 * * *", "Europe/Berlin"},
		{"0 3 * * sun", "UTC"},
		{"@yearly", ""},
		{"@every 24h", ""},
		{"5 4 * * *", "Australia/Lord_Howe"}, // a 30-minute DST shift
	} {
		if err := Validate(ok.expr, ok.tz); err != nil {
			t.Errorf("Validate(%q, %q) = %v, want nil", ok.expr, ok.tz, err)
		}
	}
}

// The DST rules hold in every zone we know, for every minute-of-day schedule: no instant fires
// twice, each fires at or after its wall time, and a day never fires a wall time twice.
func TestNextAcrossTransitions(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago", "Asia/Tehran"} {
		loc := mustLoc(t, zone)
		for _, expr := range []string{"*/10 * * * *", "30 2 * * *", "0 0 * * *", "45 1 * * *"} {
			e, err := Parse(expr, zone)
			if err != nil {
				t.Fatal(err)
			}
			seenWall := map[string]bool{}
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			end := at.AddDate(1, 0, 0)
			for at.Before(end) {
				next := e.Next(at)
				if !next.After(at) {
					t.Fatalf("%s %q: Next(%s) = %s, not after", zone, expr, at, next)
				}
				wall := next.In(loc).Format("2006-01-02 15:04")
				if seenWall[wall] {
					t.Fatalf("%s %q: wall time %s fired twice", zone, expr, wall)
				}
				seenWall[wall] = true
				at = next
			}
		}
	}
}
