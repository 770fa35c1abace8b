package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestUnmarshalNamesTheField(t *testing.T) {
	cases := []struct{ body, field string }{
		{`{"email":1}`, "email"},
		{`{"bogus":1}`, "bogus"},
		{`{`, "body"},
		{``, "body"},
		{`{} []`, "body"},
		{`"str"`, "body"},
	}
	for _, c := range cases {
		var v client.CreateUserRequest
		err := Unmarshal([]byte(c.body), &v)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field {
			t.Errorf("%q: err = %v (field %q), want field %q", c.body, err, errdefs.Field(err), c.field)
		}
	}
}

// A body that two parsers could read differently is refused, naming the field: null or any
// other non-object, and a key an object has twice at any depth (twice in different case where
// encoding/json folds case: struct fields, not map keys).
func TestUnmarshalRefusesAmbiguousBodies(t *testing.T) {
	cases := []struct{ body, field string }{
		{`null`, "body"},
		{` null `, "body"},
		{`[]`, "body"},
		{`1`, "body"},
		{`{"name":"a","name":"b"}`, "name"},
		{`{"name":"a","NAME":"b"}`, "NAME"},
		{`{"config":{"runnerLabels":{"os":"linux","os":"windows"}}}`, "config.runnerLabels.os"},
		{`{"config":{"variables":[{"key":"A","value":"1"},{"key":"B","value":"2","Value":"3"}]}}`, "config.variables[1].Value"},
		{`{"config":{"concurrency":1},"config":{}}`, "config"},
		{`{"spec":"x","config":{"contexts":["a"],"Contexts":["b"]}}`, "config.Contexts"},
	}
	for _, c := range cases {
		var v client.PipelineRequest
		err := Unmarshal([]byte(c.body), &v)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != c.field {
			t.Errorf("%s: err = %v (field %q), want field %q", c.body, err, errdefs.Field(err), c.field)
		}
	}
	// Keys of a map differ by case legitimately; repeated keys in different objects are fine.
	for _, ok := range []string{
		`{"config":{"runnerLabels":{"os":"linux","OS":"Linux"}}}`,
		`{"config":{"variables":[{"key":"A","value":"1"},{"key":"B","value":"2"}]}}`,
	} {
		var v client.PipelineRequest
		if err := Unmarshal([]byte(ok), &v); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	var m client.ContextRequest
	if err := Unmarshal([]byte(`{"values":{"TOKEN":"a","token":"b"}}`), &m); err != nil || len(m.Values) != 2 {
		t.Errorf("map keys in two cases: %+v, %v", m, err)
	}
}

func TestDecodeJSONLimits(t *testing.T) {
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"email":"`+strings.Repeat("x", MaxBodyBytes)+`"}`))
	var v client.CreateUserRequest
	if err := DecodeJSON(r, &v); !errors.Is(err, errdefs.ErrTooLarge) {
		t.Fatalf("oversized body: %v", err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "text/plain")
	if err := DecodeJSON(r, &v); errdefs.Field(err) != "Content-Type" {
		t.Fatalf("wrong content type: %v", err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, id := range []string{"usr_01abc", "aud_zzz"} {
		got, err := DecodeCursor("after", EncodeCursor(id))
		if err != nil || got != id {
			t.Fatalf("%s -> %s, %v", id, got, err)
		}
	}
	for _, bad := range []string{"%%", "!!!", EncodeCursor("a b"), EncodeCursor(strings.Repeat("x", 100))} {
		if _, err := DecodeCursor("after", bad); errdefs.Field(err) != "after" {
			t.Errorf("cursor %q accepted: %v", bad, err)
		}
	}
}

// FuzzDecodeJSON feeds arbitrary bodies to the strict decoder used by every API endpoint: it
// must never panic, and every error must be a bad-input error that names a field.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"email":"a@b.c","role":"member"}`, `{"name":"k","expiresIn":"1h"}`, `{`, `[]`, `{"a":1}`, `null`, `{"email":"\u0000"}`,
		`{"name":"a","name":"b"}`, `{"config":{"runnerLabels":{"a":"1","a":"2"}}}`, `{"config":{"variables":[{"key":"K","KEY":"L"}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		targets := []any{&client.CreateUserRequest{}, &client.CreateAPIKeyRequest{}, &client.LoginRequest{}, &client.UpdateUserRequest{},
			&client.PipelineRequest{}, &client.ContextRequest{}}
		for _, v := range targets {
			err := Unmarshal(body, v)
			if err == nil {
				// Only one JSON object is accepted.
				if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' || !json.Valid(b) {
					t.Fatalf("accepted %q, which is not one JSON object", body)
				}
				// Whatever was accepted must re-encode: no half-decoded state.
				if _, err := json.Marshal(v); err != nil {
					t.Fatalf("accepted %q but cannot re-encode: %v", body, err)
				}
				continue
			}
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("body %q: error %v is not a field error", body, err)
			}
		}
	})
}
