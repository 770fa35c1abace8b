package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/schedule"
)

// SyncWindow is one entry of an AppProject's spec.syncWindows, as Argo CD defines it: a
// time window (a cron schedule of starts and a duration, in a time zone) during which syncs of
// the applications it selects are allowed (kind allow) or denied (kind deny).
type SyncWindow struct {
	// Kind is "allow" or "deny".
	Kind string `json:"kind"`
	// Schedule is a five-field cron expression of the window's starts ("0 22 * * *").
	Schedule string `json:"schedule"`
	// Duration is how long the window stays open after each start, a Go duration ("1h30m").
	Duration string `json:"duration"`
	// Applications, Namespaces and Clusters select the applications the window applies to,
	// as globs of the application name, the destination namespace and the destination
	// server URL or cluster name. A window applies when any list matches (all non-empty lists
	// with UseAndOperator).
	Applications []string `json:"applications,omitempty"`
	Namespaces   []string `json:"namespaces,omitempty"`
	Clusters     []string `json:"clusters,omitempty"`
	// ManualSync lets manual syncs run when the window would otherwise block them.
	ManualSync bool `json:"manualSync,omitempty"`
	// TimeZone is the IANA time zone of the schedule; empty is UTC.
	TimeZone       string `json:"timeZone,omitempty"`
	UseAndOperator bool   `json:"andOperator,omitempty"`
	Description    string `json:"description,omitempty"`
	// SyncOverrun is accepted: Freshet never stops a running sync when a window changes.
	SyncOverrun bool `json:"syncOverrun,omitempty"`
}

// Sync window kinds.
const (
	WindowAllow = "allow"
	WindowDeny  = "deny"
)

const scheduleHelp = `use five cron fields "minute hour day-of-month month day-of-week", e.g. "0 22 * * *" (22:00 every day) or "30 8 * * 1-5"`

// schedule parses the window's schedule and duration.
func (w *SyncWindow) schedule() (schedule.Expr, time.Duration, error) {
	if strings.HasPrefix(strings.TrimSpace(w.Schedule), "@") {
		return schedule.Expr{}, 0, errdefs.Invalid("schedule", w.Schedule, "is a descriptor, which Argo CD does not accept in sync windows: "+scheduleHelp)
	}
	expr, err := schedule.Parse(w.Schedule, w.TimeZone)
	if err != nil {
		var fe *errdefs.FieldError
		if errors.As(err, &fe) && fe.Field == schedule.FieldTimezone {
			return schedule.Expr{}, 0, errdefs.Invalid("timeZone", fe.Value, fe.Reason)
		}
		reason := err.Error()
		if fe != nil {
			reason = fe.Reason
		}
		return schedule.Expr{}, 0, errdefs.Invalid("schedule", w.Schedule, reason)
	}
	d, err := time.ParseDuration(strings.TrimSpace(w.Duration))
	if err != nil || d <= 0 {
		return schedule.Expr{}, 0, errdefs.Invalid("duration", w.Duration, `is not a positive duration: use Go's form, e.g. "30m", "1h" or "2h30m"`)
	}
	return expr, d, nil
}

func (w *SyncWindow) validate(d *decoder, fp string) {
	fail := func(field, value, reason string) { d.fail(fp+"."+field, d.line(fp+"."+field), value, reason) }
	if w.Kind != WindowAllow && w.Kind != WindowDeny {
		fail("kind", w.Kind, `must be "allow" or "deny"`)
	}
	if _, _, err := w.schedule(); err != nil {
		var fe *errdefs.FieldError
		if errors.As(err, &fe) {
			fail(fe.Field, fe.Value, fe.Reason)
		}
	}
	for _, sel := range []struct {
		field string
		list  []string
	}{{"applications", w.Applications}, {"namespaces", w.Namespaces}, {"clusters", w.Clusters}} {
		for i, g := range sel.list {
			if _, err := compileGlob(g); err != nil || g == "" {
				fail(fmt.Sprintf("%s[%d]", sel.field, i), g, `is not a valid glob ("*" for any)`)
			}
		}
	}
	if len(w.Applications)+len(w.Namespaces)+len(w.Clusters) == 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%s (line %d) has no applications, namespaces or clusters: it applies to no application", fp, d.line(fp)))
	}
}

