package client

import (
	"context"
	"net/http"

	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

type viaTunnelKey struct{}

// ViaTunnel reports whether ctx belongs to a request that arrived through the tunnel.
func ViaTunnel(ctx context.Context) bool {
	v, _ := ctx.Value(viaTunnelKey{}).(bool)
	return v
}

// Identity is who the control plane says is calling. The control plane authenticated and
// authorized the caller before it forwarded the request, removed any X-Freshet-* header the
// caller sent, and set these; only the control plane can send requests on the tunnel, which
// the runtime itself dialed and authenticated with TLS.
type Identity struct {
	UserID    string
	Email     string
	AccountID string
	Role      string // viewer, member or admin
	RequestID string // the control plane's request ID, for logs and audit
	RuntimeID string // the runtime the request was routed to
}

// IdentityOf returns the caller of a request that came through the tunnel. ok is false for
// requests that did not (those that reached the app-proxy through its ingress, say): their
// X-Freshet-* headers prove nothing and must not be trusted.
func IdentityOf(r *http.Request) (id Identity, ok bool) {
	if !ViaTunnel(r.Context()) {
		return Identity{}, false
	}
	h := r.Header
	id = Identity{
		UserID:    h.Get(wire.HeaderUser),
		Email:     h.Get(wire.HeaderEmail),
		AccountID: h.Get(wire.HeaderAccount),
		Role:      h.Get(wire.HeaderRole),
		RequestID: h.Get(wire.HeaderRequestID),
		RuntimeID: h.Get(wire.HeaderRuntime),
	}
	return id, id.AccountID != ""
}
