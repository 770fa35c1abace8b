package appproxyv1

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Application is a GitOps application of a runtime: GET applications answers a List of them.
type Application struct {
	Name string `json:"name"`
	// File is where the application is defined: apps/<name>.yaml of the runtime's installation
	// repository, or "git-source NAME: PATH" for one of a Git Source.
	File string `json:"file,omitempty"`
	// GitSource is the Git Source the application comes from; "" for the installation repository.
	GitSource string `json:"gitSource,omitempty"`
	// Owner is the application whose manifests define this one (app of apps) or the
	// ApplicationSet that generates it: it is created, updated and pruned by the owner. "" for
	// an application defined in git.
	Owner string `json:"owner,omitempty"`
	// OwnerKind is the owner's kind: Application or ApplicationSet.
	OwnerKind string `json:"ownerKind,omitempty"`
	// Spec is nil when the runtime no longer has the application's file (it is being removed).
	Spec   *ApplicationManifest `json:"spec,omitempty"`
	Status AppStatus            `json:"status"`
}

// AppSpec returns the application's spec, or a zero one when Spec is nil.
func (a Application) AppSpec() AppSpec {
	if a.Spec == nil {
		return AppSpec{}
	}
	return a.Spec.Spec
}

// ApplicationManifest is an argoproj.io/v1alpha1 Application: the spec of an application, as
// its runtime loaded it from git.
//
// What clients read (source, destination, project, sync policy, ...) is modelled field by
// field; source and sync options the runtime's engine interprets in depth (helm, kustomize,
// directory, retry, managedNamespaceMetadata) are raw JSON, so that this contract does not grow
// with every Argo CD option the engine learns and an Application read and written back loses
// nothing.
type ApplicationManifest struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   AppMetadata `json:"metadata"`
	Spec       AppSpec     `json:"spec"`
}

// AppMetadata is an Application's metadata.
type AppMetadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
}

// AppSpec is an Application's spec.
type AppSpec struct {
	Source               *AppSource             `json:"source,omitempty"`
	Sources              []AppSource            `json:"sources,omitempty"`
	Destination          AppDestination         `json:"destination"`
	Project              string                 `json:"project"`
	SyncPolicy           *AppSyncPolicy         `json:"syncPolicy,omitempty"`
	IgnoreDifferences    []AppIgnoreDifferences `json:"ignoreDifferences,omitempty"`
	Info                 []AppInfo              `json:"info,omitempty"`
	RevisionHistoryLimit *int64                 `json:"revisionHistoryLimit,omitempty"`
}

// EffectiveSource is the source the application renders: spec.source, or the first of
// spec.sources; nil when there is none.
func (s AppSpec) EffectiveSource() *AppSource {
	switch {
	case s.Source != nil:
		return s.Source
	case len(s.Sources) > 0:
		return &s.Sources[0]
	}
	return nil
}

// AppSource is where an application's manifests come from.
type AppSource struct {
	RepoURL        string          `json:"repoURL"`
	Path           string          `json:"path,omitempty"`
	TargetRevision string          `json:"targetRevision,omitempty"`
	Chart          string          `json:"chart,omitempty"`
	Ref            string          `json:"ref,omitempty"`
	Name           string          `json:"name,omitempty"`
	Helm           json.RawMessage `json:"helm,omitempty"`
	Kustomize      json.RawMessage `json:"kustomize,omitempty"`
	Directory      json.RawMessage `json:"directory,omitempty"`
}

// AppDestination is the cluster (an API server URL, or the name of a cluster registered to
// the runtime) and namespace an application deploys to.
type AppDestination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// AppSyncPolicy controls when and how an application syncs.
type AppSyncPolicy struct {
	Automated                *AppSyncPolicyAutomated `json:"automated,omitempty"`
	SyncOptions              []string                `json:"syncOptions,omitempty"`
	Retry                    json.RawMessage         `json:"retry,omitempty"`
	ManagedNamespaceMetadata json.RawMessage         `json:"managedNamespaceMetadata,omitempty"`
}

// IsAutomated reports whether automated sync is on (automated set and not enabled: false).
func (p *AppSyncPolicy) IsAutomated() bool {
	return p != nil && p.Automated != nil && (p.Automated.Enabled == nil || *p.Automated.Enabled)
}

