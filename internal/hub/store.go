package hub

import (
	"context"

	"github.com/freshet-dev/freshet/internal/store"
)

// Store is what the hub keeps in the database: each account's hub sources.
type Store interface {
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error
	ListHubSources(ctx context.Context, accountID string) ([]store.HubSource, error)
}

var _ Store = (*store.DB)(nil)
