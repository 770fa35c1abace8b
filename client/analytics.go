package client

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Deployment is one change that reached an environment: a finished sync (not a dry run) of a
// GitOps application, derived from the runtime's sync-finished event.
type Deployment struct {
	ID          string `json:"id"`
	Runtime     string `json:"runtime"`
	RuntimeID   string `json:"runtimeId"`
	Application string `json:"application"`
	Project     string `json:"project,omitempty"`
	// Cluster is the destination cluster's name, else its server URL.
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Revision  string `json:"revision"`
	SyncID    int64  `json:"syncId"`
	// Trigger is auto-sync, manual or rollback.
	Trigger string `json:"trigger"`
	// InitiatedBy is what the runtime reported: automated, selfHeal, user or rollback.
	InitiatedBy string `json:"initiatedBy"`
	User        string `json:"user,omitempty"`
	// Result is succeeded or failed.
	Result  string            `json:"result"`
	Message string            `json:"message,omitempty"`
	Commit  *DeploymentCommit `json:"commit,omitempty"`
	// Images are the images CI builds of the revision pushed, where Freshet built them.
	Images []DeployedImage `json:"images"`
	// Commits are the commits the deployment shipped, each SHA once: those the runtime walked
	// in the source repository between the previous deployment's revision and this one
	// (sources: git), then the deployed images' build commits not among them (image).
	Commits []DeployedCommit `json:"commits"`
	// CommitRange is what the runtime's walk found; absent for runtimes that do not report it.
	CommitRange     *DeploymentCommitRange `json:"commitRange,omitempty"`
	StartedAt       *time.Time             `json:"startedAt,omitempty"`
	FinishedAt      time.Time              `json:"finishedAt"`
	DurationSeconds float64                `json:"durationSeconds"`
	// LeadTimeSeconds is from the revision's commit to the finished deployment, when the
	// commit's time is known.
	LeadTimeSeconds *float64 `json:"leadTimeSeconds,omitempty"`
	// DegradedAt is when the application turned Degraded within the failure window after this
	// deployment, before the next one.
	DegradedAt *time.Time `json:"degradedAt,omitempty"`
	// RolledBackAt is when the next deployment, within the failure window, rolled this one back.
	RolledBackAt *time.Time `json:"rolledBackAt,omitempty"`
}

// DeployedCommit is a commit a deployment shipped. Author and message are as pushed (the
// message's subject line for git-sourced commits), never interpreted.
type DeployedCommit struct {
	SHA        string     `json:"sha"`
	Author     string     `json:"author,omitempty"`
	Message    string     `json:"message,omitempty"`
	AuthorTime *time.Time `json:"authorTime,omitempty"`
	Time       *time.Time `json:"time,omitempty"`
	// Issues are the issue keys the message names (PROJ-123, owner/repo#123, #123).
	Issues []string `json:"issues"`
	// Sources: git (the runtime's walk of the range), image (an image's build commit), or both.
	Sources []string `json:"sources"`
}

// DeploymentCommitRange describes the runtime's walk of a deployment's commits.
type DeploymentCommitRange struct {
	// Kind is range (the commits since the previous deployment), first (no earlier
	// deployment: the revision's own commit), rollback (an older revision: no commits) or
	// unchanged (the same revision again: no commits).
	Kind string `json:"kind"`
	// From is the previous deployment's revision.
	From string `json:"from,omitempty"`
	// Truncated: there were more commits than the 50 newest listed.
	Truncated bool `json:"truncated,omitempty"`
}

// DeploymentCommit is the deployed revision's commit.
type DeploymentCommit struct {
	Author  string     `json:"author,omitempty"`
	Message string     `json:"message,omitempty"`
	Time    *time.Time `json:"time,omitempty"`
}

// DeployedImage is an image a CI build pushed for a deployed revision.
type DeployedImage struct {
	Registry   string   `json:"registry,omitempty"`
	Repository string   `json:"repository"`
	Tags       []string `json:"tags,omitempty"`
	Digest     string   `json:"digest"`
	BuildID    string   `json:"buildId,omitempty"`
	// Commits and Issues are what the reported images of this digest were built from (each
	// commit once, each issue once).
	Commits []ImageCommit `json:"commits"`
	Issues  []ImageIssue  `json:"issues"`
}

