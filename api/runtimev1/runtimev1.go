// Package runtimev1 is the runtime protocol, version 1: how `freshet runtime` reports to the
// control plane. Like the runner protocol it is ConnectRPC with JSON messages (see
// api/runnerv1.Codec), authenticated by the runtime's token ("Authorization: Bearer frt_…"),
// and the runtime always dials.
package runtimev1

import "time"

// ProtocolVersion is this package's protocol version.
const ProtocolVersion = 1

// Service and procedure paths.
const (
	ServiceName        = "freshet.runtime.v1.RuntimeService"
	ProcedureHeartbeat = "/" + ServiceName + "/Heartbeat"
)

// HeartbeatInterval is how often a runtime reports; the control plane marks a runtime
// disconnected after DisconnectAfter without a heartbeat (or at once when its tunnel drops).
const (
	HeartbeatInterval = 5 * time.Second
	DisconnectAfter   = 3 * HeartbeatInterval
)

// Component health values.
const (
	ComponentHealthy  = "healthy"
	ComponentDegraded = "degraded"
	ComponentDisabled = "disabled" // not configured; does not make the runtime degraded
)

// Component is one part of a runtime and its health.
type Component struct {
	Name    string `json:"name"`
	Health  string `json:"health"`
	Message string `json:"message,omitempty"`
	Version string `json:"version,omitempty"`
}

// Cluster is a cluster the runtime deploys to. Its credentials never leave the runtime.
type Cluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Health string `json:"health,omitempty"`
}

// HeartbeatRequest announces the runtime's state.
type HeartbeatRequest struct {
	Protocol     int         `json:"protocol"`
	Version      string      `json:"version"`
	AccessMode   string      `json:"accessMode"`
	IngressURL   string      `json:"ingressUrl,omitempty"`
	Capabilities []string    `json:"capabilities"` // "cd", "ci", "workflows"
	Components   []Component `json:"components"`
	Clusters     []Cluster   `json:"clusters,omitempty"`
	GitSources   []string    `json:"gitSources,omitempty"`
}

// HeartbeatResponse tells the runtime what the control plane knows of it.
type HeartbeatResponse struct {
	RuntimeID string `json:"runtimeId"`
	Name      string `json:"name"`
	Account   string `json:"account"`
	Type      string `json:"type"` // hybrid or hosted
	Status    string `json:"status"`
}

// ProcedureReport carries the GitOps engine's application reports (ReportRequest).
const ProcedureReport = "/" + ServiceName + "/Report"

// ReportRequest reports applications to the control plane. Events are in order per
// application. With Snapshot, Applications is every application the runtime has: the control
// plane forgets the runtime's other applications (a runtime sends one after it starts and after
// reconnecting). Reports are idempotent: sending one twice changes nothing the second time.
type ReportRequest struct {
	Snapshot     bool          `json:"snapshot,omitempty"`
	Applications []Application `json:"applications,omitempty"`
	Events       []AppEvent    `json:"events,omitempty"`
}

// ReportResponse acknowledges a report.
type ReportResponse struct {
	Accepted int `json:"accepted"`
}

// Application event types (the GitOps engine's).
const (
	AppChanged    = "AppChanged"    // Application is the new state
	AppDeleted    = "AppDeleted"    // the application is gone
	SyncStarted   = "SyncStarted"   // Sync is the running operation
	SyncFinished  = "SyncFinished"  // Sync is the finished operation; it has an ID unless a dry run
	HealthChanged = "HealthChanged" // Application is the new state, HealthFrom the old health
	// RolloutChanged: Rollout is a transition of one of the application's Argo Rollouts (an
	// update started, a step reached, a phase changed, the update completed or aborted).
	RolloutChanged = "RolloutChanged"
	// WorkflowFinished: Workflow is an Argo Workflow of the runtime that finished (App is empty:
	// workflows are the runtime's, not an application's). The control plane archives it.
	WorkflowFinished = "WorkflowFinished"
	// HelmReleaseChanged: HelmRelease is a Helm release of one of the runtime's clusters as it
	// is now, with its revision history (App is empty). The control plane replaces what it
	// keeps of that release (runtime, cluster, namespace, name).
	HelmReleaseChanged = "HelmReleaseChanged"
	// HelmReleaseDeleted: the release (HelmRelease's cluster, namespace and name) is gone: it
	// was uninstalled, or its cluster removed. The control plane forgets it.
	HelmReleaseDeleted = "HelmReleaseDeleted"
	// HelmReleasesListed: HelmReleases is every release ("namespace/name") of the cluster
	// HelmRelease.Cluster names; the control plane forgets the runtime's others there. A
	// runtime sends it after its first read of a cluster and now and then, so releases
	// uninstalled while it was away or while reports were lost are forgotten.
	HelmReleasesListed = "HelmReleasesListed"
	// ProjectRolesListed: ProjectRoles is every role of every AppProject resource the runtime
	// runs (App is empty); the control plane replaces the rules it derived from the runtime's
	// roles (docs/security.md). A runtime sends it when its AppProjects change and with each
	// snapshot.
	ProjectRolesListed = "ProjectRolesListed"
)

