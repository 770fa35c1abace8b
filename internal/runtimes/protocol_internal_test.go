package runtimes

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/freshet-dev/freshet/api/runtimev1"
)

// The runtime protocol reads a message before it checks the token: every procedure refuses a
// body over its limit unread (429 resource exhausted); a small one reaches the token check (401).
func TestProtocolBoundsMessagesBeforeAuthentication(t *testing.T) {
	mux := http.NewServeMux()
	(&Service{}).RegisterProtocol(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(proc string, body []byte) int {
		resp, err := http.Post(srv.URL+proc, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for proc, limit := range map[string]int{runtimev1.ProcedureHeartbeat: MaxHeartbeatBytes, runtimev1.ProcedureReport: MaxReportBytes,
		runtimev1.ProcedureAudit: 1 << 20} {
		if got := post(proc, []byte(`{}`)); got != http.StatusUnauthorized {
			t.Errorf("%s, small unauthenticated message: status %d, want 401", proc, got)
		}
		big := append(append([]byte(`{"version":"`), bytes.Repeat([]byte("x"), limit)...), `"}`...)
		if got := post(proc, big); got != http.StatusTooManyRequests {
			t.Errorf("%s, message over %d bytes: status %d, want 429 (refused before the token check)", proc, limit, got)
		}
	}
}
