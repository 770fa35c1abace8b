package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The types below are the JSON shapes of a runtime's app-proxy (docs/appproxy.md): an
// application's spec is an Argo CD Application, its status what the runtime's GitOps engine
// reports. Options this package does not model field by field (Helm, Kustomize, retry, ...)
// are kept as raw JSON, so an Application read and written back loses nothing.

// Application is a GitOps application of a runtime.
type Application struct {
	Name string `json:"name"`
	// File is the application's file in the runtime's installation repository.
	File string `json:"file,omitempty"`
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

// ApplicationManifest is an argoproj.io/v1alpha1 Application.
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
	Name    string `json:"name"`
	Project string `json:"project"`
	// Sync is Synced, OutOfSync, or Unknown when the comparison failed.
	Sync string `json:"sync"`
	// Revision is the commit the application was compared with (its target revision resolved).
	Revision       string         `json:"revision,omitempty"`
	TargetRevision string         `json:"targetRevision,omitempty"`
	Commit         *CommitInfo    `json:"commit,omitempty"`
	SourceType     string         `json:"sourceType,omitempty"`
	Health         Health         `json:"health"`
	Resources      []AppResource  `json:"resources,omitempty"`
	Conditions     []AppCondition `json:"conditions,omitempty"`
	// Operation is the running sync, or the last one.
	Operation *SyncResult `json:"operation,omitempty"`
	// AutoSyncDisabled: a rollback switched automated sync off.
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

// ResourceDiff is one resource's comparison with git.
type ResourceDiff struct {
	ResourceKey
	Version string         `json:"version"`
	Status  string         `json:"status"` // Synced, OutOfSync, Missing, RequiresPruning
	Source  SourceLocation `json:"source,omitzero"`
	// Diff is a unified diff from the live object to the desired one; "" when Synced.
	Diff    string `json:"diff,omitempty"`
	Message string `json:"message,omitempty"`
}

// SyncRequest starts a sync.
type SyncRequest struct {
	// Revision to sync to instead of the target revision.
	Revision string `json:"revision,omitempty"`
	Prune    bool   `json:"prune,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
	// Resources limits the sync to these resources: "KIND/NAME" or "GROUP/KIND/NAMESPACE/NAME".
	Resources []string `json:"resources,omitempty"`
	// Options are sync options for this sync ("CreateNamespace=true", ...).
	Options []string `json:"options,omitempty"`
}

// SyncResult is one sync operation.
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
	Deleted bool   `json:"deleted,omitempty"`
}

// HistoryEntry is one recorded sync (dry runs are not recorded).
type HistoryEntry struct {
	ID          int64            `json:"id"`
	Revision    string           `json:"revision"`
	Source      AppSource        `json:"source"`
	Commit      *CommitInfo      `json:"commit,omitempty"`
	Phase       string           `json:"phase"`
	Message     string           `json:"message,omitempty"`
	Changed     []ResourceResult `json:"changed,omitempty"`
	InitiatedBy string           `json:"initiatedBy"`
	User        string           `json:"user,omitempty"`
	StartedAt   time.Time        `json:"startedAt"`
	FinishedAt  time.Time        `json:"finishedAt"`
	Duration    time.Duration    `json:"duration"`
}

// RollbackResult is the outcome of a rollback.
type RollbackResult struct {
	Result *SyncResult  `json:"result"`
	Entry  HistoryEntry `json:"entry"`
	// AutoSyncDisabled: automated sync was on and the rollback switched it off, as Argo CD
	// does, so that the application stays at the rolled-back revision.
	AutoSyncDisabled bool `json:"autoSyncDisabled,omitempty"`
}

// TreeNode is a live object of an application's resource tree: a managed resource, with the
// objects it owns (through owner references) as children.
type TreeNode struct {
	ResourceKey
	Version   string      `json:"version"`
	UID       string      `json:"uid"`
	Health    Health      `json:"health"`
	Sync      string      `json:"sync,omitempty"` // managed resources only
	CreatedAt time.Time   `json:"createdAt"`
	Images    []string    `json:"images,omitempty"` // Pods
	Children  []*TreeNode `json:"children,omitempty"`
}

// appsPath is the app-proxy's applications collection of a runtime, reached through the
// control plane.
func appsPath(runtime string) string {
	return "/runtimes/" + url.PathEscape(runtime) + "/app-proxy/api/v1/applications"
}

func appPath(runtime, name string) string {
	return appsPath(runtime) + "/" + url.PathEscape(name)
}

// ListApplications lists a runtime's applications, sorted by name.
func (c *Client) ListApplications(ctx context.Context, runtime string) (List[Application], error) {
	var out List[Application]
	err := c.do(ctx, http.MethodGet, appsPath(runtime), nil, nil, &out)
	return out, err
}

// GetApplication returns one application of a runtime.
func (c *Client) GetApplication(ctx context.Context, runtime, name string) (Application, error) {
	var out Application
	err := c.do(ctx, http.MethodGet, appPath(runtime, name), nil, nil, &out)
	return out, err
}

// CreateApplication adds an application to a runtime (committing it to the runtime's
// installation repository). manifest is an Argo CD Application, as YAML or JSON. An existing
// application of that name is a conflict (409) unless upsert, which replaces it.
func (c *Client) CreateApplication(ctx context.Context, runtime string, manifest []byte, upsert bool) (Application, error) {
	return c.CreateApplicationIn(ctx, runtime, "", manifest, upsert)
}

// CreateApplicationIn is CreateApplication into a Git Source of the runtime (a commit to
// that source's repository); gitSource "" is the installation repository.
func (c *Client) CreateApplicationIn(ctx context.Context, runtime, gitSource string, manifest []byte, upsert bool) (Application, error) {
	q := url.Values{}
	if upsert {
		q.Set("upsert", "true")
	}
	if gitSource != "" {
		q.Set("gitSource", gitSource)
	}
	ct := "application/yaml"
	if t := bytes.TrimSpace(manifest); len(t) > 0 && t[0] == '{' {
		ct = "application/json"
	}
	var out Application
	err := c.send(ctx, c.http, http.MethodPost, appsPath(runtime), q, ct, manifest, &out)
	return out, err
}

// DeleteApplication removes an application from a runtime; with cascade, its resources are
// deleted from the cluster too.
func (c *Client) DeleteApplication(ctx context.Context, runtime, name string, cascade bool) error {
	q := url.Values{"cascade": {strconv.FormatBool(cascade)}}
	return c.do(ctx, http.MethodDelete, appPath(runtime, name), q, nil, nil)
}

// RefreshApplication compares an application with git and the cluster again and returns it;
// hard also drops cached git refs and rendered manifests.
func (c *Client) RefreshApplication(ctx context.Context, runtime, name string, hard bool) (Application, error) {
	q := url.Values{}
	if hard {
		q.Set("hard", "true")
	}
	var out Application
	err := c.do(ctx, http.MethodPost, appPath(runtime, name)+"/refresh", q, struct{}{}, &out)
	return out, err
}

// ApplicationDiff returns each resource's diff between the cluster and git.
func (c *Client) ApplicationDiff(ctx context.Context, runtime, name string) (List[ResourceDiff], error) {
	var out List[ResourceDiff]
	err := c.do(ctx, http.MethodGet, appPath(runtime, name)+"/diff", nil, nil, &out)
	return out, err
}

// SyncApplication syncs an application and returns the result when the sync has ended. The
// call lasts as long as the sync (no client timeout applies): bound it with ctx.
func (c *Client) SyncApplication(ctx context.Context, runtime, name string, r SyncRequest) (SyncResult, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return SyncResult{}, err
	}
	var out SyncResult
	err = c.send(ctx, c.untimed(), http.MethodPost, appPath(runtime, name)+"/sync", nil, "application/json", body, &out)
	return out, err
}

// TerminateSync stops an application's running sync; it reports whether one was running.
func (c *Client) TerminateSync(ctx context.Context, runtime, name string) (bool, error) {
	var out struct {
		Terminated bool `json:"terminated"`
	}
	err := c.do(ctx, http.MethodPost, appPath(runtime, name)+"/terminate", nil, struct{}{}, &out)
	return out.Terminated, err
}

// SetAutoSync switches an application's automated sync back on after a rollback (or off).
func (c *Client) SetAutoSync(ctx context.Context, runtime, name string, enabled bool) (Application, error) {
	var out Application
	err := c.do(ctx, http.MethodPost, appPath(runtime, name)+"/auto-sync", nil, map[string]bool{"enabled": enabled}, &out)
	return out, err
}

// ApplicationHistory returns an application's recorded syncs, oldest first.
func (c *Client) ApplicationHistory(ctx context.Context, runtime, name string) (List[HistoryEntry], error) {
	var out List[HistoryEntry]
	err := c.do(ctx, http.MethodGet, appPath(runtime, name)+"/history", nil, nil, &out)
	return out, err
}

// RollbackApplication syncs an application to the revision of history entry id. Like
// SyncApplication, it returns when the sync has ended.
func (c *Client) RollbackApplication(ctx context.Context, runtime, name string, id int64, prune bool) (RollbackResult, error) {
	body, err := json.Marshal(struct {
		ID    int64 `json:"id"`
		Prune bool  `json:"prune"`
	}{id, prune})
	if err != nil {
		return RollbackResult{}, err
	}
	var out RollbackResult
	err = c.send(ctx, c.untimed(), http.MethodPost, appPath(runtime, name)+"/rollback", nil, "application/json", body, &out)
	return out, err
}

// ApplicationTree returns an application's managed resources with the live objects they own.
func (c *Client) ApplicationTree(ctx context.Context, runtime, name string) (List[TreeNode], error) {
	var out List[TreeNode]
	err := c.do(ctx, http.MethodGet, appPath(runtime, name)+"/tree", nil, nil, &out)
	return out, err
}

// untimed is the client's HTTP client without its overall timeout, for calls that last as
// long as an operation on the server does.
func (c *Client) untimed() *http.Client {
	return &http.Client{Transport: c.http.Transport, CheckRedirect: c.http.CheckRedirect, Jar: c.http.Jar}
}

// send is do with a body that is already encoded (contentType) and a chosen HTTP client.
func (c *Client) send(ctx context.Context, h *http.Client, method, path string, query url.Values, contentType string, body []byte, out any) error {
	return c.exchange(ctx, h, method, path, query, http.Header{"Content-Type": {contentType}}, body, out)
}
