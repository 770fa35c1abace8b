package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/rbac"
)

func toProject(p pipeline.Project) client.Project {
	return client.Project{ID: p.ID, Name: p.Name, Tags: p.Tags, CreatedAt: p.CreatedAt, OwnerTeam: p.OwnerTeam}
}

// toPipeline maps a pipeline, its encrypted variables already masked by the service.
func toPipeline(p pipeline.Pipeline) client.Pipeline {
	c := p.Config
	cfg := client.PipelineConfig{Contexts: c.Contexts, RunnerLabels: c.RunnerLabels, Concurrency: c.Concurrency,
		BranchConcurrency: c.BranchConcurrency, TerminateOlder: c.TerminateOlder, MaxAttempts: c.MaxAttempts,
		OnLeaseExpiry: c.OnLeaseExpiry, SpecContext: c.SpecContext, Tags: c.Tags}
	for _, v := range c.Variables {
		cfg.Variables = append(cfg.Variables, client.Variable{Key: v.Key, Value: v.Value, Encrypted: v.Encrypted})
	}
	return client.Pipeline{ID: p.ID, Name: p.Name, Project: p.Project, FullName: p.FullName(), Spec: p.SpecYAML,
		SpecRepo: p.SpecRepo, SpecPath: p.SpecPath, Config: cfg,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ToBuild converts a build (and its steps, when it has them) to its API form.
func ToBuild(b pipeline.Build) client.Build {
	out := client.Build{ID: b.ID, Name: fmt.Sprintf("%s #%d", b.Pipeline, b.Number), Number: b.Number, PipelineID: b.PipelineID, Pipeline: b.Pipeline,
		Status: b.Status, Reason: b.Reason, Trigger: b.TriggerType, TriggeredBy: b.TriggeredBy, Repo: b.Repo, Branch: b.Branch, SHA: b.SHA,
		Message: b.CommitMessage, Author: b.CommitAuthor, RunnerID: b.RunnerID, Attempt: b.Attempt, RestartOf: b.RestartOf, LogSize: b.LogSize, CreatedAt: b.CreatedAt,
		StartedAt: timePtr(b.StartedAt), FinishedAt: timePtr(b.FinishedAt)}
	if out.Pipeline == "" {
		out.Name = fmt.Sprintf("#%d", b.Number)
	}
	for _, s := range b.Steps {
		out.Steps = append(out.Steps, client.Step{Name: s.Name, Stage: s.Stage, Status: s.Status, ExitCode: s.ExitCode, Attempts: s.Attempts,
			Message: s.Message, StartedAt: timePtr(s.StartedAt), FinishedAt: timePtr(s.FinishedAt)})
	}
	for _, im := range b.Images {
		out.Images = append(out.Images, client.Image{ID: im.ID, BuildID: im.BuildID, Step: im.Step, Registry: im.Registry, Repository: im.Repository,
			Tags: im.Tags, Digest: im.Digest, Size: im.Size, SHA: im.SHA, Branch: im.Branch, CreatedAt: im.CreatedAt})
	}
	return out
}

func (a *API) listProjects(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	ps, err := a.pipelines.ListProjectsOwnedBy(r.Context(), principal(r), r.URL.Query().Get("owner"), page)
	if err != nil {
		return err
	}
	out := client.List[client.Project]{Items: []client.Project{}}
	for _, p := range ps {
		out.Items = append(out.Items, toProject(p))
	}
	if len(ps) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ps), ps[len(ps)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createProject(w http.ResponseWriter, r *http.Request) error {
	var in client.ProjectRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	p, err := a.pipelines.CreateOwnedProject(r.Context(), principal(r), in.Name, in.Team, in.Tags...)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toProject(p))
	return nil
}

func (a *API) setProjectOwner(w http.ResponseWriter, r *http.Request) error {
	var in client.SetOwnerRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	p, err := a.pipelines.SetProjectOwner(r.Context(), principal(r), r.PathValue("project"), in.Team)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toProject(p))
	return nil
}

func (a *API) getProject(w http.ResponseWriter, r *http.Request) error {
	p, err := a.pipelines.GetProject(r.Context(), principal(r), r.PathValue("project"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toProject(p))
	return nil
}

func (a *API) deleteProject(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.DeleteProject(r.Context(), principal(r), r.PathValue("project")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func pipelineInput(in client.PipelineRequest) pipeline.PipelineInput {
	cfg := pipeline.Config{Contexts: in.Config.Contexts, RunnerLabels: in.Config.RunnerLabels, Concurrency: in.Config.Concurrency,
		BranchConcurrency: in.Config.BranchConcurrency, TerminateOlder: in.Config.TerminateOlder, MaxAttempts: in.Config.MaxAttempts,
		OnLeaseExpiry: in.Config.OnLeaseExpiry, SpecContext: in.Config.SpecContext, Tags: in.Config.Tags}
	for _, v := range in.Config.Variables {
		cfg.Variables = append(cfg.Variables, pipeline.Variable{Key: v.Key, Value: v.Value, Encrypted: v.Encrypted})
	}
	return pipeline.PipelineInput{Project: in.Project, Name: in.Name, SpecYAML: in.Spec, SpecRepo: in.SpecRepo, SpecPath: in.SpecPath, Config: cfg}
}

func (a *API) listPipelines(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	ps, err := a.pipelines.ListPipelines(r.Context(), principal(r), r.URL.Query().Get("project"), page)
	if err != nil {
		return err
	}
	out := client.List[client.Pipeline]{Items: []client.Pipeline{}}
	for _, p := range ps {
		out.Items = append(out.Items, toPipeline(p))
	}
	if len(ps) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ps), ps[len(ps)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createPipeline(w http.ResponseWriter, r *http.Request) error {
	var in client.PipelineRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if in.Project == "" {
		return errdefs.Invalid("project", "", "is required")
	}
	p, err := a.pipelines.CreatePipeline(r.Context(), principal(r), pipelineInput(in))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toPipeline(p))
	return nil
}

// lintPipeline checks a spec without saving it, for editors: every problem with its line and
// column, errors and warnings.
func (a *API) lintPipeline(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Spec string `json:"spec"`
	}
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	if err := rbac.Allow(principal(r), rbac.ReadPipelines); err != nil {
		return err
	}
	out := client.LintResult{Valid: true, Issues: []client.LintIssue{}}
	for _, i := range a.pipelines.LintSpec(r.Context(), in.Spec) {
		if i.Severity == spec.SeverityError {
			out.Valid = false
		}
		out.Issues = append(out.Issues, client.LintIssue{Line: i.Line, Column: i.Column, Field: i.Field, Message: i.Message, Severity: string(i.Severity)})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getPipeline(w http.ResponseWriter, r *http.Request) error {
	p, err := a.pipelines.ResolvePipeline(r.Context(), principal(r), r.PathValue("pipeline"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toPipeline(p))
	return nil
}

func (a *API) updatePipeline(w http.ResponseWriter, r *http.Request) error {
	var in client.PipelineRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	p, err := a.pipelines.UpdatePipeline(r.Context(), principal(r), r.PathValue("pipeline"), pipelineInput(in))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toPipeline(p))
	return nil
}

func (a *API) deletePipeline(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.DeletePipeline(r.Context(), principal(r), r.PathValue("pipeline")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) runPipeline(w http.ResponseWriter, r *http.Request) error {
	var in client.RunRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	b, err := a.pipelines.Run(r.Context(), principal(r), r.PathValue("pipeline"),
		pipeline.RunInput{Branch: in.Branch, SHA: in.SHA, Repo: in.Repo, CommitMessage: in.Message, Variables: in.Variables})
	if err != nil {
		return err
	}
	return a.writeBuild(w, r, b.ID, http.StatusCreated)
}

func (a *API) writeBuild(w http.ResponseWriter, r *http.Request, id string, status int) error {
	b, err := a.pipelines.GetBuild(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, status, ToBuild(b))
	return nil
}

func (a *API) listBuilds(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := pipeline.BuildFilter{Pipeline: q.Get("pipeline"), Status: q.Get("status"), Branch: q.Get("branch")}
	bs, err := a.pipelines.ListBuilds(r.Context(), principal(r), f, page)
	if err != nil {
		return err
	}
	out := client.List[client.Build]{Items: []client.Build{}}
	for _, b := range bs {
		out.Items = append(out.Items, ToBuild(b))
	}
	if len(bs) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(bs), bs[len(bs)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getBuild(w http.ResponseWriter, r *http.Request) error {
	return a.writeBuild(w, r, r.PathValue("id"), http.StatusOK)
}

func (a *API) cancelBuild(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.Cancel(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	return a.writeBuild(w, r, r.PathValue("id"), http.StatusOK)
}

func (a *API) restartBuild(w http.ResponseWriter, r *http.Request) error {
	var in client.RestartRequest
	if r.ContentLength != 0 {
		if err := httpx.DecodeJSON(r, &in); err != nil {
			return err
		}
	}
	b, err := a.pipelines.Restart(r.Context(), principal(r), r.PathValue("id"), in.FromFailed)
	if err != nil {
		return err
	}
	return a.writeBuild(w, r, b.ID, http.StatusCreated)
}

func (a *API) approveBuild(w http.ResponseWriter, r *http.Request) error {
	return a.decideBuild(w, r, true)
}

func (a *API) denyBuild(w http.ResponseWriter, r *http.Request) error {
	return a.decideBuild(w, r, false)
}

// decideBuild approves or denies a build; the body (client.ApprovalRequest, with an optional
// comment) may be left out.
func (a *API) decideBuild(w http.ResponseWriter, r *http.Request, approve bool) error {
	var in client.ApprovalRequest
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		if err := httpx.DecodeJSON(r, &in); err != nil {
			return err
		}
	}
	if err := a.pipelines.Approve(r.Context(), principal(r), r.PathValue("id"), approve, in.Comment); err != nil {
		return err
	}
	return a.writeBuild(w, r, r.PathValue("id"), http.StatusOK)
}

// buildLogs answers the log as text, or with follow=1 (or Accept: text/event-stream) as
// server-sent events: "log" events {offset, data (base64)} and a final "end" event {status} —
// or, when the caller loses access while following, an "error" event (the error body) instead.
func (a *API) buildLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var offset int64
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errdefs.Invalid("offset", s, "must be a byte offset, 0 or more")
		}
		offset = n
	}
	follow := q.Get("follow") == "1" || q.Get("follow") == "true" || r.Header.Get("Accept") == "text/event-stream"
	if !follow {
		data, err := a.pipelines.ReadLog(r.Context(), principal(r), r.PathValue("id"), offset, pipeline.MaxLogBytes+len(pipeline.TruncationMarker))
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, err = w.Write(data)
		return err
	}
	// Check access before committing to a stream, so errors get the normal error body.
	if _, err := a.pipelines.GetBuild(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) error {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	// The stream lasts as long as the build; it ends when the caller loses access meanwhile.
	id := r.PathValue("id")
	ctx, release := a.access.Hold(r, func(ctx context.Context, p rbac.Principal) error { return a.pipelines.MayReadBuild(ctx, p, id) })
	defer release()
	err := a.dispatch.Follow(ctx, principal(r), r.PathValue("id"), offset,
		func(off int64, data []byte) error {
			return send("log", map[string]any{"offset": off, "data": data})
		},
		func(status string) error { return send("end", map[string]string{"status": status}) },
		func() error {
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return err
			}
			return rc.Flush()
		})
	if cause := context.Cause(ctx); errors.Is(cause, httpx.ErrAccessEnded) {
		err = cause
		send("error", errdefs.Body{Error: errdefs.Public(cause, httpx.RequestID(r.Context()))})
	}
	if err != nil {
		a.log.Debug("log follow ended", "build", r.PathValue("id"), "err", err)
	}
	return nil
}

// toContext maps a context, its secret values and registry password already masked by the
// service (or decrypted, when that was asked for).
func toContext(c pipeline.Context) client.Context {
	out := client.Context{ID: c.ID, Name: c.Name, Type: c.Type, Values: c.Values, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if r := c.Registry; r != nil {
		out.Registry = &client.RegistryContext{URL: r.URL, Username: r.Username, Password: r.Password, CA: r.CA, Default: r.Default}
	}
	if g := c.Git; g != nil {
		out.Git = &client.GitContext{Provider: g.Provider, URL: g.URL, Username: g.Username, Token: g.Token}
	}
	return out
}

func contextInput(in client.ContextRequest) pipeline.ContextInput {
	out := pipeline.ContextInput{Type: in.Type, Values: in.Values}
	if r := in.Registry; r != nil {
		out.Registry = &pipeline.Registry{URL: r.URL, Username: r.Username, Password: r.Password, CA: r.CA, Default: r.Default}
	}
	if g := in.Git; g != nil {
		out.Git = &pipeline.GitProvider{Provider: g.Provider, URL: g.URL, Username: g.Username, Token: g.Token}
	}
	return out
}

func (a *API) listContexts(w http.ResponseWriter, r *http.Request) error {
	cs, err := a.pipelines.ListContexts(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.Context]{Items: []client.Context{}}
	for _, c := range cs {
		out.Items = append(out.Items, toContext(c))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createContext(w http.ResponseWriter, r *http.Request) error {
	var in client.ContextRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	c, err := a.pipelines.PutContext(r.Context(), principal(r), in.Name, contextInput(in), true)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toContext(c))
	return nil
}

func (a *API) getContext(w http.ResponseWriter, r *http.Request) error {
	decrypt, _ := strconv.ParseBool(r.URL.Query().Get("decrypt"))
	c, err := a.pipelines.GetContext(r.Context(), principal(r), r.PathValue("name"), decrypt)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toContext(c))
	return nil
}

func (a *API) updateContext(w http.ResponseWriter, r *http.Request) error {
	var in client.ContextRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	c, err := a.pipelines.PutContext(r.Context(), principal(r), r.PathValue("name"), contextInput(in), false)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toContext(c))
	return nil
}

func (a *API) deleteContext(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.DeleteContext(r.Context(), principal(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func toRunner(rn pipeline.Runner, connected map[string]bool) client.Runner {
	out := client.Runner{ID: rn.ID, Name: rn.Name, Labels: rn.Labels, Info: rn.Info, CreatedAt: rn.CreatedAt, LastSeen: timePtr(rn.LastSeen),
		Connected: connected[rn.ID], VersionSkew: toVersionSkew(rn.Skew)}
	if !out.Connected && !rn.LastSeen.IsZero() && time.Since(rn.LastSeen) < 30*time.Second {
		out.Connected = true // connected to another replica
	}
	return out
}

func (a *API) listRunners(w http.ResponseWriter, r *http.Request) error {
	rs, err := a.pipelines.ListRunners(r.Context(), principal(r))
	if err != nil {
		return err
	}
	connected := a.dispatch.Connected()
	out := client.List[client.Runner]{Items: []client.Runner{}}
	for _, rn := range rs {
		out.Items = append(out.Items, toRunner(rn, connected))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) registerRunner(w http.ResponseWriter, r *http.Request) error {
	var in client.RegisterRunnerRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	rn, token, err := a.pipelines.RegisterRunner(r.Context(), principal(r), in.Name, in.Labels)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, client.RegisteredRunner{Runner: toRunner(rn, nil), Token: token})
	return nil
}

func (a *API) drainRunner(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.DrainRunner(r.Context(), principal(r), r.PathValue("id"), a.dispatch.Drain); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) deleteRunner(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.DeleteRunner(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func toStatsDays(ds []pipeline.StatsDay) []client.BuildStatsDay {
	out := make([]client.BuildStatsDay, len(ds))
	for i, d := range ds {
		out[i] = client.BuildStatsDay{Date: d.Date.Format(time.DateOnly), Total: d.Total, Finished: d.Finished, Succeeded: d.Succeeded, Failed: d.Failed, Ran: d.Ran, Started: d.Started,
			AvgDurationMs: d.AvgDuration.Milliseconds(), MaxDurationMs: d.MaxDuration.Milliseconds(), AvgQueueWaitMs: d.AvgQueueWait.Milliseconds(), BusyMs: d.BusyTime.Milliseconds()}
	}
	return out
}

// buildStats is GET /api/v1/builds/stats?days=14&pipeline=&by=pipeline.
func (a *API) buildStats(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	days, err := pipeline.ParseStatsDays(q.Get("days"))
	if err != nil {
		return err
	}
	by := q.Get("by")
	if by != "" && by != "pipeline" {
		return errdefs.Invalid("by", by, `"pipeline" or empty`)
	}
	st, err := a.pipelines.BuildStats(r.Context(), principal(r), q.Get("pipeline"), days, by == "pipeline")
	if err != nil {
		return err
	}
	out := client.BuildStats{Since: st.Since, Until: st.Until, Days: toStatsDays(st.Days), Queued: st.Queued, Running: st.Running, PendingApproval: st.PendingApproval}
	for _, p := range st.Pipelines {
		out.Pipelines = append(out.Pipelines, client.PipelineBuildStats{PipelineID: p.PipelineID, Days: toStatsDays(p.Days)})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
