// Package client is the runtime's end of the tunnel: it dials the control plane (TLS or plain
// TCP, the control plane's normal HTTP port), upgrades the connection with the runtime token,
// and then answers the requests the control plane sends on the connection it dialed (the
// framed protocol of package wire: the runtime is the server on a connection it opened),
// handing every request to the runtime's handler (the app-proxy). It keeps several such
// connections, reconnects each with backoff and jitter, and reports how many are up.
//
// The runtime links this package, so it imports nothing from the control plane; the wire
// protocol it shares with the control plane's tunnel server lives in internal/tunnel/wire.
// See docs/tunnel.md.
package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// Defaults of Options.
const (
	// DefaultConns is how many tunnel connections a runtime keeps.
	DefaultConns = 2
	// MaxConns bounds Options.Conns.
	MaxConns = 16
	// DefaultMinBackoff is the first reconnect delay.
	DefaultMinBackoff = 250 * time.Millisecond
	// DefaultMaxBackoff caps the reconnect delay.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultDialTimeout bounds dialing plus the TLS and upgrade handshakes.
	DefaultDialTimeout = 10 * time.Second
	// stableAfter is how long a connection must live for the next failure to start the
	// backoff from the beginning again.
	stableAfter = 10 * time.Second
	// handlerGrace bounds how long Run waits, after the connections closed, for handlers
	// still running (their contexts are cancelled by then).
	handlerGrace = 5 * time.Second
)

// Log attribute keys.
const (
	logKeyConn  = "conn"
	logKeyErr   = "err"
	logKeyDelay = "retry_in"
	logKeyURL   = "url"
)

// ErrRefused means the control plane refused the handshake: the token is wrong, revoked or
// not a runtime token, or the runtime may not open more connections. The client keeps
// retrying (a rotated token may be mounted later), at the slow end of its backoff.
var ErrRefused = errors.New("tunnel refused by the control plane")

// Options configure a Client.
type Options struct {
	// ServerURL is the control plane's base URL: http://host:port or https://host:port.
	ServerURL string
	// Token is the runtime's token, sent as "Authorization: Bearer".
	Token string
	// RuntimeName is the runtime's name, for logs (the control plane goes by the token).
	RuntimeName string
	// Handler serves the requests that arrive through the tunnel (the app-proxy).
	Handler http.Handler
	// Conns is how many tunnel connections to keep (default DefaultConns).
	Conns int
	// TLSConfig is used for https ServerURLs (nil means the system roots). Its NextProtos is
	// replaced by http/1.1: the upgrade is an HTTP/1.1 exchange.
	TLSConfig *tls.Config
	// MinBackoff and MaxBackoff bound the reconnect delay (defaults DefaultMinBackoff and
	// DefaultMaxBackoff). Each delay is drawn from [d/2, d) with d doubling per failure.
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds one connection attempt (default DefaultDialTimeout).
	DialTimeout time.Duration
	// PingInterval and PingTimeout: a connection silent for PingInterval is pinged and
	// dropped when no answer comes within PingTimeout (defaults wire.PingInterval, wire.PingTimeout).
	PingInterval, PingTimeout time.Duration
	// DialContext dials the control plane (default a net.Dialer). Tests use it to cut
	// connections.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log receives connection events (nil discards them).
	Log *slog.Logger
}

// BindFlags registers the tunnel's own flags on fs (the control-plane URL and the token are
// the runtime's flags).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Conns, "tunnel-conns", o.Conns, fmt.Sprintf("tunnel connections to keep open (default %d)", DefaultConns))
	fs.DurationVar(&o.MinBackoff, "tunnel-min-backoff", o.MinBackoff, fmt.Sprintf("first tunnel reconnect delay (default %s)", DefaultMinBackoff))
	fs.DurationVar(&o.MaxBackoff, "tunnel-max-backoff", o.MaxBackoff, fmt.Sprintf("largest tunnel reconnect delay (default %s)", DefaultMaxBackoff))
}

