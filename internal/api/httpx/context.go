package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"regexp"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// HeaderRequestID carries the request ID in requests and responses.
const HeaderRequestID = "X-Request-Id"

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyPrincipal
)

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// RequestID returns the request ID in ctx.
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(keyRequestID).(string)
	return s
}

// WithRequestID tags each request with an ID (the client's X-Request-Id when well-formed, or a
// new one), echoes it in the response, and records it and the client address for audit.
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if !requestIDRE.MatchString(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(HeaderRequestID, id)
		ctx := context.WithValue(r.Context(), keyRequestID, id)
		ctx = audit.WithMeta(ctx, audit.Meta{RequestID: id, SourceIP: ClientIP(r)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// ClientIP is the address the request came from. Forwarding headers are not trusted: behind a
// proxy, the proxy's address is recorded.
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// WithPrincipal returns ctx carrying the authenticated caller.
func WithPrincipal(ctx context.Context, p rbac.Principal) context.Context {
	return context.WithValue(ctx, keyPrincipal, p)
}

// Principal returns the authenticated caller, or ErrUnauthenticated.
func Principal(ctx context.Context) (rbac.Principal, error) {
	p, ok := ctx.Value(keyPrincipal).(rbac.Principal)
	if !ok || p.AccountID == "" {
		return rbac.Principal{}, errdefs.ErrUnauthenticated
	}
	return p, nil
}
