package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// FuzzSyncWindows decodes a project with two windows built from arbitrary kinds, schedules,
// durations and time zones and evaluates them at an arbitrary time: decoding and evaluation
// never panic, a blocked sync names its window, and the time it says a sync may next run is
// after now and is a time the windows allow.
func FuzzSyncWindows(f *testing.F) {
	f.Add("deny", "0 22 * * *", "1h", "Europe/Berlin", "allow", "30 8 * * 1-5", "36h", "", int64(1768602600), true)
	f.Add("deny", "0 18 * * 5", "63h", "", "deny", "0 9 * * 1", "30m", "America/New_York", int64(1768737600), false)
	f.Add("allow", "*/5 * * * *", "1m", "Asia/Kolkata", "allow", "0 0 1 1 *", "1h", "UTC", int64(1774747800), true)
	f.Add("deny", "CRON_TZ=Europe/London 30 1 * * 0", "2h", "", "allow", "0 2 29 2 *", "24h", "", int64(1774747800), false)
	f.Add("deny", "* * * * *", "1m", "", "allow", "0 22 * * *", "1h", "", int64(0), true)
	f.Fuzz(func(t *testing.T, k1, s1, d1, z1, k2, s2, d2, z2 string, unix int64, manual bool) {
		doc := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p}\nspec:\n  syncWindows:\n"+
			"    - {kind: %q, schedule: %q, duration: %q, timeZone: %q, applications: ['*'], manualSync: true}\n"+
			"    - {kind: %q, schedule: %q, duration: %q, timeZone: %q, namespaces: ['prod'], andOperator: true, applications: ['w*']}\n",
			k1, s1, d1, z1, k2, s2, d2, z2)
		p, err := app.DecodeAppProject([]byte(doc))
		if err != nil {
			if !strings.Contains(err.Error(), "spec.") && !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		now := time.Unix(unix%(1<<33), 0).UTC() // up to year 2242
		a := &app.Application{Metadata: app.ObjectMeta{Name: "web"}, Spec: app.ApplicationSpec{Destination: app.Destination{Server: "https://kubernetes.default.svc", Namespace: "prod"}}}
		dec := p.SyncWindowsAllow(a, now, manual)
		if dec.Allowed {
			return
		}
		if dec.Index < 0 || !strings.Contains(dec.Message, fmt.Sprintf("spec.syncWindows[%d]", dec.Index)) {
			t.Fatalf("blocked without naming the window: %+v", dec)
		}
		if !dec.NextAllowed.IsZero() {
			if !dec.NextAllowed.After(now) {
				t.Fatalf("next allowed %v is not after %v", dec.NextAllowed, now)
			}
			if again := p.SyncWindowsAllow(a, dec.NextAllowed, manual); !again.Allowed {
				t.Fatalf("at the next allowed time %v the windows still block: %s", dec.NextAllowed, again.Message)
			}
		}
	})
}