// Validate reports every invalid field, naming it, its value and what would be valid.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, v any, valid string) {
		errs = append(errs, fmt.Errorf("tunnel client: %s = %q: %s", field, fmt.Sprint(v), valid))
	}
	if u, err := url.Parse(o.ServerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("ServerURL", o.ServerURL, "must be an http:// or https:// URL of the control plane")
	}
	if strings.TrimSpace(o.Token) == "" {
		bad("Token", "", "is required: the runtime token issued at registration")
	}
	if o.Handler == nil {
		bad("Handler", "nil", "is required: the handler that serves tunnelled requests")
	}
	if o.Conns < 0 || o.Conns > MaxConns {
		bad("Conns", o.Conns, fmt.Sprintf("must be between 1 and %d (0 means %d)", MaxConns, DefaultConns))
	}
	if o.MinBackoff < 0 || o.MaxBackoff < 0 || (o.MaxBackoff > 0 && o.MinBackoff > o.MaxBackoff) {
		bad("MinBackoff/MaxBackoff", fmt.Sprintf("%s/%s", o.MinBackoff, o.MaxBackoff), "must be positive with MinBackoff ≤ MaxBackoff (0 means the default)")
	}
	if o.DialTimeout < 0 || o.PingInterval < 0 || o.PingTimeout < 0 {
		bad("DialTimeout/PingInterval/PingTimeout", fmt.Sprintf("%s/%s/%s", o.DialTimeout, o.PingInterval, o.PingTimeout), "must not be negative (0 means the default)")
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Conns == 0 {
		o.Conns = DefaultConns
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.PingInterval == 0 {
		o.PingInterval = wire.PingInterval
	}
	if o.PingTimeout == 0 {
		o.PingTimeout = wire.PingTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.DialContext == nil {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		o.DialContext = d.DialContext
	}
	return o
}

// State is what the client reports for health.
type State struct {
	// Want is how many connections the client keeps.
	Want int
	// Connected is how many are up now.
	Connected int
	// LastError is the last connection failure (nil once a connection succeeded after it).
	LastError error
	// LastConnected is when a connection last came up.
	LastConnected time.Time
}

// Healthy reports whether at least one connection is up.
func (s State) Healthy() bool { return s.Connected > 0 }

// Client keeps a runtime's tunnel connections.
type Client struct {
	opts    Options
	server  *url.URL
	baseCtx context.Context

	connected atomic.Int32
	handlers  atomic.Int64

	mu            sync.Mutex
	lastErr       error
	lastConnected time.Time
	conns         map[*trackedConn]struct{}
	ready         chan struct{} // closed at the first connection
	readyOnce     sync.Once

	runOnce   sync.Once
	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// New validates opts and returns a Client; Run starts it.
func New(opts Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	u, _ := url.Parse(opts.ServerURL)
	c := &Client{
		opts:    opts,
		server:  u,
		baseCtx: context.WithValue(context.Background(), viaTunnelKey{}, true),
		conns:   make(map[*trackedConn]struct{}),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	return c, nil
}

// Dial starts a client in the background and waits for its first connection. It fails at
// once when the control plane refuses the token (ErrRefused), and when ctx ends first. Close
// stops the client.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.Run(runCtx)
	if err := c.WaitConnected(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// WaitConnected waits until a connection is up, ctx ends, or the control plane refused the
// token.
func (c *Client) WaitConnected(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if c.connected.Load() > 0 {
			return nil
		}
		if err := c.State().LastError; errors.Is(err, ErrRefused) {
			return err
		}
		select {
		case <-c.ready:
		case <-t.C:
		case <-ctx.Done():
			if err := c.State().LastError; err != nil {
				return fmt.Errorf("tunnel not connected: %w (last error: %v)", ctx.Err(), err)
			}
			return fmt.Errorf("tunnel not connected: %w", ctx.Err())
		case <-c.done:
			return errors.New("tunnel client closed")
		}
	}
}

// Run keeps the connections up until ctx ends, then closes them and returns nil. It may be
// called once.
func (c *Client) Run(ctx context.Context) error {
	started := false
	c.runOnce.Do(func() { started = true })
	if !started {
		return errors.New("tunnel client: Run called twice")
	}
	defer close(c.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range c.opts.Conns {
		wg.Go(func() { c.keep(ctx, i) })
	}
	<-ctx.Done()
	wg.Wait() // each closed its connection: handlers see their contexts cancelled
	c.mu.Lock()
	for tc := range c.conns {
		tc.Close()
	}
	c.mu.Unlock()
	deadline := time.Now().Add(handlerGrace)
	for c.handlers.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Close stops a client started by Dial (for Run, cancel its context) and waits until it is
// stopped.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		if c.stop != nil {
			c.stop()
		}
	})
	if c.stop != nil {
		<-c.done
	}
	return nil
}

// State reports the connections for health.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{Want: c.opts.Conns, Connected: int(c.connected.Load()), LastError: c.lastErr, LastConnected: c.lastConnected}
}

// keep holds connection slot i up until ctx ends.
func (c *Client) keep(ctx context.Context, i int) {
	log := c.opts.Log.With(logKeyConn, i)
	failures := 0
	for ctx.Err() == nil {
		tc, err := c.connect(ctx, i)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.setErr(err)
			if errors.Is(err, ErrRefused) {
				failures = max(failures, 5) // a refused token will not heal in 250 ms
			}
			d := c.backoff(failures)
			failures++
			log.Warn("tunnel connect failed", logKeyErr, err, logKeyDelay, d, logKeyURL, c.server.Redacted())
			if !sleep(ctx, d) {
				return
			}
			continue
		}
		up := time.Now()
		c.connectedUp(tc)
		log.Info("tunnel connected", logKeyURL, c.server.Redacted())
		select {
		case <-tc.done:
		case <-ctx.Done():
			tc.Close()
		}
		c.connectedDown(tc)
		if ctx.Err() != nil {
			return
		}
		c.setErr(fmt.Errorf("tunnel connection lost: %w", tc.err()))
		if time.Since(up) >= stableAfter {
			failures = 0
		}
		d := c.backoff(failures)
		failures++
		log.Warn("tunnel connection lost", logKeyErr, tc.err(), logKeyDelay, d)
		if !sleep(ctx, d) {
			return
		}
	}
}

