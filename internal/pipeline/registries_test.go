package pipeline_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// testCA returns a self-signed CA certificate in PEM.
func testCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test registry CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func registry(url, user, password string) pipeline.ContextInput {
	return pipeline.ContextInput{Type: pipeline.ContextRegistry, Registry: &pipeline.Registry{URL: url, Username: user, Password: password}}
}

// Bad registry contexts are refused with an error that names the field.
func TestRegistryContextValidation(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	f := newFixture(t, db)
	ctx := context.Background()
	ca := testCA(t)
	keyPEM := "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n"
	with := func(edit func(r *pipeline.Registry)) pipeline.ContextInput {
		in := registry("ghcr.io/acme", "bot", "tok")
		edit(in.Registry)
		return in
	}
	for _, c := range []struct {
		name, field, mention string
		in                   pipeline.ContextInput
	}{
		{"no registry", "registry", "registry.url", pipeline.ContextInput{Type: pipeline.ContextRegistry}},
		{"values on a registry", "values", "registry.url", pipeline.ContextInput{Type: pipeline.ContextRegistry, Values: map[string]string{"A": "b"},
			Registry: &pipeline.Registry{URL: "ghcr.io"}}},
		{"registry on a secret", "registry", "type registry", pipeline.ContextInput{Type: pipeline.ContextSecret, Values: map[string]string{"A": "b"},
			Registry: &pipeline.Registry{URL: "ghcr.io"}}},
		{"unknown type", "type", "config, secret, registry, git", pipeline.ContextInput{Type: "docker", Values: map[string]string{"A": "b"}}},
		{"empty url", "registry.url", "required", registry("", "", "")},
		{"scheme", "registry.url", "scheme", registry("https://ghcr.io/acme", "", "")},
		{"bad host", "registry.url", `host "ghcr_io"`, registry("ghcr_io/acme", "", "")},
		{"unbracketed IPv6", "registry.url", "IPv6 in brackets", registry("fe80::1:5000", "", "")},
		{"bad IPv6", "registry.url", "IPv6", registry("[fe80::zz]:5000", "", "")},
		{"port zero", "registry.url", `port "0"`, registry("registry.local:0", "", "")},
		{"port too big", "registry.url", `port "65536"`, registry("registry.local:65536", "", "")},
		{"empty port", "registry.url", `port ""`, registry("registry.local:", "", "")},
		{"upper-case path", "registry.url", `path component "Acme"`, registry("ghcr.io/Acme", "", "")},
		{"trailing slash", "registry.url", `path component ""`, registry("ghcr.io/acme/", "", "")},
		{"too long", "registry.url", "longer than", registry("ghcr.io/"+strings.Repeat("a", 300), "", "")},
		{"username without password", "registry.password", "required with registry.username", registry("ghcr.io", "bot", "")},
		{"username with a colon", "registry.username", "':'", registry("ghcr.io", "bot:x", "tok")},
		{"mask on create", "registry.password", "mask", registry("ghcr.io", "bot", pipeline.MaskedValue)},
		{"CA that is no PEM", "registry.ca", "no PEM certificate", with(func(r *pipeline.Registry) { r.CA = "not a certificate" })},
		{"CA with a key", "registry.ca", "EC PRIVATE KEY block", with(func(r *pipeline.Registry) { r.CA = ca + keyPEM })},
		{"CA with garbage", "registry.ca", "cannot be parsed", with(func(r *pipeline.Registry) {
			r.CA = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
		})},
		{"CA with trailing text", "registry.ca", "text after", with(func(r *pipeline.Registry) { r.CA = ca + "trailing words" })},
	} {
		_, err := f.svc.PutContext(ctx, f.p, "reg", c.in, true)
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: err = %v, want a field error on %s mentioning %q", c.name, err, c.field, c.mention)
		}
	}
	// Valid forms.
	for i, url := range []string{"ghcr.io", "ghcr.io/acme", "127.0.0.1:5000", "[::1]:5000", "[fe80::1]", "registry.local:443/team/sub-group/x_y",
		"localhost:5000", "my-registry.example.com/a__b"} {
		in := registry(url, "bot", "tok")
		if i == 0 {
			in.Registry.CA = testCA(t) + testCA(t)
		}
		if _, err := f.svc.PutContext(ctx, f.p, "ok-"+string(rune('a'+i)), in, true); err != nil {
			t.Errorf("URL %s: %v", url, err)
		}
	}
	if cs, err := f.svc.ListContexts(ctx, f.p); err != nil || len(cs) != 8 {
		t.Fatalf("ListContexts = %d contexts, %v", len(cs), err)
	}
}

