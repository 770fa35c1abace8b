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
	"reflect"
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

// Unmarshal is DecodeJSON's strict decoding of a body already read. Besides what encoding/json
// refuses, it refuses a body that is not a JSON object (null, a string, an array…) and an object
// that names one field twice at any depth — including twice in different letter case where the
// field is a struct field, which encoding/json matches case-insensitively — since the two
// values would be read differently by different parsers, and the last one silently wins here.
func Unmarshal(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return errdefs.Invalid("body", "", "is empty: send a JSON object")
	}
	if trimmed[0] != '{' {
		if err := json.Unmarshal(trimmed, new(any)); err != nil {
			return jsonError(err) // not JSON at all: say where it breaks
		}
		return errdefs.Invalid("body", shorten(trimmed), "is not a JSON object: send one object, {…}")
	}
	if err := duplicateKeys(body, reflect.TypeOf(v)); err != nil {
		return err
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

// shorten is a bad body as an error shows it.
func shorten(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// duplicateKeys walks body's tokens and returns a *errdefs.FieldError naming the first key an
// object has twice, as a dotted path (config.runnerLabels.os, steps[1].name). t is the type the
// body decodes into: where it makes the object a struct, keys that differ only in letter case
// are the same field to encoding/json and count as duplicates too. A body that is not valid JSON
// passes here; the decoder reports it with its position.
func duplicateKeys(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := walkValue(dec, "", t); err != nil && !errors.Is(err, errSyntax) {
		return err
	}
	return nil
}

// errSyntax stops the duplicate walk at malformed JSON, which the decoder reports instead.
var errSyntax = errors.New("syntax")

// walkObject reads an object's members after its '{' up to and including its '}'.
func walkObject(dec *json.Decoder, path string, t reflect.Type) error {
	t = deref(t)
	isStruct := t != nil && t.Kind() == reflect.Struct
	seen := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return errSyntax
		}
		if tok == json.Delim('}') {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return errSyntax
		}
		name := key
		if isStruct {
			name = strings.ToLower(key)
		}
		field := joinPath(path, key)
		if seen[name] {
			return errdefs.Invalid(field, "", "appears twice in one object: send each field once")
		}
		seen[name] = true
		if err := walkValue(dec, field, childType(t, key)); err != nil {
			return err
		}
	}
}

// walkValue reads one value, descending into objects and arrays.
func walkValue(dec *json.Decoder, path string, t reflect.Type) error {
	tok, err := dec.Token()
	if err != nil {
		return errSyntax
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, path, t)
	case json.Delim('['):
		var elem reflect.Type
		if t = deref(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i), elem); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return errSyntax
		}
	}
	return nil
}

// joinPath extends a field's dotted path by key; an empty key is shown as "".
func joinPath(path, key string) string {
	if key == "" {
		key = `""`
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// childType is the type encoding/json decodes key of an object of type t into, or nil when
// that is not known (an interface, an unknown field).
func childType(t reflect.Type, key string) reflect.Type {
	t = deref(t)
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		var fold reflect.Type
		for _, f := range visibleFields(t) {
			if f.name == key {
				return f.typ
			}
			if fold == nil && strings.EqualFold(f.name, key) {
				fold = f.typ
			}
		}
		return fold
	}
	return nil
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// visibleFields lists the JSON names of t's fields as encoding/json sees them, with the
// fields of embedded structs promoted.
func visibleFields(t reflect.Type) []jsonField {
	var out []jsonField
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct {
			continue // its fields are listed themselves
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type})
	}
	return out
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

// DecodeCursor reverses EncodeCursor, naming field when the cursor is not one of ours: only the
// exact string EncodeCursor makes is accepted.
func DecodeCursor(field, c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c) // strict: one cursor per ID, no stray bits
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
