package pipeline

import (
	"context"
	"time"

	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
)

// Store is the database the Service and the Dispatcher work on: the queries they make outside
// a transaction, and Tx for the changes they commit with their audit records. *store.DB
// implements it; each method's contract is documented there. Every method that takes an
// account ID reads or changes only that account's rows.
type Store interface {
	// Tx runs fn in one transaction, committed when fn returns nil.
	Tx(ctx context.Context, fn func(tx *store.Tx) error) error

	// Projects and pipelines. Pipelines are read with their project's name.
	GetProject(ctx context.Context, accountID, idOrName string) (store.Project, error)
	// ListProjects lists the projects team ownerTeamID owns (empty: all).
	ListProjects(ctx context.Context, accountID, ownerTeamID string, p paging.Page) ([]store.Project, error)
	// GetTeam resolves an owner team by ID or name; IsTeamMember says whether a user is in it.
	GetTeam(ctx context.Context, accountID, ref string) (store.Team, error)
	IsTeamMember(ctx context.Context, accountID, teamID, userID string) (bool, error)
	GetPipeline(ctx context.Context, accountID, id string) (store.Pipeline, error)
	GetPipelineByName(ctx context.Context, accountID, projectID, name string) (store.Pipeline, error)
	ListPipelines(ctx context.Context, accountID, projectID string, p paging.Page) ([]store.Pipeline, error)
	// PipelineNames returns "project/name" by pipeline ID, in one query.
	PipelineNames(ctx context.Context, accountID string, ids []string) (map[string]string, error)

	// Triggers. TriggerByID and TriggersOfType are not scoped to an account: webhook deliveries
	// and the cron executor find a trigger before they know its account.
	ListTriggers(ctx context.Context, accountID, pipelineID string) ([]store.Trigger, error)
	TriggerByID(ctx context.Context, id string) (store.Trigger, error)
	TriggersOfType(ctx context.Context, typ string) ([]store.Trigger, error)
	// FindDelivery returns the build an earlier webhook delivery to a trigger, by delivery ID
	// or payload digest, created; DeleteDeliveriesBefore forgets deliveries older than t.
	FindDelivery(ctx context.Context, triggerID, deliveryID, payloadDigest string) (string, error)
	DeleteDeliveriesBefore(ctx context.Context, t time.Time) (int64, error)

	// Builds, their steps and logs.
	GetBuild(ctx context.Context, accountID, id string) (store.Build, error)
	ListBuilds(ctx context.Context, accountID string, f store.BuildFilter, p paging.Page) ([]store.Build, error)
	BuildStats(ctx context.Context, accountID, pipelineID string, since time.Time, success, failed string) ([]store.BuildDay, error)
	CountBuilds(ctx context.Context, accountID, pipelineID string, statuses ...string) (map[string]int64, error)
	SetBuildStatus(ctx context.Context, accountID, buildID, leaseID string, from []string, status, reason string, finished time.Time) (bool, error)
	ListSteps(ctx context.Context, buildID string) ([]store.BuildStep, error)
	UpsertStep(ctx context.Context, s store.BuildStep) error
	ReadLog(ctx context.Context, buildID string, offset int64, max int) ([]byte, error)
	AppendLog(ctx context.Context, buildID string, offset int64, data []byte) (size int64, err error)

	// The dispatcher's queue and leases, across accounts.
	QueuedBuilds(ctx context.Context, limit int) ([]store.Build, error)
	BuildsWithStatus(ctx context.Context, status string, limit int) ([]store.Build, error)
	RunningCounts(ctx context.Context) ([]store.RunningCount, error)
	ClaimBuild(ctx context.Context, accountID, buildID, runnerID, leaseID string, expires, now time.Time) (bool, error)
	RenewLease(ctx context.Context, accountID, buildID, leaseID string, expires time.Time) (string, bool, error)
	ExpiredLeases(ctx context.Context, t time.Time) ([]store.Build, error)
	LeasedBuilds(ctx context.Context, accountID, runnerID string) ([]store.Build, error)
	RunnerLeases(ctx context.Context) (map[string][]string, error)
	RequeueBuild(ctx context.Context, accountID, buildID, leaseID, reason string, marker []byte) (ok bool, at int64, err error)

	// Contexts. DefaultContext is the account's default registry (ErrNotFound: none).
	GetContext(ctx context.Context, accountID, name string) (store.ConfigContext, error)
	ListContexts(ctx context.Context, accountID string) ([]store.ConfigContext, error)
	DefaultContext(ctx context.Context, accountID string) (store.ConfigContext, error)

	// Images that builds' steps pushed.
	ListBuildImages(ctx context.Context, accountID, buildID string) ([]store.BuildImage, error)

	// Runners. RunnerByPrefix authenticates a token, so it is not scoped to an account.
	ListRunners(ctx context.Context, accountID string) ([]store.Runner, error)
	GetRunner(ctx context.Context, accountID, idOrName string) (store.Runner, error)
	DeleteRunner(ctx context.Context, accountID, id string) error
	RunnerByPrefix(ctx context.Context, prefix string) (store.Runner, error)
	TouchRunner(ctx context.Context, id, info string, t time.Time) error
}

var _ Store = (*store.DB)(nil)
