package audit

import (
	"context"

	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
)

// Store is what the audit log needs of the database. *store.DB implements it. Records of
// successful changes are written on the change's own transaction (Entry.Commit), not through it.
type Store interface {
	// InsertAudit writes one record outside any change: a denied or failed call.
	InsertAudit(ctx context.Context, e store.AuditEvent) error
	// ListAudit returns account's records matching f, newest first, one page at a time.
	ListAudit(ctx context.Context, accountID string, f store.AuditFilter, p paging.Page) ([]store.AuditEvent, error)
}

var _ Store = (*store.DB)(nil)
