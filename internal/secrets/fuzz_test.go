package secrets

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// fuzzKeyring is fixed so that corpus entries stay meaningful across runs.
var fuzzKeyring = func() *Keyring {
	kr, err := Parse([]byte("k2:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))+
		"\nk1:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))), "fuzz")
	if err != nil {
		panic(err)
	}
	return kr
}()

// FuzzDecrypt feeds arbitrary strings and AADs to Decrypt. It must never panic, and it may succeed
// only on a string Encrypt produced with that AAD: the seeds include such strings, and mutations of
// them must all fail.
func FuzzDecrypt(f *testing.F) {
	// Ciphertexts made once by fuzzKeyring.Encrypt (fixed, so that cached corpus entries stay
	// valid: a fresh Encrypt would pick a new nonce each run).
	made := map[string]struct{ pt, aad []byte }{
		"fsec1:k2:40NNVBdT71CwtKd6SoxhE3z8d6Er1-dFKlOWJ6DFh9gFi0w":                                             {[]byte("hunter2"), AAD("acc", "ctx", "KEY")},
		"fsec1:k2:Lzf3GZAWPqSHFXGR8AV-R_FCRy4pF3nrXigq2Q":                                                      {nil, nil},
		"fsec1:k2:jhsrPo7d781R-QfAaX6IxzuK7sFCVpCWS2lyb1O9OEj_zrUVjMgylVbbpMpJMCGbp0vi4dU-ogrU_wrhvxJREi-mcfA": {bytes.Repeat([]byte("ab"), 20), []byte("x")},
		"fsec1:k1:os-aScjmi3SGVtHGL6zUWyj9tWohOQn_3frvjVCQrw":                                                  {[]byte("old"), nil}, // under the secondary key
	}
	for ct, m := range made {
		if pt, err := fuzzKeyring.Decrypt(ct, m.aad); err != nil || !bytes.Equal(pt, m.pt) {
			f.Fatalf("seed %s: %q, %v", ct, pt, err)
		}
		f.Add(ct, m.aad)
	}
	f.Add("", []byte(nil))
	f.Add("fsec1:k1:", []byte(nil))
	f.Add("fsec1:k9:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", []byte(nil))
	f.Add("fsec1:k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", []byte(nil))

	f.Fuzz(func(t *testing.T, s string, aad []byte) {
		pt, err := fuzzKeyring.Decrypt(s, aad)
		if err != nil {
			if pt != nil {
				t.Fatalf("Decrypt returned plaintext with error %v", err)
			}
			return
		}
		want, ok := made[s]
		if !ok {
			t.Fatalf("Decrypt(%q) succeeded on a string Encrypt did not produce", s)
		}
		if !bytes.Equal(aad, want.aad) || !bytes.Equal(pt, want.pt) {
			t.Fatalf("Decrypt(%q, %q) = %q; it was sealed as %q with AAD %q", s, aad, pt, want.pt, want.aad)
		}
		if _, _, err := fuzzKeyring.Reencrypt(s, aad); err != nil {
			t.Fatalf("Reencrypt of a valid ciphertext: %v", err)
		}
	})
}
