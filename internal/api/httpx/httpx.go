// Package httpx holds what the REST and GraphQL APIs share at the HTTP edge: one mapping from
// domain errors to status codes and the error body, strict JSON decoding that names the bad
// field, request IDs, client addresses, cursors, authentication of every request, and the
// re-check of long-lived requests' access (Access: a stream ends when its caller loses access).
package httpx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
)

// MaxBodyBytes bounds request bodies.
const MaxBodyBytes = 1 << 20

// WriteError writes err as the one error body (errdefs.Body) with its status, and logs what a
// client is not told of an internal error.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	rid := RequestID(r.Context())
	if status := errdefs.WriteHTTP(w, err, rid); status >= 500 && log != nil {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "request_id", rid, "status", status, "err", err)
	}
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) { errdefs.WriteJSON(w, status, v) }

// DecodeJSON strictly decodes r's body into v: it must be one JSON object of at most
// MaxBodyBytes, with no unknown fields and no trailing data. Errors name the field.
func DecodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return errdefs.Invalid("Content-Type", ct, "is not supported: send application/json")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("read request body: %w: %w", errdefs.ErrInvalid, err)
	}
	if len(body) > MaxBodyBytes {
		return fmt.Errorf("request body is larger than %d bytes: %w", MaxBodyBytes, errdefs.ErrTooLarge)
	}
	return Unmarshal(body, v)
}

// Unmarshal is DecodeJSON's strict decoding of a body already read.
func Unmarshal(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errdefs.Invalid("body", "", "is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return errdefs.Invalid("body", "", "has data after the JSON object: send exactly one object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errdefs.Invalid("body", "", "has data after the JSON object: send exactly one object")
	}
	return nil
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errdefs.Invalid("body", "", fmt.Sprintf("is not valid JSON at byte %d: %v", syn.Offset, syn))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return errdefs.Invalid(field, typ.Value, fmt.Sprintf("has the wrong type: want %s", typ.Type))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errdefs.Invalid("body", "", "ends before the JSON object does")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name = strings.Trim(name, `"`); name == "" {
			return errdefs.Invalid("body", "", `has a field with an empty name ""`)
		}
		return errdefs.Invalid(name, "", "is not a known field")
	}
	return errdefs.Invalid("body", "", err.Error())
}

// EncodeCursor makes an opaque pagination cursor from the last ID of a page.
func EncodeCursor(lastID string) string {
	if lastID == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(lastID))
}

// DecodeCursor reverses EncodeCursor, naming field when the cursor is not one of ours.
func DecodeCursor(field, c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 || len(b) > 64 || !printable(b) {
		return "", errdefs.Invalid(field, c, "is not a cursor returned by this API")
	}
	return string(b), nil
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// PageParams reads "limit" and "after" from a query string.
func PageParams(r *http.Request) (paging.Page, error) {
	q := r.URL.Query()
	var p paging.Page
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > paging.MaxLimit {
			return p, errdefs.Invalid("limit", s, fmt.Sprintf("must be a whole number from 1 to %d", paging.MaxLimit))
		}
		p.Limit = n
	}
	after, err := DecodeCursor("after", q.Get("after"))
	p.After = after
	return p, err
}

// NextCursor returns the cursor of the page after one of n items ending at lastID, or "" when
// the page was not full (there is nothing after it).
func NextCursor(p paging.Page, n int, lastID string) string {
	limit := p.Limit
	if limit <= 0 {
		limit = paging.DefaultLimit
	}
	if n < limit {
		return ""
	}
	return EncodeCursor(lastID)
}
