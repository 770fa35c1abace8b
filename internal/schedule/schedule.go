// Package schedule parses and evaluates cron expressions in a time zone: the schedules of cron
// triggers (internal/cron) and of Argo CD sync windows (internal/gitops/app). A leaf: it links
// nothing but errdefs and robfig/cron.
package schedule

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	robfig "github.com/robfig/cron/v3"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Expression limits.
const (
	// MinEvery is the shortest @every interval: schedules run at minute granularity.
	MinEvery = time.Minute
	// maxExprLen bounds an expression, time zone prefix included.
	maxExprLen = 200
)

// Field names used in validation errors, as the trigger API names them.
const (
	FieldExpression = "expression"
	FieldTimezone   = "timezone"
)

// exprHelp ends every message about a bad expression: what would be valid.
const exprHelp = `use five fields "minute hour day-of-month month day-of-week", e.g. "0 3 * * *" (03:00 every day) ` +
	`or "*/15 * * * 1-5" (every 15 minutes, Monday to Friday), or one of @hourly, @daily, @weekly, @monthly, @yearly, @every 5m`

const tzHelp = `use an IANA time zone name such as "UTC", "Europe/Berlin" or "America/New_York"`

// The parser for five-field expressions and named descriptors. Seconds are not supported.
var parser = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// Expr is a parsed cron expression in its time zone. The zero Expr never fires.
type Expr struct {
	src   string
	loc   *time.Location
	spec  *robfig.SpecSchedule // evaluated on the wall clock of loc; nil for @every
	every time.Duration        // @every interval; 0 for calendar expressions
}

// Validate reports whether expr, in time zone tz, is a cron expression the executor accepts. Its
// error is an errdefs.ErrInvalid *FieldError naming "expression" or "timezone", the value, and
// what would be valid; the trigger API returns it as is.
func Validate(expr, tz string) error {
	_, err := Parse(expr, tz)
	return err
}

// Parse parses a cron expression for time zone tz (an IANA name; empty means UTC). expr is five
// fields (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily,
// @midnight, @weekly, @monthly, @yearly, @annually, @every DURATION), optionally prefixed with
// CRON_TZ=ZONE (or TZ=ZONE), which must then agree with tz.
func Parse(expr, tz string) (Expr, error) {
	s := strings.TrimSpace(expr)
	tz = strings.TrimSpace(tz)
	switch {
	case s == "":
		return Expr{}, errdefs.Invalid(FieldExpression, "", "is empty: "+exprHelp)
	case len(s) > maxExprLen:
		return Expr{}, errdefs.Invalid(FieldExpression, s, fmt.Sprintf("is longer than %d characters: %s", maxExprLen, exprHelp))
	}

	// A CRON_TZ= prefix is parsed here rather than by robfig, which accepts only a few forms and
	// panics on "CRON_TZ=X" with nothing after it.
	zone, zoneField := tz, FieldTimezone
	if strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=") {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			return Expr{}, errdefs.Invalid(FieldExpression, expr, "has a time zone prefix but no schedule after it: "+exprHelp)
		}
		_, prefixZone, _ := strings.Cut(s[:i], "=")
		if tz != "" && tz != prefixZone {
			return Expr{}, errdefs.Invalid(FieldTimezone, tz, fmt.Sprintf("conflicts with CRON_TZ=%s in the expression: give the time zone once", prefixZone))
		}
		zone, zoneField = prefixZone, FieldExpression
		s = strings.TrimSpace(s[i:])
	}
	loc, err := loadZone(zone)
	if err != nil {
		if zoneField == FieldExpression {
			return Expr{}, errdefs.Invalid(FieldExpression, expr, fmt.Sprintf("names an unknown time zone %q: %s", zone, tzHelp))
		}
		return Expr{}, errdefs.Invalid(FieldTimezone, zone, "is not a known time zone: "+tzHelp)
	}

	e := Expr{src: strings.TrimSpace(expr), loc: loc}
	switch {
	case strings.HasPrefix(s, "@every"):
		arg := strings.TrimSpace(strings.TrimPrefix(s, "@every"))
		d, err := time.ParseDuration(arg)
		switch {
		case err != nil:
			return Expr{}, errdefs.Invalid(FieldExpression, expr, fmt.Sprintf("has an invalid @every interval %q: give a duration, e.g. @every 5m, @every 1h30m or @every 24h", arg))
		case d < MinEvery:
			return Expr{}, errdefs.Invalid(FieldExpression, expr, "runs more often than once a minute: use an interval of 1m or longer, e.g. @every 5m")
		case d%time.Second != 0:
			return Expr{}, errdefs.Invalid(FieldExpression, expr, "has an @every interval that is not a whole number of seconds: use e.g. @every 5m")
		}
		e.every = d
		return e, nil
	case strings.HasPrefix(s, "@"):
		sched, err := parser.Parse(s)
		if err != nil {
			return Expr{}, errdefs.Invalid(FieldExpression, expr, "is not a known descriptor: "+exprHelp)
		}
		e.spec = sched.(*robfig.SpecSchedule)
	default:
		fields := strings.Fields(s)
		switch n := len(fields); {
		case n == 6:
			return Expr{}, errdefs.Invalid(FieldExpression, expr, "has 6 fields, but a seconds field is not supported (schedules run at minute granularity): "+exprHelp)
		case n != 5:
			return Expr{}, errdefs.Invalid(FieldExpression, expr, fmt.Sprintf("has %d fields, want 5: %s", n, exprHelp))
		}
		sched, err := parser.Parse(strings.Join(fields, " "))
		if err != nil {
			return Expr{}, errdefs.Invalid(FieldExpression, expr, fmt.Sprintf("is not a valid cron expression (%v): %s", err, exprHelp))
		}
		e.spec = sched.(*robfig.SpecSchedule)
	}
	// Next runs on a wall clock without daylight saving time; see Expr.Next.
	e.spec.Location = time.UTC
	if e.Next(time.Now()).IsZero() {
		return Expr{}, errdefs.Invalid(FieldExpression, expr, "never matches a date (such as 30 February): "+exprHelp)
	}
	return e, nil
}

