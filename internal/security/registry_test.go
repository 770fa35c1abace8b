package security_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// newCA returns a certificate authority's certificate in PEM, one whose key the attacker holds.
func newCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "attacker CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// A registry context's password is a new way to hold a secret. Account B's admin tries to read,
// change, redirect or delete A's; A's viewer and member try to read it through the API, and to
// point the stored password at a host of their own by changing the URL while sending the mask
// back, or to make a CA of their own vouch for a server that answers for the registry. Any answer
// that carries the password, or any change to A's registry, is a success.
func TestRegistryPasswordReach(t *testing.T) {
	ctx := context.Background()
	tn := startTenants(t, servertest.Config{})
	const pw = "a-registry-Passw0rd-5821"
	const url = "registry.first.example/team"
	if _, err := tn.aAdmin.CreateContext(ctx, client.ContextRequest{Name: "a-registry", Type: "registry",
		Registry: &client.RegistryContext{URL: url, Username: "a-bot", Password: pw, Default: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.aAdmin.CreateUser(ctx, client.CreateUserRequest{Email: "vera@first.test", Role: "viewer", Password: "vera-password"}); err != nil {
		t.Fatal(err)
	}
	viewer := tn.s.Login(t, "vera@first.test", "vera-password")
	attackerCA := newCA(t)

	tries, got := 0, 0
	var worst time.Duration
	// try runs one attempt; it succeeds when the call answers without error (when refusal is
	// wanted) or when what it answers holds the password.
	try := func(what string, wantRefused bool, fn func() (any, error)) {
		t.Helper()
		tries++
		start := time.Now()
		v, err := fn()
		worst = max(worst, time.Since(start))
		text, _ := json.Marshal(v)
		if wantRefused && err == nil {
			got++
			t.Errorf("%s: accepted (%s)", what, text)
		}
		if strings.Contains(string(text), pw) {
			got++
			t.Errorf("%s: the answer holds the password: %s", what, text)
		}
	}
	redirect := func(c *client.Client, pwd string) func() (any, error) {
		return func() (any, error) {
			return c.UpdateContext(ctx, "a-registry", client.ContextRequest{Registry: &client.RegistryContext{URL: "attacker.example", Username: "a-bot",
				Password: pwd, Default: true}})
		}
	}
	for _, c := range []struct {
		who string
		c   *client.Client
	}{{"B's admin", tn.bAdmin}, {"A's viewer", viewer}, {"A's member", tn.aMember}} {
		try(c.who+" reads the registry", c.c == tn.bAdmin, func() (any, error) { return c.c.GetContext(ctx, "a-registry", false) })
		try(c.who+" decrypts the registry", true, func() (any, error) { return c.c.GetContext(ctx, "a-registry", true) })
		try(c.who+" lists contexts", false, func() (any, error) { return c.c.ListContexts(ctx) })
		try(c.who+" points the stored password at another host", true, redirect(c.c, "*****"))
		try(c.who+" points the stored password at another host, without a password", true, redirect(c.c, ""))
		try(c.who+" makes its own CA vouch for the registry, keeping the stored password", true, func() (any, error) {
			return c.c.UpdateContext(ctx, "a-registry", client.ContextRequest{Registry: &client.RegistryContext{URL: url, Username: "a-bot",
				Password: "*****", CA: attackerCA, Default: true}})
		})
	}
	try("B's admin deletes A's registry", true, func() (any, error) { return nil, tn.bAdmin.DeleteContext(ctx, "a-registry") })
	try("B's admin makes its own registry named like A's the default", false, func() (any, error) {
		return tn.bAdmin.CreateContext(ctx, client.ContextRequest{Name: "a-registry", Type: "registry",
			Registry: &client.RegistryContext{URL: "registry.bravo.example", Default: true}})
	})

	// A's registry is as it was: same URL, user and password, still the default.
	tries++
	c, err := tn.aAdmin.GetContext(ctx, "a-registry", true)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Registry; r == nil || *r != (client.RegistryContext{URL: url, Username: "a-bot", Password: pw, Default: true}) {
		got++
		t.Errorf("A's registry changed: %+v", r)
	}
	attack(t, "secrets: a registry password read or redirected", tries, got, worst)
}
