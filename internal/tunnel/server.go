// Package tunnel is the control plane's end of the runtime tunnel: how clients reach a
// runtime that has no ingress. The runtime dials the control plane's normal HTTP port and
// upgrades the connection with its token (ConnectHandler); the control plane authenticates the
// token before anything else exists for that connection, then sends requests to the runtime
// on the connection the runtime dialed, in the framed protocol of package wire (the runtime
// answers them: the roles of HTTP are reversed on that connection). ProxyHandler publishes
// each connected runtime at /runtimes/{runtime}/… (and, with a tunnel domain, at
// {account}-{runtime}.{domain}): it authenticates and authorizes every request, forwards the
// caller's identity in headers only the control plane can set, streams bodies both ways,
// passes protocol upgrades (WebSocket) through, propagates cancellation, and answers 502 with
// the standard error body while the runtime is not connected. A runtime may hold several
// connections; requests fill them in order, up to spillAt in flight each.
//
// With several control-plane replicas, each announces the runtimes it holds over a Presence
// (NATS core subjects in production) and a request that lands on a replica without the
// runtime's tunnel is forwarded to the replica that holds it (HopHandler), signed with a
// secret the replicas share.
//
// The runtime's end is internal/tunnel/client; the protocol both share is internal/tunnel/wire.
// See docs/tunnel.md.
package tunnel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// Defaults of Options.
const (
	// DefaultPathPrefix is where ProxyHandler publishes runtimes.
	DefaultPathPrefix = "/runtimes/"
	// DefaultHopPath is where HopHandler takes requests forwarded by other replicas.
	DefaultHopPath = "/internal/tunnel/hop/"
	// DefaultMaxConnsPerRuntime bounds the tunnel connections one runtime may hold.
	DefaultMaxConnsPerRuntime = 16
	// DefaultPresenceInterval is how often a replica re-announces the runtimes it holds.
	DefaultPresenceInterval = 2 * time.Second
	// presenceTTLFactor: an announcement expires after this many intervals without renewal.
	presenceTTLFactor = 3
	// MinHopSecret is the shortest accepted HopSecret.
	MinHopSecret = 32
	// hopMaxSkew bounds the clock difference between replicas a signed hop tolerates.
	hopMaxSkew = time.Minute
	// copyBufSize is the buffer of body copies; bodies of at least bigBufSize bytes get a
	// buffer that large, so that a large body costs few reads and writes.
	copyBufSize = 32 << 10
	bigBufSize  = 256 << 10
)

// Log attribute keys.
const (
	logKeyRuntime = "runtime"
	logKeyAccount = "account"
	logKeyConns   = "conns"
	logKeyRemote  = "remote"
	logKeyErr     = "err"
	logKeyReplica = "replica"
	logKeyPath    = "path"
	logKeyReqID   = "request_id"
)

// Runtime is the runtime a tunnel belongs to, as the control plane knows it.
type Runtime struct {
	ID        string `json:"id"`
	AccountID string `json:"accountId"`
	// Account is the account's name (slug), used only for host routing:
	// {Account}-{Name}.{TunnelDomain}. Empty disables host routing for the runtime.
	Account string `json:"account,omitempty"`
	Name    string `json:"name"`
}

// HostLabel is the runtime's label under the tunnel domain ("" when Account is empty).
func (rt Runtime) HostLabel() string {
	if rt.Account == "" {
		return ""
	}
	return strings.ToLower(rt.Account + "-" + rt.Name)
}

