package httpx

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
)

// FuzzPageParams feeds arbitrary "limit" and "after" query values (every list endpoint's
// paging input) to PageParams: it never panics, a refusal names the parameter, an accepted page
// is within the limits, and an accepted cursor is one EncodeCursor makes again byte for byte.
func FuzzPageParams(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"10", EncodeCursor("b_0123")}, {"0", ""}, {"1001", ""}, {"-1", ""}, {"1e3", ""},
		{"", "%%"}, {"", EncodeCursor("a b")}, {"", EncodeCursor(strings.Repeat("x", 65))}, {"", "YQ=="}, {"", "YQ"},
		{"99999999999999999999", ""}, {"", EncodeCursor("\x7f")}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, limit, after string) {
		r := httptest.NewRequest("GET", "/api/v1/things?"+url.Values{"limit": {limit}, "after": {after}}.Encode(), nil)
		p, err := PageParams(r)
		if err != nil {
			if f := errdefs.Field(err); !errors.Is(err, errdefs.ErrInvalid) || (f != "limit" && f != "after") {
				t.Fatalf("limit %q after %q: %v does not name the parameter", limit, after, err)
			}
			return
		}
		if p.Limit < 0 || p.Limit > paging.MaxLimit || p.Size() < 1 || p.Size() > paging.MaxLimit {
			t.Fatalf("limit %q accepted as %d (size %d)", limit, p.Limit, p.Size())
		}
		if len(p.After) > 64 {
			t.Fatalf("cursor %q decoded to %d bytes", after, len(p.After))
		}
		if after != "" && EncodeCursor(p.After) != after {
			t.Fatalf("cursor %q accepted as %q, which encodes to %q", after, p.After, EncodeCursor(p.After))
		}
		if got, err := DecodeCursor("after", EncodeCursor(p.After)); err != nil || got != p.After {
			t.Fatalf("cursor of %q does not round-trip: %q, %v", p.After, got, err)
		}
	})
}