// MaxProjectRoles bounds a ProjectRolesListed event's roles, and MaxRolePolicies one role's
// policy lines.
const (
	MaxProjectRoles = 1000
	MaxRolePolicies = 200
)

// ProjectRoleRecord is one role of an AppProject as the runtime parsed it: its groups
// (Freshet team names) and its policy lines that parse (app.ParsePolicy), Object being the
// part after "<project>/".
type ProjectRoleRecord struct {
	Project  string                `json:"project"`
	Role     string                `json:"role"`
	Groups   []string              `json:"groups,omitempty"`
	Policies []ProjectPolicyRecord `json:"policies,omitempty"`
}

// ProjectPolicyRecord is one parsed policy line of a project role.
type ProjectPolicyRecord struct {
	Resource string `json:"resource"`
	Action   string `json:"action"`
	Object   string `json:"object"`
	Allow    bool   `json:"allow,omitempty"`
}

// MaxHelmReleasesListed bounds a HelmReleasesListed event's releases.
const MaxHelmReleasesListed = 20000

// MaxHelmRevisions bounds a HelmReleaseRecord's history (Helm keeps 10 by default).
const MaxHelmRevisions = 256

// HelmReleaseRecord is a Helm release as the runtime reads it from Helm's release storage
// (Secrets of type helm.sh/release.v1): its latest revision's fields and every revision kept.
type HelmReleaseRecord struct {
	Cluster      string `json:"cluster"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Chart        string `json:"chart,omitempty"`
	ChartVersion string `json:"chartVersion,omitempty"`
	AppVersion   string `json:"appVersion,omitempty"`
	// Status is the latest revision's: deployed, failed, superseded, uninstalling,
	// pending-install, pending-upgrade, pending-rollback, uninstalled, unknown.
	Status      string    `json:"status,omitempty"`
	Revision    int       `json:"revision"`
	Updated     time.Time `json:"updated,omitzero"`
	Description string    `json:"description,omitempty"`
	// History is every revision the storage keeps, newest first.
	History []HelmRevision `json:"history,omitempty"`
}

// HelmRevision is one revision of a Helm release.
type HelmRevision struct {
	Revision     int       `json:"revision"`
	Status       string    `json:"status"`
	Chart        string    `json:"chart,omitempty"`
	ChartVersion string    `json:"chartVersion,omitempty"`
	AppVersion   string    `json:"appVersion,omitempty"`
	Updated      time.Time `json:"updated,omitzero"`
	Description  string    `json:"description,omitempty"`
}

// The kinds of RolloutRecord.
const (
	RolloutUpdateStarted = "UpdateStarted" // a new revision began (Revision)
	RolloutStepChanged   = "StepChanged"   // the current step index changed (Step of Steps)
	RolloutPhaseChanged  = "PhaseChanged"  // status.phase changed (PhaseFrom → Phase)
	RolloutCompleted     = "Completed"     // the update's revision became stable
	RolloutAborted       = "Aborted"       // the update was aborted: back to stable
)

// AppEvent is one thing that happened to an application.
type AppEvent struct {
	Type        string          `json:"type"`
	App         string          `json:"app"`
	At          time.Time       `json:"at"`
	Application *Application    `json:"application,omitempty"`
	Sync        *SyncRecord     `json:"sync,omitempty"`
	HealthFrom  string          `json:"healthFrom,omitempty"`
	Rollout     *RolloutRecord  `json:"rollout,omitempty"`
	Workflow    *WorkflowRecord `json:"workflow,omitempty"`
	// HelmRelease: HelmReleaseChanged and HelmReleaseDeleted.
	HelmRelease *HelmReleaseRecord `json:"helmRelease,omitempty"`
	// HelmReleases: HelmReleasesListed.
	HelmReleases []string `json:"helmReleases,omitempty"`
	// ProjectRoles: ProjectRolesListed.
	ProjectRoles []ProjectRoleRecord `json:"projectRoles,omitempty"`
}

// WorkflowRecord is a finished Argo Workflow (WorkflowFinished): what the control plane keeps
// after the runtime deletes it. A workflow retried and finished again is reported again, with
// the same UID.
type WorkflowRecord struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Phase is Succeeded, Failed or Error.
	Phase      string    `json:"phase"`
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	Progress   string    `json:"progress,omitempty"`
	// Template is the WorkflowTemplate it ran ("cluster/NAME" for a ClusterWorkflowTemplate).
	Template string `json:"template,omitempty"`
	// Trigger is what started it: submit (through the app-proxy), resubmit, cron, sensor, or
	// cluster (created in the cluster directly: kubectl, a GitOps application).
	Trigger string `json:"trigger"`
	// TriggeredBy is who or what: the user's email for submit and resubmit, the Workflow it was
	// resubmitted from, the CronWorkflow or Sensor.
	TriggeredBy string `json:"triggeredBy,omitempty"`
	// Nodes are its nodes (at most MaxWorkflowNodes).
	Nodes []WorkflowNodeRecord `json:"nodes,omitempty"`
}

// MaxWorkflowNodes bounds a WorkflowRecord's nodes (a Workflow has at most 2,000).
const MaxWorkflowNodes = 2000

// The triggers of a WorkflowRecord.
const (
	WorkflowTriggerSubmit   = "submit"
	WorkflowTriggerResubmit = "resubmit"
	WorkflowTriggerCron     = "cron"
	WorkflowTriggerSensor   = "sensor"
	WorkflowTriggerCluster  = "cluster"
)

// WorkflowNodeRecord is one node of a finished Workflow.
type WorkflowNodeRecord struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	DisplayName  string    `json:"displayName,omitempty"`
	Type         string    `json:"type"`
	TemplateName string    `json:"templateName,omitempty"`
	Phase        string    `json:"phase"`
	Message      string    `json:"message,omitempty"`
	StartedAt    time.Time `json:"startedAt,omitzero"`
	FinishedAt   time.Time `json:"finishedAt,omitzero"`
	Children     []string  `json:"children,omitempty"`
}

// RolloutRecord is a transition of an application's Rollout (RolloutChanged).
type RolloutRecord struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Phase     string `json:"phase"`
	PhaseFrom string `json:"phaseFrom,omitempty"`
	Message   string `json:"message,omitempty"`
	Strategy  string `json:"strategy,omitempty"`
	// Step is the canary's current step index (absent for blue-green), Steps their number.
	Step  *int32 `json:"step,omitempty"`
	Steps int32  `json:"steps,omitempty"`
	// Revision is the revision being rolled out (its number and pod-template hash),
	// StableRevision the stable one's.
	Revision       int64  `json:"revision,omitempty"`
	PodHash        string `json:"podHash,omitempty"`
	StableRevision int64  `json:"stableRevision,omitempty"`
	// StartedAt is when the update began, when the runtime saw it begin.
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// Application is an application's state as the control plane keeps it: enough to list, filter
// and show it without asking the runtime. Live detail (resource tree, diff) stays in the
// runtime, behind its app-proxy.
type Application struct {
	Name    string `json:"name"`
	Project string `json:"project"`
	// Owner is the application whose manifests define this one (app of apps), or the
	// ApplicationSet that generates it; "" for an application defined in git.
	Owner string `json:"owner,omitempty"`
	// OwnerKind is the owner's kind: Application or ApplicationSet.
	OwnerKind string            `json:"ownerKind,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Annotations are the application's annotations a runtime reports: those under
	// codefresh.io/ and freshet.dev/ (the product annotation among them). Older runtimes omit them.
	Annotations    map[string]string `json:"annotations,omitempty"`
	RepoURL        string            `json:"repoUrl"`
	Path           string            `json:"path,omitempty"`
	TargetRevision string            `json:"targetRevision,omitempty"`
	DestServer     string            `json:"destServer,omitempty"`
	DestName       string            `json:"destName,omitempty"`
	DestNamespace  string            `json:"destNamespace,omitempty"`
	SourceType     string            `json:"sourceType,omitempty"` // Directory, Kustomize, Helm
	AutoSync       bool              `json:"autoSync,omitempty"`
	Prune          bool              `json:"prune,omitempty"`
	SelfHeal       bool              `json:"selfHeal,omitempty"`
	// AutoSyncDisabled: a rollback switched automated sync off.
	AutoSyncDisabled bool `json:"autoSyncDisabled,omitempty"`

	Sync          string         `json:"sync"`   // Synced, OutOfSync, Unknown
	Health        string         `json:"health"` // Healthy, Progressing, Degraded, Suspended, Missing, Unknown
	HealthMessage string         `json:"healthMessage,omitempty"`
	Revision      string         `json:"revision,omitempty"` // the commit the target revision resolves to
	Commit        *Commit        `json:"commit,omitempty"`
	Conditions    []AppCondition `json:"conditions,omitempty"`
	Resources     []AppResource  `json:"resources,omitempty"`
	Operation     *SyncRecord    `json:"operation,omitempty"` // the running or last sync
	ReconciledAt  time.Time      `json:"reconciledAt"`
}

