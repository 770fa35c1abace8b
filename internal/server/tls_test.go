package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns a client trusting it.
func selfSigned(t *testing.T) (certFile, keyFile string, hc *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "freshet-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func TestServesTLSWithSecureCookies(t *testing.T) {
	certFile, keyFile, hc := selfSigned(t)
	s := servertest.StartWith(t, store.SQLite, servertest.Config{
		Edit: func(o *server.Options) { o.TLSCert, o.TLSKey = certFile, keyFile },
		HTTP: hc,
	})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("URL = %s, want https", s.URL)
	}
	if _, err := s.Admin.Me(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post(s.URL+"/api/v1/auth/login", "application/json",
		strings.NewReader(`{"email":"admin@first.test","password":"`+servertest.AdminPassword+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if !c.Secure {
			t.Errorf("cookie %s is not Secure under TLS", c.Name)
		}
	}
	// Plain HTTP to the TLS port is refused.
	if resp, err := http.Get(strings.Replace(s.URL, "https://", "http://", 1) + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP served on the TLS port")
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	base := func() server.Options {
		return server.Options{Listen: "127.0.0.1:0", DataDir: "/tmp/x", LogFormat: "text", LogLevel: "info", ShutdownTimeout: time.Second}
	}
	cases := []struct {
		field string
		edit  func(*server.Options)
	}{
		{"listen", func(o *server.Options) { o.Listen = "8080" }},
		{"data-dir", func(o *server.Options) { o.DataDir = "" }},
		{"tls-cert", func(o *server.Options) { o.TLSCert = "/nope.crt" }},
		{"tls-cert", func(o *server.Options) { o.TLSCert, o.TLSKey = "/nope.crt", "/nope.key" }},
		{"log-format", func(o *server.Options) { o.LogFormat = "xml" }},
		{"log-level", func(o *server.Options) { o.LogLevel = "loud" }},
		{"nats", func(o *server.Options) { o.NATS = "http://x" }},
		{"nats-replicas", func(o *server.Options) { o.NATSReplicas = 3 }}, // the embedded server is one node
		{"nats-replicas", func(o *server.Options) { o.NATS, o.NATSReplicas = "nats://127.0.0.1:4222", 6 }},
		{"shutdown-timeout", func(o *server.Options) { o.ShutdownTimeout = 0 }},
		{"hosted-runtimes", func(o *server.Options) { o.Hosted.Mode = "nomad" }},
		// On a cluster, runtimes need a URL to dial: neither given.
		{"hosted-runtimes-server", func(o *server.Options) { o.Hosted.Mode = server.HostedKubernetes }},
	}
	for _, c := range cases {
		o := base()
		c.edit(&o)
		err := o.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
	if o := base(); o.Validate() != nil {
		t.Fatal("valid options refused")
	}
}
