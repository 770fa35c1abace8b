// Package wire is the tunnel protocol shared by its two ends: the control plane's tunnel server
// (internal/tunnel) and the runtime's tunnel client (internal/tunnel/client). It holds the
// upgrade handshake's names, the headers the two ends exchange on proxied requests, and the
// framed protocol spoken after the handshake (Session): HTTP exchanges multiplexed on one
// connection, with per-exchange flow control, cancellation and keepalive, and writes batched
// across exchanges. It imports nothing from the control plane, so the runtime may link it.
package wire

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"time"
)

// Handshake. The runtime opens an ordinary HTTP/1.1 connection to the control plane's normal
// port (TLS or plain TCP) and sends
//
//	GET ConnectPath HTTP/1.1
//	Connection: Upgrade
//	Upgrade: Protocol
//	Authorization: Bearer <runtime token>
//	X-Freshet-Tunnel-Version: Version
//
// The control plane answers 101 Switching Protocols only after the token resolved to a runtime
// and the version is one it speaks; from then on both ends exchange frames (see frame.go): the
// control plane sends requests on the connection the runtime dialed, the runtime answers them.
const (
	// ConnectPath is where the control plane accepts tunnel connections.
	ConnectPath = "/api/v1/tunnel/connect"
	// Protocol is the Upgrade token of the handshake.
	Protocol = "freshet-tunnel"
	// Version is the protocol version both ends speak: 2 is the framed protocol of Session
	// (1, reverse HTTP/2, was never released).
	Version = "2"
	// HeaderVersion carries Version in the handshake.
	HeaderVersion = "X-Freshet-Tunnel-Version"
	// HeaderConnIndex tells which of the runtime's connections this is (diagnostics only).
	HeaderConnIndex = "X-Freshet-Tunnel-Conn"
	// HeaderRuntimeName is the name the runtime believes it has (diagnostics only: the token,
	// not this header, decides which runtime connected).
	HeaderRuntimeName = "X-Freshet-Tunnel-Runtime"
)

// Headers on proxied requests. The control plane removes every header starting with
// IdentityPrefix that a client sent, so anything the runtime sees under that prefix was set by
// the control plane.
const (
	// IdentityPrefix starts every header the control plane owns.
	IdentityPrefix = "X-Freshet-"
	// HeaderUser is the calling user's ID.
	HeaderUser = "X-Freshet-User"
	// HeaderEmail is the calling user's email.
	HeaderEmail = "X-Freshet-Email"
	// HeaderAccount is the calling user's account ID.
	HeaderAccount = "X-Freshet-Account"
	// HeaderRole is the calling user's role in the account (viewer, member, admin).
	HeaderRole = "X-Freshet-Role"
	// HeaderRequestID is the control plane's request ID, for correlating logs and audit.
	HeaderRequestID = "X-Freshet-Request-Id"
	// HeaderRuntime is the ID of the runtime the request was routed to.
	HeaderRuntime = "X-Freshet-Runtime"

	// HeaderUpgrade on a proxied request says the client asked for an HTTP/1.1 protocol
	// upgrade to this protocol (Connection and Upgrade are hop-by-hop headers and are not
	// forwarded). The request body is the client's raw byte stream from then on.
	HeaderUpgrade = "X-Freshet-Tunnel-Upgrade"
	// HeaderRaw on a response to an upgrade request says the runtime's handler hijacked the
	// connection: the response body is the raw byte stream the handler writes, starting with
	// its own "HTTP/1.1 101 Switching Protocols" head.
	HeaderRaw = "X-Freshet-Tunnel-Raw"
)

// Keepalive both ends use.
const (
	// PingInterval is how long a connection may be silent before an end pings it.
	PingInterval = 10 * time.Second
	// PingTimeout is how long an end waits for a ping's answer before dropping the
	// connection: a runtime that dies silently is marked disconnected within
	// PingInterval+PingTimeout.
	PingTimeout = 5 * time.Second
)

// IsUpgrade returns the protocol an HTTP/1.x request asks to upgrade to ("" when none).
func IsUpgrade(h http.Header) string {
	if !HeaderHasToken(h, "Connection", "upgrade") {
		return ""
	}
	return h.Get("Upgrade")
}

// HeaderHasToken reports whether the comma-separated header key contains token
// (case-insensitive).
func HeaderHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// BufferedConn returns c, or, when br holds bytes read ahead of the handshake's end, a conn
// whose reads return those bytes first.
func BufferedConn(c net.Conn, br *bufio.Reader) net.Conn {
	if br == nil || br.Buffered() == 0 {
		return c
	}
	b, _ := br.Peek(br.Buffered())
	return &prefixConn{Conn: c, prefix: append([]byte(nil), b...)}
}

type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
