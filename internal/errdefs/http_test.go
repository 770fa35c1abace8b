package errdefs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

type gateway struct{}

func (gateway) Error() string   { return "runtime x is not connected" }
func (gateway) HTTPStatus() int { return http.StatusBadGateway }

// pending names its own code, as RFC 8628's answers do.
type pending struct{}

func (pending) Error() string     { return "waiting for the approval" }
func (pending) HTTPStatus() int   { return http.StatusBadRequest }
func (pending) ErrorCode() string { return "authorization_pending" }
func (pending) Unwrap() error     { return errdefs.ErrInvalid }

func TestOneMappingForEveryEdge(t *testing.T) {
	secret := errors.New("pq: relation \"users\" does not exist at 10.0.0.7")
	for _, tc := range []struct {
		err     error
		status  int
		code    string
		connect connect.Code
		message string
	}{
		{errdefs.Invalid("name", "x y", "is not a name"), 400, "invalid_argument", connect.CodeInvalidArgument, `name: "x y" is not a name`},
		{fmt.Errorf("user u1: %w", errdefs.ErrNotFound), 404, "not_found", connect.CodeNotFound, "user u1: not found"},
		{fmt.Errorf("key: %w", errdefs.ErrUnauthenticated), 401, "unauthenticated", connect.CodeUnauthenticated, "key: unauthenticated"},
		{errdefs.ErrForbidden, 403, "permission_denied", connect.CodePermissionDenied, "permission denied"},
		{errdefs.ErrConflict, 409, "conflict", connect.CodeFailedPrecondition, "already exists"},
		{errdefs.ErrTooLarge, 413, "too_large", connect.CodeResourceExhausted, "request too large"},
		{errdefs.ErrRateLimited, 429, "rate_limited", connect.CodeResourceExhausted, "too many requests"},
		{errdefs.ErrUnavailable, 503, "unavailable", connect.CodeUnavailable, "unavailable"},
		{context.Canceled, 500, "internal", connect.CodeUnavailable, errdefs.InternalMessage},
		{secret, 500, "internal", connect.CodeInternal, errdefs.InternalMessage},
		{fmt.Errorf("poll: %w", pending{}), 400, "authorization_pending", connect.CodeInvalidArgument, "poll: waiting for the approval"},
	} {
		if got := errdefs.HTTPStatus(tc.err); got != tc.status {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tc.err, got, tc.status)
		}
		if got := errdefs.ConnectCode(tc.err); got != tc.connect {
			t.Errorf("ConnectCode(%v) = %v, want %v", tc.err, got, tc.connect)
		}
		rec := httptest.NewRecorder()
		if status := errdefs.WriteHTTP(rec, tc.err, "req-1"); status != tc.status || rec.Code != tc.status {
			t.Errorf("WriteHTTP(%v) = %d (recorded %d), want %d", tc.err, status, rec.Code, tc.status)
		}
		var body errdefs.Body
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		if body.Error.Code != tc.code || body.Error.Message != tc.message || body.Error.RequestID != "req-1" {
			t.Errorf("body of %v = %+v, want code %s message %q", tc.err, body.Error, tc.code, tc.message)
		}
	}
	// Internal text reaches no client, over HTTP or the agent protocols.
	rec := httptest.NewRecorder()
	errdefs.WriteHTTP(rec, fmt.Errorf("load runner: %w", secret), "")
	ce := errdefs.ConnectError(fmt.Errorf("load runner: %w", secret))
	for _, s := range []string{rec.Body.String(), ce.Error()} {
		if strings.Contains(s, "10.0.0.7") || strings.Contains(s, "relation") {
			t.Errorf("internal error text reached a client: %s", s)
		}
	}
	if errdefs.ConnectError(nil) != nil {
		t.Error("ConnectError(nil) is not nil")
	}
	already := connect.NewError(connect.CodeAborted, errors.New("stream reset"))
	if got := errdefs.ConnectError(already); got != error(already) {
		t.Errorf("ConnectError changed a connect error: %v", got)
	}
}

func TestErrorsChooseTheirStatus(t *testing.T) {
	err := fmt.Errorf("proxy: %w", gateway{})
	if got := errdefs.HTTPStatus(err); got != http.StatusBadGateway {
		t.Errorf("HTTPStatus = %d, want 502", got)
	}
}

func TestRateLimitsSayWhenToRetry(t *testing.T) {
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{0, "1"}, {300 * time.Millisecond, "1"}, {time.Second, "1"}, {90*time.Second + time.Millisecond, "91"}} {
		err := errdefs.RetryAfter(fmt.Errorf("too many logins: %w", errdefs.ErrRateLimited), c.after)
		rec := httptest.NewRecorder()
		if status := errdefs.WriteHTTP(rec, fmt.Errorf("login: %w", err), ""); status != 429 || rec.Header().Get("Retry-After") != c.want {
			t.Errorf("after %s: %d, Retry-After %q, want 429 and %q", c.after, status, rec.Header().Get("Retry-After"), c.want)
		}
	}
	rec := httptest.NewRecorder()
	if errdefs.WriteHTTP(rec, errdefs.ErrRateLimited, ""); rec.Header().Get("Retry-After") != "" {
		t.Error("Retry-After without a time to say")
	}
}