// A registry context is encrypted and masked like a secret context; admins may reveal the
// password (audited); the mask sent back keeps it only while the URL and CA stay; at most one registry
// is the account's default, switched atomically; only registries can be the default.
func TestRegistryContexts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db, func(d *pipeline.Deps) { d.Specs = specsFromNowhere{} })
		ca := testCA(t)
		const pw = "ghp-registry-token-123"
		in := registry("ghcr.io/acme", "bot", pw)
		in.Registry.CA, in.Registry.Default = ca, true
		c, err := f.svc.PutContext(ctx, f.p, "ghcr", in, true)
		if err != nil {
			t.Fatal(err)
		}
		want := pipeline.Registry{URL: "ghcr.io/acme", Username: "bot", Password: pipeline.MaskedValue, CA: ca, Default: true}
		if c.Type != pipeline.ContextRegistry || c.Registry == nil || *c.Registry != want || len(c.Values) != 0 {
			t.Fatalf("created %+v (registry %+v), want %+v", c, c.Registry, want)
		}
		// Stored encrypted: the password is nowhere in the row.
		row, err := db.GetContext(ctx, f.p.AccountID, "ghcr")
		if err != nil || strings.Contains(row.Data, pw) || !row.Default {
			t.Fatalf("stored row %+v, %v", row, err)
		}
		viewer := rbac.Principal{AccountID: f.p.AccountID, Email: "v@acme.test", Role: rbac.Viewer}
		member := rbac.Principal{AccountID: f.p.AccountID, Email: "m@acme.test", Role: rbac.Member}
		for _, p := range []rbac.Principal{viewer, member, f.p} {
			got, err := f.svc.GetContext(ctx, p, "ghcr", false)
			if err != nil || *got.Registry != want {
				t.Errorf("GetContext as %s = %+v, %v", p.Role, got.Registry, err)
			}
			cs, err := f.svc.ListContexts(ctx, p)
			if err != nil || len(cs) != 1 || *cs[0].Registry != want {
				t.Errorf("ListContexts as %s = %+v, %v", p.Role, cs, err)
			}
		}
		for _, p := range []rbac.Principal{viewer, member} {
			if _, err := f.svc.GetContext(ctx, p, "ghcr", true); !errors.Is(err, errdefs.ErrForbidden) {
				t.Errorf("decrypt as %s: %v, want forbidden", p.Role, err)
			}
		}
		clear, err := f.svc.GetContext(ctx, f.p, "ghcr", true)
		if err != nil || clear.Registry.Password != pw || clear.Registry.URL != "ghcr.io/acme" || !clear.Registry.Default {
			t.Fatalf("decrypted %+v, %v", clear.Registry, err)
		}

		// The mask sent back keeps the password for the same URL (a rename of the user is fine)…
		same := registry("ghcr.io/acme", "robot", pipeline.MaskedValue)
		same.Registry.Default, same.Registry.CA = true, ca
		if _, err := f.svc.PutContext(ctx, f.p, "ghcr", same, false); err != nil {
			t.Fatal(err)
		}
		if clear, err := f.svc.GetContext(ctx, f.p, "ghcr", true); err != nil || clear.Registry.Password != pw || clear.Registry.Username != "robot" ||
			clear.Registry.CA != ca {
			t.Fatalf("after an update with the mask: %+v, %v", clear.Registry, err)
		}
		// …but never follows the credential to another URL, or to a server another CA vouches for.
		var fe *errdefs.FieldError
		moved := registry("evil.example/acme", "robot", pipeline.MaskedValue)
		moved.Registry.CA = ca
		if _, err := f.svc.PutContext(ctx, f.p, "ghcr", moved, false); !errors.As(err, &fe) || fe.Field != "registry.password" || !strings.Contains(err.Error(), "registry.url") {
			t.Fatalf("moving the stored password to another URL: %v", err)
		}
		for _, other := range []string{testCA(t), ""} {
			swapped := registry("ghcr.io/acme", "robot", pipeline.MaskedValue)
			swapped.Registry.CA = other
			if _, err := f.svc.PutContext(ctx, f.p, "ghcr", swapped, false); !errors.As(err, &fe) || fe.Field != "registry.password" || !strings.Contains(err.Error(), "registry.ca") {
				t.Fatalf("keeping the stored password with another CA: %v", err)
			}
		}
		// Given again, the password goes with the new CA (here: none).
		if _, err := f.svc.PutContext(ctx, f.p, "ghcr", registry("ghcr.io/acme", "robot", pw), false); err != nil {
			t.Fatal(err)
		}
		// A replace without a registry, or with values, is refused; the type stays.
		if _, err := f.svc.PutContext(ctx, f.p, "ghcr", pipeline.ContextInput{Values: map[string]string{"A": "b"}}, false); !errors.As(err, &fe) || fe.Field != "values" {
			t.Fatalf("replacing a registry with values: %v", err)
		}

		// Default switching: a second default replaces the first; an update without it unsets it.
		q := registry("quay.io/acme", "", "anon-token")
		q.Registry.Default = true
		if _, err := f.svc.PutContext(ctx, f.p, "quay", q, true); err != nil {
			t.Fatal(err)
		}
		defaults := func() []string {
			t.Helper()
			cs, err := f.svc.ListContexts(ctx, f.p)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range cs {
				if c.Registry != nil && c.Registry.Default {
					out = append(out, c.Name)
				}
			}
			return out
		}
		if got := defaults(); len(got) != 1 || got[0] != "quay" {
			t.Fatalf("defaults = %v, want [quay]", got)
		}
		if _, err := f.svc.PutContext(ctx, f.p, "quay", registry("quay.io/acme", "", pipeline.MaskedValue), false); err != nil {
			t.Fatal(err)
		}
		if got := defaults(); len(got) != 0 {
			t.Fatalf("after unsetting: defaults = %v", got)
		}
		// Only registries are defaults: a secret context cannot carry the flag at all.
		if _, err := f.svc.PutContext(ctx, f.p, "creds", pipeline.ContextInput{Type: pipeline.ContextSecret, Values: map[string]string{"A": "b"},
			Registry: &pipeline.Registry{Default: true}}, true); !errors.As(err, &fe) || fe.Field != "registry" {
			t.Fatalf("a default secret context: %v", err)
		}
		// A registry context is no source of git credentials.
		if _, err := f.svc.CreateProject(ctx, f.p, "web"); err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.CreatePipeline(ctx, f.p, pipeline.PipelineInput{Project: "web", Name: "ci", SpecRepo: "https://github.com/acme/app.git",
			Config: pipeline.Config{SpecContext: "ghcr"}})
		if !errors.As(err, &fe) || fe.Field != "config.specContext" {
			t.Fatalf("a registry context as specContext: %v", err)
		}
		// The changes are audited, and no record holds the password.
		evs, err := audit.NewLog(db, slog.New(slog.DiscardHandler)).List(ctx, f.p, audit.Filter{Action: "context."}, paging.Page{})
		if err != nil {
			t.Fatal(err)
		}
		actions := map[string]int{}
		for _, e := range evs {
			actions[e.Action+" "+e.Result]++
			if strings.Contains(e.Detail, pw) {
				t.Errorf("audit record %s holds the password: %s", e.Action, e.Detail)
			}
		}
		if actions["context.create success"] != 2 || actions["context.decrypt success"] != 2 || actions["context.update failure"] != 4 ||
			actions["context.decrypt denied"] != 2 {
			t.Errorf("audit records: %v", actions)
		}
	})
}

