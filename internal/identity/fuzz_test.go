package identity

import (
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzParseAPIKeyTTL feeds arbitrary expiresIn values (API and GraphQL input) to
// ParseAPIKeyTTL: it never panics, a refusal is invalid input naming "expiresIn", an accepted
// lifetime is never (0) or whole seconds of at least MinAPIKeyTTL, and it parses back from its
// String to the same duration.
func FuzzParseAPIKeyTTL(f *testing.F) {
	for _, s := range []string{"", "0", "0s", "720h", "90m", "59s", "1m0.5s", "0.5ns", "-1h", "2562047h47m16.854775807s", "9999999999h",
		"1e3s", "1m1s", "+5m", "00000000000000000000001m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAPIKeyTTL(s)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "expiresIn" {
				t.Fatalf("ParseAPIKeyTTL(%q): %v does not name expiresIn", s, err)
			}
			return
		}
		if d == nil {
			if s != "" {
				t.Fatalf("ParseAPIKeyTTL(%q) = default", s)
			}
			return
		}
		if *d != 0 && (*d < MinAPIKeyTTL || *d%time.Second != 0) {
			t.Fatalf("ParseAPIKeyTTL(%q) = %v", s, *d)
		}
		again, err := ParseAPIKeyTTL(d.String())
		if err != nil || again == nil || *again != *d {
			t.Fatalf("ParseAPIKeyTTL(%q) = %v, whose String parses to %v, %v", s, *d, again, err)
		}
	})
}
