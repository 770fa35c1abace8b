package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Project groups pipelines.
type Project struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Tags      []string  `json:"tags,omitempty"` // what attribute-based rules match the project by
	CreatedAt time.Time `json:"createdAt"`
	OwnerTeam string    `json:"ownerTeam,omitempty"` // the team that owns it (and its pipelines and builds)
}

// ProjectRequest creates a project, owned by Team (name or ID) when set.
type ProjectRequest struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
	Team string   `json:"team,omitempty"`
}

// PipelineConfig is a pipeline's settings besides its spec.
type PipelineConfig struct {
	Contexts          []string          `json:"contexts,omitempty"`
	Variables         []Variable        `json:"variables,omitempty"`
	RunnerLabels      map[string]string `json:"runnerLabels,omitempty"`
	Concurrency       int               `json:"concurrency,omitempty"`
	BranchConcurrency int               `json:"branchConcurrency,omitempty"`
	TerminateOlder    bool              `json:"terminateOlder,omitempty"`
	MaxAttempts       int               `json:"maxAttempts,omitempty"`
	OnLeaseExpiry     string            `json:"onLeaseExpiry,omitempty"`
	SpecContext       string            `json:"specContext,omitempty"` // credentials for specRepo: GIT_TOKEN or GIT_USERNAME/GIT_PASSWORD
	Tags              []string          `json:"tags,omitempty"`        // what attribute-based rules match the pipeline (and its builds) by
}

// Variable is a pipeline variable; encrypted values come back masked.
type Variable struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Encrypted bool   `json:"encrypted,omitempty"`
}

// Pipeline is a CI pipeline.
type Pipeline struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Project   string         `json:"project"`
	FullName  string         `json:"fullName"` // project/name
	Spec      string         `json:"spec"`
	SpecRepo  string         `json:"specRepo,omitempty"`
	SpecPath  string         `json:"specPath,omitempty"`
	Config    PipelineConfig `json:"config"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// PipelineRequest creates or replaces a pipeline.
type PipelineRequest struct {
	Project string `json:"project,omitempty"`
	Name    string `json:"name,omitempty"`
	Spec    string `json:"spec,omitempty"`
	// SpecRepo and SpecPath keep the spec in git instead: it is read at each build's revision.
	SpecRepo string         `json:"specRepo,omitempty"`
	SpecPath string         `json:"specPath,omitempty"`
	Config   PipelineConfig `json:"config"`
}

// LintIssue is one problem POST /api/v1/pipelines/lint found in a spec. Line and Column are
// 1-based (0 when the problem has no position); Field is the dotted path of the offending field
// (steps.build.tag), empty for problems of the whole document.
type LintIssue struct {
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	Severity string `json:"severity"` // error or warning
}

// LintResult is the verdict of POST /api/v1/pipelines/lint: Valid is false when any issue is
// an error; warnings leave a spec valid.
type LintResult struct {
	Valid  bool        `json:"valid"`
	Issues []LintIssue `json:"issues"`
}

// RunRequest starts a build.
type RunRequest struct {
	Branch    string            `json:"branch,omitempty"`
	SHA       string            `json:"sha,omitempty"`
	Repo      string            `json:"repo,omitempty"`
	Message   string            `json:"message,omitempty"`
	Variables map[string]string `json:"variables,omitempty"`
}

// Build is one run of a pipeline.
type Build struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"` // pipeline #number
	Number      int64      `json:"number"`
	PipelineID  string     `json:"pipelineId"`
	Pipeline    string     `json:"pipeline,omitempty"`
	Status      string     `json:"status"`
	Reason      string     `json:"reason,omitempty"`
	Trigger     string     `json:"trigger"`
	TriggeredBy string     `json:"triggeredBy"`
	Repo        string     `json:"repo,omitempty"`
	Branch      string     `json:"branch,omitempty"`
	SHA         string     `json:"sha,omitempty"`
	Message     string     `json:"message,omitempty"`
	Author      string     `json:"author,omitempty"` // the commit's author, when the trigger knew it
	RunnerID    string     `json:"runnerId,omitempty"`
	Attempt     int        `json:"attempt"`
	RestartOf   string     `json:"restartOf,omitempty"`
	LogSize     int64      `json:"logSize"`
	CreatedAt   time.Time  `json:"createdAt"`
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	FinishedAt  *time.Time `json:"finishedAt,omitempty"`
	Steps       []Step     `json:"steps,omitempty"`
	// Images are the images the build's steps pushed (GetBuild only).
	Images []Image `json:"images,omitempty"`
}

