package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/notify"
)

// SMTPPasswordEnv holds the SMTP password when --smtp-password-file is not given.
const SMTPPasswordEnv = "FRESHET_SMTP_PASSWORD"

// smtpSendTimeout bounds one reset mail (it is sent while the reset's transaction is open).
const smtpSendTimeout = 30 * time.Second

// SMTPOptions are the operator's mail server, with which the control plane emails password
// resets to users (so no admin sees the token). Empty Host: none; resets are shown to the admin.
// The server is the operator's: the tenants' network policy does not apply to it.
type SMTPOptions struct {
	Host         string
	Port         int
	Username     string
	PasswordFile string // empty: SMTPPasswordEnv (empty too: no login)
	From         string
	Security     string // starttls (default), tls or none
	CAFile       string // PEM roots the server's certificate is checked against (empty: the host's)
}

// BindFlags registers the SMTP flags on fs.
func (o *SMTPOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Host, "smtp-host", "", "SMTP server for emailing password resets to users (default: none; an admin is shown the reset token)")
	fs.IntVar(&o.Port, "smtp-port", 587, "port of --smtp-host")
	fs.StringVar(&o.Username, "smtp-username", "", "login at --smtp-host")
	fs.StringVar(&o.PasswordFile, "smtp-password-file", "", "file holding the password for --smtp-username (default: "+SMTPPasswordEnv+")")
	fs.StringVar(&o.From, "smtp-from", "", "sender address of the reset mails (like freshet@example.com)")
	fs.StringVar(&o.Security, "smtp-security", notify.SecurityStartTLS, "starttls, tls (port 465) or none (only without a password)")
	fs.StringVar(&o.CAFile, "smtp-ca-file", "", "PEM certificates the SMTP server's certificate is checked against (default: the host's roots)")
}

// password is the SMTP password: the file's first line, else SMTPPasswordEnv.
func (o *SMTPOptions) password() (string, error) {
	if o.PasswordFile == "" {
		return os.Getenv(SMTPPasswordEnv), nil
	}
	b, err := os.ReadFile(o.PasswordFile)
	if err != nil {
		return "", errdefs.Invalid("smtp-password-file", o.PasswordFile, "cannot be read: "+err.Error())
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", errdefs.Invalid("smtp-password-file", o.PasswordFile, "is empty")
	}
	return pw, nil
}

// Validate checks the SMTP options and names the first bad one.
func (o *SMTPOptions) Validate() error {
	if o.Host == "" {
		if o.From != "" || o.Username != "" || o.PasswordFile != "" || o.CAFile != "" {
			return errdefs.Invalid("smtp-host", "", "is required with the other --smtp-* flags")
		}
		return nil
	}
	if strings.ContainsAny(o.Host, "/@ ") || strings.Contains(o.Host, "://") {
		return errdefs.Invalid("smtp-host", o.Host, "is not a host name or IP address (like smtp.example.com)")
	}
	if o.Port < 1 || o.Port > 65535 {
		return errdefs.Invalid("smtp-port", fmt.Sprint(o.Port), "is not a TCP port (1-65535)")
	}
	if a, err := mail.ParseAddress(o.From); err != nil || a.Address != o.From {
		return errdefs.Invalid("smtp-from", o.From, "is not an email address (like freshet@example.com)")
	}
	switch o.Security {
	case notify.SecurityStartTLS, notify.SecurityTLS, notify.SecurityNone:
	default:
		return errdefs.Invalid("smtp-security", o.Security, "is not starttls, tls or none")
	}
	pw, err := o.password()
	if err != nil {
		return err
	}
	if pw != "" && o.Username == "" {
		return errdefs.Invalid("smtp-username", "", "is required with a password")
	}
	if pw != "" && o.Security == notify.SecurityNone {
		return errdefs.Invalid("smtp-security", o.Security, "would send the password in clear: use starttls or tls")
	}
	if _, err := o.roots(); err != nil {
		return err
	}
	return nil
}

func (o *SMTPOptions) roots() (*x509.CertPool, error) {
	if o.CAFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, errdefs.Invalid("smtp-ca-file", o.CAFile, "cannot be read: "+err.Error())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errdefs.Invalid("smtp-ca-file", o.CAFile, "holds no PEM certificate")
	}
	return pool, nil
}

// resetMailer is identity's ResetMail through the operator's SMTP server (nil when none is
// set); links point at baseURL.
func (o *SMTPOptions) resetMailer(baseURL string) (func(context.Context, identity.ResetMail) error, error) {
	if o.Host == "" {
		return nil, nil
	}
	pw, err := o.password()
	if err != nil {
		return nil, err
	}
	roots, err := o.roots()
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(baseURL, "/")
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	return func(ctx context.Context, m identity.ResetMail) error {
		ctx, cancel := context.WithTimeout(ctx, smtpSendTimeout)
		defer cancel()
		srv := notify.SMTP{Host: o.Host, Port: o.Port, Username: o.Username, Password: pw, From: o.From, To: []string{m.To}, Security: o.Security}
		if err := notify.SendMail(ctx, dialer.DialContext, roots, srv, "user.password-reset", "Reset your Freshet password", resetMailText(base, m), time.Now()); err != nil {
			return fmt.Errorf("through the SMTP server %s: %w", net.JoinHostPort(o.Host, fmt.Sprint(o.Port)), err)
		}
		return nil
	}, nil
}

// resetMailText is the body of a reset mail.
func resetMailText(base string, m identity.ResetMail) string {
	var b strings.Builder
	fmt.Fprintf(&b, "An admin of the Freshet account %q asked for a new password for %s.\n\n", m.Account, m.To)
	fmt.Fprintf(&b, "Set a new password at this link (it works once, until %s):\n%s/reset-password?token=%s\n\n", m.ExpiresAt.UTC().Format(time.RFC1123), base, url.QueryEscape(m.Token))
	fmt.Fprintf(&b, "Or with the CLI:\nfreshet user passwd --server %s --reset-token %s\n\n", base, m.Token)
	b.WriteString("Setting it ends all your sessions. If you did not expect this mail, ignore it: your password stays as it is.\n")
	return b.String()
}
