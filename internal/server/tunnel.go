package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/tunnel"
)

// EnvTunnelHopSecret holds the secret replicas sign forwarded tunnel requests with. Set the
// same value (32 bytes or more) on every replica to forward requests for runtimes whose
// tunnel another replica holds; unset, a replica serves only its own tunnels.
const EnvTunnelHopSecret = "FRESHET_TUNNEL_HOP_SECRET"

func (s *Server) newTunnel(log *slog.Logger) (*tunnel.Server, error) {
	opts := tunnel.Options{
		Log: log,
		Authenticate: func(ctx context.Context, token string) (tunnel.Runtime, error) {
			rt, err := s.runtimes.Authenticate(ctx, token)
			if err != nil {
				return tunnel.Runtime{}, err
			}
			return tunnel.Runtime{ID: rt.ID, AccountID: rt.AccountID, Name: rt.Name}, nil
		},
		// Names resolve within the caller's account only: account B cannot even address A's runtimes.
		Resolve: func(r *http.Request, p rbac.Principal, ref string) (tunnel.Runtime, error) {
			rt, err := s.runtimes.Get(r.Context(), p, ref)
			if err != nil {
				// An attempt on a runtime the caller's account does not have is recorded there.
				e := audit.Start(r.Context(), p, "runtime.proxy", "runtime", ref)
				e.Detail("%s %s", r.Method, r.URL.Path)
				s.audit.Finish(r.Context(), e, fmt.Errorf("%w: %w", errdefs.ErrForbidden, err))
				return tunnel.Runtime{}, err
			}
			return tunnel.Runtime{ID: rt.ID, AccountID: rt.AccountID, Name: rt.Name}, nil
		},
		Authorize: func(r *http.Request, rt tunnel.Runtime) error {
			p, err := httpx.Principal(r.Context())
			if err != nil {
				return err
			}
			if p.AccountID != rt.AccountID {
				return fmt.Errorf("runtime %s: %w", rt.Name, errdefs.ErrNotFound)
			}
			if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
				return err
			}
			path := runtimePath(r, rt.Name, rt.ID)
			if err := s.authorizeAppProxy(r.Context(), p, rt.Name, r.Method, path); err != nil {
				return err
			}
			return s.checkAppProxyLimits(r, p, rt.ID, rt.Name, path)
		},
		// A WebSocket or event stream through the tunnel ends when its caller loses access.
		Hold: func(r *http.Request, rt tunnel.Runtime) (context.Context, func()) {
			path := runtimePath(r, rt.Name, rt.ID)
			return s.access.Hold(r, func(ctx context.Context, p rbac.Principal) error {
				if p.AccountID != rt.AccountID {
					return fmt.Errorf("runtime %s: %w", rt.Name, errdefs.ErrNotFound)
				}
				if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
					return err
				}
				return s.authorizeAppProxy(ctx, p, rt.Name, r.Method, path)
			})
		},
		OnDenied: func(r *http.Request, rt tunnel.Runtime, err error) {
			p, _ := httpx.Principal(r.Context())
			e := audit.Start(r.Context(), p, "runtime.proxy", "runtime", rt.ID)
			e.Account(rt.AccountID) // recorded in the runtime's account, where its admins look
			e.Detail("%s %s", r.Method, r.URL.Path)
			s.audit.Finish(r.Context(), e, err)
		},
		// Every change made through a runtime's app-proxy (a sync, a rollback, an app created)
		// is audited in the runtime's account; reads are not.
		OnAnswered: func(r *http.Request, rt tunnel.Runtime, status int) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return
			}
			p, err := httpx.Principal(r.Context())
			if err != nil {
				return // a request forwarded by another replica: that replica records it
			}
			e := audit.Start(r.Context(), p, "runtime.app-proxy", "runtime", rt.ID)
			e.Account(rt.AccountID)
			path := runtimePath(r, rt.Name, rt.ID)
			e.Detail("%s %s → %d (runtime %s)", r.Method, path, status, rt.Name)
			var result error
			switch {
			case status == http.StatusForbidden || status == http.StatusUnauthorized:
				result = fmt.Errorf("the runtime answered %d: %w", status, errdefs.ErrForbidden)
			case status >= 400:
				result = fmt.Errorf("the runtime answered %d", status)
			}
			s.audit.Finish(r.Context(), e, result)
		},
		// A runtime's own token refused (expired, replaced by a rotation) is recorded on the
		// runtime, where its admins see it (GET runtime, the web UI); the tunnel logs them all.
		OnRejected: func(r *http.Request, err error) {
			s.runtimes.RecordRefusal(r.Context(), err, httpx.ClientIP(r))
		},
		OnDisconnect: func(rt tunnel.Runtime, conns int) {
			if conns == 0 {
				if err := s.runtimes.MarkDisconnectedID(context.Background(), rt.AccountID, rt.ID, "its last tunnel connection closed"); err != nil {
					log.Warn("mark runtime disconnected", "runtime", rt.Name, "account", rt.AccountID, "err", err)
				}
			}
		},
	}
	if secret := os.Getenv(EnvTunnelHopSecret); secret != "" {
		if s.opts.AdvertiseURL == "" {
			return nil, errdefs.Invalid("advertise-url", "", "is required with "+EnvTunnelHopSecret+": the URL other replicas reach this one at")
		}
		id := make([]byte, 8)
		rand.Read(id)
		opts.Presence, opts.HopSecret, opts.ReplicaID = tunnel.NewNATSPresence(s.bus.Conn()), []byte(secret), hex.EncodeToString(id)
		opts.AdvertiseURL = s.opts.AdvertiseURL
	}
	return tunnel.NewServer(opts)
}

// runtimeTunnel adapts the tunnel server to what the runtimes domain consumes, so the domain
// depends on its own interface rather than on the tunnel package.
type runtimeTunnel struct{ t *tunnel.Server }

var _ runtimes.Tunnel = runtimeTunnel{}

func (a runtimeTunnel) Do(ctx context.Context, rt runtimes.TunnelRuntime, p rbac.Principal, req *http.Request) (*http.Response, error) {
	resp, err := a.t.Do(ctx, tunnel.Runtime{ID: rt.ID, AccountID: rt.AccountID, Name: rt.Name}, p, req)
	if errors.Is(err, tunnel.ErrNotConnected) {
		return nil, fmt.Errorf("%w: %w", runtimes.ErrNotConnected, err)
	}
	return resp, err
}