// Image is an image a build step pushed to a registry, with the build's commit.
type Image struct {
	ID         string    `json:"id"`
	BuildID    string    `json:"buildId"`
	Step       string    `json:"step"`
	Registry   string    `json:"registry"`   // the registry context's name
	Repository string    `json:"repository"` // the full repository, e.g. ghcr.io/acme/app
	Tags       []string  `json:"tags"`
	Digest     string    `json:"digest"` // the manifest digest, sha256:…
	Size       int64     `json:"size"`   // bytes: the config and every layer, compressed
	SHA        string    `json:"sha,omitempty"`
	Branch     string    `json:"branch,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
}

// Step is a build step's state.
type Step struct {
	Name       string     `json:"name"`
	Stage      string     `json:"stage,omitempty"`
	Status     string     `json:"status"`
	ExitCode   int        `json:"exitCode"`
	Attempts   int        `json:"attempts"`
	Message    string     `json:"message,omitempty"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// BuildFilter narrows a build listing.
type BuildFilter struct {
	ListOptions
	Pipeline, Status, Branch string
}

// RestartRequest restarts a build.
type RestartRequest struct {
	FromFailed bool `json:"fromFailed,omitempty"`
}

// Context is shared configuration, secrets or a container registry; secret values and registry
// passwords come back masked.
type Context struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Type      string            `json:"type"`   // config, secret, registry, git, kubernetes or helm-repository
	Values    map[string]string `json:"values"` // config, secret, kubernetes and helm-repository contexts; empty for a registry or git context
	Registry  *RegistryContext  `json:"registry,omitempty"`
	Git       *GitContext       `json:"git,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
}

// RegistryContext is a registry context's container registry.
type RegistryContext struct {
	// URL is host[:port] and an optional path prefix, as image references write it:
	// ghcr.io/acme, 127.0.0.1:5000.
	URL      string `json:"url"`
	Username string `json:"username,omitempty"`
	// Password is a password or token. Answers mask it ("*****") unless decrypted; a request
	// that sends the mask back keeps the stored one, as long as the URL and CA stay the same.
	Password string `json:"password,omitempty"`
	CA       string `json:"ca,omitempty"`      // PEM certificates to trust, for a registry with a private CA
	Default  bool   `json:"default,omitempty"` // the account's default registry (at most one)
}

// GitContext is a git context's provider: git-clone steps clone owner/name through it with its
// token, and builds of its repositories report commit statuses with it.
type GitContext struct {
	Provider string `json:"provider"` // github, gitlab, gitea or bitbucket
	// URL is the provider's API base URL; empty on create: the SaaS one (https://api.github.com,
	// https://gitlab.com, https://api.bitbucket.org/2.0; Gitea has none).
	URL string `json:"url,omitempty"`
	// Username is who git authenticates as; empty: the provider's convention for tokens.
	Username string `json:"username,omitempty"`
	// Token is the provider's access token. Answers mask it ("*****") unless decrypted; a
	// request that sends the mask back keeps the stored one, as long as provider and URL stay.
	Token string `json:"token,omitempty"`
}

// ContextRequest creates or replaces a context: values for a config or secret context, registry
// for a registry context, git for a git context.
type ContextRequest struct {
	Name     string            `json:"name,omitempty"`
	Type     string            `json:"type,omitempty"`
	Values   map[string]string `json:"values,omitempty"`
	Registry *RegistryContext  `json:"registry,omitempty"`
	Git      *GitContext       `json:"git,omitempty"`
}

// Runner is a registered runner.
type Runner struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	Info      map[string]any    `json:"info,omitempty"`
	Connected bool              `json:"connected"`
	LastSeen  *time.Time        `json:"lastSeen,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	// VersionSkew is how the version it announced stands to the control plane's; absent
	// before it connected.
	VersionSkew *VersionSkew `json:"versionSkew,omitempty"`
}

// RegisterRunnerRequest registers a runner.
type RegisterRunnerRequest struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// RegisteredRunner is a new runner with its token, shown once.
type RegisteredRunner struct {
	Runner
	Token string `json:"token"`
}

