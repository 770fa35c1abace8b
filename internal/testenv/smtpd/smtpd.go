// Package smtpd runs a real SMTP server (emersion/go-smtp) on 127.0.0.1 for tests: STARTTLS
// with a certificate of its own, PLAIN authentication only after STARTTLS and only with the
// credentials it was started with, and every message it accepts kept for the test to read.
//
//	ms := smtpd.Start(t, "ci", "smtp-pass-123")
//	// dial ms.Addr, trust ms.Roots (or the PEM file ms.CAFile)
//	mails := ms.Mails()
package smtpd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Server is a running SMTP server.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// Roots trusts the server's certificate; CAFile holds the same certificate as PEM.
	Roots  *x509.CertPool
	CAFile string

	srv            *smtp.Server
	user, password string
	mu             sync.Mutex
	mails          []Mail
}

// Mail is one accepted message.
type Mail struct {
	From string
	To   []string
	Data string // the message as sent: headers, blank line, body
	User string // the user that authenticated
}

// Start starts a server accepting mail from user/password and stops it when t ends.
func Start(t testing.TB, user, password string) *Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ms := &Server{Roots: x509.NewCertPool(), CAFile: filepath.Join(t.TempDir(), "smtp-ca.pem"), user: user, password: password}
	ms.Roots.AddCert(cert)
	if err := os.WriteFile(ms.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{m: ms}, nil }))
	srv.Domain = "127.0.0.1"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.AllowInsecureAuth = false // PLAIN only after STARTTLS
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms.Addr, ms.srv = ln.Addr().String(), srv
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ms
}

// Close stops the server: connections after it are refused.
func (ms *Server) Close() { ms.srv.Close() }

// Mails returns the messages accepted so far, oldest first.
func (ms *Server) Mails() []Mail {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]Mail(nil), ms.mails...)
}

type session struct {
	m    *Server
	cur  Mail
	auth bool
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != s.m.user || password != s.m.password {
			return errors.New("bad credentials")
		}
		s.auth, s.cur.User = true, username
		return nil
	}), nil
}
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if !s.auth {
		return smtp.ErrAuthRequired
	}
	s.cur.From = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = string(b)
	s.m.mu.Lock()
	s.m.mails = append(s.m.mails, s.cur)
	s.m.mu.Unlock()
	return nil
}
func (s *session) Reset()        { s.cur = Mail{User: s.cur.User} }
func (s *session) Logout() error { return nil }
