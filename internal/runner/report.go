package runner

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
)

// Delivery to the control plane (step states, log chunks): a failed call is retried with
// backoff, doubling from deliverFirstBackoff to deliverMaxBackoff, for as long as the job
// holds its lease — through control-plane restarts and outages of any length. Nothing is
// dropped because it took long.
const (
	deliverFirstBackoff = 100 * time.Millisecond
	deliverMaxBackoff   = 5 * time.Second
)

// leaseBox holds a job's current lease for what delivers under it. While the lease is in
// doubt (not renewed in time, or reported lost) delivery waits; when the job gets its lease
// back, or a new one, delivery resumes under it.
type leaseBox struct {
	mu      sync.Mutex
	lease   runnerv1.Lease
	held    bool
	changed chan struct{} // closed and replaced at every change
}

func newLeaseBox(l runnerv1.Lease) *leaseBox {
	return &leaseBox{lease: l, held: true, changed: make(chan struct{})}
}

// get returns the lease, whether it is held, and a channel closed at the next change.
func (b *leaseBox) get() (runnerv1.Lease, bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lease, b.held, b.changed
}

// set changes the lease and whether it is held, waking whoever waits.
func (b *leaseBox) set(l runnerv1.Lease, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lease, b.held = l, held
	close(b.changed)
	b.changed = make(chan struct{})
}

// deliverWait waits after a failed delivery: the backoff, or less when the lease changes or
// ctx ends. It returns the next backoff.
func deliverWait(ctx context.Context, backoff time.Duration, changed <-chan struct{}) time.Duration {
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-changed:
	case <-t.C:
	}
	return min(backoff*2, deliverMaxBackoff)
}

// reporter delivers a job's step states in order under the job's lease. A newer state of a
// step replaces one not yet delivered, in its place.
type reporter struct {
	c     *protoClient
	lease *leaseBox
	log   *slog.Logger

	mu     sync.Mutex
	order  []string // step names waiting, oldest first
	states map[string]stepEntry
	seq    uint64
	kick   chan struct{}
}

type stepEntry struct {
	state  runnerv1.StepState
	images []runnerv1.Image // what the step pushed, with its final state
	seq    uint64
}

func newReporter(c *protoClient, lease *leaseBox, log *slog.Logger) *reporter {
	return &reporter{c: c, lease: lease, log: log, states: map[string]stepEntry{}, kick: make(chan struct{}, 1)}
}

// push queues s, with the images the step pushed when s is its final state.
func (r *reporter) push(s runnerv1.StepState, images ...runnerv1.Image) {
	r.mu.Lock()
	if _, waiting := r.states[s.Name]; !waiting {
		r.order = append(r.order, s.Name)
	}
	r.seq++
	r.states[s.Name] = stepEntry{state: s, images: images, seq: r.seq}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// pending is how many states wait.
func (r *reporter) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

// reset drops what waits (the job replays its steps under a new lease).
func (r *reporter) reset() {
	r.mu.Lock()
	r.order, r.states = nil, map[string]stepEntry{}
	r.mu.Unlock()
}

// run delivers until ctx ends.
func (r *reporter) run(ctx context.Context) {
	backoff := deliverFirstBackoff
	for ctx.Err() == nil {
		r.mu.Lock()
		var e stepEntry
		if len(r.order) > 0 {
			e = r.states[r.order[0]]
		}
		r.mu.Unlock()
		if e.seq == 0 {
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			}
			continue
		}
		lease, held, changed := r.lease.get()
		if !held {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		_, err := unary(ctx, r.c.token, r.c.updateStep, &runnerv1.StepUpdate{Lease: lease, Step: e.state, Images: e.images})
		if err != nil && connect.CodeOf(err) != connect.CodeInvalidArgument {
			if ctx.Err() == nil {
				r.log.Debug("report step state; retrying", "step", e.state.Name, "status", e.state.Status, "err", err, "in", backoff)
			}
			backoff = deliverWait(ctx, backoff, changed)
			continue
		}
		if err != nil { // the control plane will never take it: say so, go on with the rest
			r.log.Warn("step state refused", "step", e.state.Name, "status", e.state.Status, "err", err)
		}
		backoff = deliverFirstBackoff
		r.mu.Lock()
		if cur, ok := r.states[e.state.Name]; ok && cur.seq == e.seq {
			delete(r.states, e.state.Name)
			r.order = r.order[1:]
		}
		r.mu.Unlock()
	}
}
