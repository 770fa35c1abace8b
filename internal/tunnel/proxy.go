package tunnel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// ErrNotConnected is the error (wrapped, with errdefs.ErrUnavailable) for a runtime that holds
// no tunnel connection to this replica or, with several replicas, to any other.
var ErrNotConnected = errors.New("runtime not connected")

// tunnelError is a failure to reach a runtime: errdefs.ErrUnavailable (and kind, when set)
// with its own status (502 or 504) and a message for the caller.
type tunnelError struct {
	status int
	msg    string
	kind   error
}

func (e *tunnelError) Error() string { return e.msg }

// HTTPStatus is the status a tunnel error answers with (errdefs.HTTPStatuser).
func (e *tunnelError) HTTPStatus() int { return e.status }
func (e *tunnelError) Unwrap() []error {
	if e.kind != nil {
		return []error{errdefs.ErrUnavailable, e.kind}
	}
	return []error{errdefs.ErrUnavailable}
}

func notConnected(name string) *tunnelError {
	return &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("runtime %s is not connected: its tunnel is down; retry when the runtime reconnects", name), kind: ErrNotConnected}
}

var errHeaderTimeout = errors.New("response header timeout")

// writeError answers err with the one error body: tunnel errors with their own status and
// unlogged (a runtime that is down is no server fault), everything else through httpx.WriteError.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var te *tunnelError
	if errors.As(err, &te) {
		errdefs.WriteHTTP(w, err, requestID(r))
		return
	}
	httpx.WriteError(w, r, s.log, err)
}

func requestID(r *http.Request) string {
	if id := httpx.RequestID(r.Context()); id != "" {
		return id
	}
	return r.Header.Get(wire.HeaderRequestID) // set on hops
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ProxyHandler serves /runtimes/{runtime}/… (Options.PathPrefix): it sends the request,
// with the prefix removed, to the runtime through its tunnel. {runtime} is a runtime's ID or
// its name in the caller's account (or whatever Options.Resolve accepts). Mount it at the
// prefix behind user authentication (httpx.Authenticate); every request is authorized with
// Options.Authorize before it goes anywhere.
func (s *Server) ProxyHandler() http.Handler { return http.HandlerFunc(s.serveProxy) }

func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request) {
	after, ok := strings.CutPrefix(r.URL.EscapedPath(), s.opts.PathPrefix)
	escRef, escRest, _ := strings.Cut(after, "/")
	ref, err := url.PathUnescape(escRef)
	if !ok || err != nil || ref == "" {
		s.writeError(w, r, fmt.Errorf("no runtime in path %q: use %s{runtime}/…: %w", r.URL.Path, s.opts.PathPrefix, errdefs.ErrNotFound))
		return
	}
	p, err := s.opts.Principal(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rt, err := s.resolve(r, p, ref)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.authorize(w, r, rt) {
		return
	}
	r, release := s.hold(r, rt)
	defer release()
	s.route(w, r, rt, p, "/"+escRest, s.opts.PathPrefix+escRef)
}

// hold serves r, once authorized for rt, with a context that ends when its caller loses access
// (Options.Hold). Everything the request leads to — the exchange through the tunnel or the hop,
// an upgraded connection — ends with it.
func (s *Server) hold(r *http.Request, rt Runtime) (*http.Request, func()) {
	if s.opts.Hold == nil {
		return r, func() {}
	}
	ctx, release := s.opts.Hold(r, rt)
	return r.WithContext(ctx), release
}

// HostRouter serves requests for {account}-{runtime}.{TunnelDomain} through that runtime's
// tunnel (the whole path) and hands every other request to next. Without a TunnelDomain it
// returns next. Put it behind user authentication, like ProxyHandler.
func (s *Server) HostRouter(next http.Handler) http.Handler {
	if s.opts.TunnelDomain == "" {
		return next
	}
	suffix := "." + s.opts.TunnelDomain
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		label, ok := strings.CutSuffix(host, suffix)
		if !ok || label == "" || strings.Contains(label, ".") {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.opts.Principal(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var rt Runtime
		if e := s.reg.lookupHost(label); e != nil {
			rt = e.rt
		} else if prt, _, ok := s.peers.lookupHost(label, time.Now()); ok {
			rt = prt
		} else {
			s.writeError(w, r, notConnected(label))
			return
		}
		if !s.authorize(w, r, rt) {
			return
		}
		r, release := s.hold(r, rt)
		defer release()
		s.route(w, r, rt, p, r.URL.EscapedPath(), "")
	})
}

func (s *Server) resolve(r *http.Request, p rbac.Principal, ref string) (Runtime, error) {
	if s.opts.Resolve != nil {
		return s.opts.Resolve(r, p, ref)
	}
	if e := s.reg.lookupID(ref); e != nil {
		return e.rt, nil
	}
	if e := s.reg.lookupName(p.AccountID, ref); e != nil {
		return e.rt, nil
	}
	now := time.Now()
	if rt, _, ok := s.peers.lookupID(ref, now); ok {
		return rt, nil
	}
	if rt, _, ok := s.peers.lookupName(p.AccountID, ref, now); ok {
		return rt, nil
	}
	return Runtime{}, notConnected(ref)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rt Runtime) bool {
	err := s.opts.Authorize(r, rt)
	if err == nil {
		return true
	}
	if s.opts.OnDenied != nil {
		s.opts.OnDenied(r, rt, err)
	}
	s.writeError(w, r, err)
	return false
}

// route sends an authorized request to rt: through a tunnel connection of this replica, or
// to the replica holding one.
func (s *Server) route(w http.ResponseWriter, r *http.Request, rt Runtime, p rbac.Principal, escPath, prefix string) {
	rid := httpx.RequestID(r.Context())
	if rid == "" {
		rid = newRequestID()
	}
	h := s.outHeader(r, p, rt, rid, prefix)
	if e := s.reg.lookupID(rt.ID); e != nil {
		s.forwardTunnel(w, r, rt, e, h, escPath)
		return
	}
	// A replica that refuses the connection is gone (killed: it could not withdraw its
	// announcement): forget it and try the next replica holding the runtime, since nothing
	// was sent.
	for range maxHopTries {
		_, addr, ok := s.peers.lookupID(rt.ID, time.Now())
		if !ok {
			break
		}
		if !s.forwardHop(w, r, rt, addr, h, escPath) {
			return
		}
		s.peers.drop(addr)
	}
	s.writeError(w, r, notConnected(rt.Name))
}

// hopHeaders are hop-by-hop headers: they describe one connection and are never forwarded.
var hopHeaders = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
}

