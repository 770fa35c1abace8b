package httpx

import (
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
	for _, s := range []string{`{"email":"a@b.c","role":"member"}`, `{"name":"k","expiresIn":"1h"}`, `{`, `[]`, `{"a":1}`, `null`, `{"email":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		targets := []any{&client.CreateUserRequest{}, &client.CreateAPIKeyRequest{}, &client.LoginRequest{}, &client.UpdateUserRequest{}}
		for _, v := range targets {
			err := Unmarshal(body, v)
			if err == nil {
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