// Options configure a Server.
type Options struct {
	// Authenticate resolves a runtime token to its runtime. It runs before anything exists
	// for the connection: a token it refuses never gets a connection registered. Errors
	// wrapping errdefs.ErrUnauthenticated answer 401. Required.
	Authenticate func(ctx context.Context, token string) (Runtime, error)
	// Authorize decides whether the caller of r (see Principal) may reach rt; it runs for
	// every proxied request. The control plane checks that the user belongs to the runtime's
	// account with a sufficient role. Errors map to status codes as everywhere in the API
	// (errdefs.ErrForbidden → 403). Required.
	Authorize func(r *http.Request, rt Runtime) error
	// Principal returns the authenticated caller of a proxied request (default: the principal
	// httpx.Authenticate put in the request context). Its identity is what the runtime sees.
	Principal func(r *http.Request) (rbac.Principal, error)
	// Hold optionally watches the caller's access while a proxied request is served (an event
	// stream or a WebSocket may stay open for hours): it returns the context to serve r with,
	// which ends when the caller may no longer reach rt, and release, called when the request is
	// done. The control plane passes httpx.Access.Hold. Without it a request is authorized once,
	// when it starts.
	Hold func(r *http.Request, rt Runtime) (ctx context.Context, release func())
	// Resolve optionally turns the {runtime} of /runtimes/{runtime}/… into a runtime from
	// the control plane's records (so an unknown name is 404 and a disconnected runtime is
	// still authorized before the 502). Without it, {runtime} is a connected runtime's ID or
	// its name in the caller's account.
	Resolve func(r *http.Request, p rbac.Principal, ref string) (Runtime, error)

	// OnRejected is called for every refused tunnel handshake (bad or missing token, too
	// many connections), for audit. It must not block.
	OnRejected func(r *http.Request, err error)
	// OnDenied is called when Authorize refused a proxied request, for audit. It must not block.
	OnDenied func(r *http.Request, rt Runtime, err error)
	// OnAnswered is called when the runtime answered a proxied request, with the status,
	// before the body is copied (for audit of the changes made through the tunnel). It must
	// not block.
	OnAnswered func(r *http.Request, rt Runtime, status int)
	// OnConnect and OnDisconnect are called when a runtime's tunnel connections on this
	// replica change, with the count after the change (0: disconnected from this replica).
	// They must not block.
	OnConnect, OnDisconnect func(rt Runtime, conns int)

	// Log receives connection events and proxy errors (nil discards them).
	Log *slog.Logger
	// PathPrefix is where ProxyHandler is mounted (default DefaultPathPrefix).
	PathPrefix string
	// TunnelDomain enables host routing: {account}-{runtime}.{TunnelDomain} (see HostRouter).
	TunnelDomain string
	// MaxConnsPerRuntime bounds one runtime's connections (default DefaultMaxConnsPerRuntime).
	MaxConnsPerRuntime int
	// ForwardCredentials forwards the caller's Authorization header and Freshet session
	// cookies to the runtime. By default they are removed: the runtime learns who is calling
	// from the identity headers and never holds a user's credentials.
	ForwardCredentials bool
	// ResponseHeaderTimeout bounds the wait for a runtime's response headers (504 after it);
	// 0 means no limit (long polls and event streams wait as long as the caller does).
	ResponseHeaderTimeout time.Duration
	// PingInterval and PingTimeout: a silent tunnel connection is pinged after PingInterval
	// and dropped when the answer takes longer than PingTimeout (defaults wire.PingInterval
	// and wire.PingTimeout).
	PingInterval, PingTimeout time.Duration

	// Presence connects the replicas; nil means a single replica. Run must run when set.
	Presence Presence
	// ReplicaID names this replica (default: random).
	ReplicaID string
	// AdvertiseURL is this replica's base URL as the other replicas reach it (required with
	// Presence), e.g. http://10.0.0.5:8080. HopHandler must be mounted there at HopPath.
	AdvertiseURL string
	// HopSecret signs requests and announcements between replicas (required with Presence,
	// at least MinHopSecret bytes, the same on every replica).
	HopSecret []byte
	// HopPath is where HopHandler is mounted (default DefaultHopPath).
	HopPath string
	// PresenceInterval is how often this replica re-announces its runtimes (default
	// DefaultPresenceInterval); an announcement expires after three intervals.
	PresenceInterval time.Duration
}