// outHeader is the header sent to the runtime: the caller's, minus hop-by-hop headers, minus
// every X-Freshet-* header the caller sent, minus the caller's credentials unless
// ForwardCredentials, plus the identity the control plane vouches for.
func (s *Server) outHeader(r *http.Request, p rbac.Principal, rt Runtime, rid, prefix string) http.Header {
	h := make(http.Header, len(r.Header)+10)
	named := connectionTokens(r.Header)
	for k, vv := range r.Header {
		switch {
		case hopHeaders[k], named[k], strings.HasPrefix(k, wire.IdentityPrefix):
			if k == "Te" && len(vv) == 1 && vv[0] == "trailers" {
				h[k] = vv // allowed end to end (gRPC)
			}
			continue
		case !s.opts.ForwardCredentials && k == "Authorization":
			continue
		case !s.opts.ForwardCredentials && k == "Cookie":
			if c := withoutSessionCookies(r); c != "" {
				h[k] = []string{c}
			}
			continue
		}
		h[k] = vv
	}
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	// One array backs every value set here (one allocation instead of ten).
	vals := [...]string{p.UserID, p.Email, p.AccountID, string(p.Role), rid, rt.ID, httpx.ClientIP(r), r.Host, proto, prefix}
	vv := vals[:]
	set := func(i int, k string) { h[k] = vv[i : i+1 : i+1] }
	set(0, wire.HeaderUser)
	set(1, wire.HeaderEmail)
	set(2, wire.HeaderAccount)
	set(3, wire.HeaderRole)
	set(4, wire.HeaderRequestID)
	set(5, wire.HeaderRuntime)
	set(6, "X-Forwarded-For")
	set(7, "X-Forwarded-Host")
	set(8, "X-Forwarded-Proto")
	if prefix != "" {
		set(9, "X-Forwarded-Prefix")
	}
	return h
}

// connectionTokens are the headers a Connection header names (hop-by-hop by declaration).
func connectionTokens(h http.Header) map[string]bool {
	vv := h["Connection"]
	if len(vv) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, v := range vv {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				m[http.CanonicalHeaderKey(t)] = true
			}
		}
	}
	return m
}