// specsFromNowhere is a SpecSource that accepts every URL and reads no spec.
type specsFromNowhere struct{}

func (specsFromNowhere) CheckRepoURL(string, string) error { return nil }

func (specsFromNowhere) ReadSpec(context.Context, string, map[string]string, string, string) ([]byte, string, error) {
	return nil, "", errors.New("no git here")
}

// Master-key rotation (pipeline.ReencryptSecrets) re-encrypts registry passwords with the
// secret contexts' values; both still decrypt after the old key is retired.
func TestRegistryPasswordSurvivesKeyRotation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		const pw = "rotate-me-registry-password"
		if _, err := f.svc.PutContext(ctx, f.p, "ghcr", registry("ghcr.io/acme", "bot", pw), true); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.PutContext(ctx, f.p, "anon", registry("quay.io", "", ""), true); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.PutContext(ctx, f.p, "creds", pipeline.ContextInput{Type: pipeline.ContextSecret, Values: map[string]string{"A": "1", "B": "2"}}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.PutContext(ctx, f.p, "gh", gitCtx("github", "", "", "rotate-me-git-token"), true); err != nil {
			t.Fatal(err)
		}
		before, err := db.GetContext(ctx, f.p.AccountID, "ghcr")
		if err != nil {
			t.Fatal(err)
		}
		old := f.keys.Primary()
		if _, err := f.keys.Rotate(); err != nil {
			t.Fatal(err)
		}
		n := 0
		err = db.Tx(ctx, func(tx *store.Tx) (err error) {
			n, err = pipeline.ReencryptSecrets(ctx, tx, f.keys)
			return err
		})
		if err != nil || n != 4 {
			t.Fatalf("ReencryptSecrets = %d, %v; want 4 (the registry password, two secret values and the git token)", n, err)
		}
		if err := f.keys.Retire(old); err != nil {
			t.Fatal(err)
		}
		after, err := db.GetContext(ctx, f.p.AccountID, "ghcr")
		if err != nil || after.Data == before.Data || !strings.Contains(after.Data, `"url":"ghcr.io/acme"`) {
			t.Fatalf("after rotation the row is %+v, %v (before: %s)", after, err, before.Data)
		}
		c, err := f.svc.GetContext(ctx, f.p, "ghcr", true)
		if err != nil || c.Registry.Password != pw || c.Registry.Username != "bot" {
			t.Fatalf("decrypted after rotation: %+v, %v", c.Registry, err)
		}
		if c, err := f.svc.GetContext(ctx, f.p, "gh", true); err != nil || c.Git.Token != "rotate-me-git-token" {
			t.Fatalf("git context after rotation: %+v, %v", c.Git, err)
		}
		if c, err := f.svc.GetContext(ctx, f.p, "creds", true); err != nil || c.Values["A"] != "1" {
			t.Fatalf("secret context after rotation: %+v, %v", c, err)
		}
		// A second run has nothing left to change.
		err = db.Tx(ctx, func(tx *store.Tx) (err error) {
			n, err = pipeline.ReencryptSecrets(ctx, tx, f.keys)
			return err
		})
		if err != nil || n != 0 {
			t.Fatalf("ReencryptSecrets again = %d, %v", n, err)
		}
	})
}
