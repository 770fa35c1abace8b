package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/store"
)

// DomainSubject is where a domain's events of account are published:
// freshet.<account>.<domain>.<event> (see docs/bus.md).
func DomainSubject(accountID, domain, event string) string {
	return bus.SubjectRoot + "." + accountID + "." + domain + "." + event
}

// OutboxRelay publishes the domain events queued in the outbox table, oldest first, and deletes
// each batch once the stream has stored it. A crash between the two publishes a batch again;
// the bus drops what it stored within its duplicate window (the key is the event's identity),
// and consumers that keep a ledger drop the rest. Two replicas relaying at once do the same.
type OutboxRelay struct {
	db    Store
	bus   *bus.Bus
	log   *slog.Logger
	batch int
	kick  chan struct{}
}

// NewOutboxRelay returns a relay from db's outbox to b.
func NewOutboxRelay(db Store, b *bus.Bus, log *slog.Logger) *OutboxRelay {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &OutboxRelay{db: db, bus: b, log: log, batch: DefaultBatch, kick: make(chan struct{}, 1)}
}

// Kick asks the relay to look for new events now instead of at the next poll.
func (r *OutboxRelay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run relays until ctx ends. Temporary failures (bus or database down) are retried with backoff.
func (r *OutboxRelay) Run(ctx context.Context) error {
	return runLoop(ctx, r.log, "relay outbox events", DefaultPoll, r.batch, r.kick, r.Once)
}

// Once publishes one batch of queued events and reports how many it published. An event that
// can never be published (a malformed subject, key or payload: a bug where it was queued) is
// logged and dropped, so that it does not hold up the others.
func (r *OutboxRelay) Once(ctx context.Context) (int, error) {
	ms, err := r.db.OutboxBatch(ctx, r.batch)
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	done := make([]string, 0, len(ms))
	var perr error
	for _, m := range ms {
		err := r.publish(ctx, m)
		if errors.Is(err, errUnpublishable) {
			r.log.Error("dropping an outbox event that cannot be published", "id", m.ID, "subject", m.Subject, "key", m.Key, "err", err)
		} else if err != nil {
			perr = err
			break
		}
		done = append(done, m.ID)
	}
	if len(done) > 0 { // keep what was stored
		if err := r.db.DeleteOutbox(ctx, done...); err != nil {
			return len(done), err
		}
	}
	return len(done), perr
}

var errUnpublishable = errors.New("unpublishable")

func (r *OutboxRelay) publish(ctx context.Context, m store.OutboxMessage) error {
	if !json.Valid([]byte(m.Payload)) {
		return fmt.Errorf("%w: the payload is not JSON", errUnpublishable)
	}
	err := bus.Publish(ctx, r.bus, m.Subject, m.Key, json.RawMessage(m.Payload))
	if errors.Is(err, bus.ErrInvalidSubject) || errors.Is(err, bus.ErrMissingKey) {
		return fmt.Errorf("%w: %w", errUnpublishable, err)
	}
	return err
}
