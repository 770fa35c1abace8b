package pipeline

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// The runner protocol reads a message before it checks the token: a body over
// MaxRunnerMessageBytes is refused unread (429 resource exhausted), a small one reaches the token
// check (401).
func TestRunnerAPIBoundsMessagesBeforeAuthentication(t *testing.T) {
	mux := http.NewServeMux()
	NewRunnerAPI(nil, nil).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(body []byte) int {
		resp, err := http.Post(srv.URL+runnerv1.ProcedureUpdateStep, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post([]byte(`{"step":{"name":"a","status":"running"}}`)); got != http.StatusUnauthorized {
		t.Errorf("small unauthenticated message: status %d, want 401", got)
	}
	big := append(append([]byte(`{"step":{"name":"a","status":"running","message":"`), bytes.Repeat([]byte("x"), MaxRunnerMessageBytes)...), `"}}`...)
	if got := post(big); got != http.StatusTooManyRequests {
		t.Errorf("message over %d bytes: status %d, want 429 (refused before the token check)", MaxRunnerMessageBytes, got)
	}
}
