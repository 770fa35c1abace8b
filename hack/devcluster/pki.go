package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Names of the files in an instance's pki directory.
const (
	pkiCA        = "ca"
	pkiAPIServer = "apiserver"
	pkiSA        = "sa" // service-account token signing key: sa.key, sa.pub
	pkiAdmin     = "admin"
	pkiKCM       = "kube-controller-manager"
	pkiScheduler = "kube-scheduler"
	pkiKwok      = "kwok"
)

const certValidity = 10 * 365 * 24 * time.Hour

// clientIdentity is who a client certificate authenticates as (CN = user, O = groups).
type clientIdentity struct {
	file   string
	user   string
	groups []string
}

// The control plane components use the identities the bootstrap RBAC policy binds, as in a
// kubeadm cluster; kwok plays every kubelet, so it gets system:masters like the admin.
var clientIdentities = []clientIdentity{
	{file: pkiAdmin, user: "freshet-admin", groups: []string{"system:masters"}},
	{file: pkiKCM, user: "system:kube-controller-manager"},
	{file: pkiScheduler, user: "system:kube-scheduler"},
	{file: pkiKwok, user: "kwok", groups: []string{"system:masters"}},
}

// ensurePKI creates the CA, serving certificate, service-account key pair and client
// certificates of an instance unless they already exist. ECDSA P-256 keys keep generation
// instant.
func ensurePKI(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, pkiKwok+".crt")); err == nil {
		return ensureNodeCert(dir) // written last; present means complete (but for the node's, added later)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := newKey()
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "freshet-devcluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeKeyPair(dir, pkiCA, caDER, caKey); err != nil {
		return err
	}

	// Serving certificate: loopback plus the in-cluster names of the kubernetes Service.
	if err := issue(dir, pkiAPIServer, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return err
	}

	saKey, err := newKey()
	if err != nil {
		return err
	}
	saPriv, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, pkiSA+".key"), "PRIVATE KEY", saPriv, 0o600); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, pkiSA+".pub"), "PUBLIC KEY", saPub, 0o644); err != nil {
		return err
	}

	for _, id := range clientIdentities {
		if err := issue(dir, id.file, ca, caKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.user, Organization: id.groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return err
		}
	}
	return ensureNodeCert(dir)
}

// nodeIdentity is the real node's kubelet: the Node authorizer and NodeRestriction know it by
// this user and group.
var nodeIdentity = clientIdentity{file: pkiNode, user: "system:node:" + realNodeName, groups: []string{"system:nodes"}}

// ensureNodeCert issues the real node's client certificate with the instance's CA unless it
// exists (instances made before the real node existed lack it).
func ensureNodeCert(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, pkiNode+".crt")); err == nil {
		return nil
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, pkiCA+".crt"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, pkiCA+".key"))
	if err != nil {
		return err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return fmt.Errorf("no PEM block in %s or its key", filepath.Join(dir, pkiCA+".crt"))
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return err
	}
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return err
	}
	return issue(dir, pkiNode, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: nodeIdentity.user, Organization: nodeIdentity.groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func issue(dir, name string, ca *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("issue %s certificate: %w", name, err)
	}
	return writeKeyPair(dir, name, der, key)
}

func writeKeyPair(dir, name string, certDER []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", certDER, 0o644)
}

func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm)
}

// kubeconfig renders a self-contained kubeconfig (certificates inlined) for a client identity.
func kubeconfig(pkiDir, clusterName, server, identity string) ([]byte, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(pkiDir, name))
		if err != nil {
			return "", err
		}
		return base64.StdEncoding.EncodeToString(b), nil
	}
	ca, err1 := read(pkiCA + ".crt")
	crt, err2 := read(identity + ".crt")
	key, err3 := read(identity + ".key")
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("kubeconfig for %s: %w", identity, err)
	}
	ctx := "devcluster-" + clusterName
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: %[4]s
  user:
    client-certificate-data: %[5]s
    client-key-data: %[6]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[4]s
current-context: %[1]s
`, ctx, server, ca, identity, crt, key), nil
}
