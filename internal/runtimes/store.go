package runtimes

import (
	"context"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
)

// Store is what the registry reads and writes outside its transactions. *store.DB implements
// it. Every method but RuntimeByPrefix, RuntimeByPrevPrefix, RuntimeHeartbeat, SetRuntimeRefused,
// ClearRuntimeRefused and StaleRuntimes is scoped to one
// account; a runtime or application of another account is errdefs.ErrNotFound.
type Store interface {
	// Tx runs fn in a transaction and commits when fn returns nil; audit records written
	// through tx commit with the change.
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error

	// ListRuntimes returns account's runtimes by name.
	// GetTeam resolves an owner team by ID or name; IsTeamMember says whether a user is in it.
	GetTeam(ctx context.Context, accountID, ref string) (store.Team, error)
	IsTeamMember(ctx context.Context, accountID, teamID, userID string) (bool, error)
	ListRuntimes(ctx context.Context, accountID string) ([]store.Runtime, error)
	// GetRuntime returns account's runtime by ID or name.
	// SetRuntimeInfo replaces a runtime's stored report.
	SetRuntimeInfo(ctx context.Context, id, info string) error
	GetRuntime(ctx context.Context, accountID, idOrName string) (store.Runtime, error)
	// DeleteRuntime deregisters account's runtime id, with its applications and their syncs.
	DeleteRuntime(ctx context.Context, accountID, id string) error
	// RuntimeByPrefix finds the runtime whose token has ID prefix, of any account.
	RuntimeByPrefix(ctx context.Context, prefix string) (store.Runtime, error)
	// RuntimeByPrevPrefix finds the runtime whose last rotation replaced the token with ID
	// prefix, of any account.
	RuntimeByPrevPrefix(ctx context.Context, prefix string) (store.Runtime, error)
	// SetRuntimeRefused records runtime id's last refusal (unless the same one was recorded
	// lately); ClearRuntimeRefused forgets it.
	SetRuntimeRefused(ctx context.Context, id string, t time.Time, kind, reason, remote string) (bool, error)
	ClearRuntimeRefused(ctx context.Context, id string) error
	// RuntimeHeartbeat records runtime id's heartbeat at t: its version, status and Info
	// (JSON).
	RuntimeHeartbeat(ctx context.Context, id, version, status, info string, t time.Time) error
	// SettleReservations deletes account's limit reservations of resource in runtime runtimeID
	// for the names the runtime reported.
	SettleReservations(ctx context.Context, accountID, resource, runtimeID string, names []string) error
	// StaleRuntimes lists the runtimes of all accounts not marked disconnected whose last
	// heartbeat is older than t.
	StaleRuntimes(ctx context.Context, t time.Time) ([]store.Runtime, error)

	// ListApplications returns account's applications that pass f, in the order they were
	// first reported; page.After is the last ID of the previous page.
	ListApplications(ctx context.Context, accountID string, f store.AppFilter, page paging.Page) ([]store.Application, error)
	// CountApplications counts account's applications that pass f by health and by sync.
	CountApplications(ctx context.Context, accountID string, f store.AppFilter) (store.AppCounts, error)
	// GetApplication returns account's application name of the runtime with ID or name
	// runtime.
	GetApplication(ctx context.Context, accountID, runtime, name string) (store.Application, error)
	// ListSyncs returns the recorded syncs of account's application app of runtime runtimeID,
	// newest first; page.After is the sync ID the previous page ended with.
	ListSyncs(ctx context.Context, accountID, runtimeID, app string, page paging.Page) ([]store.ApplicationSync, error)

	// ListArchivedWorkflows returns account's archived workflows that pass f, newest first;
	// page.After is the archive ID the previous page ended with.
	ListArchivedWorkflows(ctx context.Context, accountID string, f store.ArchivedWorkflowFilter, page paging.Page) ([]store.ArchivedWorkflow, error)
	// WorkflowRunCounts counts account's archived workflows finished in [since, until) by UTC
	// day and phase.
	WorkflowRunCounts(ctx context.Context, accountID string, since, until time.Time) ([]store.WorkflowRunCount, error)
	// GetArchivedWorkflow returns account's archived workflow by archive ID or Workflow UID.
	GetArchivedWorkflow(ctx context.Context, accountID, idOrUID string) (store.ArchivedWorkflow, error)

	// ListHelmReleases returns account's Helm releases that pass f, at most limit.
	ListHelmReleases(ctx context.Context, accountID string, f store.HelmReleaseFilter, limit int) ([]store.HelmRelease, error)

	// HostedCredentials lists the encrypted tokens of the hosted runtimes of every account.
	HostedCredentials(ctx context.Context) ([]store.HostedCredential, error)

	// GetGitOpsWebhook returns account's GitOps webhook secret (encrypted), ErrNotFound when
	// none is set.
	GetGitOpsWebhook(ctx context.Context, accountID string) (store.GitOpsWebhook, error)
}

var _ Store = (*store.DB)(nil)