func (c *Client) connectedUp(tc *trackedConn) {
	c.mu.Lock()
	c.conns[tc] = struct{}{}
	c.lastErr = nil
	c.lastConnected = time.Now()
	c.connected.Add(1)
	c.mu.Unlock()
	c.readyOnce.Do(func() { close(c.ready) })
}

func (c *Client) connectedDown(tc *trackedConn) {
	c.mu.Lock()
	delete(c.conns, tc)
	c.connected.Add(-1)
	c.mu.Unlock()
}

func (c *Client) setErr(err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

// backoff is the delay after n consecutive failures: d = min(Max, Min·2ⁿ), drawn from [d/2, d).
func (c *Client) backoff(n int) time.Duration {
	d := c.opts.MinBackoff
	for range min(n, 30) {
		d *= 2
		if d >= c.opts.MaxBackoff {
			d = c.opts.MaxBackoff
			break
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connect dials, upgrades and starts answering the control plane's requests on the connection.
func (c *Client) connect(ctx context.Context, i int) (*trackedConn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	host := c.server.Host
	if c.server.Port() == "" {
		if c.server.Scheme == "https" {
			host = net.JoinHostPort(c.server.Hostname(), "443")
		} else {
			host = net.JoinHostPort(c.server.Hostname(), "80")
		}
	}
	raw, err := c.opts.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", host, err)
	}
	conn := raw
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	if c.server.Scheme == "https" {
		cfg := c.opts.TLSConfig.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = c.server.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", host, err)
		}
		conn = tc
	}
	path := strings.TrimSuffix(c.server.EscapedPath(), "/") + wire.ConnectPath
	req := &http.Request{
		Method:     http.MethodGet,
		URL:        &url.URL{Scheme: c.server.Scheme, Host: c.server.Host, Opaque: path},
		Host:       c.server.Host,
		ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Connection":         {"Upgrade"},
			"Upgrade":            {wire.Protocol},
			"Authorization":      {"Bearer " + c.opts.Token},
			wire.HeaderVersion:   {wire.Version},
			wire.HeaderConnIndex: {strconv.Itoa(i)},
			"User-Agent":         {"freshet-tunnel/" + wire.Version},
		},
	}
	if c.opts.RuntimeName != "" {
		req.Header.Set(wire.HeaderRuntimeName, c.opts.RuntimeName)
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send tunnel handshake to %s: %w", host, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("read tunnel handshake answer from %s: %w", host, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), wire.Protocol) {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		resp.Body.Close()
		conn.Close()
		msg := errorMessage(body)
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
			return nil, fmt.Errorf("%w: %s: %s", ErrRefused, resp.Status, msg)
		}
		return nil, fmt.Errorf("tunnel handshake with %s: want 101 Switching Protocols to %s, got %s: %s", host, wire.Protocol, resp.Status, msg)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tunnel connection to %s: %w", host, err)
	}
	tc := newTrackedConn(wire.BufferedConn(conn, br))
	sess := wire.ServeSession(tc, http.HandlerFunc(c.serveHTTP), c.baseCtx, wire.Config{
		PingInterval: c.opts.PingInterval,
		PingTimeout:  c.opts.PingTimeout,
		Log:          c.opts.Log,
	})
	go func() {
		<-sess.Done()
		tc.fail(sess.Err())
		tc.Close()
	}()
	return tc, nil
}

// serveHTTP runs the runtime's handler for a request from the tunnel, turning a tunnelled
// upgrade request back into one the handler recognises.
func (c *Client) serveHTTP(w http.ResponseWriter, r *http.Request) {
	c.handlers.Add(1)
	defer c.handlers.Add(-1)
	if proto := r.Header.Get(wire.HeaderUpgrade); proto != "" {
		serveUpgrade(c.opts.Handler, w, r, proto)
		return
	}
	c.opts.Handler.ServeHTTP(w, r)
}

// trackedConn is a tunnel connection that tells when it is done: its session closes it when
// the peer goes away or stops answering pings.
type trackedConn struct {
	net.Conn
	once    sync.Once
	done    chan struct{}
	mu      sync.Mutex
	lastErr error
}

func newTrackedConn(c net.Conn) *trackedConn {
	return &trackedConn{Conn: c, done: make(chan struct{})}
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.fail(err)
	}
	return n, err
}

func (c *trackedConn) fail(err error) {
	c.mu.Lock()
	if c.lastErr == nil {
		c.lastErr = err
	}
	c.mu.Unlock()
}

func (c *trackedConn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastErr == nil {
		return errors.New("closed")
	}
	return c.lastErr
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

type tunnelAddr string

func (a tunnelAddr) Network() string { return "tunnel" }
func (a tunnelAddr) String() string  { return string(a) }

// errorMessage is the message of the control plane's JSON error body
// ({"error": {"code": …, "message": …}}), so that a refusal reads as the control plane said
// it ("runtime token of edge expired at …: rotate it with …"); any other body as it is.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(body))
}
