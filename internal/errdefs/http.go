package errdefs

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
)

// Body is the one error body every Freshet HTTP API answers with — the control plane's REST
// API, the tunnel, the app-proxy and a runtime's ingress: {"error": {"code", "message", …}}.
type Body struct {
	Error Detail `json:"error"`
}

// Detail describes an error to a client.
type Detail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// InternalMessage is all a client learns of an internal error: its text stays in the server log.
const InternalMessage = "internal error; the server log has details under this request id"

// HTTPStatuser is an error that chooses its own HTTP status (a gateway error, say). HTTPStatus
// honours it before the error's kind.
type HTTPStatuser interface {
	HTTPStatus() int
}

// HTTPStatus maps err to its HTTP status code: the status an HTTPStatuser in its chain chooses,
// else the status of its kind, else 500.
func HTTPStatus(err error) int {
	var hs HTTPStatuser
	if errors.As(err, &hs) {
		return hs.HTTPStatus()
	}
	switch {
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrLimitExceeded):
		return http.StatusPaymentRequired
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Public returns what a client may see of err: its code, message and field; an internal error
// (one of no known kind) is described by InternalMessage only, never by its own text.
func Public(err error, requestID string) Detail {
	d := Detail{Code: Code(err), Message: err.Error(), Field: Field(err), RequestID: requestID}
	if d.Code == "internal" {
		d.Message = InternalMessage
	}
	return d
}

// WriteHTTP answers err with its status and the error body (Public), and returns the status so
// the caller can log what a client was not told.
func WriteHTTP(w http.ResponseWriter, err error, requestID string) int {
	status := HTTPStatus(err)
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(ra.After.Seconds())))))
	}
	WriteJSON(w, status, Body{Error: Public(err, requestID)})
	return status
}

// WriteJSON writes v as JSON with status (HTML characters are not escaped).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":{"code":"internal","message":"encode response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
