package token

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bearer tokens to every kind's Parse: it never panics, what it
// accepts is exactly prefix+id+"_"+secret with the kind's lengths and alphabet, and a minted
// token always parses back to its id and a secret that verifies against its hash.
func FuzzParse(f *testing.F) {
	for _, s := range []string{APIKey.New().Token, Runner.New().Token, Runtime.New().Token, PasswordReset.New().Token, "fsk_", "fsk__", "fsk_abc_def",
		"frn_ABCDEFGH_" + strings.Repeat("a", 40), "fss_" + Random(40), "fsk_aaaaaaaa_" + strings.Repeat("a", 31) + "\x00",
		"fsk_aaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_", "fsk_aaaa_aaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "Bearer fsk_x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		for _, k := range []Kind{APIKey, Runner, Runtime, PasswordReset} {
			id, secret, ok := k.Parse(tok)
			if !ok {
				if id != "" || secret != "" {
					t.Fatalf("%q refused but returned id %q secret %q", tok, id, secret)
				}
				continue
			}
			if !k.Is(tok) || k.Prefix+id+"_"+secret != tok || len(id) != k.IDLen || len(secret) != k.SecretLen ||
				!inAlphabet(id) || !inAlphabet(secret) {
				t.Fatalf("%s accepted %q as id %q secret %q", k.Prefix, tok, id, secret)
			}
			if !Verify(Hash(secret), secret) || Verify(Hash(secret), secret+"x") || Verify("", secret) {
				t.Fatalf("Verify disagrees with Hash for %q", secret)
			}
		}
	})
}
