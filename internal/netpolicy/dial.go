package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// Dial timeouts, as net/http's default transport.
const (
	DialTimeout   = 30 * time.Second
	DialKeepAlive = 30 * time.Second
)

// DialContext connects like net.Dialer.DialContext, to an address the policy allows: a name is
// resolved once, refused when any of its addresses is refused, and only the addresses checked
// are dialed (so a DNS answer that changes between a check and the connection changes
// nothing). The environment's HTTP(S) proxies are dialed as they are: the operator set them.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: DialTimeout, KeepAlive: DialKeepAlive}
	if p.proxies[addr] {
		return d.DialContext(ctx, network, addr)
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		if port, err = lookupPort(ctx, network, portText); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
	}
	addrs, err := p.Resolve(ctx, host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	d.Control = p.control // a second look at exactly what is connected to
	var first error
	for _, a := range addrs {
		a = a.Unmap()
		if (network == "tcp4" || network == "udp4") && !a.Is4() || (network == "tcp6" || network == "udp6") && !a.Is6() {
			continue
		}
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%s has no %s address", host, network)}
	}
	return nil, first
}

func lookupPort(ctx context.Context, network, service string) (uint64, error) {
	n, err := net.DefaultResolver.LookupPort(ctx, network, service)
	return uint64(n), err
}

// control is a net.Dialer Control hook: it refuses a socket about to connect to a refused
// address.
func (p *Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netpolicy: dialing %q: %w", address, err)
	}
	if what := p.checkAddr(ap.Addr()); what != "" {
		a := ap.Addr().Unmap().WithZone("")
		return &Error{Host: a.String(), Addr: a, What: what, Allowed: p.allowedText()}
	}
	return nil
}

type ctxKey struct{}

// NewContext returns ctx carrying p, for ContextTransport.
func NewContext(ctx context.Context, p *Policy) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the policy ctx carries, or nil.
func FromContext(ctx context.Context) *Policy {
	p, _ := ctx.Value(ctxKey{}).(*Policy)
	return p
}

// HTTPClient returns a client whose connections p checks (redirects included), with the
// timeout (0: none). It keeps no idle connections: it is made per call.
func (p *Policy) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: newTransport(func(context.Context) *Policy { return p })}
}

// ContextTransport returns a transport that checks each request's connections against the
// policy in the request's context (NewContext); requests without one connect anywhere. It is
// for libraries whose HTTP client is process-wide (go-git's): callers pass their policy in the
// context. Its connections are not kept alive, so a connection one policy allowed is never
// reused under another.
func ContextTransport() *http.Transport {
	return newTransport(FromContext)
}

func newTransport(pick func(context.Context) *Policy) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	plain := &net.Dialer{Timeout: DialTimeout, KeepAlive: DialKeepAlive}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p := pick(ctx); p != nil {
			return p.DialContext(ctx, network, addr)
		}
		return plain.DialContext(ctx, network, addr)
	}
	t.Proxy = func(req *http.Request) (*url.URL, error) {
		u, err := http.ProxyFromEnvironment(req)
		if u == nil || err != nil {
			return u, err
		}
		// The proxy connects to the target, not us: check the target's addresses first.
		if p := pick(req.Context()); p != nil {
			if _, err := p.Resolve(req.Context(), req.URL.Hostname()); err != nil {
				return nil, err
			}
		}
		return u, nil
	}
	t.DisableKeepAlives = true
	return t
}

// IsRefused reports whether err is (or wraps) a connection the policy refused.
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
