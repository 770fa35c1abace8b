// Package sender sends one notification over HTTP or SMTP under the operator's network policy,
// and classifies what went wrong as permanent or worth trying again. It is shared by the
// control plane's notification channels (internal/notify) and the runtime's Argo CD
// notifications (internal/gitops/notifications), so it imports nothing but leaves.
package sender

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"strings"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// SMTP security modes.
const (
	SecurityStartTLS = "starttls" // plain connection upgraded with STARTTLS, required (the default)
	SecurityTLS      = "tls"      // TLS from the start (port 465)
	SecurityNone     = "none"     // no TLS: only without a password
)

// MaxAnswer bounds what is read of an HTTP answer.
const MaxAnswer = 64 << 10

// Error is a failed attempt: Status is the HTTP status or SMTP reply code answered (0 for none);
// Permanent ones are not worth trying again.
type Error struct {
	Status    int
	Permanent bool
	Msg       string
}

func (e *Error) Error() string { return e.Msg }

// Permanentf is a failure that trying again will not mend.
func Permanentf(status int, format string, args ...any) error {
	return &Error{Status: status, Permanent: true, Msg: fmt.Sprintf(format, args...)}
}

// Temporaryf is a failure worth trying again.
func Temporaryf(status int, format string, args ...any) error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// IsPermanent reports whether err is a permanent Error.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// ConnError describes a connection failure without anything a remote sent; a connection the
// operator's policy refuses is permanent.
func ConnError(err error) error {
	if netpolicy.IsRefused(err) {
		return Permanentf(0, "%s", netpolicy.Describe(err))
	}
	return Temporaryf(0, "%s", netpolicy.Describe(err))
}

// Request is one HTTP request.
type Request struct {
	Method string // "" is POST
	URL    string
	Body   []byte
	Header http.Header // Content-Type defaults to application/json when a body is sent
	// Username and Password, when Username is set, are sent as basic authentication.
	Username, Password string
}

// Do sends r through pol (nil: any URL, direct connections). Redirects are not followed. 2xx
// is success; 408, 429 and 5xx are temporary failures, other answers permanent. The answer's
// body is returned (up to MaxAnswer), whatever the status.
func Do(ctx context.Context, pol *netpolicy.Policy, r Request) (int, []byte, error) {
	if err := pol.CheckServerURL("url", r.URL); err != nil {
		return 0, nil, Permanentf(0, "%v", err)
	}
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return 0, nil, Permanentf(0, "the URL does not make a request: %v", err)
	}
	for k, v := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	if len(r.Body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "freshet-notifications")
	}
	if r.Username != "" {
		req.SetBasicAuth(r.Username, r.Password)
	}
	cl := pol.HTTPClient(0)
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, ConnError(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswer))
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return c, answer, nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return c, answer, Temporaryf(c, "the endpoint answered %d %s", c, http.StatusText(c))
	default:
		return c, answer, Permanentf(c, "the endpoint answered %d %s", c, http.StatusText(c))
	}
}

// Dialer connects to an SMTP server (a net.Dialer's or a netpolicy.Policy's DialContext).
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Server is an SMTP server to send through.
type Server struct {
	Host     string
	Port     int
	Username string
	Password string
	From     string
	Security string // SecurityStartTLS ("" is the same), SecurityTLS or SecurityNone
}

// SMTPError classifies an SMTP failure: 5xx replies are permanent, the rest temporary.
func SMTPError(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) {
		msg := fmt.Sprintf("the SMTP server refused %s: %d", step, te.Code)
		if te.Code >= 500 {
			return Permanentf(te.Code, "%s", msg)
		}
		return Temporaryf(te.Code, "%s", msg)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) {
		return Temporaryf(0, "SMTP %s: %s", step, netpolicy.Describe(err))
	}
	return Temporaryf(0, "SMTP %s: %v", step, err)
}

// SendMail sends body (an RFC 5322 message) from srv.From to each of to through srv:
// connected with dial, TLS from the start or by STARTTLS (refused if the server does not
// offer it) with the certificate checked against roots (nil: the host's), PLAIN
// authentication when a password is set. The error names the step that failed and never the
// password.
func SendMail(ctx context.Context, dial Dialer, roots *x509.CertPool, srv Server, to []string, body []byte) (int, error) {
	conn, err := dial(ctx, "tcp", net.JoinHostPort(strings.Trim(srv.Host, "[]"), fmt.Sprint(srv.Port)))
	if err != nil {
		return 0, ConnError(err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	host := strings.Trim(srv.Host, "[]")
	tc := &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12}
	if srv.Security == SecurityTLS {
		conn = tls.Client(conn, tc)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return 0, SMTPError("the greeting", err)
	}
	defer c.Close()
	if srv.Security == SecurityStartTLS || srv.Security == "" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return 0, Permanentf(0, "the SMTP server does not offer STARTTLS (set security to tls for port 465, or none for a relay without TLS and without a password)")
		}
		if err := c.StartTLS(tc); err != nil {
			return 0, Permanentf(0, "STARTTLS: %s", netpolicy.Describe(err))
		}
	}
	if srv.Password != "" {
		if err := c.Auth(smtp.PlainAuth("", srv.Username, srv.Password, host)); err != nil {
			return 0, SMTPError("the login", err)
		}
	}
	if err := c.Mail(srv.From); err != nil {
		return 0, SMTPError("the sender", err)
	}
	for _, t := range to {
		if err := c.Rcpt(t); err != nil {
			return 0, SMTPError("the recipient "+t, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return 0, SMTPError("the message", err)
	}
	if _, err := w.Write(body); err != nil {
		return 0, SMTPError("the message", err)
	}
	if err := w.Close(); err != nil {
		return 0, SMTPError("the message", err)
	}
	c.Quit()
	return 250, nil
}
