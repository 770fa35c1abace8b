package tunnel

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// Headers of a request forwarded between replicas. They start with wire.IdentityPrefix, so a
// caller can never send them: every replica strips such headers from callers.
const (
	headerHopFrom = "X-Freshet-Tunnel-Hop"           // the forwarding replica's ID
	headerHopTime = "X-Freshet-Tunnel-Hop-Time"      // Unix seconds when it was signed
	headerHopSig  = "X-Freshet-Tunnel-Hop-Signature" // hex HMAC-SHA256, see hopSignature
)

// identityHeaders are the headers a hop signs and the receiving replica forwards as they are.
var identityHeaders = []string{wire.HeaderUser, wire.HeaderEmail, wire.HeaderAccount, wire.HeaderRole, wire.HeaderRequestID, wire.HeaderRuntime}

// hopSignature is HMAC-SHA256 over the forwarding replica, the time, the method, the
// runtime, the target (escaped path and query) and the identity headers, NUL-separated.
func hopSignature(secret []byte, from, ts, method, runtimeID, target string, h http.Header) string {
	m := hmac.New(sha256.New, secret)
	for _, v := range []string{from, ts, method, runtimeID, target} {
		m.Write([]byte(v))
		m.Write([]byte{0})
	}
	for _, k := range identityHeaders {
		m.Write([]byte(h.Get(k)))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// maxHopTries bounds the replicas one request is offered to when they refuse connections.
const maxHopTries = 3

// forwardHop sends an authorized request to the replica at addr, which holds rt's tunnel.
// The hop is plain HTTP/1.1 so that upgrades pass through it as they are. It reports refused
// (and answers nothing) when the replica refused the connection before any of the request was
// sent: the caller may offer the request to another replica.
func (s *Server) forwardHop(w http.ResponseWriter, r *http.Request, rt Runtime, addr string, h http.Header, escPath string) (refused bool) {
	if r.ProtoMajor == 1 {
		if proto := wire.IsUpgrade(r.Header); proto != "" {
			h["Connection"] = []string{"Upgrade"}
			h["Upgrade"] = []string{proto}
		}
	}
	var body *hopBody
	var out *http.Request
	var err error
	if r.ContentLength != 0 {
		// The transport closes the body when the connection fails; the request's own body
		// stays open for the next replica, which it may go to if none of it was read.
		body = &hopBody{r: r.Body}
		out, err = s.hopRequest(r.Context(), r.Method, rt, addr, h, escPath, r.URL.RawQuery, body, r.ContentLength)
	} else {
		out, err = s.hopRequest(r.Context(), r.Method, rt, addr, h, escPath, r.URL.RawQuery, nil, r.ContentLength)
	}
	if err != nil {
		s.writeError(w, r, err)
		return false
	}
	resp, err := s.hop.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			return false
		}
		if connectionRefused(err) && (body == nil || !body.read) {
			s.log.Warn("tunnel hop refused: the replica is gone; trying another", logKeyRuntime, rt.Name, logKeyReplica, addr, logKeyErr, err)
			return true
		}
		s.writeError(w, r, s.hopFailed(rt, addr, err))
		return false
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		s.pipe101(w, r, resp)
		return
	}
	s.copyResponse(w, r, rt, resp)
	return false
}

// hopBody is a request's body as one hop reads it: Close does not close the request's body,
// and read says whether any of it was read.
type hopBody struct {
	r    io.Reader
	read bool
}

func (b *hopBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.read = true
	}
	return n, err
}

func (b *hopBody) Close() error { return nil }

// connectionRefused reports a hop that failed to connect: the replica got none of it.
func connectionRefused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial"
}

// hopRequest makes the signed request that forwards a request for rt, with header h (the
// identity set), to the replica at addr.
func (s *Server) hopRequest(ctx context.Context, method string, rt Runtime, addr string, h http.Header, escPath, rawQuery string, body io.ReadCloser, length int64) (*http.Request, error) {
	target := escPath
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	u, err := url.Parse(addr + s.opts.HopPath + url.PathEscape(rt.ID) + target)
	if err != nil {
		return nil, fmt.Errorf("tunnel hop to %s: %w", addr, err)
	}
	out := &http.Request{
		Method:        method,
		URL:           u,
		Header:        h,
		Host:          u.Host,
		ContentLength: length,
		Body:          body,
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	h[headerHopFrom] = []string{s.opts.ReplicaID}
	h[headerHopTime] = []string{ts}
	h[headerHopSig] = []string{hopSignature(s.opts.HopSecret, s.opts.ReplicaID, ts, method, rt.ID, target, h)}
	return out.WithContext(ctx), nil
}

func (s *Server) hopFailed(rt Runtime, addr string, err error) error {
	s.log.Warn("tunnel hop failed", logKeyRuntime, rt.Name, logKeyReplica, addr, logKeyErr, err)
	return &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("runtime %s is connected to another control-plane replica, which could not be reached: %v", rt.Name, err)}
}

// HopHandler takes requests other replicas forward to the runtimes whose tunnels this
// replica holds. Mount it at Options.HopPath, outside user authentication: the callers are
// replicas, which sign each request with the shared HopSecret (the caller was authenticated
// and authorized by the replica it reached). A hop is never forwarded again.
func (s *Server) HopHandler() http.Handler { return http.HandlerFunc(s.serveHop) }

func (s *Server) serveHop(w http.ResponseWriter, r *http.Request) {
	if len(s.opts.HopSecret) == 0 {
		s.writeError(w, r, fmt.Errorf("this replica takes no forwarded tunnel requests: %w", errdefs.ErrNotFound))
		return
	}
	after, ok := strings.CutPrefix(r.URL.EscapedPath(), s.opts.HopPath)
	escID, escRest, _ := strings.Cut(after, "/")
	id, err := url.PathUnescape(escID)
	if !ok || err != nil || id == "" {
		s.writeError(w, r, fmt.Errorf("no runtime in hop path %q: %w", r.URL.Path, errdefs.ErrNotFound))
		return
	}
	target := "/" + escRest
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	from, ts := r.Header.Get(headerHopFrom), r.Header.Get(headerHopTime)
	sec, err := strconv.ParseInt(ts, 10, 64)
	skew := time.Since(time.Unix(sec, 0))
	want := hopSignature(s.opts.HopSecret, from, ts, r.Method, id, target, r.Header)
	if err != nil || skew > hopMaxSkew || skew < -hopMaxSkew || !hmac.Equal([]byte(want), []byte(r.Header.Get(headerHopSig))) {
		s.log.Warn("tunnel hop refused: bad signature", logKeyRemote, r.RemoteAddr, logKeyReplica, from)
		s.writeError(w, r, fmt.Errorf("tunnel hop: missing, stale or wrong signature: %w", errdefs.ErrForbidden))
		return
	}
	e := s.reg.lookupID(id)
	if e == nil {
		s.writeError(w, r, &tunnelError{status: http.StatusBadGateway, msg: fmt.Sprintf("runtime %s is not connected to replica %s (any more); retry", id, s.opts.ReplicaID)})
		return
	}
	h := make(http.Header, len(r.Header))
	named := connectionTokens(r.Header)
	for k, vv := range r.Header {
		if hopHeaders[k] || named[k] || strings.HasPrefix(k, wire.IdentityPrefix) {
			continue
		}
		h[k] = vv
	}
	for _, k := range identityHeaders {
		h[k] = []string{r.Header.Get(k)}
	}
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
		r.Host = fh
	}
	s.forwardTunnel(w, r, e.rt, e, h, "/"+escRest)
}
