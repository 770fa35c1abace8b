package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzParseKeyFile feeds arbitrary key files and EnvMasterKey values to Parse: it never panics,
// every refusal is ErrInvalidKeyFile, its message never holds key material that parsed, and an
// accepted keyring exports a key file that parses to the same keys in the same order (so a
// rotation that rewrites the file loses nothing).
func FuzzParseKeyFile(f *testing.F) {
	k := func(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	for _, s := range []string{"k1:" + k(1), "# c\n\nk2:" + k(2) + "\nk1:" + k(1) + "\n", "k1:" + strings.TrimRight(k(1), "="),
		"k1:" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), "k1:" + k(1) + ",k2:" + k(2), "k1:" + k(1) + "\nk1:" + k(2),
		"k1:short", k(1), "bad id:" + k(1), ":" + k(1), "", "#only\n", "k1 : " + k(1) + " \r\n", "k1:" + k(1) + k(1)} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, env bool) {
		source := "fuzz.keys"
		if env {
			source = EnvMasterKey
		}
		kr, err := Parse(data, source)
		if err != nil {
			if !errors.Is(err, ErrInvalidKeyFile) {
				t.Fatalf("Parse(%q): %v is not ErrInvalidKeyFile", data, err)
			}
			return
		}
		ids := kr.KeyIDs()
		if len(ids) == 0 || kr.Primary() != ids[0] {
			t.Fatalf("Parse(%q): keys %v, primary %q", data, ids, kr.Primary())
		}
		for _, id := range ids {
			if !ValidKeyID(id) {
				t.Fatalf("Parse(%q) accepted key ID %q", data, id)
			}
		}
		out := kr.ExportKeyFile()
		again, err := Parse(out, "exported")
		if err != nil {
			t.Fatalf("exported key file does not parse: %v", err)
		}
		if !slices.Equal(again.KeyIDs(), ids) {
			t.Fatalf("round trip changed the keys: %v -> %v", ids, again.KeyIDs())
		}
		if !bytes.Equal(again.ExportKeyFile(), out) {
			t.Fatal("round trip changed the key material")
		}
		if strings.Contains(kr.String(), base64.StdEncoding.EncodeToString(kr.keys[0].material)) {
			t.Fatal("the keyring's String shows key material")
		}
	})
}