// Matches reports whether the window applies to an application (by its name and destination),
// as Argo CD matches: any of the non-empty lists matching, or all of them with andOperator.
func (w *SyncWindow) Matches(a *Application) bool {
	dst := a.Spec.Destination
	matchList := func(list []string, match func(string) bool) (set, hit bool) {
		for _, g := range list {
			if match(g) {
				return true, true
			}
		}
		return len(list) > 0, false
	}
	results := [3][2]bool{}
	results[0][0], results[0][1] = matchList(w.Applications, func(g string) bool { return globMatch(g, a.Metadata.Name) })
	results[1][0], results[1][1] = matchList(w.Namespaces, func(g string) bool { return globMatch(g, dst.Namespace) })
	results[2][0], results[2][1] = matchList(w.Clusters, func(g string) bool {
		return dst.Server != "" && globMatch(g, dst.Server) || dst.Name != "" && globMatch(g, dst.Name)
	})
	matched := false
	for _, r := range results {
		if r[0] && !r[1] && w.UseAndOperator {
			return false
		}
		matched = matched || r[1]
	}
	return matched
}

// ActiveAt reports whether the window is open at t: a start of its schedule lies in
// (t-duration, t]. A window whose schedule does not parse is never active (decoding refuses
// it).
func (w *SyncWindow) ActiveAt(t time.Time) bool {
	cw, err := compileWindow(w)
	if err != nil {
		return false
	}
	_, ok := cw.activeUntil(t)
	return ok
}

// compiledWindow is a window with its schedule parsed.
type compiledWindow struct {
	*SyncWindow
	index int
	expr  schedule.Expr
	dur   time.Duration
}

func compileWindow(w *SyncWindow) (compiledWindow, error) {
	expr, d, err := w.schedule()
	return compiledWindow{SyncWindow: w, expr: expr, dur: d}, err
}

// activeUntil returns, when the window is open at t, the end of its earliest open instance.
func (w compiledWindow) activeUntil(t time.Time) (time.Time, bool) {
	start := w.expr.Next(t.Add(-w.dur))
	if start.IsZero() || start.After(t) {
		return time.Time{}, false
	}
	return start.Add(w.dur), true
}

// nextChange returns the first time after t at which the window's state changes: when it is
// open, the end of its open period (instances that start before the previous one ends extend
// it); when closed, its next start. Zero when there is none within the schedule's horizon or
// the open period outlasts windowSteps instances.
func (w compiledWindow) nextChange(t time.Time) time.Time {
	end, open := w.activeUntil(t)
	if !open {
		return w.expr.Next(t)
	}
	for s, i := w.expr.Next(end.Add(-w.dur)), 0; !s.IsZero() && !s.After(end); s, i = w.expr.Next(s), i+1 {
		if i == windowSteps {
			return time.Time{}
		}
		end = s.Add(w.dur)
	}
	return end
}

func (w *SyncWindow) String() string {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("%s %q for %s (%s)", w.Kind, w.Schedule, w.Duration, tz)
}

// WindowDecision is what an AppProject's sync windows say about syncing one application at
// one time.
type WindowDecision struct {
	// Allowed: the sync may run now.
	Allowed bool
	// Index is the spec.syncWindows index of the window that blocks (an active deny window,
	// or the first matching allow window when none is open); -1 when allowed.
	Index int
	// Message says which window blocks and when a sync may next run; empty when allowed.
	Message string
	// NextAllowed is the first time the windows let the sync run (zero when allowed, or when
	// no such time was found within windowHorizon).
	NextAllowed time.Time
}

// windowHorizon and windowSteps bound the search for the next time a blocked sync may run.
const (
	windowHorizon = 366 * 24 * time.Hour
	windowSteps   = 2000
)

