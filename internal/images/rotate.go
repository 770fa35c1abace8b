package images

import (
	"context"
	"fmt"

	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// ReencryptSecrets rewrites the issue trackers' tokens under k's primary key in tx and reports
// how many changed. The control plane's ReencryptSecrets runs it beside the other domains'.
func ReencryptSecrets(ctx context.Context, tx *store.Tx, k secrets.Reencrypter) (int, error) {
	trackers, err := tx.AllIssueTrackers(ctx)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, t := range trackers {
		if t.Token == "" {
			continue
		}
		out, ch, err := k.Reencrypt(t.Token, tokenAAD(t.AccountID, t.Name))
		if err != nil {
			return changed, fmt.Errorf("issue tracker %s: %w", t.Name, err)
		}
		if ch {
			if err := tx.SetIssueTrackerToken(ctx, t.ID, out); err != nil {
				return changed, err
			}
			changed++
		}
	}
	return changed, nil
}