func pathEscape(s string) string { return url.PathEscape(s) }

// CreateProject creates a project, with tags for attribute-based rules.
func (c *Client) CreateProject(ctx context.Context, name string, tags ...string) (Project, error) {
	var out Project
	err := c.do(ctx, http.MethodPost, "/api/v1/projects", nil, ProjectRequest{Name: name, Tags: tags}, &out)
	return out, err
}

// CreateOwnedProject creates a project owned by team (name or ID), with tags.
func (c *Client) CreateOwnedProject(ctx context.Context, name, team string, tags ...string) (Project, error) {
	var out Project
	err := c.do(ctx, http.MethodPost, "/api/v1/projects", nil, ProjectRequest{Name: name, Tags: tags, Team: team}, &out)
	return out, err
}

// SetProjectOwner gives a project (and its pipelines and builds) to team (name or ID; empty:
// no team).
func (c *Client) SetProjectOwner(ctx context.Context, ref, team string) (Project, error) {
	var out Project
	err := c.do(ctx, http.MethodPut, "/api/v1/projects/"+pathEscape(ref)+"/owner", nil, SetOwnerRequest{Team: team}, &out)
	return out, err
}

// ListProjectsOwnedBy lists the projects team (name or ID) owns.
func (c *Client) ListProjectsOwnedBy(ctx context.Context, team string, o ListOptions) (List[Project], error) {
	var out List[Project]
	q := listQuery(o)
	q.Set("owner", team)
	err := c.do(ctx, http.MethodGet, "/api/v1/projects", q, nil, &out)
	return out, err
}

// ListProjects lists projects.
func (c *Client) ListProjects(ctx context.Context, o ListOptions) (List[Project], error) {
	var out List[Project]
	err := c.do(ctx, http.MethodGet, "/api/v1/projects", listQuery(o), nil, &out)
	return out, err
}

// GetProject returns a project by ID or name.
func (c *Client) GetProject(ctx context.Context, ref string) (Project, error) {
	var out Project
	err := c.do(ctx, http.MethodGet, "/api/v1/projects/"+pathEscape(ref), nil, nil, &out)
	return out, err
}

// DeleteProject deletes a project with its pipelines and builds.
func (c *Client) DeleteProject(ctx context.Context, ref string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/projects/"+pathEscape(ref), nil, nil, nil)
}

// CreatePipeline creates a pipeline.
func (c *Client) CreatePipeline(ctx context.Context, r PipelineRequest) (Pipeline, error) {
	var out Pipeline
	err := c.do(ctx, http.MethodPost, "/api/v1/pipelines", nil, r, &out)
	return out, err
}

// LintPipeline checks a spec without saving it.
func (c *Client) LintPipeline(ctx context.Context, spec string) (LintResult, error) {
	var out LintResult
	err := c.do(ctx, http.MethodPost, "/api/v1/pipelines/lint", nil, map[string]string{"spec": spec}, &out)
	return out, err
}

// UpdatePipeline replaces a pipeline's spec and config. ref is an ID or project/name.
func (c *Client) UpdatePipeline(ctx context.Context, ref string, r PipelineRequest) (Pipeline, error) {
	var out Pipeline
	err := c.do(ctx, http.MethodPut, "/api/v1/pipelines/"+pathEscape(ref), nil, r, &out)
	return out, err
}

// GetPipeline returns a pipeline by ID or project/name.
func (c *Client) GetPipeline(ctx context.Context, ref string) (Pipeline, error) {
	var out Pipeline
	err := c.do(ctx, http.MethodGet, "/api/v1/pipelines/"+pathEscape(ref), nil, nil, &out)
	return out, err
}

// ListPipelines lists pipelines, of one project when project is set.
func (c *Client) ListPipelines(ctx context.Context, project string, o ListOptions) (List[Pipeline], error) {
	q := listQuery(o)
	if project != "" {
		q.Set("project", project)
	}
	var out List[Pipeline]
	err := c.do(ctx, http.MethodGet, "/api/v1/pipelines", q, nil, &out)
	return out, err
}

// DeletePipeline deletes a pipeline.
func (c *Client) DeletePipeline(ctx context.Context, ref string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/pipelines/"+pathEscape(ref), nil, nil, nil)
}