func withoutSessionCookies(r *http.Request) string {
	var b strings.Builder
	for _, c := range r.Cookies() {
		if c.Name == httpx.SessionCookie || c.Name == httpx.CSRFCookie {
			continue
		}
		cs := (&http.Cookie{Name: c.Name, Value: c.Value, Quoted: c.Quoted}).String()
		if cs == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(cs)
	}
	return b.String()
}

// forwardTunnel sends the request over one of e's tunnel connections and streams the answer.
func (s *Server) forwardTunnel(w http.ResponseWriter, r *http.Request, rt Runtime, e *entry, h http.Header, escPath string) {
	upgrade := ""
	if r.ProtoMajor == 1 {
		upgrade = wire.IsUpgrade(r.Header)
	}
	out := &http.Request{
		Method:        r.Method,
		URL:           &url.URL{Scheme: "http", Host: "runtime.tunnel", RawQuery: r.URL.RawQuery},
		Header:        h,
		Host:          r.Host,
		ContentLength: r.ContentLength,
	}
	setPath(out.URL, escPath)
	var pr *io.PipeReader
	var pw *io.PipeWriter
	switch {
	case upgrade != "":
		// The tunnel carries no Upgrade: say so in a header and carry the client's raw bytes as the
		// request body once the runtime accepted.
		h[wire.HeaderUpgrade] = []string{upgrade}
		pr, pw = io.Pipe()
		out.Body, out.ContentLength = pr, -1
	case r.ContentLength != 0:
		out.Body = r.Body
		out.Trailer = r.Trailer
	}
	ctx := r.Context()
	var stopTimer func() bool
	if d := s.opts.ResponseHeaderTimeout; d > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stopTimer = time.AfterFunc(d, func() { cancel(errHeaderTimeout) }).Stop
	}
	out = out.WithContext(ctx)

	resp, tc, done, err := roundTrip(e, rt, out)
	defer done()
	if stopTimer != nil {
		stopTimer()
	}
	if tc == nil {
		s.writeError(w, r, err)
		return
	}
	if err != nil {
		if pw != nil {
			pw.Close()
		}
		s.roundTripFailed(w, r, ctx, rt, tc, err)
		return
	}
	if upgrade != "" {
		if resp.Header.Get(wire.HeaderRaw) != "" {
			s.pipeRaw(w, r, resp, pr, pw)
			return
		}
		pw.Close() // the runtime refused the upgrade: an ordinary answer
	}
	s.copyResponse(w, r, rt, resp)
}

// roundTrip sends out over one of e's live connections (see pick) and returns the
// connection it used (nil, with a not-connected error, when none is live). The connection
// counts the exchange as in flight until done is called.
func roundTrip(e *entry, rt Runtime, out *http.Request) (resp *http.Response, tc *tconn, done func(), err error) {
	tc = e.pick()
	if tc == nil {
		return nil, nil, func() {}, notConnected(rt.Name)
	}
	tc.inflight.Add(1)
	tc.served.Add(1)
	var once sync.Once
	done = func() { once.Do(func() { tc.inflight.Add(-1) }) }
	resp, err = tc.sess.RoundTrip(out)
	return resp, tc, done, err
}

// setPath sets u's path from an escaped path.
func setPath(u *url.URL, escPath string) {
	p, err := url.PathUnescape(escPath)
	if err != nil {
		p = escPath
	}
	u.Path = p
	if p != escPath {
		u.RawPath = escPath
	}
}

func (s *Server) roundTripFailed(w http.ResponseWriter, r *http.Request, ctx context.Context, rt Runtime, tc *tconn, err error) {
	if r.Context().Err() != nil {
		return // the caller went away; the runtime's handler saw its context cancelled
	}
	var te *tunnelError
	switch {
	case errors.Is(context.Cause(ctx), errHeaderTimeout):
		te = &tunnelError{status: http.StatusGatewayTimeout, msg: fmt.Sprintf("runtime %s did not answer within %s", rt.Name, s.opts.ResponseHeaderTimeout)}
	case tc != nil && tc.dead.Load():
		te = &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("the tunnel to runtime %s was lost while the request was in flight; retry when the runtime reconnects", rt.Name)}
	default:
		te = &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("runtime %s could not be reached through its tunnel: %v", rt.Name, err)}
	}
	s.log.Debug("tunnel request failed", logKeyRuntime, rt.Name, logKeyPath, r.URL.Path, logKeyReqID, requestID(r), logKeyErr, err)
	s.writeError(w, r, te)
}

