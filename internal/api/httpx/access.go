package httpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// Stream access. A request is authenticated once, before its handler runs; most answer within
// milliseconds, but a followed build log or a WebSocket proxied to a runtime stays open for as
// long as the client keeps it. Access ends such streams when their caller loses access — a key
// revoked or expired, a session ended, the user removed from the account or given a role that no
// longer allows the stream — at once when identity reports the change (Revoked), and otherwise
// within AccessRecheckInterval, by resolving the stream's credential again.
const (
	// AccessRecheckInterval is how often the credential of every open stream is resolved again:
	// the backstop for what no revocation event reports (a key or session that expires).
	AccessRecheckInterval = 5 * time.Second
	// accessCheckTimeout bounds the re-check of one credential.
	accessCheckTimeout = 5 * time.Second
	// accessMaxUnconfirmed is how long a stream stays open while its access cannot be checked
	// (the database does not answer): after that it ends, as a stream whose access is gone.
	accessMaxUnconfirmed = 3 * AccessRecheckInterval
)

// ErrAccessEnded is the cause (context.Cause) of a held stream's context once its caller lost
// access. The cause also wraps the reason, with its errdefs kind (ErrUnauthenticated for a
// credential that no longer resolves, ErrForbidden for a role that no longer allows the stream).
var ErrAccessEnded = errors.New("access ended while the stream was open")

// StreamCheck says whether the caller of a stream may still have it, given the principal the
// stream's credential resolves to now (the same user, in the same account). It should be cheap
// (an rbac.Allow): it runs every AccessRecheckInterval for every open stream.
type StreamCheck func(ctx context.Context, p rbac.Principal) error

// Access watches the callers of open streams. One serves the whole process; the server tells it
// of revocations (Revoked), from this replica's identity service and, over the bus, from the
// others'. Its watch runs only while streams are open.
type Access struct {
	auth     Authenticator
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	holds   map[*hold]struct{}
	running bool          // the watch goroutine runs
	kick    chan struct{} // re-check the holds marked now, and notice when none is left
}

// hold is one open stream.
type hold struct {
	token     string         // the credential it was opened with
	p         rbac.Principal // the principal it resolved to then
	check     StreamCheck
	cancel    context.CancelCauseFunc
	confirmed time.Time // when access was last confirmed (watch goroutine only)
	now       bool      // re-check at the next kick (under Access.mu)
}

// NewAccess returns an Access that resolves credentials with a (identity.Service) every
// interval (0 means AccessRecheckInterval).
func NewAccess(a Authenticator, interval time.Duration, log *slog.Logger) *Access {
	if interval <= 0 {
		interval = AccessRecheckInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Access{auth: a, interval: interval, log: log, holds: map[*hold]struct{}{}, kick: make(chan struct{}, 1)}
}

// Hold returns the context to serve r's stream with: r's context, also cancelled — with a cause
// wrapping ErrAccessEnded — once r's credential stops resolving to the same user in the same
// account, or check (nil: none) fails for what it resolves to now. release must be called when
// the stream ends. A request without credentials has nothing to watch; neither has a nil Access.
func (x *Access) Hold(r *http.Request, check StreamCheck) (ctx context.Context, release context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(r.Context())
	token, _ := credentials(r)
	p, err := Principal(r.Context())
	if x == nil || token == "" || err != nil {
		return ctx, func() { cancel(nil) }
	}
	h := &hold{token: token, p: p, check: check, cancel: cancel, confirmed: time.Now()}
	x.mu.Lock()
	x.holds[h] = struct{}{}
	if !x.running {
		x.running = true
		go x.watch()
	}
	x.mu.Unlock()
	return ctx, func() {
		x.mu.Lock()
		delete(x.holds, h)
		if len(x.holds) == 0 {
			x.poke() // the watch notices and stops
		}
		x.mu.Unlock()
		cancel(nil)
	}
}

// Revoked says that userID's access to accountID may have shrunk (a key revoked, a session
// ended, a membership removed or its role changed): the streams of that user in that account are
// checked again now. An empty userID means every user of the account; both empty, every stream.
func (x *Access) Revoked(accountID, userID string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for h := range x.holds {
		if (accountID == "" || h.p.AccountID == accountID) && (userID == "" || h.p.UserID == userID) {
			h.now = true
			n++
		}
	}
	if n > 0 {
		x.poke()
	}
}

// Held is the number of open streams (for tests and metrics).
func (x *Access) Held() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.holds)
}

// poke wakes the watch without blocking (x.mu held).
func (x *Access) poke() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// watch re-checks every hold each interval, and the holds a revocation named when kicked. It
// returns when no hold is left.
func (x *Access) watch() {
	t := time.NewTicker(x.interval)
	defer t.Stop()
	for {
		all := false
		select {
		case <-t.C:
			all = true
		case <-x.kick:
		}
		if !x.recheck(all) {
			return
		}
	}
}

// recheck resolves the credentials of the holds due (all, or those marked now) once each, and
// ends the holds whose access is gone. It reports false, having marked the watch stopped, when
// no hold is left.
func (x *Access) recheck(all bool) bool {
	x.mu.Lock()
	if len(x.holds) == 0 {
		x.running = false
		x.mu.Unlock()
		return false
	}
	due := map[string][]*hold{}
	for h := range x.holds {
		if all || h.now {
			h.now = false
			due[h.token] = append(due[h.token], h)
		}
	}
	x.mu.Unlock()
	for token, hs := range due {
		ctx, cancel := context.WithTimeout(context.Background(), accessCheckTimeout)
		p, err := x.auth.Authenticate(ctx, token)
		for _, h := range hs {
			x.judge(ctx, h, p, err)
		}
		cancel()
	}
	return true
}

// judge ends h when p (and err, from resolving its credential again) says its access is gone.
func (x *Access) judge(ctx context.Context, h *hold, p rbac.Principal, err error) {
	if err == nil && (p.UserID != h.p.UserID || p.AccountID != h.p.AccountID) {
		err = fmt.Errorf("the credential now acts in another account: %w", errdefs.ErrUnauthenticated)
	}
	if err == nil && h.check != nil {
		err = h.check(ctx, p)
	}
	now := time.Now()
	switch {
	case err == nil:
		h.confirmed = now
	case denied(err):
		h.cancel(fmt.Errorf("%w: %w", ErrAccessEnded, err))
	case now.Sub(h.confirmed) >= accessMaxUnconfirmed:
		x.log.Warn("stream ended: its access could not be checked", "account", h.p.AccountID, "user", h.p.UserID, "since", h.confirmed, "err", err)
		h.cancel(fmt.Errorf("%w: it could not be checked for %s: %w", ErrAccessEnded, accessMaxUnconfirmed, errdefs.ErrUnavailable))
	default:
		x.log.Warn("stream access check failed; retrying", "account", h.p.AccountID, "user", h.p.UserID, "err", err)
	}
}

// denied reports whether err says the caller has no access (rather than that it could not be
// checked).
func denied(err error) bool {
	return errors.Is(err, errdefs.ErrUnauthenticated) || errors.Is(err, errdefs.ErrForbidden) || errors.Is(err, errdefs.ErrNotFound)
}