// Commit describes a git commit.
type Commit struct {
	SHA     string    `json:"sha,omitempty"`
	Author  string    `json:"author,omitempty"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time,omitzero"` // the commit time
	// AuthorTime is when the change was written (SyncCommits' commits).
	AuthorTime time.Time `json:"authorTime,omitzero"`
}

// Kinds of SyncCommits.
const (
	CommitsRange     = "range"     // the commits since the previous deployment's revision
	CommitsFirst     = "first"     // no earlier deployment: the revision's own commit
	CommitsRollback  = "rollback"  // an older revision (an ancestor of the previous one): none
	CommitsUnchanged = "unchanged" // the same revision again: none
)

// Bounds of SyncCommits: at most MaxSyncCommits commits (the newest), each author at most
// MaxCommitAuthorBytes and message (the subject line) at most MaxCommitMessageBytes.
const (
	MaxSyncCommits        = 50
	MaxCommitAuthorBytes  = 100
	MaxCommitMessageBytes = 200
)

// SyncCommits is what a deployment brought from its application's source repository: `git log
// from..revision`, newest first. Runtimes that predate it send none.
type SyncCommits struct {
	Kind      string   `json:"kind"`
	From      string   `json:"from,omitempty"` // the previous deployment's revision
	Commits   []Commit `json:"commits,omitempty"`
	Truncated bool     `json:"truncated,omitempty"` // there were more than MaxSyncCommits
}