// RunPipeline queues a build.
func (c *Client) RunPipeline(ctx context.Context, ref string, r RunRequest) (Build, error) {
	var out Build
	err := c.do(ctx, http.MethodPost, "/api/v1/pipelines/"+pathEscape(ref)+"/runs", nil, r, &out)
	return out, err
}

// ListBuilds lists builds, newest first.
func (c *Client) ListBuilds(ctx context.Context, f BuildFilter) (List[Build], error) {
	q := listQuery(f.ListOptions)
	for k, v := range map[string]string{"pipeline": f.Pipeline, "status": f.Status, "branch": f.Branch} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out List[Build]
	err := c.do(ctx, http.MethodGet, "/api/v1/builds", q, nil, &out)
	return out, err
}

// GetBuild returns a build with its steps.
func (c *Client) GetBuild(ctx context.Context, id string) (Build, error) {
	var out Build
	err := c.do(ctx, http.MethodGet, "/api/v1/builds/"+pathEscape(id), nil, nil, &out)
	return out, err
}

// CancelBuild terminates a build.
func (c *Client) CancelBuild(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/builds/"+pathEscape(id)+"/cancel", nil, struct{}{}, nil)
}

// RestartBuild queues a new build like id.
func (c *Client) RestartBuild(ctx context.Context, id string, fromFailed bool) (Build, error) {
	var out Build
	err := c.do(ctx, http.MethodPost, "/api/v1/builds/"+pathEscape(id)+"/restart", nil, RestartRequest{FromFailed: fromFailed}, &out)
	return out, err
}

// ApprovalRequest is the optional body of approving or denying a build: a comment kept with the
// decision (the step's message and the audit record).
type ApprovalRequest struct {
	Comment string `json:"comment,omitempty"`
}

// ApproveBuild approves (or, with approve false, denies) a build waiting for approval.
func (c *Client) ApproveBuild(ctx context.Context, id string, approve bool) error {
	return c.DecideBuild(ctx, id, approve, "")
}

// DecideBuild approves or denies a build waiting for approval, with a comment (may be empty).
func (c *Client) DecideBuild(ctx context.Context, id string, approve bool, comment string) error {
	verb := "approve"
	if !approve {
		verb = "deny"
	}
	return c.do(ctx, http.MethodPost, "/api/v1/builds/"+pathEscape(id)+"/"+verb, nil, ApprovalRequest{Comment: comment}, nil)
}

// BuildLog returns a build's log from offset (not following).
func (c *Client) BuildLog(ctx context.Context, id string, offset int64) ([]byte, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/api/v1/builds/"+pathEscape(id)+"/logs?offset="+strconv.FormatInt(offset, 10), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return nil, readError(resp)
	}
	return io.ReadAll(resp.Body)
}

// LogEvent is one event of a followed log: a chunk, or the end with the build's final status.
type LogEvent struct {
	Offset int64
	Data   []byte
	Done   bool
	Status string
}