// blockedAt evaluates the matching windows at t with Argo CD's rules: an open deny window
// blocks (a manual sync passes when every open deny window has manualSync); else, when
// allow windows match and none is open, the sync is blocked (a manual sync passes when one of
// them has manualSync). It returns the index of the blocking window, or -1.
func blockedAt(matching []compiledWindow, t time.Time, manual bool) int {
	deny, denyStrict := -1, -1 // the first open deny window, the first without manualSync
	allow, allowOpen, allowManual := -1, false, false
	for _, w := range matching {
		_, open := w.activeUntil(t)
		switch w.Kind {
		case WindowDeny:
			if open {
				if deny < 0 {
					deny = w.index
				}
				if denyStrict < 0 && !w.ManualSync {
					denyStrict = w.index
				}
			}
		case WindowAllow:
			if allow < 0 {
				allow = w.index
			}
			allowOpen = allowOpen || open
			allowManual = allowManual || w.ManualSync
		}
	}
	switch {
	case deny >= 0:
		if manual {
			return denyStrict
		}
		return deny
	case allow >= 0 && !allowOpen:
		if manual && allowManual {
			return -1
		}
		return allow
	}
	return -1
}

// SyncWindowsAllow checks the project's sync windows for a sync of application a at now;
// manual is true for a sync a user asked for (manualSync windows let those through).
func (p *AppProject) SyncWindowsAllow(a *Application, now time.Time, manual bool) WindowDecision {
	var matching []compiledWindow
	for i := range p.Spec.SyncWindows {
		w := &p.Spec.SyncWindows[i]
		if !w.Matches(a) {
			continue
		}
		cw, err := compileWindow(w)
		if err != nil {
			// Decoding refuses such a window; one built in code blocks rather than being
			// silently skipped.
			return WindowDecision{Index: i, Message: fmt.Sprintf("project %q's spec.syncWindows[%d] is invalid: %v", p.Metadata.Name, i, err)}
		}
		cw.index = i
		matching = append(matching, cw)
	}
	idx := blockedAt(matching, now, manual)
	if idx < 0 {
		return WindowDecision{Allowed: true, Index: -1}
	}
	dec := WindowDecision{Index: idx}
	// Step from one window change to the next until the windows allow the sync.
	for t, step := now, 0; step < windowSteps && t.Sub(now) <= windowHorizon; step++ {
		next, endless := time.Time{}, false
		for _, w := range matching {
			c := w.nextChange(t)
			if c.IsZero() {
				// A deny window open past the lookahead that this sync cannot pass keeps it
				// blocked throughout.
				_, open := w.activeUntil(t)
				endless = endless || open && w.Kind == WindowDeny && !(manual && w.ManualSync)
				continue
			}
			if next.IsZero() || c.Before(next) {
				next = c
			}
		}
		if next.IsZero() || endless {
			break
		}
		if blockedAt(matching, next, manual) < 0 {
			dec.NextAllowed = next
			break
		}
		t = next
	}
	w := &p.Spec.SyncWindows[idx]
	kind := "automated"
	if manual {
		kind = "manual"
	}
	var b strings.Builder
	if w.Kind == WindowDeny {
		fmt.Fprintf(&b, "%s syncs are blocked by project %q's deny window spec.syncWindows[%d] (%s), open now", kind, p.Metadata.Name, idx, w)
	} else {
		fmt.Fprintf(&b, "%s syncs are blocked: no allow window of project %q for the application is open (spec.syncWindows[%d]: %s)", kind, p.Metadata.Name, idx, w)
	}
	if dec.NextAllowed.IsZero() {
		fmt.Fprintf(&b, "; the windows allow no sync within their next %d openings and closings (looking up to %d days ahead)", windowSteps, int(windowHorizon.Hours()/24))
	} else {
		fmt.Fprintf(&b, "; the next sync may run at %s", dec.NextAllowed.UTC().Format(time.RFC3339))
	}
	if !manual && blockedAt(matching, now, true) < 0 {
		b.WriteString("; manual syncs are allowed")
	}
	dec.Message = b.String()
	return dec
}