// loadZone loads an IANA zone. "Local" is refused: replicas may not share a local zone.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return nil, fmt.Errorf("unknown time zone %s", name)
	}
	return time.LoadLocation(name)
}

// String returns the expression as given.
func (e Expr) String() string { return e.src }

// Location returns the time zone the expression is evaluated in.
func (e Expr) Location() *time.Location {
	if e.loc == nil {
		return time.UTC
	}
	return e.loc
}

// Next returns the first scheduled time strictly after t, or the zero time if there is none
// within five years.
//
// Calendar expressions follow the wall clock of the expression's time zone, and each wall-clock
// time fires at most once a day:
//   - a time skipped when clocks jump forward fires at the first instant after the jump (02:30 on
//     a day clocks go from 02:00 to 03:00 fires at 03:00), and several such times fire once;
//   - a time that happens twice when clocks go back fires at its first occurrence only.
//
// @every intervals are elapsed time, independent of the time zone, at whole multiples of the
// interval since the Unix epoch (so @every 5m fires at :00, :05, … UTC), which makes the
// scheduled times the same on every replica.
func (e Expr) Next(t time.Time) time.Time {
	switch {
	case e.every > 0:
		step := int64(e.every / time.Second)
		secs := t.Unix()
		n := secs/step + 1
		if secs < 0 && secs%step != 0 {
			n--
		}
		return time.Unix(n*step, 0).In(e.Location())
	case e.spec == nil:
		return time.Time{}
	}
	loc := e.Location()
	w := wallClock(t, loc)
	// A wall time can map to an instant at or before t (the repeated hour after clocks go back,
	// or a skipped time mapped to the jump); step past those. Bounded: a day has few of them.
	for range 24 * 60 {
		nw := e.spec.Next(w)
		if nw.IsZero() {
			return time.Time{}
		}
		if at := instant(nw, loc); at.After(t) {
			return at
		}
		w = nw
	}
	return time.Time{}
}

// wallClock returns t's wall-clock reading in loc, as a UTC time (which has no DST).
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant returns the first instant whose wall clock in loc reads w (a UTC time), or, when no
// instant does because clocks jumped forward over w, the instant of the jump.
func instant(w time.Time, loc *time.Location) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	got := wallClock(t, loc)
	if got.Equal(w) {
		// If clocks went back over w, the previous zone period read w too, earlier.
		if start, _ := t.ZoneBounds(); !start.IsZero() {
			_, prevOffset := start.Add(-time.Nanosecond).Zone()
			earlier := w.Add(-time.Duration(prevOffset) * time.Second).In(loc)
			if earlier.Before(start) && wallClock(earlier, loc).Equal(w) {
				return earlier
			}
		}
		return t
	}
	// w does not exist: t was normalised to one side of the jump; the jump is that side's bound.
	start, end := t.ZoneBounds()
	if got.After(w) {
		return start
	}
	return end
}
