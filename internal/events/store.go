package events

import (
	"context"

	"github.com/freshet-dev/freshet/internal/store"
)

// Store is what the relays need of the database. *store.DB implements it. Both read a queue
// that rows join in the transaction that writes them and leave once published, so a row whose
// transaction commits late (after rows with later IDs were published) is published all the
// same.
type Store interface {
	// UnpublishedAudit returns up to limit audit records not yet published, oldest first.
	UnpublishedAudit(ctx context.Context, limit int) ([]store.AuditEvent, error)
	// MarkAuditPublished takes published records off the queue.
	MarkAuditPublished(ctx context.Context, ids ...string) error
	// OutboxBatch returns up to limit queued domain events, oldest first.
	OutboxBatch(ctx context.Context, limit int) ([]store.OutboxMessage, error)
	// DeleteOutbox takes published domain events off the queue.
	DeleteOutbox(ctx context.Context, ids ...string) error
}

var _ Store = (*store.DB)(nil)
