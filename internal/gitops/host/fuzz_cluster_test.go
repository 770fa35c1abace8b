package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzClusterCredential feeds arbitrary POST clusters bodies (cluster registration: a server
// URL, a bearer token and CA data from a user's kubeconfig) through decodeBody and Validate, as
// the API does before anything is stored: nothing panics, a refusal is invalid input naming a
// field, and what is accepted is an https URL with a host that is not the runtime's own API
// server, CA data that holds a PEM certificate, and a credential that survives the stores' JSON
// round trip.
func FuzzClusterCredential(f *testing.F) {
	ca := testCAPEM
	for _, c := range []appproxyv1.ClusterCredential{{Name: "prod", Server: "https://10.0.0.1:6443", Token: "t", CAData: []byte(ca)},
		{Name: "prod", Server: "https://kubernetes.default.svc", Token: "t"}, {Name: "in-cluster", Server: "https://h", Token: "t"},
		{Name: "a", Server: "https://KUBERNETES.default.svc.:443/", Token: "t"}, {Name: "a", Server: "http://h", Token: "t"},
		{Name: "a", Server: "https://:443", Token: "t"}, {Name: "a", Server: "https://u:p@h", Token: "t"}, {Name: "a", Server: "https://h", Token: "t", CAData: []byte("x")}} {
		b, _ := json.Marshal(c)
		f.Add(b)
	}
	for _, s := range []string{`{}`, `{"name":"a","server":"https://h","token":"t","extra":1}`, `{"name":"a"}{"name":"b"}`, `[]`, `{"caData":"!!"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in appproxyv1.ClusterCredential
		if err := decodeBody(httptest.NewRequest("POST", "/clusters", bytes.NewReader(body)), &in); err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "body" {
				t.Fatalf("decode refusal %v does not name the body", err)
			}
			return
		}
		c := ClusterCredential{Name: in.Name, Server: in.Server, CAData: in.CAData, Token: in.Token}
		if err := c.Validate(); err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("refusal %v is not invalid input naming a field", err)
			}
			return
		}
		u, err := url.Parse(c.Server)
		if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("accepted server %q", c.Server)
		}
		if h := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")); h == "kubernetes.default.svc" || h == "kubernetes" {
			t.Fatalf("accepted the runtime's own API server %q", c.Server)
		}
		if len(c.CAData) == 0 {
			c.CAData = nil // "caData": "" is no CA data, stored as none (omitempty)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back ClusterCredential
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("stored credential reads back as %+v, %v", back, err)
		}
	})
}

// testCAPEM is a self-signed CA certificate (no key is kept), for seeds with CA data.
const testCAPEM = `-----BEGIN CERTIFICATE-----
MIIBfjCCASOgAwIBAgIUMBx0jGcXWKHQ5WlCaoGC9GNgR88wCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJZnV6ei1yb290MB4XDTI2MTEyNjEwMDM0NloXDTM2MTEyMzEw
MDM0NlowFDESMBAGA1UEAwwJZnV6ei1yb290MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAE8+ZbZaH2fYVlvqsjmulP+Xeo6iQa5YDiPnK+hT2pg+uyi1HPBnGYS2y7
o/IbgsrLaSvg/Gufxf/lr9Ppows69KNTMFEwHQYDVR0OBBYEFPsr/c4KGXNYktqX
F0PjLOWmKmkbMB8GA1UdIwQYMBaAFPsr/c4KGXNYktqXF0PjLOWmKmkbMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhANrZiGYJVykSbE2GlFmbdcGD
Vxanz99VR/kzHPk8DhT+AiEAjzr84u4uqOQxZ55YA+Xf+TMPFjvBjGGSKM/n14P1
Ykw=
-----END CERTIFICATE-----
`

// TestClusterCredentialValidate: the forms of the runtime's own API server and CA data without
// a certificate are refused, naming the field; a credential from a kubeconfig passes.
func TestClusterCredentialValidate(t *testing.T) {
	ok := ClusterCredential{Name: "prod", Server: "https://10.0.0.1:6443", Token: "t", CAData: []byte(testCAPEM)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid credential refused: %v", err)
	}
	for server, field := range map[string]string{"https://kubernetes.default.svc": "server", "https://KUBERNETES.default.svc.:443/": "server",
		"https://kubernetes.default.svc.cluster.local": "server", "https://kubernetes": "server", "https://:443": "server", "https://u:p@h": "server",
		"http://h": "server"} {
		c := ok
		c.Server = server
		if err := c.Validate(); errdefs.Field(err) != field {
			t.Errorf("server %q: %v, want a refusal naming %s", server, err, field)
		}
	}
	c := ok
	c.CAData = []byte("not PEM")
	if err := c.Validate(); errdefs.Field(err) != "caData" {
		t.Errorf("CA data without a certificate: %v", err)
	}
}

// FuzzSyncResource feeds arbitrary sync resource selectors (the resources of a sync request,
// API input) to parseResource: it never panics, an accepted key has a kind and a name and no
// part holding "/", and written back in the shortest form it parses to the same key.
func FuzzSyncResource(f *testing.F) {
	for _, s := range []string{"Deployment/web", "ConfigMap/ns/cfg", "apps/Deployment/ns/web", "/Deployment//web", "a", "a/", "/a", "a//b",
		"a/b/c/d/e", "apps/Deployment//web", "//", "g/k/n/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseResource(s)
		if err != nil {
			return
		}
		if k.Kind == "" || k.Name == "" || strings.Contains(k.Group+k.Kind+k.Namespace+k.Name, "/") {
			t.Fatalf("%q accepted as %+v", s, k)
		}
		back := k.Kind + "/" + k.Name
		switch {
		case k.Group != "":
			back = k.Group + "/" + k.Kind + "/" + k.Namespace + "/" + k.Name
		case k.Namespace != "":
			back = k.Kind + "/" + k.Namespace + "/" + k.Name
		}
		if again, err := parseResource(back); err != nil || again != k {
			t.Fatalf("%q parses to %+v; written back as %q it parses to %+v, %v", s, k, back, again, err)
		}
	})
}
