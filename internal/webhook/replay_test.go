package webhook

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/secrets"
)

func TestDigestNamesProviderScopeAndBody(t *testing.T) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	d := Digest(GitHub, "trg_1", body)
	if len(d) != 64 || d != Digest(GitHub, "trg_1", []byte(`{"ref":"refs/heads/main"}`)) {
		t.Fatalf("digest %q is not a stable hex SHA-256", d)
	}
	for _, other := range []string{
		Digest(GitLab, "trg_1", body),
		Digest(GitHub, "trg_2", body),
		Digest(GitHub, "trg_1", []byte(`{"ref":"refs/heads/main" }`)),
		// The separator keeps scope and body apart: "trg_1" + "x…" is not "trg_1x" + "…".
		Digest(GitHub, "trg_1\x00", body),
	} {
		if other == d {
			t.Fatalf("a different provider, scope or body has the same digest %s", d)
		}
	}
}

// The answer to an unverified delivery depends on the provider in the URL only.
func TestUnauthenticatedIsOneAnswerPerProvider(t *testing.T) {
	for _, p := range Providers() {
		err := Unauthenticated(p)
		if !errors.Is(err, ErrSignature) || !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Fatalf("%s: %v does not wrap ErrSignature", p, err)
		}
		if !strings.Contains(err.Error(), signatureHeaders[p]) || signatureHeaders[p] == "" {
			t.Fatalf("%s: %q does not name the signature header", p, err)
		}
		if Unauthenticated(p).Error() != err.Error() {
			t.Fatalf("%s: two answers", p)
		}
	}
}

func TestDecoyIsRandomAndSealed(t *testing.T) {
	keys := secrets.Generate()
	a, b := NewDecoy(keys), NewDecoy(nil)
	if len(a.Open(keys)) != 64 || a.Open(keys) == b.Open(nil) || a.enc == "" || b.enc != "" {
		t.Fatalf("decoys %+v and %+v", a, b)
	}
	if plain, err := keys.Decrypt(a.enc, decoyAAD); err != nil || string(plain) != a.Open(keys) {
		t.Fatalf("the decoy's ciphertext does not open to its secret: %q, %v", plain, err)
	}
}

func TestRecentRemembersWithinTheWindowAndTheBound(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := NewRecent(time.Minute, 3)
	if !r.First("a", t0) || r.First("a", t0.Add(59*time.Second)) {
		t.Fatal("a key seen within the window is new")
	}
	if !r.First("a", t0.Add(time.Minute)) {
		t.Fatal("a key is still remembered after the window")
	}
	// The bound: the oldest keys are forgotten first.
	r = NewRecent(time.Hour, 3)
	for i := range 4 {
		if !r.First(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("key %d is not new", i)
		}
	}
	if len(r.seen) != 3 || len(r.order) != 3 {
		t.Fatalf("%d keys remembered (%d in order), want the bound 3", len(r.seen), len(r.order))
	}
	if !r.First("0", t0.Add(5*time.Second)) {
		t.Fatal("the oldest key was not forgotten at the bound")
	}
	if r.First("3", t0.Add(6*time.Second)) {
		t.Fatal("a recent key was forgotten")
	}
}
