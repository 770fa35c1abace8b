package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
)

// More ID prefixes.
const (
	PrefixProject  = "prj"
	PrefixPipeline = "pip"
	PrefixTrigger  = "trg"
	PrefixBuild    = "bld"
	PrefixRunner   = "run"
	PrefixContext  = "ctx"
	PrefixLease    = "lse"
)

// Project groups pipelines.
type Project struct {
	ID, AccountID, Name string
	Tags                []string // for attribute-based rules
	// OwnerTeamID is the team of the account that owns the project (and its pipelines and
	// builds); empty when none does.
	OwnerTeamID string
	CreatedAt   time.Time
	// OwnerTeam is the owner team's name; reads fill it, writes ignore it.
	OwnerTeam string
}

// Pipeline is a CI pipeline. Config is JSON owned by the pipeline package.
type Pipeline struct {
	ID, AccountID, ProjectID, Name string
	SpecYAML                       string // inline spec; empty when read from git
	SpecRepo, SpecPath             string // spec read from this repo path at the triggering revision
	Config                         string
	CreatedAt, UpdatedAt           time.Time
	// ProjectName is the name of the pipeline's project. Reads fill it (joined from projects, so
	// a listing costs one query); writes ignore it.
	ProjectName string
	// ProjectOwner is the owner team of the pipeline's project (joined too); writes ignore it.
	ProjectOwner string
}

// Trigger starts builds of a pipeline. Config is JSON owned by the pipeline package.
type Trigger struct {
	ID, AccountID, PipelineID, Type, Config, SecretEnc string
	CreatedAt                                          time.Time
}

// Build is one run of a pipeline.
type Build struct {
	ID, AccountID, PipelineID           string
	Number                              int64
	Status                              string
	TriggerType, TriggerID, TriggeredBy string
	Repo, Branch, SHA                   string
	CommitMessage, CommitAuthor         string
	Variables                           string // JSON object
	SpecYAML                            string // the spec this build runs, fixed when queued
	Labels                              string // JSON: runner labels required
	RunnerID, LeaseID                   string
	LeaseExpires                        time.Time
	Attempt                             int
	RestartOf                           string
	Reason                              string
	LogSize                             int64
	CreatedAt, StartedAt, FinishedAt    time.Time
}

// BuildStep is the state of one step of a build.
type BuildStep struct {
	BuildID, Name, Stage, Status, Message string
	Position, ExitCode, Attempts          int
	StartedAt, FinishedAt                 time.Time
}

// Runner is a registered runner. Only the hash of its token is stored.
type Runner struct {
	ID, AccountID, Name, TokenPrefix, TokenHash string
	Labels, Info                                string // JSON
	LastSeen, CreatedAt                         time.Time
}

// ConfigContext is shared configuration, secrets or a container registry's credentials. Data is
// JSON owned by the pipeline package; secret values in it are encrypted by the caller.
type ConfigContext struct {
	ID, AccountID, Name, Type, Data string
	CreatedAt, UpdatedAt            time.Time
	// Default is whether the context is its account's default registry (registry_defaults).
	// Reads fill it; PutContext ignores it: SetDefaultContext and UnsetDefaultContext change it.
	Default bool
}