// Validate reports every invalid field, naming it, its value and what would be valid.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, v any, valid string) {
		errs = append(errs, errdefs.Invalid(field, fmt.Sprint(v), valid))
	}
	if o.Authenticate == nil {
		bad("Authenticate", "nil", "is required: it resolves runtime tokens")
	}
	if o.Authorize == nil {
		bad("Authorize", "nil", "is required: it decides who may reach a runtime")
	}
	if o.PathPrefix != "" && (!strings.HasPrefix(o.PathPrefix, "/") || !strings.HasSuffix(o.PathPrefix, "/")) {
		bad("PathPrefix", o.PathPrefix, "must start and end with / (like /runtimes/)")
	}
	if o.HopPath != "" && (!strings.HasPrefix(o.HopPath, "/") || !strings.HasSuffix(o.HopPath, "/")) {
		bad("HopPath", o.HopPath, "must start and end with / (like /internal/tunnel/hop/)")
	}
	if o.MaxConnsPerRuntime < 0 {
		bad("MaxConnsPerRuntime", o.MaxConnsPerRuntime, "must not be negative (0 means 16)")
	}
	if o.ResponseHeaderTimeout < 0 || o.PingInterval < 0 || o.PingTimeout < 0 || o.PresenceInterval < 0 {
		bad("ResponseHeaderTimeout/PingInterval/PingTimeout/PresenceInterval", "negative", "durations must not be negative (0 means the default)")
	}
	if strings.Contains(o.TunnelDomain, "/") || strings.HasPrefix(o.TunnelDomain, ".") {
		bad("TunnelDomain", o.TunnelDomain, "must be a DNS name like tunnel.example.com")
	}
	if o.Presence != nil {
		if u, err := url.Parse(o.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("AdvertiseURL", o.AdvertiseURL, "must be this replica's http(s) base URL as other replicas reach it")
		}
		if len(o.HopSecret) < MinHopSecret {
			bad("HopSecret", fmt.Sprintf("%d bytes", len(o.HopSecret)), fmt.Sprintf("must be at least %d bytes, the same on every replica", MinHopSecret))
		}
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Principal == nil {
		o.Principal = func(r *http.Request) (rbac.Principal, error) { return httpx.Principal(r.Context()) }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.PathPrefix == "" {
		o.PathPrefix = DefaultPathPrefix
	}
	if o.HopPath == "" {
		o.HopPath = DefaultHopPath
	}
	if o.MaxConnsPerRuntime == 0 {
		o.MaxConnsPerRuntime = DefaultMaxConnsPerRuntime
	}
	if o.PingInterval == 0 {
		o.PingInterval = wire.PingInterval
	}
	if o.PingTimeout == 0 {
		o.PingTimeout = wire.PingTimeout
	}
	if o.PresenceInterval == 0 {
		o.PresenceInterval = DefaultPresenceInterval
	}
	if o.ReplicaID == "" {
		var b [6]byte
		rand.Read(b[:])
		o.ReplicaID = hex.EncodeToString(b[:])
	}
	o.AdvertiseURL = strings.TrimSuffix(o.AdvertiseURL, "/")
	o.TunnelDomain = strings.ToLower(strings.TrimSuffix(o.TunnelDomain, "."))
	return o
}

// Server is the control plane's tunnel server. It is safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	hop  *http.Transport // forwards requests to other replicas

	reg     registry
	peers   peerTable
	changed chan struct{} // the runtimes held here changed: announce

	nextConnID atomic.Uint64
	closed     atomic.Bool
	closeOnce  sync.Once
	runOnce    sync.Once
}

// NewServer validates opts and returns a Server.
func NewServer(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	s := &Server{
		opts:    opts,
		log:     opts.Log.With("component", "tunnel"),
		reg:     newRegistry(),
		peers:   newPeerTable(),
		changed: make(chan struct{}, 1),
	}
	s.hop = &http.Transport{
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   false, // upgrades (WebSocket) need HTTP/1.1 between replicas
	}
	return s, nil
}

// ConnectHandler accepts runtimes' tunnel connections. Mount it at wire.ConnectPath, outside
// user authentication: the bearer token it reads is a runtime token, which it resolves with
// Options.Authenticate. The connection must be HTTP/1.1 (it is hijacked).
func (s *Server) ConnectHandler() http.Handler { return http.HandlerFunc(s.serveConnect) }

