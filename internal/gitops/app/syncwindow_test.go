package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSyncWindowsAllow(t *testing.T) {
	deny := func(schedule, dur, tz string) app.SyncWindow {
		return app.SyncWindow{Kind: app.WindowDeny, Schedule: schedule, Duration: dur, TimeZone: tz, Applications: []string{"*"}}
	}
	allow := func(schedule, dur string) app.SyncWindow {
		return app.SyncWindow{Kind: app.WindowAllow, Schedule: schedule, Duration: dur, Applications: []string{"*"}}
	}
	withManual := func(w app.SyncWindow) app.SyncWindow { w.ManualSync = true; return w }
	guestbook := &app.Application{Metadata: app.ObjectMeta{Name: "guestbook-prod"}, Spec: app.ApplicationSpec{
		Project: "p", Destination: app.Destination{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: "shop"}}}

	for _, tc := range []struct {
		name    string
		windows []app.SyncWindow
		now     string
		manual  bool
		blocked int    // index of the blocking window, -1 when allowed
		next    string // when a blocked sync may next run ("" when allowed or never)
		message string // part of the message
	}{
		{"no windows", nil, "2026-01-16T22:30:00Z", false, -1, "", ""},
		{"deny open", []app.SyncWindow{deny("0 22 * * *", "1h", "")}, "2026-01-16T22:30:00Z", false, 0, "2026-01-16T23:00:00Z",
			`deny window spec.syncWindows[0] (deny "0 22 * * *" for 1h (UTC)), open now; the next sync may run at 2026-01-16T23:00:00Z`},
		{"deny opens at its start", []app.SyncWindow{deny("0 22 * * *", "1h", "")}, "2026-01-16T22:00:00Z", false, 0, "2026-01-16T23:00:00Z", ""},
		{"deny closed at its end", []app.SyncWindow{deny("0 22 * * *", "1h", "")}, "2026-01-16T23:00:00Z", false, -1, "", ""},
		{"deny not yet open", []app.SyncWindow{deny("0 22 * * *", "1h", "")}, "2026-01-16T21:59:59Z", false, -1, "", ""},
		// 22:00 in Berlin is 21:00 UTC in winter (CET) and 20:00 UTC in summer (CEST).
		{"time zone winter", []app.SyncWindow{deny("0 22 * * *", "1h", "Europe/Berlin")}, "2026-01-16T21:30:00Z", false, 0, "2026-01-16T22:00:00Z", "(Europe/Berlin)"},
		{"time zone winter, UTC hour", []app.SyncWindow{deny("0 22 * * *", "1h", "Europe/Berlin")}, "2026-01-16T22:30:00Z", false, -1, "", ""},
		{"time zone summer", []app.SyncWindow{deny("0 22 * * *", "1h", "Europe/Berlin")}, "2026-07-15T20:30:00Z", false, 0, "2026-07-15T21:00:00Z", ""},
		{"CRON_TZ prefix", []app.SyncWindow{deny("CRON_TZ=America/New_York 0 9 * * *", "1h", "")}, "2026-01-16T14:15:00Z", false, 0, "2026-01-16T15:00:00Z", ""},
		{"midnight wrap", []app.SyncWindow{deny("30 23 * * *", "1h", "")}, "2026-01-17T00:15:00Z", false, 0, "2026-01-17T00:30:00Z", ""},
		{"weekend freeze spans days", []app.SyncWindow{deny("0 18 * * 5", "63h", "")}, "2026-01-18T12:00:00Z", false, 0, "2026-01-19T09:00:00Z", ""},
		{"weekend freeze over", []app.SyncWindow{deny("0 18 * * 5", "63h", "")}, "2026-01-19T09:00:00Z", false, -1, "", ""},
		{"allow closed", []app.SyncWindow{allow("0 1 * * *", "2h")}, "2026-01-16T12:00:00Z", false, 0, "2026-01-17T01:00:00Z",
			`no allow window of project "p" for the application is open (spec.syncWindows[0]: allow "0 1 * * *" for 2h (UTC))`},
		{"allow open", []app.SyncWindow{allow("0 1 * * *", "2h")}, "2026-01-16T02:59:00Z", false, -1, "", ""},
		{"deny wins over an open allow", []app.SyncWindow{allow("0 0 * * *", "6h"), deny("0 2 * * *", "1h", "")}, "2026-01-16T02:10:00Z", false, 1, "2026-01-16T03:00:00Z", ""},
		{"deny ends after the allow closes", []app.SyncWindow{allow("0 0 * * *", "3h"), deny("0 2 * * *", "2h", "")}, "2026-01-16T02:10:00Z", false, 1, "2026-01-17T00:00:00Z", ""},
		{"chained denies", []app.SyncWindow{deny("0 8 * * *", "2h", ""), deny("0 10 * * *", "1h", "")}, "2026-01-16T09:00:00Z", false, 0, "2026-01-16T11:00:00Z", ""},
		{"overlapping starts keep it open", []app.SyncWindow{deny("0 * * * *", "90m", "")}, "2026-01-16T09:00:00Z", false, 0, "", "the windows allow no sync within their next 2000 openings and closings"},
		{"manualSync lets a manual sync pass a deny", []app.SyncWindow{withManual(deny("0 22 * * *", "1h", ""))}, "2026-01-16T22:30:00Z", true, -1, "", ""},
		{"manualSync does not pass automated syncs", []app.SyncWindow{withManual(deny("0 22 * * *", "1h", ""))}, "2026-01-16T22:30:00Z", false, 0, "2026-01-16T23:00:00Z", "manual syncs are allowed"},
		{"every open deny must allow manual", []app.SyncWindow{withManual(deny("0 22 * * *", "1h", "")), deny("0 21 * * *", "2h", "")}, "2026-01-16T22:30:00Z", true, 1, "2026-01-16T23:00:00Z", "manual syncs are blocked"},
		{"manual without manualSync", []app.SyncWindow{deny("0 22 * * *", "1h", "")}, "2026-01-16T22:30:00Z", true, 0, "2026-01-16T23:00:00Z", ""},
		{"manualSync on a closed allow", []app.SyncWindow{allow("0 1 * * *", "1h"), withManual(allow("0 3 * * *", "1h"))}, "2026-01-16T12:00:00Z", true, -1, "", ""},
		{"not matching the app", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", Applications: []string{"dev-*"}}}, "2026-01-16T22:30:00Z", false, -1, "", ""},
		{"cluster by name", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", Clusters: []string{"in-*"}}}, "2026-01-16T22:30:00Z", false, 0, "2026-01-16T23:00:00Z", ""},
		{"cluster by server", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", Clusters: []string{"https://kubernetes.*"}}}, "2026-01-16T22:30:00Z", false, 0, "2026-01-16T23:00:00Z", ""},
		{"namespace or application", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", Applications: []string{"other"}, Namespaces: []string{"shop"}}}, "2026-01-16T22:30:00Z", false, 0, "2026-01-16T23:00:00Z", ""},
		{"andOperator needs every list", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", Applications: []string{"other"}, Namespaces: []string{"shop"}, UseAndOperator: true}}, "2026-01-16T22:30:00Z", false, -1, "", ""},
		{"andOperator all match", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", Applications: []string{"*-prod"}, Namespaces: []string{"shop"}, UseAndOperator: true}}, "2026-01-16T22:30:00Z", false, 0, "2026-01-16T23:00:00Z", ""},
		{"a window selecting nothing", []app.SyncWindow{{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h"}}, "2026-01-16T22:30:00Z", false, -1, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &app.AppProject{Metadata: app.ObjectMeta{Name: "p"}, Spec: app.AppProjectSpec{SyncWindows: tc.windows}}
			dec := p.SyncWindowsAllow(guestbook, at(tc.now), tc.manual)
			if dec.Allowed != (tc.blocked < 0) || dec.Index != tc.blocked {
				t.Fatalf("decision %+v, want blocked by window %d", dec, tc.blocked)
			}
			if tc.blocked < 0 {
				if dec.Message != "" || !dec.NextAllowed.IsZero() {
					t.Errorf("allowed with message %q, next %v", dec.Message, dec.NextAllowed)
				}
				return
			}
			var next string
			if !dec.NextAllowed.IsZero() {
				next = dec.NextAllowed.UTC().Format(time.RFC3339)
			}
			if next != tc.next {
				t.Errorf("next allowed %q, want %q (%s)", next, tc.next, dec.Message)
			}
			if !strings.Contains(dec.Message, tc.message) {
				t.Errorf("message %q does not contain %q", dec.Message, tc.message)
			}
			if tc.manual != strings.HasPrefix(dec.Message, "manual") {
				t.Errorf("message %q does not say which syncs are blocked", dec.Message)
			}
		})
	}
}

func TestSyncWindowActiveAt(t *testing.T) {
	w := app.SyncWindow{Kind: app.WindowDeny, Schedule: "0 22 * * *", Duration: "1h", TimeZone: "Asia/Kolkata"}
	for now, want := range map[string]bool{
		"2026-01-16T16:29:59Z": false, // 21:59:59 IST
		"2026-01-16T16:30:00Z": true,  // 22:00 IST
		"2026-01-16T17:29:59Z": true,
		"2026-01-16T17:30:00Z": false,
	} {
		if got := w.ActiveAt(at(now)); got != want {
			t.Errorf("ActiveAt(%s) = %v, want %v", now, got, want)
		}
	}
	bad := app.SyncWindow{Kind: app.WindowDeny, Schedule: "not cron", Duration: "1h", Applications: []string{"*"}}
	if bad.ActiveAt(at("2026-01-16T16:30:00Z")) {
		t.Errorf("an invalid window is active")
	}
	p := &app.AppProject{Metadata: app.ObjectMeta{Name: "p"}, Spec: app.AppProjectSpec{SyncWindows: []app.SyncWindow{bad}}}
	if dec := p.SyncWindowsAllow(&app.Application{Metadata: app.ObjectMeta{Name: "a"}}, at("2026-01-16T16:30:00Z"), true); dec.Allowed || !strings.Contains(dec.Message, "is invalid") {
		t.Errorf("an invalid window built in code does not block: %+v", dec)
	}
}

// BenchmarkSyncWindowsBlocked is the worst case of a blocked decision: a deny window that never
// closes makes the search for the next allowed time take all its steps.
func BenchmarkSyncWindowsBlocked(b *testing.B) {
	p := &app.AppProject{Metadata: app.ObjectMeta{Name: "p"}, Spec: app.AppProjectSpec{SyncWindows: []app.SyncWindow{
		{Kind: app.WindowDeny, Schedule: "* * * * *", Duration: "1m", Applications: []string{"*"}},
		{Kind: app.WindowAllow, Schedule: "0 22 * * *", Duration: "1h", TimeZone: "Europe/Berlin", Applications: []string{"*"}},
	}}}
	a := &app.Application{Metadata: app.ObjectMeta{Name: "web"}}
	now := at("2026-01-16T22:30:00Z")
	for b.Loop() {
		if p.SyncWindowsAllow(a, now, false).Allowed {
			b.Fatal("allowed")
		}
	}
}
