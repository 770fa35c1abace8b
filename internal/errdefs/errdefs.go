// Package errdefs defines the error kinds every Freshet domain package returns, so that one
// function at the API edge can map them to HTTP status codes and GraphQL error codes.
//
// Domain packages wrap these sentinels with context (fmt.Errorf("user %s: %w", id, ErrNotFound));
// callers test with errors.Is. Invalid input is reported as a *FieldError, which names the field,
// the value received and what would be valid.
package errdefs

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel error kinds.
var (
	ErrInvalid         = errors.New("invalid argument")
	ErrNotFound        = errors.New("not found")
	ErrConflict        = errors.New("already exists")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("permission denied")
	ErrRateLimited     = errors.New("too many requests")
	ErrUnavailable     = errors.New("unavailable")
	ErrTooLarge        = errors.New("request too large")
	// ErrLimitExceeded is a plan's limit reached (internal/billing): the account must free
	// something or move to a larger plan; trying again as it is will not help.
	ErrLimitExceeded = errors.New("plan limit reached")
)

// FieldError reports bad input in one field. It unwraps to ErrInvalid.
type FieldError struct {
	Field  string // dotted path of the field, e.g. "email" or "spec.steps.build.image"
	Value  string // the value received, possibly shortened; empty when absent
	Reason string // what is wrong and what would be valid
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %q %s", e.Field, e.Value, e.Reason)
}

func (e *FieldError) Unwrap() error { return ErrInvalid }

// Invalid returns a *FieldError for field with value v. The value is shortened to keep error
// messages readable when the input is large.
func Invalid(field, v, reason string) error {
	const maxValue = 80
	if len(v) > maxValue {
		v = v[:maxValue] + "…"
	}
	return &FieldError{Field: field, Value: v, Reason: reason}
}

// RetryAfterError is an error that says when the request may be tried again (a rate limit).
// WriteHTTP answers it with a Retry-After header.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter returns err carrying when to try again.
func RetryAfter(err error, after time.Duration) error {
	return &RetryAfterError{Err: err, After: after}
}

// Coder is an error that names its own machine-readable code — a protocol's own code, such
// as RFC 8628's authorization_pending — instead of its kind's. Code honours it first.
type Coder interface {
	ErrorCode() string
}

// Code returns the stable machine-readable code for err's kind, as sent in API error bodies:
// the code a Coder in its chain names, else its kind's.
func Code(err error) string {
	var c Coder
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	switch {
	case errors.Is(err, ErrInvalid):
		return "invalid_argument"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrUnauthenticated):
		return "unauthenticated"
	case errors.Is(err, ErrForbidden):
		return "permission_denied"
	case errors.Is(err, ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, ErrLimitExceeded):
		return "limit_exceeded"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	default:
		return "internal"
	}
}

// Field returns the field named by err's *FieldError, or "".
func Field(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}