// copyResponse writes the runtime's answer: headers minus hop-by-hop and tunnel headers,
// then the body as it arrives (flushed at once for event streams and bodies of unknown
// length), then trailers. A body cut short by a lost tunnel aborts the caller's connection,
// so a truncated body never looks complete.
func (s *Server) copyResponse(w http.ResponseWriter, r *http.Request, rt Runtime, resp *http.Response) {
	defer resp.Body.Close()
	if s.opts.OnAnswered != nil {
		s.opts.OnAnswered(r, rt, resp.StatusCode)
	}
	dst := w.Header()
	named := connectionTokens(resp.Header)
	for k, vv := range resp.Header {
		if hopHeaders[k] || named[k] || strings.HasPrefix(k, "X-Freshet-Tunnel-") {
			continue
		}
		dst[k] = vv
	}
	w.WriteHeader(resp.StatusCode)
	stream := resp.ContentLength < 0 || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	var rc *http.ResponseController
	if stream {
		rc = http.NewResponseController(w)
		rc.Flush()
	}
	pool := &bufPool
	if resp.ContentLength >= bigBufSize {
		pool = &bigBufPool
	}
	bp := pool.Get().(*[]byte)
	defer pool.Put(bp)
	buf := *bp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the caller went away; closing the body resets the stream
			}
			if stream {
				if rc.Flush() != nil {
					return
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if r.Context().Err() == nil {
				s.log.Warn("tunnel response cut short", logKeyRuntime, rt.Name, logKeyPath, r.URL.Path, logKeyReqID, requestID(r), logKeyErr, rerr)
			}
			panic(http.ErrAbortHandler)
		}
	}
	for k, vv := range resp.Trailer {
		dst[http.TrailerPrefix+k] = vv
	}
}

var (
	bufPool    = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}
	bigBufPool = sync.Pool{New: func() any { b := make([]byte, bigBufSize); return &b }}
)

// pipeRaw joins a caller's upgraded connection and the runtime's raw stream: the runtime's
// handler hijacked the stream and writes its own 101 head and then the new protocol.
func (s *Server) pipeRaw(w http.ResponseWriter, r *http.Request, resp *http.Response, pr *io.PipeReader, pw *io.PipeWriter) {
	defer resp.Body.Close()
	defer pr.Close()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		pw.CloseWithError(err)
		s.writeError(w, r, &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("cannot pass the upgrade to %s through: %v", r.Header.Get("Upgrade"), err)})
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{})
	// A hijacked connection outlives the request's context unless closed with it: the caller
	// may have lost access (Options.Hold).
	defer context.AfterFunc(r.Context(), func() { conn.Close() })()
	up := make(chan struct{})
	go func() {
		defer close(up)
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		_, err := io.CopyBuffer(pw, brw.Reader, *bp)
		pw.CloseWithError(err) // EOF from the caller ends the request stream
	}()
	bp := bufPool.Get().(*[]byte)
	io.CopyBuffer(conn, onlyReader{resp.Body}, *bp)
	bufPool.Put(bp)
	conn.Close()
	resp.Body.Close()
	pr.Close()
	<-up
}

// pipe101 joins a caller's upgraded connection and a 101 answer from another replica.
func (s *Server) pipe101(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	defer resp.Body.Close()
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		s.writeError(w, r, &tunnelError{status: http.StatusBadGateway, msg: "the replica holding the tunnel answered 101 without a connection"})
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.writeError(w, r, &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("cannot pass the upgrade to %s through: %v", r.Header.Get("Upgrade"), err)})
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{})
	defer context.AfterFunc(r.Context(), func() { conn.Close(); rwc.Close() })() // as in pipeRaw
	fmt.Fprintf(brw, "HTTP/1.1 %s\r\n", resp.Status)
	resp.Header.Write(brw)
	brw.WriteString("\r\n")
	if brw.Flush() != nil {
		return
	}
	up := make(chan struct{})
	go func() {
		defer close(up)
		io.Copy(rwc, brw.Reader)
		rwc.Close()
	}()
	io.Copy(conn, onlyReader{rwc})
	conn.Close()
	rwc.Close()
	<-up
}

// onlyReader hides a reader's other methods so io.Copy uses the buffer it is given.
type onlyReader struct{ io.Reader }