// AppSyncPolicyAutomated turns on automated sync.
type AppSyncPolicyAutomated struct {
	Prune      bool  `json:"prune,omitempty"`
	SelfHeal   bool  `json:"selfHeal,omitempty"`
	AllowEmpty bool  `json:"allowEmpty,omitempty"`
	Enabled    *bool `json:"enabled,omitempty"`
}

// AppIgnoreDifferences names parts of live objects that diffs ignore.
type AppIgnoreDifferences struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind"`
	Name                  string   `json:"name,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// AppInfo is a free-form name/value shown with an application.
type AppInfo struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Sync statuses (AppStatus.Sync, AppResource.Status, TreeNode.Sync).
const (
	SyncStatusSynced    = "Synced"
	SyncStatusOutOfSync = "OutOfSync"
	SyncStatusUnknown   = "Unknown"
)

// Health statuses (Health.Status), from best to worst.
const (
	HealthHealthy     = "Healthy"
	HealthSuspended   = "Suspended"
	HealthProgressing = "Progressing"
	HealthMissing     = "Missing"
	HealthDegraded    = "Degraded"
	HealthUnknown     = "Unknown"
)

// Operation phases (SyncResult.Phase, HistoryEntry.Phase).
const (
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
	PhaseError     = "Error"
)

// Diff statuses (ResourceDiff.Status).
const (
	DiffSynced          = "Synced"
	DiffOutOfSync       = "OutOfSync"
	DiffMissing         = "Missing"
	DiffRequiresPruning = "RequiresPruning"
)

// AppStatus is what a runtime's GitOps engine knows about an application.
type AppStatus struct {
	Name string `json:"name"`
	// Owner is the application whose manifests define this one (app of apps), or the
	// ApplicationSet that generates it.
	Owner string `json:"owner,omitempty"`
	// OwnerKind is the owner's kind: Application or ApplicationSet.
	OwnerKind string `json:"ownerKind,omitempty"`
	Project   string `json:"project"`
	// Sync is Synced, OutOfSync, or Unknown when the comparison failed.
	Sync string `json:"sync"`
	// Revision is the commit the application was compared with (its target revision resolved).
	Revision       string         `json:"revision,omitempty"`
	TargetRevision string         `json:"targetRevision,omitempty"`
	Commit         *CommitInfo    `json:"commit,omitempty"`
	SourceType     string         `json:"sourceType,omitempty"` // Directory, Kustomize, Helm
	Health         Health         `json:"health"`
	Resources      []AppResource  `json:"resources,omitempty"`
	Conditions     []AppCondition `json:"conditions,omitempty"`
	// Operation is the running sync, or the last one.
	Operation *SyncResult `json:"operation,omitempty"`
	// AutoSyncDisabled: a rollback switched automated sync off (see AutoSyncRequest).
	AutoSyncDisabled bool      `json:"autoSyncDisabled,omitempty"`
	ReconciledAt     time.Time `json:"reconciledAt"`
}

// Health is the health of an application or of one object.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// CommitInfo describes a git commit.
type CommitInfo struct {
	SHA            string    `json:"sha"`
	Author         string    `json:"author"`
	AuthorEmail    string    `json:"authorEmail,omitempty"`
	AuthorTime     time.Time `json:"authorTime"`
	Committer      string    `json:"committer,omitempty"`
	CommitterEmail string    `json:"committerEmail,omitempty"`
	CommitTime     time.Time `json:"commitTime"`
	Message        string    `json:"message"`
	Parents        []string  `json:"parents,omitempty"`
}

// CommitRange is what a sync brought from the application's source repository: the commits
// between the previous successful sync's revision (From) and this one (To), newest first,
// bounded (Truncated when there were more). Kind is range, first, rollback or unchanged.
type CommitRange struct {
	Kind      string       `json:"kind"`
	From      string       `json:"from,omitempty"`
	To        string       `json:"to,omitempty"`
	Commits   []CommitInfo `json:"commits,omitempty"`
	Truncated bool         `json:"truncated,omitempty"`
}

// Subject is the first line of the commit message.
func (c *CommitInfo) Subject() string {
	s, _, _ := strings.Cut(c.Message, "\n")
	return strings.TrimSpace(s)
}

// SourceLocation is the manifest file (relative to the repository root) and line an object
// or a problem comes from; Line is 0 when unknown (Helm, Kustomize).
type SourceLocation struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

func (l SourceLocation) String() string {
	switch {
	case l.File == "":
		return ""
	case l.Line > 0:
		return l.File + ":" + strconv.Itoa(l.Line)
	}
	return l.File
}

// AppCondition is a problem or warning on an application (ComparisonError, SyncError,
// InvalidSpecError, ...).
type AppCondition struct {
	Type    string         `json:"type"`
	Message string         `json:"message"`
	Source  SourceLocation `json:"source,omitzero"`
	Since   time.Time      `json:"since"`
}

// ResourceKey names a Kubernetes object.
type ResourceKey struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is KIND/NAME, or KIND/NAMESPACE/NAME, with the kind qualified by its group
// (Deployment.apps/default/web).
func (k ResourceKey) String() string {
	gk := k.Kind
	if k.Group != "" {
		gk += "." + k.Group
	}
	if k.Namespace == "" {
		return gk + "/" + k.Name
	}
	return gk + "/" + k.Namespace + "/" + k.Name
}

// AppResource is one managed resource of an application.
type AppResource struct {
	ResourceKey
	Version string `json:"version"`
	Status  string `json:"status"`
	// Health is nil for hooks.
	Health          *Health        `json:"health,omitempty"`
	RequiresPruning bool           `json:"requiresPruning,omitempty"`
	Hook            bool           `json:"hook,omitempty"`
	SyncWave        int            `json:"syncWave,omitempty"`
	Source          SourceLocation `json:"source,omitzero"`
	Message         string         `json:"message,omitempty"`
}

// ResourceDiff is one resource's comparison with git (GET applications/{name}/diff).
type ResourceDiff struct {
	ResourceKey
	Version string         `json:"version"`
	Status  string         `json:"status"` // Synced, OutOfSync, Missing, RequiresPruning
	Source  SourceLocation `json:"source,omitzero"`
	// Diff is a unified diff from the live object to the desired one; "" when Synced.
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message,omitempty"`
}

