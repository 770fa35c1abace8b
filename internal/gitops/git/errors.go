package git

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// kind is one class of git failure. It unwraps to the errdefs kind the API edge maps to a code.
type kind struct {
	msg  string
	base error
}

func (k *kind) Error() string { return k.msg }
func (k *kind) Unwrap() error { return k.base }

// Kinds of failure, found with errors.Is. Only ErrUnreachable is temporary.
var (
	// ErrUnreachable: the network failed (connection refused, DNS, timeout, a 5xx answer). Retry.
	ErrUnreachable error = &kind{"repository unreachable", errdefs.ErrUnavailable}
	// ErrAuthentication: the server refused the credentials, or asked for some and got none.
	ErrAuthentication error = &kind{"authentication failed", errdefs.ErrForbidden}
	// ErrRepositoryNotFound: the server has no such repository (or hides it from these
	// credentials).
	ErrRepositoryNotFound error = &kind{"repository not found", errdefs.ErrNotFound}
	// ErrRevisionNotFound: no branch, tag or commit by that name.
	ErrRevisionNotFound error = &kind{"revision not found", errdefs.ErrNotFound}
	// ErrTLS: the server's certificate is not trusted (configure a CA bundle).
	ErrTLS error = &kind{"TLS certificate not trusted", errdefs.ErrUnavailable}
	// ErrHostKey: the SSH host key is unknown or does not match known_hosts.
	ErrHostKey error = &kind{"SSH host key verification failed", errdefs.ErrForbidden}
	// ErrInvalidRepository: the URL or credentials are malformed or of an unsupported kind.
	ErrInvalidRepository error = &kind{"invalid repository", errdefs.ErrInvalid}
	// ErrTooLarge: a checkout or file exceeds the configured limits.
	ErrTooLarge error = &kind{"too large", errdefs.ErrTooLarge}
	// ErrUnsafePath: the tree holds a path or symlink that would escape the checkout.
	ErrUnsafePath error = &kind{"unsafe path in repository", errdefs.ErrInvalid}
	// ErrConflict: a change's precondition failed (a file to create exists, or one to delete or
	// update does not), or pushes kept being rejected after every retry.
	ErrConflict error = &kind{"conflict", errdefs.ErrConflict}
	// ErrFileNotFound: ReadFile found no file at that path.
	ErrFileNotFound error = &kind{"file not found", errdefs.ErrNotFound}
	// ErrNotAllowed: the operator's policy (Options.Policy) refuses the URL or the address it
	// leads to (a loopback, private or link-local address, a redirect to one, a local path).
	ErrNotAllowed error = &kind{"not allowed by this server's network policy", errdefs.ErrInvalid}
)