// FollowLog streams a build's log from offset over server-sent events until the build ends
// and the whole log was sent, calling fn for each event (each byte once, in order).
//
// When the connection breaks or the control plane is away (a restart, a deploy, a proxy's
// 502/503/504 meanwhile), it reconnects from the last byte received, with backoff up to
// followMaxBackoff, for as long as ctx lives: a follow outlasts any outage. It returns when the
// build ended, when ctx ends, when fn fails, or when the server refuses the follow for good (a
// 4xx other than 408 and 429: the build does not exist, the token is not valid).
func (c *Client) FollowLog(ctx context.Context, id string, offset int64, fn func(LogEvent) error) error {
	h := &http.Client{Transport: c.http.Transport} // no overall timeout: a follow lasts as long as the build
	failures := 0
	for {
		if failures > 0 {
			wait := min(followFirstBackoff<<min(failures-1, 6), followMaxBackoff)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		req, err := c.newRequest(ctx, http.MethodGet, "/api/v1/builds/"+pathEscape(id)+"/logs?follow=1&offset="+strconv.FormatInt(offset, 10), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := h.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failures++
			continue
		}
		if resp.StatusCode >= 400 {
			if !retryableStatus(resp.StatusCode) {
				defer resp.Body.Close()
				return readError(resp)
			}
			resp.Body.Close()
			failures++
			continue
		}
		var fnErr error
		done, err := readSSE(resp.Body, func(ev LogEvent) error {
			if !ev.Done {
				offset = ev.Offset + int64(len(ev.Data))
			}
			fnErr = fn(ev)
			return fnErr
		})
		resp.Body.Close()
		switch {
		case fnErr != nil:
			return fnErr
		case done, errors.Is(err, errBadEvent):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		failures = 1 // connected, then cut: reconnect after the first backoff
	}
}

// Reconnect backoff of FollowLog: doubling from the first to the cap (variables for tests).
var (
	followFirstBackoff = 200 * time.Millisecond
	followMaxBackoff   = 5 * time.Second
)

// retryableStatus reports whether an HTTP status may go away by asking again: the server or a
// proxy in front of it is restarting or overloaded, or the request timed out.
func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
}

// errBadEvent is a log event that does not decode: a server bug, not worth reconnecting for.
var errBadEvent = errors.New("bad log event")

func readSSE(r io.Reader, fn func(LogEvent) error) (done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	event, data := "", ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data = strings.TrimSpace(line[5:])
		case line == "":
			switch event {
			case "log":
				var m struct {
					Offset int64  `json:"offset"`
					Data   []byte `json:"data"`
				}
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					return false, fmt.Errorf("%w: %w", errBadEvent, err)
				}
				if err := fn(LogEvent{Offset: m.Offset, Data: m.Data}); err != nil {
					return false, err
				}
			case "end":
				var m struct {
					Status string `json:"status"`
				}
				json.Unmarshal([]byte(data), &m)
				return true, fn(LogEvent{Done: true, Status: m.Status})
			}
			event, data = "", ""
		}
	}
	return false, sc.Err()
}

// CreateContext creates a context.
func (c *Client) CreateContext(ctx context.Context, r ContextRequest) (Context, error) {
	var out Context
	err := c.do(ctx, http.MethodPost, "/api/v1/contexts", nil, r, &out)
	return out, err
}

// UpdateContext replaces a context's values.
func (c *Client) UpdateContext(ctx context.Context, name string, r ContextRequest) (Context, error) {
	var out Context
	err := c.do(ctx, http.MethodPut, "/api/v1/contexts/"+pathEscape(name), nil, r, &out)
	return out, err
}

// ListContexts lists contexts, secret values masked.
func (c *Client) ListContexts(ctx context.Context) (List[Context], error) {
	var out List[Context]
	err := c.do(ctx, http.MethodGet, "/api/v1/contexts", nil, nil, &out)
	return out, err
}

// GetContext returns a context; with decrypt, secret values in plain text (admins; audited).
func (c *Client) GetContext(ctx context.Context, name string, decrypt bool) (Context, error) {
	q := url.Values{}
	if decrypt {
		q.Set("decrypt", "true")
	}
	var out Context
	err := c.do(ctx, http.MethodGet, "/api/v1/contexts/"+pathEscape(name), q, nil, &out)
	return out, err
}

// DeleteContext deletes a context.
func (c *Client) DeleteContext(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/contexts/"+pathEscape(name), nil, nil, nil)
}

// RegisterRunner registers a runner; the token is in the result only.
func (c *Client) RegisterRunner(ctx context.Context, r RegisterRunnerRequest) (RegisteredRunner, error) {
	var out RegisteredRunner
	err := c.do(ctx, http.MethodPost, "/api/v1/runners", nil, r, &out)
	return out, err
}

// ListRunners lists runners.
func (c *Client) ListRunners(ctx context.Context) (List[Runner], error) {
	var out List[Runner]
	err := c.do(ctx, http.MethodGet, "/api/v1/runners", nil, nil, &out)
	return out, err
}

// DrainRunner tells a runner to take no new builds and finish the ones it runs.
func (c *Client) DrainRunner(ctx context.Context, ref string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/runners/"+pathEscape(ref)+"/drain", nil, struct{}{}, nil)
}

// DeleteRunner deletes a runner.
func (c *Client) DeleteRunner(ctx context.Context, ref string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/runners/"+pathEscape(ref), nil, nil, nil)
}

