package netpolicy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
)

// Describe says why a connection or an exchange failed using only what this process knows —
// a refusal by the policy, a DNS failure, a refused or reset connection, a timeout, an
// untrusted certificate — never anything the remote sent (an error page, a banner, a
// malformed answer), so errors shown to tenants cannot echo a remote body. It returns "" when
// err is none of those.
func Describe(err error) string {
	var (
		refused   *Error
		dnsErr    *net.DNSError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		recordErr tls.RecordHeaderError
		alert     tls.AlertError
		opErr     *net.OpError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &refused):
		return refused.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &dnsErr):
		return dnsErr.Error()
	case errors.As(err, &hostname):
		return "TLS certificate not valid for " + hostname.Host
	case errors.As(err, &unknownCA):
		return "TLS certificate not trusted: signed by an unknown authority"
	case errors.As(err, &invalid):
		return "TLS certificate invalid (expired, not yet valid, or not for this use)"
	case errors.As(err, &verify):
		return "TLS certificate not trusted"
	case errors.As(err, &recordErr):
		return "the server does not speak TLS"
	case errors.As(err, &alert):
		return "TLS handshake failed: " + alert.Error()
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "cannot connect: " + opErr.Err.Error()
	case errors.As(err, &opErr):
		return opErr.Op + " failed: " + opErr.Err.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed"
	}
	return ""
}