// SyncRequest starts a sync (POST applications/{name}/sync).
type SyncRequest struct {
	// Revision to sync to instead of the target revision.
	Revision string `json:"revision,omitempty"`
	Prune    bool   `json:"prune,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
	// Resources limits the sync to these resources: "KIND/NAME", "KIND/NAMESPACE/NAME" or
	// "GROUP/KIND/NAMESPACE/NAME".
	Resources []string `json:"resources,omitempty"`
	// Options are sync options for this sync ("CreateNamespace=true", ...).
	Options []string `json:"options,omitempty"`
}

// SyncResult is one sync operation: what a sync answers when it has ended.
type SyncResult struct {
	Revision    string           `json:"revision"`
	Phase       string           `json:"phase"` // Running, Succeeded, Failed, Error
	Message     string           `json:"message,omitempty"`
	Resources   []ResourceResult `json:"resources,omitempty"`
	Hooks       []HookResult     `json:"hooks,omitempty"`
	DryRun      bool             `json:"dryRun,omitempty"`
	Prune       bool             `json:"prune,omitempty"`
	InitiatedBy string           `json:"initiatedBy"`    // user, automated, selfHeal, rollback
	User        string           `json:"user,omitempty"` // who asked, for user syncs and rollbacks
	StartedAt   time.Time        `json:"startedAt"`
	FinishedAt  time.Time        `json:"finishedAt,omitzero"`
	// Temporary: a failed sync whose cause may go away; retries only retry those.
	Temporary bool `json:"temporary,omitempty"`
}

// ResourceResult is what a sync did to one resource: created, configured, unchanged,
// pruned, pruneSkipped, skipped or failed.
type ResourceResult struct {
	ResourceKey
	Version string `json:"version"`
	Result  string `json:"result"`
	Wave    int    `json:"wave"`
	Message string `json:"message,omitempty"`
}

// HookResult is one hook a sync ran.
type HookResult struct {
	ResourceKey
	Version string `json:"version"`
	Type    string `json:"type"` // PreSync, Sync, PostSync, SyncFail, Skip
	Wave    int    `json:"wave"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	Deleted bool   `json:"deleted,omitempty"` // removed by its delete policy
}

