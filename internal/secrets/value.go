package secrets

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Redacted is what a Value prints, logs and marshals as.
const Redacted = "***"

// Value holds a secret in memory. It prints (every fmt verb), logs (slog) and marshals (JSON,
// text) as Redacted, so a secret cannot reach a log line or an API response by accident; Reveal
// returns the plaintext where it is really needed. The zero Value is the empty secret.
type Value struct {
	s string
}

// NewValue wraps a plaintext secret.
func NewValue(plaintext string) Value { return Value{s: plaintext} }

// Reveal returns the plaintext. Call it only where the secret is used (injected into a step's
// environment, sent to the masker), never to log or display it.
func (v Value) Reveal() string { return v.s }

// IsZero reports whether the secret is empty.
func (v Value) IsZero() bool { return v.s == "" }

// Equal compares two secrets in constant time (for equal lengths).
func (v Value) Equal(o Value) bool { return subtle.ConstantTimeCompare([]byte(v.s), []byte(o.s)) == 1 }

// String returns Redacted.
func (v Value) String() string { return Redacted }

// GoString returns Redacted, for %#v.
func (v Value) GoString() string { return Redacted }

// Format writes Redacted for every verb and flag (%d, %x, %+v … would otherwise reach the field).
func (v Value) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Redacted)) }

// LogValue makes slog log Redacted.
func (v Value) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalJSON returns "***".
func (v Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText returns Redacted (YAML, XML, slog text and map keys use it).
func (v Value) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// UnmarshalJSON reads a JSON string, so request bodies can carry secrets into a Value. Marshalling
// it again gives "***", not the secret.
func (v *Value) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("secret value: want a JSON string")
	}
	v.s = s
	return nil
}

// Interface guards.
var (
	_ fmt.Stringer     = Value{}
	_ fmt.GoStringer   = Value{}
	_ fmt.Formatter    = Value{}
	_ slog.LogValuer   = Value{}
	_ json.Marshaler   = Value{}
	_ json.Unmarshaler = (*Value)(nil)
)
