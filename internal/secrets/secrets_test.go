package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

var testAAD = AAD("context-secret", "acc_1", "prod", "DB_PASSWORD")

func TestRoundTrip(t *testing.T) {
	kr := Generate()
	for _, pt := range [][]byte{nil, {}, []byte("x"), []byte("hunter2"), bytes.Repeat([]byte{0, 1, 0xff}, 10000), []byte("ünïcödé ✓")} {
		ct, err := kr.Encrypt(pt, testAAD)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ct, Prefix+":"+kr.Primary()+":") {
			t.Errorf("ciphertext %q does not start with %q", ct, Prefix+":"+kr.Primary()+":")
		}
		if len(pt) > 3 && strings.Contains(ct, string(pt)) {
			t.Errorf("ciphertext contains the plaintext")
		}
		got, err := kr.Decrypt(ct, testAAD)
		if err != nil {
			t.Fatalf("Decrypt: %v", err)
		}
		if !bytes.Equal(got, pt) {
			t.Errorf("round trip of %d bytes gave %d bytes", len(pt), len(got))
		}
		if id, err := KeyID(ct); err != nil || id != kr.Primary() {
			t.Errorf("KeyID = %q, %v; want %q", id, err, kr.Primary())
		}
	}
}

func TestNonceIsRandom(t *testing.T) {
	kr := Generate()
	seen := map[string]bool{}
	for range 1000 {
		ct, _ := kr.Encrypt([]byte("same"), testAAD)
		if seen[ct] {
			t.Fatal("two encryptions of the same value gave the same ciphertext")
		}
		seen[ct] = true
	}
}

func TestAADMismatch(t *testing.T) {
	kr := Generate()
	ct, _ := kr.Encrypt([]byte("s3cret-value"), AAD("acc_1", "prod", "DB_PASSWORD"))
	for _, aad := range [][]byte{
		nil,
		AAD("acc_2", "prod", "DB_PASSWORD"), // another account
		AAD("acc_1", "dev", "DB_PASSWORD"),  // another context
		AAD("acc_1", "prod", "API_TOKEN"),   // another key
		AAD("acc_1", "prodDB_PASSWORD"),     // same bytes concatenated, different parts
		AAD("acc_1prod", "DB_PASSWORD"),
	} {
		_, err := kr.Decrypt(ct, aad)
		if !errors.Is(err, ErrDecrypt) {
			t.Errorf("Decrypt with AAD %q: err = %v, want ErrDecrypt", aad, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error contains the plaintext: %v", err)
		}
	}
}

func TestAADIsUnambiguous(t *testing.T) {
	pairs := [][2][]string{
		{{"ab", "c"}, {"a", "bc"}},
		{{"abc"}, {"abc", ""}},
		{{}, {""}},
		{{"a\x01b"}, {"a", "b"}},
	}
	for _, p := range pairs {
		if bytes.Equal(AAD(p[0]...), AAD(p[1]...)) {
			t.Errorf("AAD(%q) == AAD(%q)", p[0], p[1])
		}
	}
}

// TestTamper flips every bit position of the decoded payload, and changes every character of the
// string: no change may decrypt.
func TestTamper(t *testing.T) {
	kr := Generate()
	ct, _ := kr.Encrypt([]byte("the plaintext"), testAAD)
	id, sealed, err := parse(ct)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sealed {
		for bit := range 8 {
			b := bytes.Clone(sealed)
			b[i] ^= 1 << bit
			s := Prefix + ":" + id + ":" + b64.EncodeToString(b)
			if _, err := kr.Decrypt(s, testAAD); !errors.Is(err, ErrDecrypt) {
				t.Fatalf("byte %d bit %d flipped: err = %v, want ErrDecrypt", i, bit, err)
			}
		}
	}
	for i := range ct {
		for _, c := range []byte{ct[i] ^ 1, ct[i] ^ 0x20, 'A', '\n', ':', 0} {
			if c == ct[i] {
				continue
			}
			s := ct[:i] + string(c) + ct[i+1:]
			pt, err := kr.Decrypt(s, testAAD)
			if err == nil {
				t.Fatalf("character %d changed to %q: decrypted to %q", i, c, pt)
			}
			if !errors.Is(err, ErrDecrypt) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("character %d changed to %q: err = %v, want one of the sentinels", i, c, err)
			}
			if strings.Contains(err.Error(), "the plaintext") {
				t.Fatalf("error contains the plaintext: %v", err)
			}
		}
	}
	// Line breaks, which base64 decoders usually skip, are refused too.
	if _, err := kr.Decrypt(ct[:20]+"\r\n"+ct[20:], testAAD); !errors.Is(err, ErrMalformed) {
		t.Errorf("CRLF inside the data: err = %v, want ErrMalformed", err)
	}
}