// HistoryEntry is one recorded sync (dry runs are not recorded): GET
// applications/{name}/history answers a List of them, oldest first.
type HistoryEntry struct {
	ID       int64     `json:"id"`
	Revision string    `json:"revision"`
	Source   AppSource `json:"source"`
	// Sources and Revisions: a multi-source application's spec.sources when it was synced and
	// each one's revision, in order (Revision is them comma-separated); absent otherwise. A
	// rollback to the entry restores every source's revision.
	Sources     []AppSource      `json:"sources,omitempty"`
	Revisions   []string         `json:"revisions,omitempty"`
	Commit      *CommitInfo      `json:"commit,omitempty"`
	Range       *CommitRange     `json:"range,omitempty"`
	Phase       string           `json:"phase"`
	Message     string           `json:"message,omitempty"`
	Changed     []ResourceResult `json:"changed,omitempty"`
	InitiatedBy string           `json:"initiatedBy"`
	User        string           `json:"user,omitempty"`
	StartedAt   time.Time        `json:"startedAt"`
	FinishedAt  time.Time        `json:"finishedAt"`
	Duration    time.Duration    `json:"duration"` // nanoseconds
}

// RollbackRequest syncs an application to a history entry's revision (POST
// applications/{name}/rollback).
type RollbackRequest struct {
	ID    int64 `json:"id"`
	Prune bool  `json:"prune"`
}

// RollbackResult is the outcome of a rollback.
type RollbackResult struct {
	Result *SyncResult  `json:"result"`
	Entry  HistoryEntry `json:"entry"`
	// AutoSyncDisabled: automated sync was on and the rollback switched it off, as Argo CD
	// does, so that the application stays at the rolled-back revision.
	AutoSyncDisabled bool `json:"autoSyncDisabled,omitempty"`
}

// AutoSyncRequest switches an application's automated sync back on after a rollback, or off
// (POST applications/{name}/auto-sync); the answer is the Application.
type AutoSyncRequest struct {
	Enabled bool `json:"enabled"`
}

// TerminateResult answers POST applications/{name}/terminate: whether a sync was running.
type TerminateResult struct {
	Terminated bool `json:"terminated"`
}

// TreeNode is a live object of an application's resource tree: a managed resource, with the
// objects it owns (through owner references) as children (GET applications/{name}/tree).
type TreeNode struct {
	ResourceKey
	Version   string    `json:"version"`
	UID       string    `json:"uid"`
	Health    Health    `json:"health"`
	Sync      string    `json:"sync,omitempty"` // managed resources only
	CreatedAt time.Time `json:"createdAt"`
	Images    []string  `json:"images,omitempty"` // Pods
	// Hook: a hook object (a PostSync Job, say) a sync created and its delete policy kept.
	Hook bool `json:"hook,omitempty"`
	// Network is what the UI's network view draws (Pods, Services, Ingresses).
	Network  *TreeNetwork `json:"network,omitempty"`
	Children []*TreeNode  `json:"children,omitempty"`
}

// TreeNetwork is how traffic reaches an object of the tree: a Pod's labels, a Service's
// selector, the Services an Ingress routes to.
type TreeNetwork struct {
	Labels   map[string]string `json:"labels,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
	Backends []string          `json:"backends,omitempty"`
}

// ResourceDetail is one object of an application's tree with its manifests (GET
// applications/{name}/resource?kind=&name=[&group=&namespace=]).
type ResourceDetail struct {
	ResourceKey
	Version string `json:"version"`
	UID     string `json:"uid,omitempty"`
	// Managed: a resource the application renders; otherwise an object a managed one owns.
	Managed bool   `json:"managed"`
	Status  string `json:"status,omitempty"` // managed: Synced, OutOfSync, Missing, RequiresPruning
	// Live is the object in the cluster without managed fields; absent when not there.
	Live map[string]any `json:"live,omitempty"`
	// Desired is what a sync would make of it; absent when the application does not render it.
	Desired map[string]any `json:"desired,omitempty"`
	// Diff is a unified diff from live to desired; "" when Synced or not managed.
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message,omitempty"`
}

// ResourceEvent is a Kubernetes event about an object of the tree (GET
// applications/{name}/resource/events).
type ResourceEvent struct {
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Count     int64     `json:"count"`
	Source    string    `json:"source,omitempty"`
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
}

// RestartResult answers POST applications/{name}/resource/restart: the time set as the pod
// template's kubectl.kubernetes.io/restartedAt.
type RestartResult struct {
	RestartedAt time.Time `json:"restartedAt"`
}

// NotifyRequest tells a runtime that a repository changed (POST notify): its applications
// refresh. The control plane sends it after a verified push webhook.
type NotifyRequest struct {
	RepoURL  string `json:"repoURL"`
	Revision string `json:"revision"`
}

// NotifyResult is how many applications a NotifyRequest refreshed.
type NotifyResult struct {
	Refreshed int `json:"refreshed"`
}