// Error is a failed git operation on one repository.
type Error struct {
	Op   string // "ls-remote", "fetch", "checkout", "read", "push", ...
	URL  string // the repository URL, credentials removed
	Kind error  // one of the Err* kinds of this package
	Err  error  // the underlying cause, if any

	// remote: Err came from talking to a server over the network, so its text may carry
	// what the server sent; Error prints only what this process knows (causeText).
	remote bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("git ")
	b.WriteString(e.Op)
	if e.URL != "" {
		b.WriteString(" ")
		b.WriteString(e.URL)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	detail := ""
	switch {
	case e.Err == nil:
	case e.remote:
		detail = causeText(e.URL, e.Err)
	default:
		detail = redactText(e.Err.Error())
	}
	if detail != "" {
		b.WriteString(": ")
		b.WriteString(detail)
	}
	return b.String()
}

// Unwrap lets errors.Is find both the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Temporary reports whether retrying later may succeed.
func (e *Error) Temporary() bool { return e.Kind == ErrUnreachable }

// IsTemporary reports whether err is a git failure worth retrying with backoff: a network error
// or a timeout. Authentication failures, missing repositories or revisions, untrusted
// certificates and invalid input are permanent.
func IsTemporary(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Temporary()
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// classify wraps a go-git or local error into an *Error with the right kind.
func classify(op, url string, err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) || errors.Is(err, errdefs.ErrInvalid) && !netpolicy.IsRefused(err) {
		return err
	}
	return &Error{Op: op, URL: redactURL(url), Kind: kindOf(err), Err: err}
}

// classifyRemote is classify for an exchange with the repository's server: for a network URL
// the error's text keeps only what this process knows, never what the server sent.
func classifyRemote(op, url string, err error) error {
	err = classify(op, url, err)
	var e *Error
	if errors.As(err, &e) && e.Err != nil && isNetworkURL(url) {
		e.remote = true
	}
	return err
}

func isNetworkURL(raw string) bool {
	u, err := parseRepoURL(raw)
	return err == nil && u.Scheme != "file"
}

// causeText describes the cause of a failed exchange with a network repository without
// anything the server sent: go-git puts error pages, unexpected answers and the server's own
// messages into its errors' text (an internal service's answer would reach the tenant), so
// only the kinds this process can name are described.
func causeText(url string, err error) string {
	if !isNetworkURL(url) {
		return redactText(err.Error())
	}
	var (
		httpErr    *githttp.Err
		already    *Error
		unexpected *plumbing.UnexpectedError
		permanent  *plumbing.PermanentError
		notGit     *packp.ErrUnexpectedData
	)
	// go-git's wrappers do not unwrap.
	if errors.As(err, &unexpected) {
		err = unexpected.Err
	} else if errors.As(err, &permanent) {
		err = permanent.Err
	}
	switch {
	case errors.As(err, &already):
		return already.Error()
	case errors.As(err, &httpErr):
		return fmt.Sprintf("the server answered HTTP %d", httpErr.StatusCode())
	case errors.As(err, &notGit), errors.Is(err, pktline.ErrInvalidPktLen):
		return "the server's answer is not the git protocol"
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrRepositoryNotFound), errors.Is(err, transport.ErrEmptyRemoteRepository):
		return "" // the kind says it; go-git appends the server's answer to these
	case errors.Is(err, plumbing.ErrReferenceNotFound), errors.Is(err, plumbing.ErrObjectNotFound):
		return err.Error()
	}
	return redactText(netpolicy.Describe(err))
}

func kindOf(err error) error {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		certInvalid      x509.CertificateInvalidError
		netErr           net.Error
	)
	msg := err.Error()
	switch {
	// Some go-git paths flatten errors to text (%s): a refusal is then known by its words.
	case netpolicy.IsRefused(err), strings.Contains(msg, "connection to ") && strings.Contains(msg, " refused: "):
		return ErrNotAllowed
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod):
		return ErrAuthentication
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ErrRepositoryNotFound
	case errors.Is(err, plumbing.ErrReferenceNotFound), errors.Is(err, plumbing.ErrObjectNotFound):
		return ErrRevisionNotFound
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &certInvalid),
		strings.Contains(msg, "x509: "), strings.Contains(msg, "tls: failed to verify"):
		return ErrTLS
	case strings.Contains(msg, "knownhosts: key mismatch"), strings.Contains(msg, "knownhosts: key is unknown"):
		return ErrHostKey
	case strings.Contains(msg, "ssh: unable to authenticate"), strings.Contains(msg, "no supported methods remain"):
		return ErrAuthentication
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return ErrRevisionNotFound
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &netErr):
		return ErrUnreachable
	case strings.Contains(msg, "does not appear to be a git repository"), strings.Contains(msg, "not a git repository"),
		strings.Contains(msg, "repository not found"):
		return ErrRepositoryNotFound
	case strings.Contains(msg, "unsupported scheme"), strings.Contains(msg, "invalid endpoint"):
		return ErrInvalidRepository
	}
	// Unknown failures (a 5xx, a broken connection, a protocol hiccup) are treated as temporary:
	// the caller retries with backoff, and a persistent one is reported as a condition anyway.
	return ErrUnreachable
}
