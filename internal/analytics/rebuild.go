package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// rebuildBatch is how many source rows Rebuild reads at once.
const rebuildBatch = 1000

// RebuildOptions select what Rebuild does.
type RebuildOptions struct {
	// AccountID limits the rebuild to one account; empty: every account.
	AccountID string
	// Reset deletes the account's deployment records first, also those whose source is gone
	// (the syncs of deleted applications and runtimes).
	Reset bool
	// FailureWindow is DefaultFailureWindow when zero.
	FailureWindow time.Duration
}

// RebuildResult counts what Rebuild derived.
type RebuildResult struct {
	Accounts    int
	Deployments int
}

// Rebuild derives the analytics tables again from the source tables, one account per
// transaction: every recorded sync (application_syncs) becomes its deployment record again
// (replacing the one derived from its event, if any), what followed each deployment is
// recomputed from the health history, and the daily activity counts are recounted from the
// audit records. The health history has no source table (its events are its source) and is
// kept. Consumers may run meanwhile: a record they write is the same one Rebuild writes.
func Rebuild(ctx context.Context, db Store, o RebuildOptions) (RebuildResult, error) {
	if o.FailureWindow <= 0 {
		o.FailureWindow = DefaultFailureWindow
	}
	accounts := []string{o.AccountID}
	if o.AccountID == "" {
		var err error
		if accounts, err = db.AccountIDs(ctx); err != nil {
			return RebuildResult{}, fmt.Errorf("rebuild: accounts: %w", err)
		}
	}
	var res RebuildResult
	for _, acc := range accounts {
		n := 0
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			n, err = rebuildAccount(ctx, tx, acc, o)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("rebuild account %s: %w", acc, err)
		}
		res.Accounts++
		res.Deployments += n
	}
	return res, nil
}

func rebuildAccount(ctx context.Context, w writer, accountID string, o RebuildOptions) (int, error) {
	if err := w.LockAnalytics(ctx, accountID); err != nil {
		return 0, err
	}
	if o.Reset {
		if err := w.DeleteDeployments(ctx, accountID); err != nil {
			return 0, err
		}
	}
	n, after := 0, ""
	for {
		syncs, err := w.AnalyticsSyncs(ctx, accountID, after, rebuildBatch)
		if err != nil {
			return n, err
		}
		// A batch at a time: its commits' images in one read, its records in one delete and
		// insert per 500 (after a reset, in one insert per 500: there is nothing to replace,
		// and the planner, whose statistics predate this transaction's rows, would scan the
		// table for each delete).
		ds := make([]store.Deployment, 0, len(syncs))
		shas := make([]string, 0, len(syncs))
		for _, s := range syncs {
			d, sha, err := deploymentOf(syncFinishedFromSource(s))
			if err != nil {
				return n, err
			}
			ds, shas = append(ds, d), append(shas, sha)
		}
		ims, err := w.ImagesOfCommits(ctx, accountID, shas)
		if err != nil {
			return n, fmt.Errorf("images of the syncs' commits: %w", err)
		}
		for i := range ds {
			if err := withImages(&ds[i], ims[shas[i]]); err != nil {
				return n, err
			}
		}
		put := w.ReplaceDeployments
		if o.Reset {
			put = w.InsertDeployments
		}
		if err := put(ctx, ds); err != nil {
			return n, err
		}
		n += len(ds)
		if len(syncs) < rebuildBatch {
			break
		}
		after = syncs[len(syncs)-1].ID
	}
	if err := w.RefreshAllDeploymentFailures(ctx, accountID, o.FailureWindow); err != nil {
		return n, err
	}
	if err := w.RefreshDeploymentStats(ctx, accountID, math.MinInt32, math.MaxInt64/86400000000-1); err != nil {
		return n, err
	}
	return n, w.RebuildActivity(ctx, accountID)
}

// syncFinishedFromSource is the event a recorded sync was published as.
func syncFinishedFromSource(s store.AnalyticsSync) runtimes.SyncFinished {
	ev := runtimes.SyncFinished{AccountID: s.AccountID, RuntimeID: s.RuntimeID, Runtime: s.Runtime, Application: s.App,
		Project: s.Project, DestServer: s.DestServer, DestName: s.DestName, DestNamespace: s.DestNamespace, SyncID: s.SyncID,
		Revision: s.Revision, Phase: s.Phase, Message: s.Message, InitiatedBy: s.InitiatedBy, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
	var rec runtimev1.SyncRecord
	if json.Unmarshal([]byte(s.Detail), &rec) == nil { // the detail is the runtime's record; without it, the columns suffice
		ev.User = rec.User
		ev.Commit = rec.Commit
		ev.Commits = rec.Commits
	}
	if ev.Commit == nil && (s.CommitAuthor != "" || s.CommitMessage != "" || !s.CommitTime.IsZero()) {
		ev.Commit = &runtimev1.Commit{Author: s.CommitAuthor, Message: s.CommitMessage, Time: s.CommitTime}
	}
	return ev
}
