package repocreds_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
)

// selfSigned is a PEM CA certificate made for the test.
func selfSigned(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func load(t *testing.T) (*repocreds.Set, string) {
	t.Helper()
	data, err := os.ReadFile("testdata/argocd-repos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ca := selfSigned(t)
	cm := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-tls-certs-cm\ndata:\n  argoproj.github.io: |\n    " +
		strings.ReplaceAll(strings.TrimSpace(ca), "\n", "\n    ") + "\n"
	entries, cas, problems := repocreds.ParseManifests(append(data, cm...))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(entries) != 6 || len(cas) != 1 {
		t.Fatalf("%d entries, %d CAs; want 6 and 1", len(entries), len(cas))
	}
	return repocreds.NewSet(entries, cas), ca
}

func TestLookupAsArgoCD(t *testing.T) {
	s, ca := load(t)
	for _, tc := range []struct {
		url, user, pass string
		oci, found      bool
	}{
		// A repository Secret with credentials: its own, whatever the URL's spelling.
		{"https://github.com/argoproj/private-repo", "my-username", "my-password", false, true},
		{"https://GitHub.com/argoproj/private-repo.git", "my-username", "my-password", false, true},
		// A repository Secret without credentials takes the template's.
		{"https://github.com/argoproj/other-private-repo", "tmpl-username", "tmpl-password", false, true},
		// No Secret: the longest matching template.
		{"https://github.com/argoproj/argocd-example-apps", "tmpl-username", "tmpl-password", false, true},
		{"https://github.com/argoproj/team-a", "narrow", "narrow-pw", false, true},
		{"https://argoproj.github.io/argo-helm", "helm-user", "helm-password", false, true},
		{"myregistry.example.com", "", "", true, true},
		{"oci://myregistry.example.com/", "", "", true, true},
		{"https://gitlab.com/argoproj/x", "", "", false, false},
	} {
		c, found := s.Lookup(tc.url)
		if found != tc.found || c.Username != tc.user || c.Password != tc.pass || c.OCI != tc.oci {
			t.Errorf("%s: %v found=%v (user %q, OCI %v); want user %q OCI %v found %v", tc.url, c, found, c.Username, c.OCI, tc.user, tc.oci, tc.found)
		}
	}
	if c, _ := s.Lookup("https://argoproj.github.io/argo-helm"); !bytes.Equal(c.CABundle, []byte(ca)) {
		t.Errorf("argocd-tls-certs-cm's certificate for the host is not in the credentials: %q", c.CABundle)
	}
	if c, _ := s.Lookup("https://github.com/argoproj/private-repo"); len(c.CABundle) != 0 {
		t.Error("another host got the certificate")
	}
	if e, ok := s.ByName("argo"); !ok || e.URL != "https://argoproj.github.io/argo-helm" || e.Type != "helm" {
		t.Errorf("ByName(argo) = %+v %v", e, ok)
	}
	if s.Len() != 6 {
		t.Errorf("Len = %d", s.Len())
	}
}

// A bad Secret is named with its key and what is valid, without its values; the others load.
func TestBadSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		data      map[string]string
		want      string
	}{
		{"no-url", "repository", map[string]string{"password": "hunter2"}, "secret no-url: url"},
		{"bad-type", "repository", map[string]string{"url": "https://x", "type": "svn", "password": "hunter2"}, "want git, helm or oci"},
		{"bad-bool", "repository", map[string]string{"url": "https://x", "enableOCI": "yes please", "password": "hunter2"}, "secret bad-bool: enableOCI"},
		{"half-cert", "repo-creds", map[string]string{"url": "https://x", "tlsClientCertData": "hunter2"}, "give both or neither"},
		{"bad-cert", "repo-creds", map[string]string{"url": "https://x", "tlsClientCertData": "hunter2", "tlsClientCertKey": "hunter2"}, "not a PEM certificate"},
		{"pw-in-url", "repository", map[string]string{"url": "https://u:hunter2@x/y"}, "must not carry a password"},
		{"bad-label", "cluster", map[string]string{"url": "https://x"}, "want repository or repo-creds"},
	} {
		data := map[string][]byte{}
		for k, v := range tc.data {
			data[k] = []byte(v)
		}
		_, err := repocreds.FromSecret(tc.name, tc.typ, data)
		if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want an invalid-argument error containing %q and no secret", tc.name, err, tc.want)
		}
	}
	_, _, problems := repocreds.ParseManifests([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm}\ndata: {example.com: not a cert}\n"))
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "data.example.com") {
		t.Errorf("bad CA: %v", problems)
	}
}

func TestFilesSource(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/argocd-repos.yaml")
	if err := os.WriteFile(dir+"/repos.yaml", data, 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dir+"/notes.txt", []byte("ignored"), 0o600)
	s, problems, err := repocreds.Files{Dir: dir}.Load(t.Context())
	if err != nil || len(problems) != 0 || s.Len() != 6 {
		t.Fatalf("%v %v %d", err, problems, s.Len())
	}
	s, _, err = repocreds.Files{Dir: dir + "/none"}.Load(t.Context())
	if err != nil || s.Len() != 0 {
		t.Fatalf("missing directory: %v %d", err, s.Len())
	}
}

func FuzzParseManifests(f *testing.F) {
	seed, _ := os.ReadFile("testdata/argocd-repos.yaml")
	f.Add(seed)
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: a, labels: {argocd.argoproj.io/secret-type: repo-creds}}\ndata: {url: '!!'}\n"))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, _, _ := repocreds.ParseManifests(data)
		s := repocreds.NewSet(entries, nil)
		for _, e := range entries {
			if e.URL == "" || (e.Type != "git" && e.Type != "helm" && e.Type != "oci") {
				t.Fatalf("accepted entry %+v", e)
			}
			s.Lookup(e.URL)
		}
	})
}