func TestTruncate(t *testing.T) {
	kr := Generate()
	ct, _ := kr.Encrypt([]byte("a secret worth keeping"), testAAD)
	for n := range len(ct) {
		_, err := kr.Decrypt(ct[:n], testAAD)
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrDecrypt) {
			t.Errorf("truncated to %d of %d: err = %v, want ErrMalformed or ErrDecrypt", n, len(ct), err)
		}
	}
	// Extended, too.
	if _, err := kr.Decrypt(ct+"AAAA", testAAD); !errors.Is(err, ErrDecrypt) {
		t.Errorf("extended: err = %v, want ErrDecrypt", err)
	}
}

func TestMalformedMessages(t *testing.T) {
	kr := Generate()
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{"fsec1:<key>:<data>"}},
		{"plaintext-by-mistake", []string{"fsec1:<key>:<data>", "20 bytes"}},
		{"fsec1:abc", []string{"no ':' after the key ID"}},
		{"fsec1:a b:AAAA", []string{`key ID "a b"`, "letters, digits"}},
		{"fsec1::AAAA", []string{`key ID ""`}},
		{"fsec1:" + kr.Primary() + ":AA=A", []string{"outside the base64url alphabet at offset 2"}},
		{"fsec1:" + kr.Primary() + ":A", []string{"not valid unpadded base64url"}},
		{"fsec1:" + kr.Primary() + ":AAAA", []string{"3 bytes, shorter than the 28-byte nonce and tag"}},
	}
	for _, tt := range tests {
		_, err := kr.Decrypt(tt.in, nil)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("Decrypt(%q): err = %v, want ErrMalformed", tt.in, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Decrypt(%q): error %q does not mention %q", tt.in, err, w)
			}
		}
	}
}

func TestUnknownKey(t *testing.T) {
	a, b := Generate(), Generate()
	ct, _ := a.Encrypt([]byte("x"), nil)
	_, err := b.Decrypt(ct, nil)
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("err = %v, want ErrUnknownKey", err)
	}
	if !strings.Contains(err.Error(), a.Primary()) {
		t.Errorf("error %q does not name key %q", err, a.Primary())
	}
	// Same ID, other material: authentication fails.
	c, err := Parse([]byte(a.Primary()+":"+base64.StdEncoding.EncodeToString(make([]byte, 32))), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decrypt(ct, nil); !errors.Is(err, ErrDecrypt) {
		t.Errorf("same ID, other key: err = %v, want ErrDecrypt", err)
	}
}

