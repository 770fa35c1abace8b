package token

import (
	"strings"
	"testing"
)

func TestKeyedTokensRoundTrip(t *testing.T) {
	for _, k := range []Kind{APIKey, Runner, Runtime, PasswordReset} {
		m := k.New()
		id, secret, ok := k.Parse(m.Token)
		if !ok || id != m.ID || !Verify(m.Hash, secret) || !k.Is(m.Token) {
			t.Fatalf("%s: round trip %q -> %q %q %v", k.Prefix, m.Token, id, secret, ok)
		}
		if Verify(m.Hash, secret+"x") || Verify("", secret) || strings.Contains(m.Hash, secret) {
			t.Fatalf("%s: a wrong secret or an empty hash verified", k.Prefix)
		}
		for _, bad := range []string{
			k.Prefix, k.Prefix + "short_x", m.Token + "x", strings.Replace(m.Token, "_", "-", -1),
			SessionPrefix + secret, strings.ToUpper(m.Token), k.Prefix + id + "_" + strings.Repeat("!", k.SecretLen),
		} {
			if _, _, ok := k.Parse(bad); ok {
				t.Errorf("%s: parsed %q", k.Prefix, bad)
			}
		}
	}
	// Kinds do not accept each other's tokens.
	if _, _, ok := Runner.Parse(Runtime.New().Token); ok {
		t.Error("a runtime token parsed as a runner token")
	}
}

func TestSessionTokens(t *testing.T) {
	tok, hash := NewSession()
	if !strings.HasPrefix(tok, SessionPrefix) || hash != Hash(tok) || len(tok) != len(SessionPrefix)+sessionSecretLen {
		t.Fatalf("session token %q hash %q", tok, hash)
	}
	if other, _ := NewSession(); other == tok {
		t.Fatal("two sessions got the same token")
	}
}

func TestRandomIsUniformAlphabet(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := Random(32)
		if seen[s] || len(s) != 32 || strings.Trim(s, alphabet) != "" {
			t.Fatalf("Random: %q", s)
		}
		seen[s] = true
	}
}
