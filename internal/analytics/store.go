package analytics

import (
	"context"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
)

// Store is the database the Service, the Handler and Rebuild work on. *store.DB implements it;
// each method's contract is documented there. Every method that takes an account ID reads or
// changes only that account's rows. Writes go through Tx (or the transaction the bus's ledger
// opened, store.TxFrom), whose *store.Tx has the same write methods.
type Store interface {
	// Tx runs fn in one transaction, committed when fn returns nil.
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error

	ListDeployments(ctx context.Context, accountID string, f store.DeploymentFilter, p paging.Page) ([]store.Deployment, error)
	DORADays(ctx context.Context, accountID string, f store.DeploymentFilter) ([]store.DORADay, error)
	StatsDays(ctx context.Context, accountID string, scopes []string, fromDay, toDay int64) ([]store.DORADay, error)
	LeadHistogram(ctx context.Context, accountID string, f store.DeploymentFilter) (map[int64]int64, error)
	StatsLeadHistogram(ctx context.Context, accountID string, scopes []string, fromDay, toDay int64) (map[int64]int64, error)
	LeadInBucket(ctx context.Context, accountID string, f store.DeploymentFilter, bucket, offset int64) (time.Duration, error)
	RuntimeIDs(ctx context.Context, accountID, ref string) ([]string, error)
	Incidents(ctx context.Context, accountID string, f store.DeploymentFilter) ([]store.Incident, error)
	AccountIDs(ctx context.Context) ([]string, error)
}

var _ Store = (*store.DB)(nil)

// writer is what deriving analytics rows writes with: a *store.Tx.
type writer interface {
	LockAnalytics(ctx context.Context, accountID string) error
	PutDeployment(ctx context.Context, d store.Deployment) (bool, error)
	PutHealthEvent(ctx context.Context, h store.HealthEvent) (bool, error)
	AppCluster(ctx context.Context, accountID, runtimeID, app string) (cluster, namespace string, err error)
	RefreshDeploymentFailures(ctx context.Context, accountID, runtimeID, app string, from, to time.Time, window time.Duration) error
	RefreshAllDeploymentFailures(ctx context.Context, accountID string, window time.Duration) error
	RefreshDeploymentStats(ctx context.Context, accountID string, fromDay, toDay int64) error
	ImagesOfCommit(ctx context.Context, accountID, sha string) ([]store.BuildImage, error)
	ImagesOfCommits(ctx context.Context, accountID string, shas []string) (map[string][]store.BuildImage, error)
	AddActivity(ctx context.Context, accountID string, at time.Time, action, result string) error
	RebuildActivity(ctx context.Context, accountID string) error
	AnalyticsSyncs(ctx context.Context, accountID, after string, limit int) ([]store.AnalyticsSync, error)
	DeleteDeployments(ctx context.Context, accountID string) error
	ReplaceDeployments(ctx context.Context, ds []store.Deployment) error
	InsertDeployments(ctx context.Context, ds []store.Deployment) error
}

var _ writer = (*store.Tx)(nil)
