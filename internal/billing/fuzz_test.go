package billing_test

import (
	"errors"
	"testing"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzParseCatalogue feeds the plan catalogue decoder arbitrary files: it never panics, refuses
// with an invalid-argument error, and what it accepts has a default plan it lists and limits
// that are Unlimited or ≥ 0.
func FuzzParseCatalogue(f *testing.F) {
	f.Add([]byte(testPlans))
	f.Add([]byte("default: a\nplans:\n  - name: a\n    limits: {users: -1}\n"))
	f.Add([]byte("default: &x a\nplans: [*x]\n"))
	f.Add([]byte("plans:\n  - name: a\n    limits: {users: 99999999999999999999}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := billing.ParseCatalogue("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("error is not invalid-argument: %v", err)
			}
			return
		}
		if _, ok := c.Plan(c.Default); !ok {
			t.Fatalf("accepted a catalogue whose default %q is not a plan", c.Default)
		}
		for _, p := range c.Plans {
			for r, n := range p.Limits {
				if n < billing.Unlimited {
					t.Fatalf("plan %s: %s limit %d", p.Name, r, n)
				}
			}
		}
	})
}

// FuzzParseSince feeds the usage window parser (the API's ?since=) arbitrary text.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "30d", "72h", "2026-11-01", "-5d", "9999999999999999999d", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := billing.ParseSince("since", s, testNow)
		if err != nil && !errors.Is(err, errdefs.ErrInvalid) {
			t.Fatalf("ParseSince(%q): %v", s, err)
		}
	})
}
