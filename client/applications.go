package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// The app-proxy's types (docs/appproxy.md) are api/appproxyv1's: an application's spec is an
// Argo CD Application, its status what the runtime's GitOps engine reports. Options the
// contract does not model field by field (Helm, Kustomize, retry, ...) are kept as raw JSON, so
// an Application read and written back loses nothing.
type (
	Application            = appproxyv1.Application
	ApplicationManifest    = appproxyv1.ApplicationManifest
	AppMetadata            = appproxyv1.AppMetadata
	AppSpec                = appproxyv1.AppSpec
	AppSource              = appproxyv1.AppSource
	AppDestination         = appproxyv1.AppDestination
	AppSyncPolicy          = appproxyv1.AppSyncPolicy
	AppSyncPolicyAutomated = appproxyv1.AppSyncPolicyAutomated
	AppIgnoreDifferences   = appproxyv1.AppIgnoreDifferences
	AppInfo                = appproxyv1.AppInfo
	AppStatus              = appproxyv1.AppStatus
	Health                 = appproxyv1.Health
	CommitInfo             = appproxyv1.CommitInfo
	SourceLocation         = appproxyv1.SourceLocation
	AppCondition           = appproxyv1.AppCondition
	ResourceKey            = appproxyv1.ResourceKey
	AppResource            = appproxyv1.AppResource
	ResourceDiff           = appproxyv1.ResourceDiff
	SyncRequest            = appproxyv1.SyncRequest
	SyncResult             = appproxyv1.SyncResult
	ResourceResult         = appproxyv1.ResourceResult
	HookResult             = appproxyv1.HookResult
	HistoryEntry           = appproxyv1.HistoryEntry
	RollbackResult         = appproxyv1.RollbackResult
	TreeNode               = appproxyv1.TreeNode
)

// Sync statuses (AppStatus.Sync, AppResource.Status, TreeNode.Sync).
const (
	SyncStatusSynced    = appproxyv1.SyncStatusSynced
	SyncStatusOutOfSync = appproxyv1.SyncStatusOutOfSync
	SyncStatusUnknown   = appproxyv1.SyncStatusUnknown
)

// Health statuses (Health.Status), from best to worst.
const (
	HealthHealthy     = appproxyv1.HealthHealthy
	HealthSuspended   = appproxyv1.HealthSuspended
	HealthProgressing = appproxyv1.HealthProgressing
	HealthMissing     = appproxyv1.HealthMissing
	HealthDegraded    = appproxyv1.HealthDegraded
	HealthUnknown     = appproxyv1.HealthUnknown
)

// Operation phases (SyncResult.Phase, HistoryEntry.Phase).
const (
	PhaseRunning   = appproxyv1.PhaseRunning
	PhaseSucceeded = appproxyv1.PhaseSucceeded
	PhaseFailed    = appproxyv1.PhaseFailed
	PhaseError     = appproxyv1.PhaseError
)

// Diff statuses (ResourceDiff.Status).
const (
	DiffSynced          = appproxyv1.DiffSynced
	DiffOutOfSync       = appproxyv1.DiffOutOfSync
	DiffMissing         = appproxyv1.DiffMissing
	DiffRequiresPruning = appproxyv1.DiffRequiresPruning
)

// proxyPath is a runtime's app-proxy REST API, reached through the control plane.
func proxyPath(runtime string) string {
	return "/runtimes/" + url.PathEscape(runtime) + appproxyv1.Prefix
}

// appsPath is the app-proxy's applications collection of a runtime, reached through the
// control plane.
func appsPath(runtime string) string {
	return proxyPath(runtime) + "applications"
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
	var out appproxyv1.TerminateResult
	err := c.do(ctx, http.MethodPost, appPath(runtime, name)+"/terminate", nil, struct{}{}, &out)
	return out.Terminated, err
}

// SetAutoSync switches an application's automated sync back on after a rollback (or off).
func (c *Client) SetAutoSync(ctx context.Context, runtime, name string, enabled bool) (Application, error) {
	var out Application
	err := c.do(ctx, http.MethodPost, appPath(runtime, name)+"/auto-sync", nil, appproxyv1.AutoSyncRequest{Enabled: enabled}, &out)
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
	body, err := json.Marshal(appproxyv1.RollbackRequest{ID: id, Prune: prune})
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