func TestRotateReencryptRetire(t *testing.T) {
	kr := Generate()
	old := kr.Primary()
	var cts []string
	for i := range 5 {
		ct, _ := kr.Encrypt(fmt.Appendf(nil, "secret-%d", i), AAD("row", fmt.Sprint(i)))
		cts = append(cts, ct)
	}
	if err := kr.Retire(old); !errors.Is(err, ErrPrimaryKey) || !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), old) {
		t.Fatalf("Retire(primary) = %v, want ErrPrimaryKey naming the key", err)
	}
	if err := kr.Retire("nope"); !errors.Is(err, ErrNoSuchKey) || !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), old) {
		t.Fatalf("Retire(unknown) = %v, want ErrNoSuchKey listing the keys", err)
	}

	newID, err := kr.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if newID == old || kr.Primary() != newID {
		t.Fatalf("after Rotate primary = %q, new = %q, old = %q", kr.Primary(), newID, old)
	}
	if got := kr.KeyIDs(); len(got) != 2 || got[0] != newID || got[1] != old {
		t.Fatalf("KeyIDs = %v", got)
	}
	// Old ciphertexts still decrypt; new ones use the new key.
	if _, err := kr.Decrypt(cts[0], AAD("row", "0")); err != nil {
		t.Fatalf("old ciphertext after Rotate: %v", err)
	}
	for i, ct := range cts {
		aad := AAD("row", fmt.Sprint(i))
		out, changed, err := kr.Reencrypt(ct, aad)
		if err != nil || !changed {
			t.Fatalf("Reencrypt: changed = %v, err = %v", changed, err)
		}
		if id, _ := KeyID(out); id != newID {
			t.Errorf("re-encrypted under %q, want %q", id, newID)
		}
		again, changed, err := kr.Reencrypt(out, aad)
		if err != nil || changed || again != out {
			t.Errorf("second Reencrypt: changed = %v, err = %v, same = %v", changed, err, again == out)
		}
		if _, _, err := kr.Reencrypt(out, AAD("row", "other")); !errors.Is(err, ErrDecrypt) {
			t.Errorf("Reencrypt with the wrong AAD: err = %v, want ErrDecrypt", err)
		}
		cts[i] = out
	}
	if err := kr.Retire(old); err != nil {
		t.Fatal(err)
	}
	for i, ct := range cts {
		pt, err := kr.Decrypt(ct, AAD("row", fmt.Sprint(i)))
		if err != nil || string(pt) != fmt.Sprintf("secret-%d", i) {
			t.Errorf("after Retire: %q, %v", pt, err)
		}
	}
	// Add then Promote: the multi-replica order.
	id, err := kr.Add()
	if err != nil {
		t.Fatal(err)
	}
	if kr.Primary() != newID {
		t.Fatalf("Add changed the primary key")
	}
	if err := kr.Promote(id); err != nil {
		t.Fatal(err)
	}
	if kr.Primary() != id {
		t.Fatalf("after Promote primary = %q, want %q", kr.Primary(), id)
	}
	if err := kr.Promote("missing"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatal("Promote(missing) succeeded")
	}
}

func TestConcurrentUse(t *testing.T) {
	kr := Generate()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				aad := AAD(fmt.Sprint(g), fmt.Sprint(i))
				ct, err := kr.Encrypt([]byte("v"), aad)
				if err != nil {
					errs <- err
					return
				}
				if _, _, err := kr.Reencrypt(ct, aad); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			id := kr.Primary()
			if _, err := kr.Rotate(); err != nil {
				errs <- err
				return
			}
			_ = kr.KeyIDs()
			_ = id
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestKeyringNeverPrintsKeyMaterial(t *testing.T) {
	kr := Generate()
	material := base64.StdEncoding.EncodeToString(kr.keys[0].material)
	raw := string(kr.keys[0].material)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		out := fmt.Sprintf(verb, kr)
		if strings.Contains(out, material) || strings.Contains(out, raw) || strings.Contains(out, fmt.Sprint(kr.keys[0].material)) {
			t.Errorf("%s printed the key material: %s", verb, out)
		}
		if !strings.Contains(out, kr.Primary()) {
			t.Errorf("%s: %q does not name the key ID", verb, out)
		}
	}
}

func BenchmarkEncrypt1KiB(b *testing.B) {
	kr := Generate()
	pt := bytes.Repeat([]byte("x"), 1024)
	b.SetBytes(int64(len(pt)))
	for b.Loop() {
		if _, err := kr.Encrypt(pt, testAAD); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecrypt1KiB(b *testing.B) {
	kr := Generate()
	ct, _ := kr.Encrypt(bytes.Repeat([]byte("x"), 1024), testAAD)
	b.SetBytes(1024)
	for b.Loop() {
		if _, err := kr.Decrypt(ct, testAAD); err != nil {
			b.Fatal(err)
		}
	}
}
