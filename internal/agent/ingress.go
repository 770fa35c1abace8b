package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/events"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// ingressAuthTTL is how long a caller's token, checked with the control plane, is trusted
// before it is checked again: a revoked key stops working within it.
const ingressAuthTTL = 30 * time.Second

// caller is who a token belongs to, as the control plane says.
type caller struct {
	user, email, account, role string
	err                        error
	at                         time.Time
}

// ingressAuth authenticates requests that reach the app-proxy on the runtime's own ingress:
// they carry the caller's API key or session token ("Authorization: Bearer …"), which the
// runtime checks with the control plane (GET /api/v1/me, cached for ingressAuthTTL), and the
// caller must belong to the runtime's account. Identity headers the client sent are dropped
// and the checked identity set, as the control plane's tunnel does. Health and version
// answers need no token.
type ingressAuth struct {
	r    *Runtime
	hc   *http.Client
	ttl  time.Duration
	next http.Handler

	mu    sync.Mutex
	cache map[[32]byte]caller
}

func (r *Runtime) newIngressAuth(next http.Handler) *ingressAuth {
	ttl := r.opts.IngressAuthTTL
	if ttl <= 0 {
		ttl = ingressAuthTTL
	}
	return &ingressAuth{r: r, hc: &http.Client{Timeout: 10 * time.Second}, ttl: ttl, next: next, cache: map[[32]byte]caller{}}
}

// IngressHandler is what the runtime serves on its ingress (--listen). It is made once, so
// its token cache is shared.
func (r *Runtime) IngressHandler() http.Handler {
	r.ingressOnce.Do(func() { r.ingress = r.newIngressAuth(r.AppProxy) })
	return r.ingress
}

func (a *ingressAuth) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	for k := range req.Header {
		if strings.HasPrefix(k, wire.IdentityPrefix) {
			req.Header.Del(k)
		}
	}
	switch req.URL.Path {
	case "/app-proxy/healthz", "/app-proxy/api/version":
		a.next.ServeHTTP(w, req)
		return
	}
	if strings.HasPrefix(req.URL.Path, events.PathPrefix) && path.Clean(req.URL.Path) == req.URL.Path {
		// A git provider's webhook carries no API key: the event source verifies its
		// signature (or bearer authSecret) and refuses whatever it cannot verify.
		a.next.ServeHTTP(w, req)
		return
	}
	scheme, token, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		deny(w, fmt.Errorf("send your Freshet API key as Authorization: Bearer <key>: %w", errdefs.ErrUnauthenticated))
		return
	}
	c := a.check(req.Context(), token)
	if c.err != nil {
		deny(w, fmt.Errorf("%w: %w", c.err, errdefs.ErrUnauthenticated))
		return
	}
	if acc := a.r.Status().Account; acc == "" || c.account != acc {
		deny(w, fmt.Errorf("this runtime belongs to another account: %w", errdefs.ErrForbidden))
		return
	}
	req.Header.Set(wire.HeaderUser, c.user)
	req.Header.Set(wire.HeaderEmail, c.email)
	req.Header.Set(wire.HeaderAccount, c.account)
	req.Header.Set(wire.HeaderRole, c.role)
	req.Header.Del("Authorization") // the runtime has no use for the caller's key
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		a.next.ServeHTTP(w, req)
		return
	}
	// A change: the control plane never sees it, so the runtime reports it for the audit log.
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	a.next.ServeHTTP(sw, req)
	host, _, _ := strings.Cut(req.RemoteAddr, ":")
	if fwd := req.Header.Get("X-Forwarded-For"); fwd != "" {
		host, _, _ = strings.Cut(fwd, ",")
	}
	a.r.audits.add(runtimev1.AuditRecord{UserID: c.user, Email: c.email, Method: req.Method, Path: req.URL.Path, Status: sw.status,
		SourceIP: strings.TrimSpace(host), At: time.Now().UTC()})
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer (flushing streams).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// auditQueue sends the records of changes made on the ingress to the control plane in the
// background, in batches, retrying a few times; the caller never waits for it.
type auditQueue struct {
	send func(context.Context, []runtimev1.AuditRecord) error
	log  interface{ Warn(string, ...any) }
	ch   chan runtimev1.AuditRecord
}

func newAuditQueue(send func(context.Context, []runtimev1.AuditRecord) error, log interface{ Warn(string, ...any) }) *auditQueue {
	return &auditQueue{send: send, log: log, ch: make(chan runtimev1.AuditRecord, 1000)}
}

func (q *auditQueue) add(r runtimev1.AuditRecord) {
	select {
	case q.ch <- r:
	default:
		q.log.Warn("audit queue full: a change made on the ingress is not recorded", "method", r.Method, "path", r.Path, "user", r.Email)
	}
}

func (q *auditQueue) run(ctx context.Context) {
	for {
		var batch []runtimev1.AuditRecord
		select {
		case <-ctx.Done():
			return
		case r := <-q.ch:
			batch = append(batch, r)
		}
		for len(batch) < runtimev1.MaxAuditRecords {
			select {
			case r := <-q.ch:
				batch = append(batch, r)
				continue
			default:
			}
			break
		}
		wait := 500 * time.Millisecond
		for attempt := 1; ; attempt++ {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := q.send(sctx, batch)
			cancel()
			if err == nil {
				break
			}
			if attempt == 5 || ctx.Err() != nil {
				q.log.Warn("audit records of the ingress could not be sent; dropped", "records", len(batch), "err", err)
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait *= 2
		}
	}
}

// check asks the control plane who token belongs to, or answers from the cache.
func (a *ingressAuth) check(ctx context.Context, token string) caller {
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	c, ok := a.cache[key]
	a.mu.Unlock()
	if ok && time.Since(c.at) < a.ttl {
		return c
	}
	c = a.ask(ctx, token)
	c.at = time.Now()
	a.mu.Lock()
	if len(a.cache) > 10000 {
		clear(a.cache)
	}
	a.cache[key] = c
	a.mu.Unlock()
	return c
}

func (a *ingressAuth) ask(ctx context.Context, token string) caller {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(a.r.opts.Server, "/")+"/api/v1/me", nil)
	if err != nil {
		return caller{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.hc.Do(req)
	if err != nil {
		return caller{err: fmt.Errorf("the control plane could not check the token: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return caller{err: errors.New("the control plane does not accept this token")}
	}
	if resp.StatusCode != http.StatusOK {
		return caller{err: fmt.Errorf("the control plane answered %s checking the token", resp.Status)}
	}
	var me struct {
		User struct {
			ID    string `json:"id"`
			Email string `json:"email"`
		} `json:"user"`
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
		Role string `json:"role"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&me); err != nil {
		return caller{err: fmt.Errorf("the control plane's answer: %w", err)}
	}
	return caller{user: me.User.ID, email: me.User.Email, account: me.Account.ID, role: me.Role}
}

func deny(w http.ResponseWriter, err error) { errdefs.WriteHTTP(w, err, "") }