func (s *Server) serveConnect(w http.ResponseWriter, r *http.Request) {
	refuse := func(err error) {
		if s.opts.OnRejected != nil {
			s.opts.OnRejected(r, err)
		}
		if errors.Is(err, errdefs.ErrUnauthenticated) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="freshet-tunnel"`)
		}
		s.log.Warn("tunnel handshake refused", logKeyRemote, httpx.ClientIP(r), logKeyErr, err)
		httpx.WriteError(w, r, s.log, err)
	}
	if s.closed.Load() {
		httpx.WriteError(w, r, s.log, fmt.Errorf("tunnel server is shutting down: %w", errdefs.ErrUnavailable))
		return
	}
	if r.Method != http.MethodGet || r.ProtoMajor != 1 || !strings.EqualFold(wire.IsUpgrade(r.Header), wire.Protocol) {
		refuse(errdefs.Invalid("Upgrade", r.Header.Get("Upgrade"), fmt.Sprintf("this endpoint takes only an HTTP/1.1 GET with \"Connection: Upgrade\" and \"Upgrade: %s\" from a runtime", wire.Protocol)))
		return
	}
	token := bearer(r)
	if token == "" {
		refuse(fmt.Errorf("tunnel handshake without \"Authorization: Bearer <runtime token>\": %w", errdefs.ErrUnauthenticated))
		return
	}
	rt, err := s.opts.Authenticate(r.Context(), token)
	if err != nil {
		refuse(fmt.Errorf("runtime token: %w", err))
		return
	}
	if v := r.Header.Get(wire.HeaderVersion); v != wire.Version {
		refuse(errdefs.Invalid(wire.HeaderVersion, v, fmt.Sprintf("this control plane speaks tunnel protocol %s; run a runtime of the same Freshet release", wire.Version)))
		return
	}
	if rt.ID == "" || rt.AccountID == "" || rt.Name == "" {
		httpx.WriteError(w, r, s.log, fmt.Errorf("tunnel: Authenticate returned a runtime without ID, account or name: %+v", rt))
		return
	}
	if n := s.reg.count(rt.ID); n >= s.opts.MaxConnsPerRuntime {
		refuse(fmt.Errorf("runtime %s already holds %d tunnel connections, the most allowed: %w", rt.Name, n, errdefs.ErrRateLimited))
		return
	}
	raw, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		httpx.WriteError(w, r, s.log, fmt.Errorf("tunnel: hijack the handshake connection: %w", err))
		return
	}
	raw.SetDeadline(time.Time{}) // clear the HTTP server's timeouts: the tunnel lives on
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + wire.Protocol + "\r\n\r\n")
	if err := brw.Flush(); err != nil {
		raw.Close()
		return
	}
	tc := &tconn{
		Conn:   wire.BufferedConn(raw, brw.Reader),
		s:      s,
		id:     s.nextConnID.Add(1),
		index:  r.Header.Get(wire.HeaderConnIndex),
		remote: httpx.ClientIP(r),
		since:  time.Now(),
	}
	tc.sess = wire.NewClientSession(tc, wire.Config{PingInterval: s.opts.PingInterval, PingTimeout: s.opts.PingTimeout, Log: s.log})
	n, ok := s.reg.add(rt, tc)
	if !ok {
		tc.sess.Close()
		return
	}
	if s.closed.Load() { // Close ran while we registered
		tc.sess.Close()
		return
	}
	s.log.Info("runtime connected", logKeyRuntime, rt.Name, logKeyAccount, rt.AccountID, logKeyConns, n, logKeyRemote, tc.remote)
	s.announceChanged()
	if s.opts.OnConnect != nil {
		s.opts.OnConnect(rt, n)
	}
}

func bearer(r *http.Request) string {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// drop forgets a dead connection.
func (s *Server) drop(tc *tconn) {
	rt, n, ok := s.reg.remove(tc)
	if !ok {
		return
	}
	s.log.Info("runtime connection closed", logKeyRuntime, rt.Name, logKeyAccount, rt.AccountID, logKeyConns, n, logKeyErr, tc.err())
	s.announceChanged()
	if s.opts.OnDisconnect != nil {
		s.opts.OnDisconnect(rt, n)
	}
}

func (s *Server) announceChanged() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// ConnStatus describes one tunnel connection.
type ConnStatus struct {
	ID       uint64
	Index    string // the runtime's index for it
	Remote   string // the runtime's address
	Since    time.Time
	InFlight int64  // requests in flight now
	Served   uint64 // requests sent on it so far
}

// RuntimeStatus describes a runtime connected to this replica.
type RuntimeStatus struct {
	Runtime Runtime
	Conns   []ConnStatus
}

// Connected returns the runtimes connected to this replica.
func (s *Server) Connected() []RuntimeStatus {
	return s.reg.status()
}

// Conns returns how many tunnel connections runtime id holds on this replica.
func (s *Server) Conns(id string) int { return s.reg.count(id) }

// Close drops every tunnel connection (the runtimes reconnect, to another replica if this one
// is going away) and stops forwarding. It does not stop Run; cancel Run's context for that.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		for _, tc := range s.reg.all() {
			tc.sess.Close()
			tc.Close()
		}
		s.hop.CloseIdleConnections()
	})
	return nil
}

// tconn is one runtime connection: it tells the server when it dies, which it learns from
// the session's read loop the moment the runtime goes away (or a ping goes unanswered).
type tconn struct {
	net.Conn
	s        *Server
	e        *entry // set when registered, under registry.mu
	sess     *wire.Session
	id       uint64
	index    string
	remote   string
	since    time.Time
	inflight atomic.Int64
	served   atomic.Uint64
	dead     atomic.Bool

	errMu   sync.Mutex
	lastErr error
}

func (c *tconn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.die(err)
	}
	return n, err
}

func (c *tconn) Close() error {
	err := c.Conn.Close()
	c.die(net.ErrClosed)
	return err
}

func (c *tconn) die(err error) {
	c.errMu.Lock()
	if c.lastErr == nil {
		c.lastErr = err
	}
	c.errMu.Unlock()
	if c.dead.CompareAndSwap(false, true) {
		c.s.drop(c)
	}
}

func (c *tconn) err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.lastErr
}

// registry holds the runtimes connected to this replica.
type registry struct {
	mu     sync.RWMutex
	byID   map[string]*entry
	byName map[nameKey]*entry
	byHost map[string]*entry
}

type nameKey struct{ account, name string }

type entry struct {
	rt    Runtime                  // never changes
	conns atomic.Pointer[[]*tconn] // replaced, never changed in place, under registry.mu
}

func newRegistry() registry {
	return registry{byID: map[string]*entry{}, byName: map[nameKey]*entry{}, byHost: map[string]*entry{}}
}

// add registers tc for rt and returns the runtime's connection count; false when tc died
// before it could be registered.
func (g *registry) add(rt Runtime, tc *tconn) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if tc.dead.Load() {
		return 0, false
	}
	var conns []*tconn
	e := g.byID[rt.ID]
	if e != nil {
		conns = append(conns, *e.conns.Load()...)
	}
	conns = append(conns, tc)
	if e == nil || e.rt != rt {
		// A new runtime, or one renamed since its other connections came up: entries are
		// immutable but for their connection list, so that readers need no lock.
		if e != nil {
			g.unindex(e)
		}
		e = &entry{rt: rt}
		g.byID[rt.ID] = e
		g.byName[nameKey{rt.AccountID, rt.Name}] = e
		if l := rt.HostLabel(); l != "" {
			g.byHost[l] = e
		}
		for _, c := range conns {
			c.e = e
		}
	}
	e.conns.Store(&conns)
	tc.e = e
	return len(conns), true
}

func (g *registry) unindex(e *entry) {
	if g.byName[nameKey{e.rt.AccountID, e.rt.Name}] == e {
		delete(g.byName, nameKey{e.rt.AccountID, e.rt.Name})
	}
	if l := e.rt.HostLabel(); l != "" && g.byHost[l] == e {
		delete(g.byHost, l)
	}
}

func (g *registry) remove(tc *tconn) (Runtime, int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := tc.e
	if e == nil {
		return Runtime{}, 0, false
	}
	old := *e.conns.Load()
	for i, c := range old {
		if c != tc {
			continue
		}
		conns := append(append([]*tconn(nil), old[:i]...), old[i+1:]...)
		e.conns.Store(&conns)
		if len(conns) == 0 && g.byID[e.rt.ID] == e {
			delete(g.byID, e.rt.ID)
			g.unindex(e)
		}
		return e.rt, len(conns), true
	}
	return Runtime{}, 0, false
}

func (g *registry) count(id string) int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if e := g.byID[id]; e != nil {
		return len(*e.conns.Load())
	}
	return 0
}

func (g *registry) lookupID(id string) *entry {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.byID[id]
}

func (g *registry) lookupName(account, name string) *entry {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.byName[nameKey{account, name}]
}

func (g *registry) lookupHost(label string) *entry {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.byHost[label]
}

func (g *registry) runtimes() []Runtime {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Runtime, 0, len(g.byID))
	for _, e := range g.byID {
		out = append(out, e.rt)
	}
	return out
}

func (g *registry) all() []*tconn {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*tconn
	for _, e := range g.byID {
		out = append(out, *e.conns.Load()...)
	}
	return out
}

func (g *registry) status() []RuntimeStatus {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]RuntimeStatus, 0, len(g.byID))
	for _, e := range g.byID {
		st := RuntimeStatus{Runtime: e.rt}
		for _, c := range *e.conns.Load() {
			st.Conns = append(st.Conns, ConnStatus{ID: c.id, Index: c.index, Remote: c.remote, Since: c.since, InFlight: c.inflight.Load(), Served: c.served.Load()})
		}
		out = append(out, st)
	}
	return out
}

// spillAt is how many requests in flight a tunnel connection takes before pick moves on to
// the runtime's next connection. Filling one connection first lets each write and read on it
// carry many exchanges at once (fewer system calls per request than spreading them thin);
// the others stand by and take the overflow.
const spillAt = 8

// pick returns the first live connection of e with fewer than spillAt requests in flight
// (connections fill in order), else the least loaded live one; nil when none is live.
func (e *entry) pick() *tconn {
	conns := *e.conns.Load()
	var best *tconn
	var bestLoad int64
	for _, c := range conns {
		if c.dead.Load() {
			continue
		}
		l := c.inflight.Load()
		if l < spillAt {
			return c
		}
		if best == nil || l < bestLoad {
			best, bestLoad = c, l
		}
	}
	return best
}
