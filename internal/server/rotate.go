package server

import (
	"context"

	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/notify"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// ReencryptSecrets rewrites every stored secret — each domain rewrites its own: CI contexts,
// pipeline variables and trigger webhook secrets; the accounts' GitOps webhook secrets;
// notification channels' secrets; issue trackers' tokens — under
// k's primary key, all in one transaction, and reports how many values changed. Run it after
// adding a new primary key and before retiring the old one.
func ReencryptSecrets(ctx context.Context, db *store.DB, k secrets.Reencrypter) (int, error) {
	total := 0
	err := db.Tx(ctx, func(tx *store.Tx) error {
		ci, err := pipeline.ReencryptSecrets(ctx, tx, k)
		if err != nil {
			return err
		}
		gitops, err := runtimes.ReencryptSecrets(ctx, tx, k)
		if err != nil {
			return err
		}
		channels, err := notify.ReencryptSecrets(ctx, tx, k)
		if err != nil {
			return err
		}
		trackers, err := images.ReencryptSecrets(ctx, tx, k)
		total = ci + gitops + channels + trackers
		return err
	})
	return total, err
}
