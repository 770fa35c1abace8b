package engine

import (
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// SyncCode is whether live state matches git (Argo CD's sync status codes).
type SyncCode string

// Sync status codes.
const (
	Synced    SyncCode = "Synced"
	OutOfSync SyncCode = "OutOfSync"
	Unknown   SyncCode = "Unknown"
)

// DiffStatus is one resource's comparison result, as `freshet app diff` shows it.
type DiffStatus string

// Diff statuses.
const (
	DiffSynced    DiffStatus = "Synced"
	DiffOutOfSync DiffStatus = "OutOfSync"
	DiffMissing   DiffStatus = "Missing"
	// DiffExtra is a live object the app no longer renders: it requires pruning.
	DiffExtra DiffStatus = "RequiresPruning"
)

// Condition types on an application.
const (
	// ConditionComparisonError: git, render or the comparison failed; the message names the
	// file and line when a manifest is at fault.
	ConditionComparisonError = "ComparisonError"
	// ConditionInvalidSpec: the application spec cannot be acted on (no source, not permitted
	// by its project, unknown destination).
	ConditionInvalidSpec = "InvalidSpecError"
	// ConditionNoCluster: the runtime has no cluster configured for the destination.
	ConditionNoCluster = "NoClusterConfigured"
	// ConditionSyncError: the last sync failed.
	ConditionSyncError = "SyncError"
	// ConditionDeletionError: a cascading delete could not finish (a PostDelete hook failed):
	// the application stays, deleting, and the deletion is retried (Argo CD's DeletionError).
	ConditionDeletionError = "DeletionError"
	// ConditionUnsupported: the spec uses something Freshet recognises but does not do; the
	// rest of the app works.
	ConditionUnsupported = "UnsupportedWarning"
	// ConditionRepeatedResource: two rendered objects have the same key; the last one wins.
	ConditionRepeatedResource = "RepeatedResourceWarning"
	// ConditionSelfHealPaused: another writer keeps changing the app's objects; self-heal
	// stopped re-applying for a while (see Options.SelfHealMaxPerWindow).
	ConditionSelfHealPaused = "SelfHealPaused"
	// ConditionSpecWarning carries the decoder's warnings (fields accepted and ignored).
	ConditionSpecWarning = "SpecWarning"
)

// Condition is a problem or warning on an application.
type Condition struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Source  render.Location `json:"source,omitzero"` // the manifest at fault, when known
	Since   time.Time       `json:"since"`
}

// AppStatus is what the engine knows about one application, as reported to the control plane.
type AppStatus struct {
	Name string `json:"name"`
	// Owner is the application whose manifests define this one (app of apps), or the
	// ApplicationSet that generates it; "" for an application defined in git.
	Owner string `json:"owner,omitempty"`
	// OwnerKind is the owner's kind: Application (app of apps) or ApplicationSet.
	OwnerKind string `json:"ownerKind,omitempty"`
	Project   string `json:"project"`
	// Sync: Synced, OutOfSync, or Unknown when the comparison failed.
	Sync SyncCode `json:"sync"`
	// Revision is the commit the app was compared with (the target revision resolved).
	Revision       string           `json:"revision,omitempty"`
	TargetRevision string           `json:"targetRevision,omitempty"`
	Commit         *git.CommitInfo  `json:"commit,omitempty"`
	SourceType     app.SourceType   `json:"sourceType,omitempty"`
	Health         health.Result    `json:"health"`
	Resources      []ResourceStatus `json:"resources,omitempty"`
	Conditions     []Condition      `json:"conditions,omitempty"`
	// Operation is the running sync, or the last one.
	Operation *SyncResult `json:"operation,omitempty"`
	// AutoSyncDisabled: a rollback switched automated sync off (Engine.SetAutoSync turns it
	// back on).
	AutoSyncDisabled bool      `json:"autoSyncDisabled,omitempty"`
	ReconciledAt     time.Time `json:"reconciledAt"`
}

// Condition returns the condition of a type, if present.
func (s *AppStatus) Condition(typ string) (Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}

// ResourceStatus is one managed resource of an application.
type ResourceStatus struct {
	ResourceKey
	Version string   `json:"version"`
	Status  SyncCode `json:"status"`
	// Health is nil for hooks.
	Health          *health.Result  `json:"health,omitempty"`
	RequiresPruning bool            `json:"requiresPruning,omitempty"`
	Hook            bool            `json:"hook,omitempty"`
	SyncWave        int             `json:"syncWave,omitempty"`
	Source          render.Location `json:"source,omitzero"`
	Message         string          `json:"message,omitempty"`
}

// ResourceDiff is one resource's diff, for `freshet app diff`.
type ResourceDiff struct {
	ResourceKey
	Version string          `json:"version"`
	Status  DiffStatus      `json:"status"`
	Source  render.Location `json:"source,omitzero"`
	// Diff is a unified diff from live to the would-be object (after the server-side apply
	// dry-run, normalized, ignoreDifferences removed); "" when Synced.
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message,omitempty"`
}

// OperationPhase is a sync's outcome.
type OperationPhase string

// Operation phases (Argo CD's).
const (
	PhaseRunning   OperationPhase = "Running"
	PhaseSucceeded OperationPhase = "Succeeded"
	// PhaseFailed: a resource could not be applied, a hook failed, a wave did not become
	// healthy in time, or the sync was terminated.
	PhaseFailed OperationPhase = "Failed"
	// PhaseError: the sync could not start (git, render, cluster, spec).
	PhaseError OperationPhase = "Error"
)

