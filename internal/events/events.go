// Package events turns committed changes into API events on the bus. Audit records are the
// outbox: every successful or refused API call writes one in the same transaction as its change,
// and queues it for the Relay in that transaction; the Relay publishes queued records, oldest
// first, to the subject
//
//	freshet.<account>.audit.<action>      e.g. freshet.acc_01….audit.user.create
//
// with the record's ID as the idempotency key, and takes them off the queue once the stream has
// stored them. So every committed record is published, whatever order concurrent transactions
// commit in (a cursor over IDs skipped records that committed after a later ID had been
// published). Delivery is at-least-once, and once in effect: a record published twice (after a
// crash, or by two replicas relaying at once) is stored once within the bus's duplicate window
// and carries the same key for consumers that keep a ledger.
//
// Domain events (a finished GitOps sync, say) go through the outbox table instead: the domain
// package writes the event, its subject and its key in the transaction of the change
// (store.InsertOutbox), and the OutboxRelay publishes and then deletes them, also at least once.
package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/freshet-dev/freshet/internal/bus"
)

// Relay defaults.
const (
	RelayName         = "audit"
	DefaultBatch      = 500
	DefaultPoll       = 200 * time.Millisecond
	maxRetryBackoff   = 10 * time.Second
	initialRetryDelay = 250 * time.Millisecond
)

// Event is the payload of an audit event on the bus.
type Event struct {
	ID           string    `json:"id"`
	AccountID    string    `json:"accountId"`
	Time         time.Time `json:"time"`
	ActorID      string    `json:"actorId,omitempty"`
	Actor        string    `json:"actor"`
	Action       string    `json:"action"`
	ResourceType string    `json:"resourceType"`
	ResourceID   string    `json:"resourceId,omitempty"`
	Result       string    `json:"result"`
	RequestID    string    `json:"requestId,omitempty"`
}

// Subject is where events of account and action are published.
func Subject(accountID, action string) string {
	return bus.SubjectRoot + "." + accountID + ".audit." + action
}

// Relay publishes audit records to the bus.
type Relay struct {
	db    Store
	bus   *bus.Bus
	log   *slog.Logger
	poll  time.Duration
	batch int
	kick  chan struct{}
}

// NewRelay returns a relay from db to b.
func NewRelay(db Store, b *bus.Bus, log *slog.Logger) *Relay {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{db: db, bus: b, log: log, poll: DefaultPoll, batch: DefaultBatch, kick: make(chan struct{}, 1)}
}

// Kick asks the relay to look for new records now instead of at the next poll.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run relays until ctx ends. Temporary failures (bus or database down) are retried with backoff.
func (r *Relay) Run(ctx context.Context) error {
	return runLoop(ctx, r.log, "relay audit events", r.poll, r.batch, r.kick, r.Once)
}

// runLoop calls once until ctx ends: again at once while it fills whole batches, after poll
// when it did not, when kicked, and after a growing delay while it fails.
func runLoop(ctx context.Context, log *slog.Logger, what string, poll time.Duration, batch int, kick <-chan struct{}, once func(context.Context) (int, error)) error {
	delay := initialRetryDelay
	for {
		n, err := once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := poll
		switch {
		case err != nil:
			log.Warn(what, "err", err, "retry_in", delay)
			wait, delay = delay, min(delay*2, maxRetryBackoff)
		case n == batch:
			delay, wait = initialRetryDelay, 0 // a backlog: keep going
		default:
			delay = initialRetryDelay
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// Once publishes one batch of unpublished records and reports how many it published.
func (r *Relay) Once(ctx context.Context) (int, error) {
	evs, err := r.db.UnpublishedAudit(ctx, r.batch)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	done := make([]string, 0, len(evs))
	var perr error
	for _, e := range evs {
		msg := Event{ID: e.ID, AccountID: e.AccountID, Time: e.CreatedAt, ActorID: e.ActorID, Actor: e.Actor, Action: e.Action,
			ResourceType: e.ResourceType, ResourceID: e.ResourceID, Result: e.Result, RequestID: e.RequestID}
		if perr = bus.Publish(ctx, r.bus, Subject(e.AccountID, e.Action), e.ID, msg); perr != nil {
			break
		}
		done = append(done, e.ID)
	}
	if len(done) > 0 { // keep what was stored
		if err := r.db.MarkAuditPublished(ctx, done...); err != nil {
			return len(done), err
		}
	}
	return len(done), perr
}