// DeploymentFilter narrows a deployment listing.
type DeploymentFilter struct {
	ListOptions
	App     string
	Runtime string // ID or name
	Cluster string // name or server URL
	Product string // a product's name: its applications' deployments
	Since   time.Time
	Until   time.Time
}

// DORAMetric is one DORA metric: its value in unit, and its performance band (elite, high,
// medium, low; none without data).
type DORAMetric struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Band  string  `json:"band"`
}

// DORABucket is one day, week (from Monday) or month of a DORA report's series, in UTC.
type DORABucket struct {
	Start       time.Time `json:"start"`
	Deployments int64     `json:"deployments"`
	Successful  int64     `json:"successful"`
	Failures    int64     `json:"failures"`
	// LeadTimeSeconds is the mean lead time of the bucket's successful deployments.
	LeadTimeSeconds *float64 `json:"leadTimeSeconds,omitempty"`
	// Incidents started in the bucket, OpenIncidents of them not restored yet.
	Incidents     int64 `json:"incidents"`
	OpenIncidents int64 `json:"openIncidents"`
	// TimeToRestoreSeconds is the median length of the bucket's restored incidents.
	TimeToRestoreSeconds *float64 `json:"timeToRestoreSeconds,omitempty"`
}

// DORAReport is the four DORA metrics over a range (docs/analytics.md defines them).
type DORAReport struct {
	Since                time.Time  `json:"since"`
	Until                time.Time  `json:"until"`
	Bucket               string     `json:"bucket"`
	Failures             []string   `json:"failures"`
	FailureWindowSeconds float64    `json:"failureWindowSeconds"`
	DeploymentFrequency  DORAMetric `json:"deploymentFrequency"`
	LeadTimeForChanges   DORAMetric `json:"leadTimeForChanges"`
	ChangeFailureRate    DORAMetric `json:"changeFailureRate"`
	TimeToRestore        DORAMetric `json:"timeToRestore"`
	// Deployments counts the finished syncs in the range, successful or not.
	Deployments   int64        `json:"deployments"`
	Successful    int64        `json:"successful"`
	FailedChanges int64        `json:"failedChanges"`
	Incidents     int64        `json:"incidents"`
	OpenIncidents int64        `json:"openIncidents"`
	Series        []DORABucket `json:"series"`
}

// DORAQuery selects a DORA report. Zero fields take the server's defaults: the last 30 days,
// day buckets, every failure kind.
type DORAQuery struct {
	App      string
	Runtime  string
	Cluster  string
	Product  string // a product's name: the metrics over its applications as a whole
	Since    time.Time
	Until    time.Time
	Bucket   string   // day, week or month
	Failures []string // sync-failed, degraded, rollback
}

// ListDeployments lists deployments, newest first.
func (c *Client) ListDeployments(ctx context.Context, f DeploymentFilter) (List[Deployment], error) {
	q := listQuery(f.ListOptions)
	for k, v := range map[string]string{"app": f.App, "runtime": f.Runtime, "cluster": f.Cluster, "product": f.Product} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.Format(time.RFC3339Nano))
	}
	var out List[Deployment]
	err := c.do(ctx, http.MethodGet, "/api/v1/deployments", q, nil, &out)
	return out, err
}

// DORA returns the DORA metrics q selects.
func (c *Client) DORA(ctx context.Context, r DORAQuery) (DORAReport, error) {
	q := listQuery(ListOptions{})
	for k, v := range map[string]string{"app": r.App, "runtime": r.Runtime, "cluster": r.Cluster, "product": r.Product, "bucket": r.Bucket,
		"failures": strings.Join(r.Failures, ",")} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !r.Since.IsZero() {
		q.Set("since", r.Since.Format(time.RFC3339Nano))
	}
	if !r.Until.IsZero() {
		q.Set("until", r.Until.Format(time.RFC3339Nano))
	}
	var out DORAReport
	err := c.do(ctx, http.MethodGet, "/api/v1/dora", q, nil, &out)
	return out, err
}