// GitTrigger selects the git events that start builds.
type GitTrigger struct {
	Repo                         string   `json:"repo"`
	Events                       []string `json:"events"`
	BranchRegex                  string   `json:"branchRegex,omitempty"`
	BranchRegexInput             string   `json:"branchRegexInput,omitempty"`
	PullRequestTargetBranchRegex string   `json:"pullRequestTargetBranchRegex,omitempty"`
	PullRequestAllowForkEvents   bool     `json:"pullRequestAllowForkEvents,omitempty"`
	ModifiedFilesGlob            string   `json:"modifiedFilesGlob,omitempty"`
	Disabled                     bool     `json:"disabled,omitempty"`
}

// Trigger starts builds of a pipeline: a git webhook or a cron schedule.
type Trigger struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"` // a short description
	Type       string            `json:"type"` // git or cron
	Provider   string            `json:"provider,omitempty"`
	Git        *GitTrigger       `json:"git,omitempty"`
	Expression string            `json:"expression,omitempty"`
	Timezone   string            `json:"timezone,omitempty"`
	Branch     string            `json:"branch,omitempty"`
	Variables  map[string]string `json:"variables,omitempty"`
	WebhookURL string            `json:"webhookUrl,omitempty"` // git: where the provider sends deliveries
	CreatedAt  time.Time         `json:"createdAt"`
}

// TriggerRequest creates a trigger.
type TriggerRequest struct {
	Type       string            `json:"type"`
	Provider   string            `json:"provider,omitempty"`
	Git        *GitTrigger       `json:"git,omitempty"`
	Secret     string            `json:"secret,omitempty"`
	Expression string            `json:"expression,omitempty"`
	Timezone   string            `json:"timezone,omitempty"`
	Branch     string            `json:"branch,omitempty"`
	Variables  map[string]string `json:"variables,omitempty"`
}

// CreatedTrigger is a new trigger; for git triggers, the webhook secret, shown once.
type CreatedTrigger struct {
	Trigger
	Secret string `json:"secret,omitempty"`
}

// CreateTrigger adds a trigger to a pipeline.
func (c *Client) CreateTrigger(ctx context.Context, pipeline string, r TriggerRequest) (CreatedTrigger, error) {
	var out CreatedTrigger
	err := c.do(ctx, http.MethodPost, "/api/v1/pipelines/"+pathEscape(pipeline)+"/triggers", nil, r, &out)
	return out, err
}

// ListTriggers lists a pipeline's triggers.
func (c *Client) ListTriggers(ctx context.Context, pipeline string) (List[Trigger], error) {
	var out List[Trigger]
	err := c.do(ctx, http.MethodGet, "/api/v1/pipelines/"+pathEscape(pipeline)+"/triggers", nil, nil, &out)
	return out, err
}

// DeleteTrigger deletes a trigger.
func (c *Client) DeleteTrigger(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/triggers/"+pathEscape(id), nil, nil, nil)
}

// BuildStatsDay is what the builds created on one day (UTC) add up to.
type BuildStatsDay struct {
	Date      string `json:"date"` // YYYY-MM-DD
	Total     int64  `json:"total"`
	Finished  int64  `json:"finished"` // of Total, those that ended
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
	// Ran: the builds that started and finished; their average and longest run.
	Ran           int64 `json:"ran"`
	AvgDurationMs int64 `json:"avgDurationMs"`
	MaxDurationMs int64 `json:"maxDurationMs"`
	// Started: the builds that started; their average wait from creation to start.
	Started        int64 `json:"started"`
	AvgQueueWaitMs int64 `json:"avgQueueWaitMs"`
	// Run durations added up: the runner time the day's builds used.
	BusyMs int64 `json:"busyMs"`
}

// PipelineBuildStats is one pipeline's days.
type PipelineBuildStats struct {
	PipelineID string          `json:"pipelineId"`
	Days       []BuildStatsDay `json:"days"`
}

// BuildStats is GET /api/v1/builds/stats: builds per day over a window (every day present,
// oldest first), per pipeline with by=pipeline, and the builds waiting and running now.
type BuildStats struct {
	Since           time.Time            `json:"since"`
	Until           time.Time            `json:"until"`
	Days            []BuildStatsDay      `json:"days"`
	Pipelines       []PipelineBuildStats `json:"pipelines,omitempty"`
	Queued          int64                `json:"queued"`
	Running         int64                `json:"running"`
	PendingApproval int64                `json:"pendingApproval"`
}