// AppCondition is an application condition (ComparisonError, SyncError, ...).
type AppCondition struct {
	Type    string    `json:"type"`
	Message string    `json:"message"`
	File    string    `json:"file,omitempty"`
	Line    int       `json:"line,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// AppResource is one managed resource with its sync and health status.
type AppResource struct {
	Group         string `json:"group,omitempty"`
	Version       string `json:"version,omitempty"`
	Kind          string `json:"kind"`
	Namespace     string `json:"namespace,omitempty"`
	Name          string `json:"name"`
	Status        string `json:"status"` // Synced, OutOfSync, Unknown
	Health        string `json:"health,omitempty"`
	HealthMessage string `json:"healthMessage,omitempty"`
	RequiresPrune bool   `json:"requiresPruning,omitempty"`
}

// SyncRecord is one sync operation: running (SyncStarted) or finished. Finished syncs that are
// not dry runs have an ID, unique per application; they are the deployment records.
type SyncRecord struct {
	ID          int64   `json:"id,omitempty"`
	Revision    string  `json:"revision"`
	Phase       string  `json:"phase"` // Running, Succeeded, Failed, Error
	Message     string  `json:"message,omitempty"`
	InitiatedBy string  `json:"initiatedBy"`    // user, automated, selfHeal, rollback
	User        string  `json:"user,omitempty"` // who asked (an email), for user syncs and rollbacks
	DryRun      bool    `json:"dryRun,omitempty"`
	Prune       bool    `json:"prune,omitempty"`
	Commit      *Commit `json:"commit,omitempty"`
	// Commits: what the deployment brought from the source repository (single git sources).
	Commits    *SyncCommits     `json:"commits,omitempty"`
	Changed    []ResourceChange `json:"changed,omitempty"`
	StartedAt  time.Time        `json:"startedAt"`
	FinishedAt time.Time        `json:"finishedAt,omitzero"`
}

// ResourceChange is what a sync did to one resource (created, configured, pruned, failed, ...).
type ResourceChange struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Result    string `json:"result"`
	Message   string `json:"message,omitempty"`
}

// ProcedureAudit carries the changes callers made on a runtime's own ingress (AuditRequest):
// through the tunnel the control plane audits them itself; on an ingress only the runtime sees
// them.
const ProcedureAudit = "/" + ServiceName + "/Audit"

// MaxAuditRecords bounds one AuditRequest.
const MaxAuditRecords = 500

// AuditRequest reports changes made through the runtime's ingress.
type AuditRequest struct {
	Records []AuditRecord `json:"records"`
}

// AuditRecord is one change: who (as the control plane vouched when the runtime checked the
// caller's key), what and the runtime's answer.
type AuditRecord struct {
	UserID   string    `json:"userId"`
	Email    string    `json:"email"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Status   int       `json:"status"`
	SourceIP string    `json:"sourceIp,omitempty"`
	At       time.Time `json:"at"`
}

// AuditResponse acknowledges an AuditRequest.
type AuditResponse struct {
	Accepted int `json:"accepted"`
}
