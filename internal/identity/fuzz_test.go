package identity

import (
	"errors"
	"net/url"
	"strconv"
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

// FuzzCLIPort feeds arbitrary cli_port values (the query of GET /auth/sso/{account}/login) to
// parseCLIPort: it never panics, a refusal names "cli_port", and an accepted port is 1024-65535
// written in digits whose redirect goes to 127.0.0.1 on that port and nowhere else.
func FuzzCLIPort(f *testing.F) {
	for _, s := range []string{"", "0", "80", "1023", "1024", "8080", "65535", "65536", "99999", "080", "08080", "+8080", "-8080",
		"80@evil.example", "8080@evil.example", "8080/../@evil.example", "evil.example:8080", "8080#", "8080?x=1", "８０８０", "1e4", " 8080"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		port, err := parseCLIPort(s)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "cli_port" {
				t.Fatalf("parseCLIPort(%q): %v does not name cli_port", s, err)
			}
			return
		}
		if port < 1024 || port > 65535 {
			t.Fatalf("parseCLIPort(%q) = %d", s, port)
		}
		u, err := url.Parse(cliRedirectURL(port, "code"))
		if err != nil || u.Scheme != "http" || u.Host != "127.0.0.1:"+strconv.Itoa(port) || u.User != nil || u.Path != "/callback" || u.Query().Get("code") != "code" {
			t.Fatalf("parseCLIPort(%q) = %d redirects to %v (%v)", s, port, u, err)
		}
	})
}
