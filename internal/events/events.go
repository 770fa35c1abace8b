// Package events turns committed changes into API events on the bus. Audit records are the
// outbox: every successful or refused API call writes one in the same transaction as its change,
// and the Relay publishes them, in order, to the subject
//
//	freshet.<account>.audit.<action>      e.g. freshet.acc_01….audit.user.create
//
// with the record's ID as the idempotency key. Delivery is at-least-once: the relay advances its
// cursor only after the stream has stored a batch, and a record published twice (after a crash,
// or by two replicas) is stored once within the bus's duplicate window and carries the same key
// for consumers that keep a ledger.
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
	"github.com/freshet-dev/freshet/internal/store"
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
	db    *store.DB
	bus   *bus.Bus
	log   *slog.Logger
	poll  time.Duration
	batch int
	kick  chan struct{}
}

// NewRelay returns a relay from db to b.
func NewRelay(db *store.DB, b *bus.Bus, log *slog.Logger) *Relay {
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
	cursor, err := r.db.RelayCursor(ctx, RelayName)
	if err != nil {
		return 0, err
	}
	evs, err := r.db.AuditAfter(ctx, cursor, r.batch)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	for i, e := range evs {
		msg := Event{ID: e.ID, AccountID: e.AccountID, Time: e.CreatedAt, ActorID: e.ActorID, Actor: e.Actor, Action: e.Action,
			ResourceType: e.ResourceType, ResourceID: e.ResourceID, Result: e.Result, RequestID: e.RequestID}
		if err := bus.Publish(ctx, r.bus, Subject(e.AccountID, e.Action), e.ID, msg); err != nil {
			if i > 0 { // keep what was stored
				if aerr := r.db.AdvanceRelayCursor(ctx, RelayName, evs[i-1].ID); aerr != nil {
					r.log.Warn("advance relay cursor", "err", aerr)
				}
			}
			return i, err
		}
	}
	return len(evs), r.db.AdvanceRelayCursor(ctx, RelayName, evs[len(evs)-1].ID)
}
