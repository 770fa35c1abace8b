package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
)

// Election defaults.
const (
	// LeaseName is the lease the cron executor's replicas contend for.
	LeaseName = "cron"
	// DefaultLeaseTTL is how long a lease lasts without renewal: a crashed leader is replaced
	// after at most this long (plus one acquire period).
	DefaultLeaseTTL = 15 * time.Second
	// MinLeaseTTL is the shortest TTL accepted.
	MinLeaseTTL = time.Second
	// releaseTimeout bounds the release of the lease at shutdown.
	releaseTimeout = 5 * time.Second
	// jitterFraction spreads renewals and acquire attempts by ±10%.
	jitterFraction = 0.1
)

// LeaseStore is the database an Elector takes its lease from. *store.DB implements it; the
// contract (one conditional statement, epoch grows on every change of holder) is documented
// there.
type LeaseStore interface {
	TryAcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (epoch int64, ok bool, err error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

var _ LeaseStore = (*store.DB)(nil)

// Term is one period during which this replica holds the lease.
type Term struct {
	Lease  string
	Holder string
	Epoch  int64           // the lease's fencing token for this term
	Done   <-chan struct{} // closed when the term ends
}

// Fence is the store fence for writes made during the term.
func (t Term) Fence() store.Fence {
	return store.Fence{Lease: t.Lease, Holder: t.Holder, Epoch: t.Epoch}
}

// Elector keeps trying to hold a lease, and renews it while it does. Run drives it; IsLeader,
// Term and Changed report the outcome.
//
// It acquires or renews every TTL/3 (±10% jitter). A leader steps down at once when a renewal is
// refused, and when renewals fail with errors until 80% of the TTL has passed since the last
// successful one, so it stops acting before any other replica can take the lease. When Run's
// context ends it steps down and releases the lease, so another replica takes over without
// waiting for the TTL.
type Elector struct {
	leases LeaseStore
	name   string
	holder string
	ttl    time.Duration
	log    *slog.Logger

	mu      sync.Mutex
	leading bool
	epoch   int64
	done    chan struct{} // closed when the current term ends; nil when not leading
	changed chan struct{} // closed at the next change of leadership
}

// NewElector returns an Elector for lease name (empty: LeaseName). holder identifies this replica and must be
// unique among replicas (empty: DefaultHolder()); ttl 0 means DefaultLeaseTTL.
func NewElector(leases LeaseStore, name, holder string, ttl time.Duration, log *slog.Logger) *Elector {
	if name == "" {
		name = LeaseName
	}
	if holder == "" {
		holder = DefaultHolder()
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Elector{leases: leases, name: name, holder: holder, ttl: ttl, log: log.With(logLease, name, logHolder, holder),
		changed: make(chan struct{})}
}

// DefaultHolder returns a replica identity unique to this process: host name, process ID and a
// random suffix (so a restarted process is a new holder).
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "freshet"
	}
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Holder returns this replica's identity.
func (e *Elector) Holder() string { return e.holder }

// IsLeader reports whether this replica holds the lease now.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Term returns the current term and true while this replica leads.
func (e *Elector) Term() (Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return Term{}, false
	}
	return Term{Lease: e.name, Holder: e.holder, Epoch: e.epoch, Done: e.done}, true
}

// Changed returns a channel that is closed at the next change of leadership (a term starting or
// ending). Take it before reading Term so no change is missed.
func (e *Elector) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// setLeader starts a term at epoch, ending any term at another epoch first.
func (e *Elector) setLeader(epoch int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leading && e.epoch == epoch {
		return
	}
	if e.leading {
		e.endTermLocked()
	}
	e.leading, e.epoch, e.done = true, epoch, make(chan struct{})
	e.notifyLocked()
	e.log.Info("became leader", logEpoch, epoch)
}

// stepDown ends the current term, if any, and reports whether there was one.
func (e *Elector) stepDown(reason string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return false
	}
	e.log.Warn("stepped down", logEpoch, e.epoch, logReason, reason)
	e.endTermLocked()
	e.notifyLocked()
	return true
}

func (e *Elector) endTermLocked() {
	close(e.done)
	e.leading, e.done = false, nil
}

func (e *Elector) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// Run contends for the lease until ctx ends, then steps down, releases the lease if it held
// it, and returns nil.
func (e *Elector) Run(ctx context.Context) error {
	var deadline time.Time // while leading: step down at this instant unless renewed
	var lastErr string
	for {
		start := time.Now()
		timeout := e.ttl / 3
		if e.IsLeader() {
			timeout = min(timeout, deadline.Sub(start))
		}
		callCtx, cancel := context.WithTimeout(ctx, max(timeout, time.Millisecond))
		epoch, ok, err := e.leases.TryAcquireLease(callCtx, e.name, e.holder, e.ttl, start)
		cancel()
		if ctx.Err() != nil {
			break
		}
		switch {
		case err != nil:
			if msg := err.Error(); msg != lastErr {
				e.log.Warn("acquire lease", logError, err)
				lastErr = msg
			}
		case !ok:
			lastErr = ""
			e.stepDown("the lease is held by another replica")
		default:
			lastErr = ""
			e.setLeader(epoch)
			// The lease runs until start+ttl by this clock; stop acting well before that so
			// that no other replica can be leading while this one still is.
			deadline = start.Add(e.ttl - e.ttl/5)
		}
		wait := jitter(e.ttl / 3)
		if e.IsLeader() {
			if left := time.Until(deadline); left <= 0 {
				e.stepDown("could not renew the lease in time")
			} else {
				wait = min(wait, left)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
		if ctx.Err() != nil {
			break
		}
		if e.IsLeader() && !time.Now().Before(deadline) {
			e.stepDown("could not renew the lease in time")
		}
	}
	if e.stepDown("shutting down") {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if err := e.leases.ReleaseLease(rctx, e.name, e.holder); err != nil {
			e.log.Warn("release lease", logError, err)
		}
	}
	return nil
}

// jitter returns d spread by ±jitterFraction.
func jitter(d time.Duration) time.Duration {
	f := 1 - jitterFraction + 2*jitterFraction*mrand.Float64()
	return time.Duration(float64(d) * f)
}