// ResultCode is what a sync did to one resource.
type ResultCode string

// Result codes.
const (
	ResultCreated      ResultCode = "created"
	ResultConfigured   ResultCode = "configured"
	ResultUnchanged    ResultCode = "unchanged"
	ResultPruned       ResultCode = "pruned"
	ResultPruneSkipped ResultCode = "pruneSkipped" // requires pruning; prune is off or Prune=false
	ResultSkipped      ResultCode = "skipped"      // ApplyOutOfSyncOnly and Synced, or not selected
	ResultFailed       ResultCode = "failed"
)

// ResourceResult is one resource in a sync result.
type ResourceResult struct {
	ResourceKey
	Version string     `json:"version"`
	Result  ResultCode `json:"result"`
	Wave    int        `json:"wave"`
	Message string     `json:"message,omitempty"`
}

// HookResult is one hook a sync ran.
type HookResult struct {
	ResourceKey
	Version string         `json:"version"`
	Type    HookType       `json:"type"`
	Wave    int            `json:"wave"`
	Phase   OperationPhase `json:"phase"` // Running, Succeeded, Failed
	Message string         `json:"message,omitempty"`
	Deleted bool           `json:"deleted,omitempty"` // removed by its delete policy
}

// Initiator says why a sync ran.
type Initiator string

// Initiators.
const (
	InitiatedByUser      Initiator = "user"
	InitiatedByAutomated Initiator = "automated"
	InitiatedBySelfHeal  Initiator = "selfHeal"
	InitiatedByRollback  Initiator = "rollback"
)

// SyncResult is one sync operation.
type SyncResult struct {
	Revision    string           `json:"revision"`
	Phase       OperationPhase   `json:"phase"`
	Message     string           `json:"message,omitempty"`
	Resources   []ResourceResult `json:"resources,omitempty"`
	Hooks       []HookResult     `json:"hooks,omitempty"`
	DryRun      bool             `json:"dryRun,omitempty"`
	Prune       bool             `json:"prune,omitempty"`
	InitiatedBy Initiator        `json:"initiatedBy"`
	User        string           `json:"user,omitempty"` // who asked, for user syncs and rollbacks
	StartedAt   time.Time        `json:"startedAt"`
	FinishedAt  time.Time        `json:"finishedAt,omitzero"`
	// Temporary: a failed or errored sync whose cause may go away (network, timeouts, a
	// failing hook); retries (syncPolicy.retry) only retry those.
	Temporary bool `json:"temporary,omitempty"`
}

// Changed lists the resources the sync created, configured or pruned.
func (r *SyncResult) Changed() []ResourceResult {
	var out []ResourceResult
	for _, rr := range r.Resources {
		switch rr.Result {
		case ResultCreated, ResultConfigured, ResultPruned:
			out = append(out, rr)
		}
	}
	return out
}

// HistoryEntry is one recorded sync (dry runs are not recorded).
type HistoryEntry struct {
	ID int64 `json:"id"`
	// Revision is what was synced: a commit (a chart version for a chart from a chart
	// repository); for a multi-source app, every source's, comma-separated in spec.sources
	// order (Revisions lists them).
	Revision string `json:"revision"`
	// Source is the app's main source (EffectiveSource) at the sync.
	Source app.Source `json:"source"`
	// Sources and Revisions: a multi-source app's spec.sources at the sync and each one's
	// revision, in order (Argo CD's history entries' sources and revisions); empty otherwise.
	Sources   []app.Source    `json:"sources,omitempty"`
	Revisions []string        `json:"revisions,omitempty"`
	Commit    *git.CommitInfo `json:"commit,omitempty"`
	// Range is what the sync brought from the app's source repository: the commits between
	// the previous successful sync's revision and this one (git log prev..this), bounded
	// (DeployCommits). Nil for multi-source apps, chart repositories and dry runs, or when
	// the walk failed.
	Range       *git.CommitRange `json:"range,omitempty"`
	Phase       OperationPhase   `json:"phase"`
	Message     string           `json:"message,omitempty"`
	Changed     []ResourceResult `json:"changed,omitempty"`
	InitiatedBy Initiator        `json:"initiatedBy"`
	User        string           `json:"user,omitempty"`
	StartedAt   time.Time        `json:"startedAt"`
	FinishedAt  time.Time        `json:"finishedAt"`
	Duration    time.Duration    `json:"duration"`
}

// TreeNode is a live object in an application's resource tree: a managed resource at the
// top, the objects it owns (through owner references) below.
type TreeNode struct {
	ResourceKey
	Version   string        `json:"version"`
	UID       string        `json:"uid"`
	Health    health.Result `json:"health"`
	Sync      SyncCode      `json:"sync,omitempty"` // managed resources only
	CreatedAt time.Time     `json:"createdAt"`
	Images    []string      `json:"images,omitempty"` // Pods
	Hook      bool          `json:"hook,omitempty"`   // a hook object a sync created
	// Network is what the network view draws (Pods, Services, Ingresses).
	Network  *TreeNetwork `json:"network,omitempty"`
	Children []*TreeNode  `json:"children,omitempty"`
}

// TreeNetwork is how traffic reaches an object: a Pod's labels, a Service's selector, the
// Services an Ingress routes to (its default backend and rules).
type TreeNetwork struct {
	Labels   map[string]string `json:"labels,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
	Backends []string          `json:"backends,omitempty"`
}
