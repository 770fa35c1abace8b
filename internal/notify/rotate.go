package notify

import (
	"context"
	"fmt"

	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// ReencryptSecrets rewrites the channels' secrets under k's primary key in tx and reports how
// many changed. The control plane's ReencryptSecrets runs it beside the other domains'.
func ReencryptSecrets(ctx context.Context, tx *store.Tx, k secrets.Reencrypter) (int, error) {
	chs, err := tx.AllNotificationChannels(ctx)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, c := range chs {
		if c.Secret == "" {
			continue
		}
		out, ch, err := k.Reencrypt(c.Secret, secretAAD(c.AccountID, c.Name))
		if err != nil {
			return changed, fmt.Errorf("notification channel %s: %w", c.Name, err)
		}
		if ch {
			if err := tx.SetNotificationChannelSecret(ctx, c.ID, out); err != nil {
				return changed, err
			}
			changed++
		}
	}
	return changed, nil
}
