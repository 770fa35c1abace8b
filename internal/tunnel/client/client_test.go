package client

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestBackoffGrowsWithJitterAndCaps(t *testing.T) {
	c, err := New(Options{ServerURL: "http://cp.test", Token: "t", Handler: http.NotFoundHandler(), MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		failures int
		lo, hi   time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{4, 500 * time.Millisecond, time.Second},
		{100, 500 * time.Millisecond, time.Second},
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := c.backoff(tc.failures)
			if d < tc.lo || d > tc.hi {
				t.Fatalf("backoff after %d failures = %s, want within [%s, %s]", tc.failures, d, tc.lo, tc.hi)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff after %d failures took %d distinct values in 200 draws: no jitter", tc.failures, len(seen))
		}
	}
}

func TestIdentityOnlyThroughTunnel(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set("X-Freshet-User", "u-1")
	r.Header.Set("X-Freshet-Account", "acct-1")
	if _, ok := IdentityOf(r); ok {
		t.Error("identity headers trusted on a request that did not come through the tunnel")
	}
	r = r.WithContext(t.Context())
	if ViaTunnel(r.Context()) {
		t.Error("ViaTunnel true for a plain request")
	}
}