// CreateProject inserts a project.
func (q *Queries) CreateProject(ctx context.Context, p Project) error {
	tags, err := json.Marshal(orNoTags(p.Tags))
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, `INSERT INTO projects (id, account_id, name, tags, owner_team_id, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		p.ID, p.AccountID, p.Name, string(tags), p.OwnerTeamID, micros(p.CreatedAt))
	if errors.Is(err, errdefs.ErrConflict) {
		return fmt.Errorf("name: project %q already exists: %w", p.Name, errdefs.ErrConflict)
	}
	return err
}

func orNoTags(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

func scanProject(s interface{ Scan(...any) error }) (Project, error) {
	var p Project
	var created int64
	var tags string
	err := s.Scan(&p.ID, &p.AccountID, &p.Name, &tags, &p.OwnerTeamID, &created, &p.OwnerTeam)
	if err != nil {
		return p, err
	}
	p.CreatedAt = fromMicros(created)
	if err := json.Unmarshal([]byte(tags), &p.Tags); err != nil {
		return p, fmt.Errorf("project %s: tags: %w", p.ID, err)
	}
	return p, nil
}

// GetProject finds account's project by ID or name.
func (q *Queries) GetProject(ctx context.Context, accountID, idOrName string) (Project, error) {
	p, err := scanProject(q.queryRow(ctx, `SELECT `+projectCols+` FROM projects WHERE account_id = ? AND (id = ? OR name = ?)`, accountID, idOrName, idOrName))
	if err != nil {
		return Project{}, notFound(err, "project", idOrName)
	}
	return p, nil
}

// projectCols are what scanProject reads: the columns, and the owner team's name.
const projectCols = `id, account_id, name, tags, owner_team_id, created_at,
	COALESCE((SELECT t.name FROM teams t WHERE t.id = projects.owner_team_id), '')`

// ListProjects returns one page of account's projects; ownerTeamID set: those that team owns.
func (q *Queries) ListProjects(ctx context.Context, accountID, ownerTeamID string, p paging.Page) ([]Project, error) {
	rows, err := q.query(ctx, `SELECT `+projectCols+` FROM projects WHERE account_id = ? AND (? = '' OR owner_team_id = ?) AND id > ? ORDER BY id LIMIT ?`,
		accountID, ownerTeamID, ownerTeamID, p.After, p.Size())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		pr, err := scanProject(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, rows.Err()
}

// SetProjectOwner makes team ownerTeamID (empty: none) own accountID's project id.
func (q *Queries) SetProjectOwner(ctx context.Context, accountID, id, ownerTeamID string) error {
	res, err := q.exec(ctx, `UPDATE projects SET owner_team_id = ? WHERE account_id = ? AND id = ?`, ownerTeamID, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "project", id)
}

// DeleteProject deletes account's project and everything in it.
func (q *Queries) DeleteProject(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM projects WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "project", id)
}

const pipelineCols = `id, account_id, project_id, name, spec_yaml, spec_repo, spec_path, config, created_at, updated_at`

// selectPipelines reads pipelines (alias p) with their project's name (alias pr); callers add
// the WHERE clause.
const selectPipelines = `SELECT p.id, p.account_id, p.project_id, p.name, p.spec_yaml, p.spec_repo, p.spec_path, p.config,
	p.created_at, p.updated_at, pr.name, pr.owner_team_id FROM pipelines p JOIN projects pr ON pr.id = p.project_id`

func scanPipeline(s interface{ Scan(...any) error }) (Pipeline, error) {
	var p Pipeline
	var created, updated int64
	err := s.Scan(&p.ID, &p.AccountID, &p.ProjectID, &p.Name, &p.SpecYAML, &p.SpecRepo, &p.SpecPath, &p.Config, &created, &updated, &p.ProjectName, &p.ProjectOwner)
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updated)
	return p, err
}

func (q *Queries) listPipelines(ctx context.Context, query string, args ...any) ([]Pipeline, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Pipeline
	for rows.Next() {
		p, err := scanPipeline(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// CreatePipeline inserts a pipeline.
func (q *Queries) CreatePipeline(ctx context.Context, p Pipeline) error {
	_, err := q.exec(ctx, `INSERT INTO pipelines (`+pipelineCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.AccountID, p.ProjectID, p.Name, p.SpecYAML, p.SpecRepo, p.SpecPath, p.Config, micros(p.CreatedAt), micros(p.UpdatedAt))
	if errors.Is(err, errdefs.ErrConflict) {
		return fmt.Errorf("name: pipeline %q already exists in the project: %w", p.Name, errdefs.ErrConflict)
	}
	return err
}

// UpdatePipeline replaces a pipeline's spec and config.
func (q *Queries) UpdatePipeline(ctx context.Context, p Pipeline) error {
	res, err := q.exec(ctx, `UPDATE pipelines SET spec_yaml = ?, spec_repo = ?, spec_path = ?, config = ?, updated_at = ? WHERE account_id = ? AND id = ?`,
		p.SpecYAML, p.SpecRepo, p.SpecPath, p.Config, micros(p.UpdatedAt), p.AccountID, p.ID)
	if err != nil {
		return err
	}
	return affected(res, "pipeline", p.ID)
}

// GetPipeline returns account's pipeline by ID.
func (q *Queries) GetPipeline(ctx context.Context, accountID, id string) (Pipeline, error) {
	p, err := scanPipeline(q.queryRow(ctx, selectPipelines+` WHERE p.account_id = ? AND p.id = ?`, accountID, id))
	if err != nil {
		return Pipeline{}, notFound(err, "pipeline", id)
	}
	return p, nil
}

// GetPipelineByName returns the pipeline named name in account's project.
func (q *Queries) GetPipelineByName(ctx context.Context, accountID, projectID, name string) (Pipeline, error) {
	p, err := scanPipeline(q.queryRow(ctx, selectPipelines+` WHERE p.account_id = ? AND p.project_id = ? AND p.name = ?`, accountID, projectID, name))
	if err != nil {
		return Pipeline{}, notFound(err, "pipeline", name)
	}
	return p, nil
}

// ListPipelines returns one page of account's pipelines, of one project when projectID is set.
func (q *Queries) ListPipelines(ctx context.Context, accountID, projectID string, p paging.Page) ([]Pipeline, error) {
	return q.listPipelines(ctx, selectPipelines+` WHERE p.account_id = ? AND (? = '' OR p.project_id = ?) AND p.id > ? ORDER BY p.id LIMIT ?`,
		accountID, projectID, projectID, p.After, p.Size())
}

// PipelineNames returns the full names ("project/name") of account's pipelines among ids, by
// ID, in one query. IDs of other accounts' or deleted pipelines are absent from the map.
func (q *Queries) PipelineNames(ctx context.Context, accountID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{accountID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := q.query(ctx, `SELECT p.id, pr.name, p.name FROM pipelines p JOIN projects pr ON pr.id = p.project_id
		WHERE p.account_id = ? AND p.id IN (?`+repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, project, name string
		if err := rows.Scan(&id, &project, &name); err != nil {
			return nil, err
		}
		out[id] = project + "/" + name
	}
	return out, rows.Err()
}

// DeletePipeline deletes account's pipeline with its triggers and builds.
func (q *Queries) DeletePipeline(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM pipelines WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "pipeline", id)
}

// CreateTrigger inserts a trigger.
func (q *Queries) CreateTrigger(ctx context.Context, t Trigger) error {
	_, err := q.exec(ctx, `INSERT INTO triggers (id, account_id, pipeline_id, type, config, secret_enc, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.AccountID, t.PipelineID, t.Type, t.Config, t.SecretEnc, micros(t.CreatedAt))
	return err
}

const triggerCols = `id, account_id, pipeline_id, type, config, secret_enc, created_at`

func scanTrigger(s interface{ Scan(...any) error }) (Trigger, error) {
	var t Trigger
	var created int64
	err := s.Scan(&t.ID, &t.AccountID, &t.PipelineID, &t.Type, &t.Config, &t.SecretEnc, &created)
	t.CreatedAt = fromMicros(created)
	return t, err
}

func (q *Queries) listTriggers(ctx context.Context, query string, args ...any) ([]Trigger, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Trigger
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ListTriggers returns the triggers of account's pipeline.
func (q *Queries) ListTriggers(ctx context.Context, accountID, pipelineID string) ([]Trigger, error) {
	return q.listTriggers(ctx, `SELECT `+triggerCols+` FROM triggers WHERE account_id = ? AND pipeline_id = ? ORDER BY id`, accountID, pipelineID)
}

// TriggerByID finds a trigger by its unguessable ID, for webhook deliveries, which carry no
// credentials of their own: the caller must verify the delivery's signature with the trigger's
// secret before acting on it.
func (q *Queries) TriggerByID(ctx context.Context, id string) (Trigger, error) {
	t, err := scanTrigger(q.queryRow(ctx, `SELECT `+triggerCols+` FROM triggers WHERE id = ?`, id))
	if err != nil {
		return Trigger{}, notFound(err, "trigger", id)
	}
	return t, nil
}

// TriggersOfType lists every account's triggers of one type, for the cron executor.
func (q *Queries) TriggersOfType(ctx context.Context, typ string) ([]Trigger, error) {
	return q.listTriggers(ctx, `SELECT `+triggerCols+` FROM triggers WHERE type = ? ORDER BY id`, typ)
}

// DeleteTrigger deletes account's trigger.
func (q *Queries) DeleteTrigger(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM triggers WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "trigger", id)
}

// Delivery is a webhook delivery (or a cron fire) that queued a build: once per trigger and
// delivery ID, and once per trigger and payload digest when PayloadDigest is set.
type Delivery struct {
	TriggerID  string
	DeliveryID string // the provider's delivery id, or another key that names the event once
	// PayloadDigest is the identity of the verified payload (webhook.Digest); empty for keys
	// that have none (cron fires).
	PayloadDigest string
	BuildID       string
	CreatedAt     time.Time
}

// RecordDelivery remembers that a webhook delivery created d.BuildID. When the trigger has a
// record of the same delivery ID, or of the same payload digest, it records nothing and answers
// the build of that earlier record and ErrConflict. It changes nothing in a failed state: it is
// safe inside a transaction on PostgreSQL.
func (q *Queries) RecordDelivery(ctx context.Context, d Delivery) (string, error) {
	res, err := q.exec(ctx, `INSERT INTO webhook_deliveries (trigger_id, delivery_id, payload_digest, build_id, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, d.TriggerID, d.DeliveryID, d.PayloadDigest, d.BuildID, micros(d.CreatedAt))
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return "", err
	}
	prev, err := q.FindDelivery(ctx, d.TriggerID, d.DeliveryID, d.PayloadDigest)
	if err != nil {
		return "", err
	}
	return prev, fmt.Errorf("delivery %q of trigger %s was handled before, as build %s: %w", d.DeliveryID, d.TriggerID, prev, errdefs.ErrConflict)
}

// FindDelivery returns the build an earlier delivery to triggerID with deliveryID, or with
// payloadDigest when it is not empty, created. ErrNotFound when there is none.
func (q *Queries) FindDelivery(ctx context.Context, triggerID, deliveryID, payloadDigest string) (string, error) {
	var prev string
	err := q.queryRow(ctx, `SELECT build_id FROM webhook_deliveries WHERE trigger_id = ? AND (delivery_id = ? OR (payload_digest <> '' AND payload_digest = ?))
		ORDER BY created_at LIMIT 1`, triggerID, deliveryID, payloadDigest).Scan(&prev)
	return prev, notFound(err, "webhook delivery", deliveryID)
}

// DeleteDeliveriesBefore forgets the webhook deliveries (records with a payload digest)
// recorded before t, and reports how many. Cron fires' records are kept.
func (q *Queries) DeleteDeliveriesBefore(ctx context.Context, t time.Time) (int64, error) {
	res, err := q.exec(ctx, `DELETE FROM webhook_deliveries WHERE payload_digest <> '' AND created_at < ?`, micros(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

const buildCols = `id, account_id, pipeline_id, number, status, trigger_type, trigger_id, triggered_by, repo, branch, sha,
	commit_message, commit_author, variables, spec_yaml, labels, runner_id, lease_id, lease_expires, attempt, restart_of, reason, log_size,
	created_at, started_at, finished_at`

func scanBuild(s interface{ Scan(...any) error }) (Build, error) {
	var b Build
	var lease, created, started, finished int64
	err := s.Scan(&b.ID, &b.AccountID, &b.PipelineID, &b.Number, &b.Status, &b.TriggerType, &b.TriggerID, &b.TriggeredBy, &b.Repo, &b.Branch, &b.SHA,
		&b.CommitMessage, &b.CommitAuthor, &b.Variables, &b.SpecYAML, &b.Labels, &b.RunnerID, &b.LeaseID, &lease, &b.Attempt, &b.RestartOf, &b.Reason, &b.LogSize,
		&created, &started, &finished)
	b.LeaseExpires, b.CreatedAt, b.StartedAt, b.FinishedAt = fromMicros(lease), fromMicros(created), fromMicros(started), fromMicros(finished)
	return b, err
}

// CreateBuild inserts b with the pipeline's next build number, which it sets on b. The number
// is taken from the pipeline's counter with one atomic UPDATE, so concurrent builds of a
// pipeline get consecutive numbers (on PostgreSQL the pipeline's row stays locked until the
// transaction ends; SQLite has one writer). Call it on the Tx that queues the build: a build
// that rolls back gives its number back.
func (q *Queries) CreateBuild(ctx context.Context, b *Build) error {
	err := q.queryRow(ctx, `UPDATE pipelines SET last_build_number = last_build_number + 1 WHERE account_id = ? AND id = ?
		RETURNING last_build_number`, b.AccountID, b.PipelineID).Scan(&b.Number)
	if err != nil {
		return notFound(err, "pipeline", b.PipelineID)
	}
	_, err = q.exec(ctx, `INSERT INTO builds (`+buildCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.AccountID, b.PipelineID, b.Number, b.Status, b.TriggerType, b.TriggerID, b.TriggeredBy, b.Repo, b.Branch, b.SHA,
		b.CommitMessage, b.CommitAuthor, b.Variables, b.SpecYAML, b.Labels, b.RunnerID, b.LeaseID, micros(b.LeaseExpires), b.Attempt, b.RestartOf, b.Reason, b.LogSize,
		micros(b.CreatedAt), micros(b.StartedAt), micros(b.FinishedAt))
	return err
}

// GetBuild returns account's build.
func (q *Queries) GetBuild(ctx context.Context, accountID, id string) (Build, error) {
	b, err := scanBuild(q.queryRow(ctx, `SELECT `+buildCols+` FROM builds WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return Build{}, notFound(err, "build", id)
	}
	return b, nil
}

// BuildFilter narrows a build listing.
type BuildFilter struct {
	PipelineID, Status, Branch string
}

func (q *Queries) scanBuilds(ctx context.Context, query string, args ...any) ([]Build, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Build
	for rows.Next() {
		b, err := scanBuild(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// ListBuilds returns account's builds, newest first.
func (q *Queries) ListBuilds(ctx context.Context, accountID string, f BuildFilter, p paging.Page) ([]Build, error) {
	query := `SELECT ` + buildCols + ` FROM builds WHERE account_id = ?`
	args := []any{accountID}
	if p.After != "" {
		query += ` AND id < ?`
		args = append(args, p.After)
	}
	for _, c := range []struct{ col, v string }{{"pipeline_id", f.PipelineID}, {"status", f.Status}, {"branch", f.Branch}} {
		if c.v != "" {
			query += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	query += ` ORDER BY id DESC LIMIT ?`
	return q.scanBuilds(ctx, query, append(args, p.Size())...)
}

// ActiveBuilds lists account's builds of pipeline that are queued or running, oldest first.
func (q *Queries) ActiveBuilds(ctx context.Context, accountID, pipelineID string) ([]Build, error) {
	return q.scanBuilds(ctx, `SELECT `+buildCols+` FROM builds WHERE account_id = ? AND pipeline_id = ?
		AND status IN ('queued', 'running', 'pending-approval', 'terminating') ORDER BY id`, accountID, pipelineID)
}

// QueuedBuilds lists queued builds of all accounts, oldest first, for the dispatcher.
func (q *Queries) QueuedBuilds(ctx context.Context, limit int) ([]Build, error) {
	return q.scanBuilds(ctx, `SELECT `+buildCols+` FROM builds WHERE status = 'queued' ORDER BY id LIMIT ?`, limit)
}

// ExpiredLeases lists running builds whose lease expired before t, for the reaper.
func (q *Queries) ExpiredLeases(ctx context.Context, t time.Time) ([]Build, error) {
	return q.scanBuilds(ctx, `SELECT `+buildCols+` FROM builds WHERE status IN ('running', 'pending-approval', 'terminating')
		AND lease_id <> '' AND lease_expires < ? ORDER BY id`, micros(t))
}

// LeasedBuilds lists account's builds that runnerID holds a lease on (running, waiting for
// approval or terminating), oldest first.
func (q *Queries) LeasedBuilds(ctx context.Context, accountID, runnerID string) ([]Build, error) {
	return q.scanBuilds(ctx, `SELECT `+buildCols+` FROM builds WHERE account_id = ? AND runner_id = ?
		AND status IN ('running', 'pending-approval', 'terminating') AND lease_id <> '' ORDER BY id`, accountID, runnerID)
}

// ClaimBuild gives a queued build of account to runnerID under a new lease. It reports false
// when the build is no longer queued: exactly one claim of a queued build succeeds.
func (q *Queries) ClaimBuild(ctx context.Context, accountID, buildID, runnerID, leaseID string, expires, now time.Time) (bool, error) {
	res, err := q.exec(ctx, `UPDATE builds SET status = 'running', runner_id = ?, lease_id = ?, lease_expires = ?, attempt = attempt + 1,
		started_at = ? WHERE account_id = ? AND id = ? AND status = 'queued'`, runnerID, leaseID, micros(expires), micros(now), accountID, buildID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RenewLease extends a lease that is still current. It reports the build's status, and false
// when leaseID is no longer the build's lease (the runner must stop).
func (q *Queries) RenewLease(ctx context.Context, accountID, buildID, leaseID string, expires time.Time) (string, bool, error) {
	res, err := q.exec(ctx, `UPDATE builds SET lease_expires = ? WHERE account_id = ? AND id = ? AND lease_id = ?
		AND status IN ('running', 'pending-approval', 'terminating')`, micros(expires), accountID, buildID, leaseID)
	if err != nil {
		return "", false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return "", false, err
	}
	var status string
	err = q.queryRow(ctx, `SELECT status FROM builds WHERE id = ?`, buildID).Scan(&status)
	return status, true, err
}

// SetBuildStatus moves a build to status. When leaseID is set, only the lease holder may; when
// from is set, only from those statuses. It reports whether the build changed.
func (q *Queries) SetBuildStatus(ctx context.Context, accountID, buildID, leaseID string, from []string, status, reason string, finished time.Time) (bool, error) {
	query := `UPDATE builds SET status = ?, reason = CASE WHEN ? = '' THEN reason ELSE ? END, finished_at = ?`
	args := []any{status, reason, reason, micros(finished)}
	if finished.IsZero() {
		query = `UPDATE builds SET status = ?, reason = CASE WHEN ? = '' THEN reason ELSE ? END`
		args = args[:3]
	}
	query += ` WHERE account_id = ? AND id = ?`
	args = append(args, accountID, buildID)
	if leaseID != "" {
		query += ` AND lease_id = ?`
		args = append(args, leaseID)
	}
	if len(from) > 0 {
		query += ` AND status IN (?` + repeat(", ?", len(from)-1) + `)`
		for _, f := range from {
			args = append(args, f)
		}
	}
	res, err := q.exec(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RequeueBuild puts a build whose lease expired back in the queue under no lease, if leaseID is
// still its lease, and appends marker (when not empty) to its log; at is where the marker starts.
// Its log is kept (the next attempt continues it); its steps start over. It is one transaction:
// the next attempt's log starts after the marker, whichever replica hands the build out (a
// marker appended after the requeue could land where that attempt had begun its log, and the
// attempt's runner could then never ship its lines).
func (db *DB) RequeueBuild(ctx context.Context, accountID, buildID, leaseID, reason string, marker []byte) (ok bool, at int64, err error) {
	err = db.Tx(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE builds SET status = 'queued', runner_id = '', lease_id = '', lease_expires = 0, reason = ?
			WHERE account_id = ? AND id = ? AND lease_id = ?`, reason, accountID, buildID, leaseID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM build_steps WHERE build_id = ?`, buildID); err != nil {
			return err
		}
		if len(marker) > 0 {
			// The row is locked by the update (PostgreSQL) or the database by the transaction
			// (SQLite): no append moves the log's end meanwhile.
			if err := tx.queryRow(ctx, `SELECT log_size FROM builds WHERE id = ?`, buildID).Scan(&at); err != nil {
				return err
			}
			if _, err := tx.appendLog(ctx, buildID, at, marker); err != nil {
				return err
			}
		}
		ok = true
		return nil
	})
	if err != nil {
		return false, 0, err
	}
	return ok, at, nil
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// UpsertStep records a step's state.
func (q *Queries) UpsertStep(ctx context.Context, s BuildStep) error {
	_, err := q.exec(ctx, `INSERT INTO build_steps (build_id, name, position, stage, status, exit_code, attempts, message, started_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (build_id, name) DO UPDATE SET status = excluded.status, exit_code = excluded.exit_code, attempts = excluded.attempts,
		message = excluded.message, started_at = excluded.started_at, finished_at = excluded.finished_at, stage = excluded.stage, position = excluded.position`,
		s.BuildID, s.Name, s.Position, s.Stage, s.Status, s.ExitCode, s.Attempts, s.Message, micros(s.StartedAt), micros(s.FinishedAt))
	return err
}

// ListSteps returns a build's steps in order.
func (q *Queries) ListSteps(ctx context.Context, buildID string) ([]BuildStep, error) {
	rows, err := q.query(ctx, `SELECT build_id, name, position, stage, status, exit_code, attempts, message, started_at, finished_at
		FROM build_steps WHERE build_id = ? ORDER BY position, name`, buildID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BuildStep
	for rows.Next() {
		var s BuildStep
		var started, finished int64
		if err := rows.Scan(&s.BuildID, &s.Name, &s.Position, &s.Stage, &s.Status, &s.ExitCode, &s.Attempts, &s.Message, &started, &finished); err != nil {
			return nil, err
		}
		s.StartedAt, s.FinishedAt = fromMicros(started), fromMicros(finished)
		out = append(out, s)
	}
	return out, rows.Err()
}

// ErrLogOffset is returned by AppendLog when a chunk does not start where the log ends (and
// its beginning is not stored already): the size returned with it is where the log ends.
var ErrLogOffset = errors.New("log chunk offset does not match the log size")

// ErrLogMismatch is returned by AppendLog when a chunk overlaps stored bytes that differ from
// it: the writer's log is not the stored one, and resending will not change that.
var ErrLogMismatch = fmt.Errorf("log chunk differs from the log stored at its offset: %w", errdefs.ErrConflict)

// AppendLog adds data at offset to a build's log and returns the log's new size. The chunk and
// the log's size are written in one transaction: a chunk is stored whole, with the size that
// covers it, or not at all. A chunk that is already stored (a retried upload whose answer was
// lost) changes nothing and succeeds. A chunk whose beginning is stored and whose end is not
// fails with ErrLogOffset and the size, as does one that would leave a gap; one that differs
// from the stored bytes it overlaps fails with ErrLogMismatch.
func (db *DB) AppendLog(ctx context.Context, buildID string, offset int64, data []byte) (size int64, err error) {
	err = db.Tx(ctx, func(tx *Tx) error {
		size, err = tx.appendLog(ctx, buildID, offset, data)
		return err
	})
	return size, err
}

func (q *Queries) appendLog(ctx context.Context, buildID string, offset int64, data []byte) (int64, error) {
	end := offset + int64(len(data))
	if len(data) > 0 {
		// Only the append that finds the log ending at offset moves it (on PostgreSQL the row
		// stays locked until commit, so concurrent appends of one build queue here).
		res, err := q.exec(ctx, `UPDATE builds SET log_size = ? WHERE id = ? AND log_size = ?`, end, buildID, offset)
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 1 {
			// Nothing at or past offset belongs to the log. A chunk there was left by an append
			// that stored its chunk and not the size (before both were one transaction).
			if _, err := q.exec(ctx, `DELETE FROM build_log_chunks WHERE build_id = ? AND position >= ?`, buildID, offset); err != nil {
				return 0, err
			}
			if _, err := q.exec(ctx, `INSERT INTO build_log_chunks (build_id, position, data) VALUES (?, ?, ?)`, buildID, offset, data); err != nil {
				return 0, err
			}
			return end, nil
		}
	}
	var size int64
	if err := q.queryRow(ctx, `SELECT log_size FROM builds WHERE id = ?`, buildID).Scan(&size); err != nil {
		return 0, notFound(err, "build", buildID)
	}
	if offset > size {
		return size, fmt.Errorf("%w: the chunk starts at byte %d, the log has %d bytes", ErrLogOffset, offset, size)
	}
	if len(data) == 0 {
		return size, nil
	}
	stored, err := q.readLogRange(ctx, buildID, offset, min(end, size))
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(stored, data[:len(stored)]) {
		return size, fmt.Errorf("%w: bytes %d to %d of build %s", ErrLogMismatch, offset, min(end, size), buildID)
	}
	if end > size {
		return size, fmt.Errorf("%w: the chunk's first %d bytes are stored, the log has %d bytes", ErrLogOffset, size-offset, size)
	}
	return size, nil // stored already
}

// readLogRange returns bytes from to to of a build's stored log.
func (q *Queries) readLogRange(ctx context.Context, buildID string, from, to int64) ([]byte, error) {
	rows, err := q.query(ctx, `SELECT position, data FROM build_log_chunks WHERE build_id = ? AND position < ? AND position + LENGTH(data) > ?
		ORDER BY position`, buildID, to, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]byte, 0, to-from)
	for rows.Next() {
		var pos int64
		var data []byte
		if err := rows.Scan(&pos, &data); err != nil {
			return nil, err
		}
		lo, hi := max(from-pos, 0), min(to-pos, int64(len(data)))
		if pos+lo != from+int64(len(out)) { // a hole: cannot happen in a log written by AppendLog
			return nil, fmt.Errorf("build %s: the stored log has no bytes at %d", buildID, from+int64(len(out)))
		}
		out = append(out, data[lo:hi]...)
	}
	return out, rows.Err()
}

// ReadLog returns a build's log from offset, at most max bytes (in whole chunks, at least one).
// Only what the log's size covers is read.
func (q *Queries) ReadLog(ctx context.Context, buildID string, offset int64, max int) ([]byte, error) {
	rows, err := q.query(ctx, `SELECT position, data FROM build_log_chunks WHERE build_id = ? AND position + LENGTH(data) > ?
		AND position < (SELECT log_size FROM builds WHERE id = ?) ORDER BY position`, buildID, offset, buildID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []byte
	for rows.Next() {
		var pos int64
		var data []byte
		if err := rows.Scan(&pos, &data); err != nil {
			return nil, err
		}
		if pos < offset {
			data = data[offset-pos:]
		}
		out = append(out, data...)
		if len(out) >= max {
			break
		}
	}
	return out, rows.Err()
}

// CreateRunner inserts a runner.
func (q *Queries) CreateRunner(ctx context.Context, r Runner) error {
	_, err := q.exec(ctx, `INSERT INTO runners (id, account_id, name, token_prefix, token_hash, labels, info, last_seen, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.AccountID, r.Name, r.TokenPrefix, r.TokenHash, r.Labels, r.Info, micros(r.LastSeen), micros(r.CreatedAt))
	if errors.Is(err, errdefs.ErrConflict) {
		return fmt.Errorf("name: runner %q already exists: %w", r.Name, errdefs.ErrConflict)
	}
	return err
}

const runnerCols = `id, account_id, name, token_prefix, token_hash, labels, info, last_seen, created_at`

func scanRunner(s interface{ Scan(...any) error }) (Runner, error) {
	var r Runner
	var seen, created int64
	err := s.Scan(&r.ID, &r.AccountID, &r.Name, &r.TokenPrefix, &r.TokenHash, &r.Labels, &r.Info, &seen, &created)
	r.LastSeen, r.CreatedAt = fromMicros(seen), fromMicros(created)
	return r, err
}

// RunnerByPrefix finds a runner by its token prefix, for authentication.
func (q *Queries) RunnerByPrefix(ctx context.Context, prefix string) (Runner, error) {
	r, err := scanRunner(q.queryRow(ctx, `SELECT `+runnerCols+` FROM runners WHERE token_prefix = ?`, prefix))
	if err != nil {
		return Runner{}, notFound(err, "runner", prefix)
	}
	return r, nil
}

// ListRunners returns account's runners.
func (q *Queries) ListRunners(ctx context.Context, accountID string) ([]Runner, error) {
	rows, err := q.query(ctx, `SELECT `+runnerCols+` FROM runners WHERE account_id = ? ORDER BY name`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Runner
	for rows.Next() {
		r, err := scanRunner(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// GetRunner returns account's runner by ID or name.
func (q *Queries) GetRunner(ctx context.Context, accountID, idOrName string) (Runner, error) {
	r, err := scanRunner(q.queryRow(ctx, `SELECT `+runnerCols+` FROM runners WHERE account_id = ? AND (id = ? OR name = ?)`, accountID, idOrName, idOrName))
	if err != nil {
		return Runner{}, notFound(err, "runner", idOrName)
	}
	return r, nil
}

// DeleteRunner deletes account's runner; its token stops working.
func (q *Queries) DeleteRunner(ctx context.Context, accountID, id string) error {
	res, err := q.exec(ctx, `DELETE FROM runners WHERE account_id = ? AND id = ?`, accountID, id)
	if err != nil {
		return err
	}
	return affected(res, "runner", id)
}

// TouchRunner records what a runner announced and when it was last seen.
func (q *Queries) TouchRunner(ctx context.Context, id, info string, t time.Time) error {
	_, err := q.exec(ctx, `UPDATE runners SET info = CASE WHEN ? = '' THEN info ELSE ? END, last_seen = ? WHERE id = ?`, info, info, micros(t), id)
	return err
}

// PutContext creates or replaces account's context by name.
func (q *Queries) PutContext(ctx context.Context, c ConfigContext, create bool) error {
	if create {
		_, err := q.exec(ctx, `INSERT INTO contexts (id, account_id, name, type, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.AccountID, c.Name, c.Type, c.Data, micros(c.CreatedAt), micros(c.UpdatedAt))
		if errors.Is(err, errdefs.ErrConflict) {
			return fmt.Errorf("name: context %q already exists: %w", c.Name, errdefs.ErrConflict)
		}
		return err
	}
	res, err := q.exec(ctx, `UPDATE contexts SET data = ?, updated_at = ? WHERE account_id = ? AND name = ?`, c.Data, micros(c.UpdatedAt), c.AccountID, c.Name)
	if err != nil {
		return err
	}
	return affected(res, "context", c.Name)
}

const contextCols = `c.id, c.account_id, c.name, c.type, c.data, c.created_at, c.updated_at,
	CASE WHEN d.context_id IS NULL THEN 0 ELSE 1 END`

const selectContexts = `SELECT ` + contextCols + ` FROM contexts c LEFT JOIN registry_defaults d ON d.context_id = c.id`

func scanContext(s interface{ Scan(...any) error }) (ConfigContext, error) {
	var c ConfigContext
	var created, updated int64
	var def int
	err := s.Scan(&c.ID, &c.AccountID, &c.Name, &c.Type, &c.Data, &created, &updated, &def)
	c.CreatedAt, c.UpdatedAt, c.Default = fromMicros(created), fromMicros(updated), def == 1
	return c, err
}

// GetContext returns account's context by name.
func (q *Queries) GetContext(ctx context.Context, accountID, name string) (ConfigContext, error) {
	c, err := scanContext(q.queryRow(ctx, selectContexts+` WHERE c.account_id = ? AND c.name = ?`, accountID, name))
	if err != nil {
		return ConfigContext{}, notFound(err, "context", name)
	}
	return c, nil
}

// ListContexts returns account's contexts by name.
func (q *Queries) ListContexts(ctx context.Context, accountID string) ([]ConfigContext, error) {
	return q.listContexts(ctx, selectContexts+` WHERE c.account_id = ? ORDER BY c.name`, accountID)
}

// AllContexts returns every account's contexts, for master-key rotation only.
func (q *Queries) AllContexts(ctx context.Context) ([]ConfigContext, error) {
	return q.listContexts(ctx, selectContexts+` ORDER BY c.id`)
}

func (q *Queries) listContexts(ctx context.Context, query string, args ...any) ([]ConfigContext, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ConfigContext
	for rows.Next() {
		c, err := scanContext(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeleteContext deletes account's context (and with it the account's default registry, if it
// was that).
func (q *Queries) DeleteContext(ctx context.Context, accountID, name string) error {
	res, err := q.exec(ctx, `DELETE FROM contexts WHERE account_id = ? AND name = ?`, accountID, name)
	if err != nil {
		return err
	}
	return affected(res, "context", name)
}

// DefaultContext returns account's default registry context, or ErrNotFound when it has none.
func (q *Queries) DefaultContext(ctx context.Context, accountID string) (ConfigContext, error) {
	c, err := scanContext(q.queryRow(ctx, selectContexts+` WHERE c.account_id = ? AND d.account_id = ?`, accountID, accountID))
	if err != nil {
		return ConfigContext{}, notFound(err, "default registry of account", accountID)
	}
	return c, nil
}

// SetDefaultContext makes account's context contextID the account's default registry, in place
// of the one before: one statement, so no reader ever sees two defaults or, while switching,
// none. The caller checks that the context is a registry.
func (q *Queries) SetDefaultContext(ctx context.Context, accountID, contextID string) error {
	// Switches of one account run one after the other: concurrent upserts of its one row, each
	// holding a key-share lock on a different context, deadlocked on PostgreSQL (CI saw 40P01).
	if _, err := q.exec(ctx, `UPDATE accounts SET name = name WHERE id = ?`, accountID); err != nil {
		return err
	}
	res, err := q.exec(ctx, `INSERT INTO registry_defaults (account_id, context_id)
		SELECT account_id, id FROM contexts WHERE account_id = ? AND id = ?
		ON CONFLICT (account_id) DO UPDATE SET context_id = excluded.context_id`, accountID, contextID)
	if err != nil {
		return err
	}
	return affected(res, "context", contextID)
}

// UnsetDefaultContext leaves account without a default registry if contextID is it.
func (q *Queries) UnsetDefaultContext(ctx context.Context, accountID, contextID string) error {
	_, err := q.exec(ctx, `DELETE FROM registry_defaults WHERE account_id = ? AND context_id = ?`, accountID, contextID)
	return err
}

// BuildsWithStatus lists builds of all accounts in status, oldest first, for the dispatcher.
func (q *Queries) BuildsWithStatus(ctx context.Context, status string, limit int) ([]Build, error) {
	return q.scanBuilds(ctx, `SELECT `+buildCols+` FROM builds WHERE status = ? ORDER BY id LIMIT ?`, status, limit)
}

// RunningCount is how many builds of a pipeline (and branch) hold a runner.
type RunningCount struct {
	PipelineID, Branch string
	N                  int
}

// RunningCounts counts builds that hold a runner, per pipeline and branch, for concurrency limits.
func (q *Queries) RunningCounts(ctx context.Context) ([]RunningCount, error) {
	rows, err := q.query(ctx, `SELECT pipeline_id, branch, COUNT(*) FROM builds WHERE status IN ('running', 'pending-approval', 'terminating')
		GROUP BY pipeline_id, branch`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunningCount
	for rows.Next() {
		var c RunningCount
		if err := rows.Scan(&c.PipelineID, &c.Branch, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RunnerLeases lists the builds each runner holds a lease on (running, waiting for approval
// or terminating), by runner ID, across accounts: the dispatcher's count of its runners' load.
func (q *Queries) RunnerLeases(ctx context.Context) (map[string][]string, error) {
	rows, err := q.query(ctx, `SELECT runner_id, id FROM builds WHERE status IN ('running', 'pending-approval', 'terminating')
		AND lease_id <> '' ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var runner, id string
		if err := rows.Scan(&runner, &id); err != nil {
			return nil, err
		}
		out[runner] = append(out[runner], id)
	}
	return out, rows.Err()
}

// AllPipelines returns every account's pipelines, for master-key rotation only.
func (q *Queries) AllPipelines(ctx context.Context) ([]Pipeline, error) {
	return q.listPipelines(ctx, selectPipelines+` ORDER BY p.id`)
}

// SetTriggerSecret replaces a trigger's encrypted secret (master-key rotation).
func (q *Queries) SetTriggerSecret(ctx context.Context, id, secretEnc string) error {
	res, err := q.exec(ctx, `UPDATE triggers SET secret_enc = ? WHERE id = ?`, secretEnc, id)
	if err != nil {
		return err
	}
	return affected(res, "trigger", id)
}
