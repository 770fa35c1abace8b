package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/schedule"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// Trigger types.
const (
	TriggerGit  = "git"
	TriggerCron = "cron"
)

// TriggerConfig is a trigger's settings (stored as JSON).
type TriggerConfig struct {
	// git
	Provider string           `json:"provider,omitempty"` // github, gitlab, gitea, bitbucket
	Git      *webhook.Trigger `json:"git,omitempty"`
	// cron
	Expression string            `json:"expression,omitempty"`
	Timezone   string            `json:"timezone,omitempty"`
	Branch     string            `json:"branch,omitempty"`
	Variables  map[string]string `json:"variables,omitempty"`
}

// TriggerInput creates a trigger.
type TriggerInput struct {
	Type   string
	Config TriggerConfig
	Secret string // git: the webhook secret; empty: one is generated and returned once
}

// CronTriggers lists every account's cron triggers as schedules, for the cron executor. A trigger
// whose stored config cannot be read is logged and left out.
func (s *Service) CronTriggers(ctx context.Context) ([]cron.Schedule, error) {
	ts, err := s.db.TriggersOfType(ctx, TriggerCron)
	if err != nil {
		return nil, err
	}
	out := make([]cron.Schedule, 0, len(ts))
	for _, t := range ts {
		cfg, err := decodeTriggerConfig(t)
		if err != nil {
			// One unreadable trigger must not stop every other account's schedules.
			s.log.Error("cron trigger skipped: its stored config cannot be read", "trigger", t.ID, "account", t.AccountID, "err", err)
			continue
		}
		out = append(out, cron.Schedule{ID: t.ID, AccountID: t.AccountID, PipelineID: t.PipelineID, Expression: cfg.Expression,
			Timezone: cfg.Timezone, Branch: cfg.Branch, Variables: cfg.Variables, LastFired: t.CreatedAt})
	}
	return out, nil
}

func webhookAAD(accountID, triggerID string) []byte {
	return secrets.AAD(accountID, "trigger", triggerID)
}

// CreateTrigger adds a git or cron trigger to a pipeline. For git triggers it returns the
// webhook secret (generated when not given), which is shown once and stored encrypted.
func (s *Service) CreateTrigger(ctx context.Context, p rbac.Principal, pipelineRef string, in TriggerInput) (_ Trigger, secret string, err error) {
	e := audit.Start(ctx, p, "trigger.create", "trigger", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return Trigger{}, "", err
	}
	pl, err := s.resolvePipeline(ctx, p.AccountID, pipelineRef)
	if err != nil {
		return Trigger{}, "", err
	}
	// A trigger is part of its pipeline: adding one changes the pipeline.
	if err := rbac.Authorize(p, rbac.ActUpdate, pipelineResource(pl)); err != nil {
		return Trigger{}, "", err
	}
	t := store.Trigger{ID: store.NewID(store.PrefixTrigger), AccountID: p.AccountID, PipelineID: pl.ID, Type: in.Type, CreatedAt: s.now()}
	cfg := in.Config
	switch in.Type {
	case TriggerGit:
		if _, err := webhook.ParseProvider(cfg.Provider); err != nil {
			return Trigger{}, "", errdefs.Invalid("provider", cfg.Provider, "is not a git provider: use github, gitlab, gitea or bitbucket")
		}
		if cfg.Git == nil {
			return Trigger{}, "", errdefs.Invalid("git", "", "is required for a git trigger: give at least repo and events")
		}
		if err := cfg.Git.Validate(); err != nil {
			return Trigger{}, "", err
		}
		secret = in.Secret
		if secret == "" {
			secret = token.Random(32)
		}
		if len(secret) < 16 {
			return Trigger{}, "", errdefs.Invalid("secret", "", "is shorter than 16 characters: use a long random secret, or leave it empty to have one generated")
		}
		if t.SecretEnc, err = s.keys.Encrypt([]byte(secret), webhookAAD(p.AccountID, t.ID)); err != nil {
			return Trigger{}, "", err
		}
		cfg.Expression, cfg.Timezone, cfg.Branch, cfg.Variables = "", "", "", nil
		e.Detail("git trigger %s %s %v", cfg.Provider, cfg.Git.Repo, cfg.Git.Events)
	case TriggerCron:
		if err := schedule.Validate(cfg.Expression, cfg.Timezone); err != nil {
			return Trigger{}, "", err
		}
		for k := range cfg.Variables {
			if !varNameRE.MatchString(k) {
				return Trigger{}, "", errdefs.Invalid("variables", k, "is not a variable name")
			}
		}
		cfg.Provider, cfg.Git = "", nil
		e.Detail("cron trigger %q branch %q", cfg.Expression, cfg.Branch)
	default:
		return Trigger{}, "", errdefs.Invalid("type", in.Type, "is not a trigger type: use git or cron (manual runs need no trigger)")
	}
	t.Config = encodeJSON(cfg)
	e.Resource(t.ID)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateTrigger(ctx, t); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Trigger{}, "", err
	}
	if in.Type == TriggerCron {
		s.cronChanged()
	}
	out, err := toTrigger(t)
	return out, secret, err
}

// ListTriggers lists a pipeline's triggers.
func (s *Service) ListTriggers(ctx context.Context, p rbac.Principal, pipelineRef string) ([]Trigger, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return nil, err
	}
	pl, err := s.resolvePipeline(ctx, p.AccountID, pipelineRef)
	if err != nil {
		return nil, err
	}
	if err := rbac.Authorize(p, rbac.ActRead, pipelineResource(pl)); err != nil {
		return nil, err
	}
	rows, err := s.db.ListTriggers(ctx, p.AccountID, pl.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Trigger, len(rows))
	for i, r := range rows {
		if out[i], err = toTrigger(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteTrigger deletes a trigger.
func (s *Service) DeleteTrigger(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "trigger.delete", "trigger", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManagePipelines); err != nil {
		return err
	}
	if p.Bound(rbac.KindPipelines) {
		// Removing a trigger changes its pipeline. Another account's trigger is left to the
		// delete below, which does not find it.
		if t, err := s.db.TriggerByID(ctx, id); err == nil && t.AccountID == p.AccountID {
			pl, err := s.db.GetPipeline(ctx, p.AccountID, t.PipelineID)
			if err != nil {
				return err
			}
			if err := rbac.Authorize(p, rbac.ActUpdate, pipelineResource(pl)); err != nil {
				return err
			}
		} else if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return err
		}
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteTrigger(ctx, p.AccountID, id); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err == nil {
		s.cronChanged()
	}
	return err
}

// WebhookResult says what a webhook delivery did.
type WebhookResult struct {
	Builds    []Build
	Duplicate bool   // the delivery was handled before; Builds are the ones it created then
	Reason    string // why nothing was built
}

// ErrTriggerMismatch is wrapped by verified webhook deliveries addressed to a trigger of
// another provider (with errdefs.ErrInvalid).
var ErrTriggerMismatch = errors.New("trigger is for another provider")

// deliverySweepInterval is how often webhook deliveries older than webhook.ReplayWindow are
// forgotten (SweepDeliveries).
const deliverySweepInterval = time.Hour

// HandleWebhook verifies a delivery against the trigger's secret, matches it, and queues a
// build for each matching event. A delivery handled before — the same delivery ID, or the same
// payload (webhook.Digest) within webhook.ReplayWindow — creates nothing new and is answered as
// a duplicate with the builds it created then.
//
// Every delivery not verified with the secret of a git trigger of this ID — no such trigger, a
// cron trigger, a trigger of a deleted pipeline, a missing, malformed or wrong signature — is
// answered with the same webhook.Unauthenticated error, after the same work: a delivery for a
// trigger that does not exist is checked against a decoy secret. Only a delivery signed with
// the trigger's secret learns that it was sent to the wrong provider's URL.
func (s *Service) HandleWebhook(ctx context.Context, provider, triggerID string, h http.Header, body []byte) (WebhookResult, error) {
	var res WebhookResult
	prov, err := webhook.ParseProvider(provider)
	if err != nil {
		return res, errdefs.Invalid("provider", provider, "is not github, gitlab, gitea or bitbucket")
	}
	t, cfg, secret, err := s.webhookTrigger(ctx, triggerID)
	if err != nil {
		return res, err
	}
	evs, err := webhook.ParseAll(prov, h, body, secret)
	if t == nil || errors.Is(err, webhook.ErrSignature) {
		why := "no git trigger has this ID"
		if t != nil {
			why = err.Error()
		}
		s.log.Debug("webhook delivery refused", "provider", prov, "trigger", triggerID, "reason", why)
		return res, webhook.Unauthenticated(prov)
	}
	if err != nil {
		return res, err
	}
	if cfg.Provider != string(prov) {
		return res, fmt.Errorf("trigger %s takes %s deliveries, not %s: use the payload URL shown with the trigger: %w: %w", triggerID, cfg.Provider, prov, ErrTriggerMismatch, errdefs.ErrInvalid)
	}
	digest := webhook.Digest(prov, t.ID, body)
	if s.onPush != nil && s.recentPushes.First(digest, s.now()) {
		// A replayed push would make every runtime of the account refresh again: harmless, but
		// each replay costs a request per runtime. Within the window it is told once.
		s.onPush(ctx, t.AccountID, evs)
	}
	pl, err := s.db.GetPipeline(ctx, t.AccountID, t.PipelineID)
	if err != nil {
		return res, err
	}
	var reasons []string
	for i, ev := range evs {
		if ev.Kind == webhook.KindPing {
			reasons = append(reasons, "ping")
			continue
		}
		if ok, why := webhook.Match(*cfg.Git, ev); !ok {
			reasons = append(reasons, why)
			continue
		}
		d := digest
		if i > 0 { // a Bitbucket push of several refs: one event per ref, as with the delivery id
			d = fmt.Sprintf("%s#%d", digest, i+1)
		}
		b, dup, err := s.queueDelivery(ctx, pl, *t, ev, d)
		if err != nil {
			return res, err
		}
		res.Duplicate = res.Duplicate || dup
		res.Builds = append(res.Builds, b)
	}
	if len(res.Builds) == 0 {
		res.Reason = strings.Join(reasons, "; ")
	}
	return res, nil
}

// webhookTrigger returns the git trigger id names, its config and its webhook secret — or, when
// there is no git trigger of that ID, nil and a decoy secret, found with the same work.
func (s *Service) webhookTrigger(ctx context.Context, id string) (*store.Trigger, TriggerConfig, string, error) {
	t, err := s.db.TriggerByID(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) || (err == nil && t.Type != TriggerGit) {
		return nil, TriggerConfig{}, s.decoy.Open(s.keys), nil
	}
	if err != nil {
		return nil, TriggerConfig{}, "", err
	}
	cfg, err := decodeTriggerConfig(t)
	if err != nil {
		return nil, TriggerConfig{}, "", err
	}
	if cfg.Git == nil {
		return nil, TriggerConfig{}, "", fmt.Errorf("git trigger %s has no git settings", t.ID)
	}
	secret, err := s.keys.Decrypt(t.SecretEnc, webhookAAD(t.AccountID, t.ID))
	if err != nil {
		return nil, TriggerConfig{}, "", err
	}
	return &t, cfg, string(secret), nil
}

// queueDelivery queues the build of one event unless its delivery — by delivery ID or by payload
// digest — was handled before; then it returns the build that delivery created, and true.
func (s *Service) queueDelivery(ctx context.Context, pl store.Pipeline, t store.Trigger, ev webhook.Event, digest string) (Build, bool, error) {
	in := runInputFromEvent(ev, t.ID)
	in.DedupKey, in.PayloadDigest = ev.DeliveryID, digest
	if in.DedupKey == "" {
		in.DedupKey = "sha256:" + digest // no id: the payload names the delivery
	}
	// A redelivery or replay is answered from its record before the spec is read or anything
	// is written; the record written with the build below settles races between replicas.
	prev, err := s.db.FindDelivery(ctx, t.ID, in.DedupKey, digest)
	if err == nil {
		return s.earlierBuild(ctx, pl, t, prev)
	}
	if !errors.Is(err, errdefs.ErrNotFound) {
		return Build{}, false, err
	}
	e := audit.System(ctx, t.AccountID, "build.run", "build", "")
	b, err := s.queue(ctx, pl, in, fmt.Sprintf("%s webhook (%s)", ev.Provider, orUnknown(ev.Sender.Login)), e)
	var dup *DuplicateError
	if errors.As(err, &dup) {
		// A redelivery: no audit record, nothing changed.
		return s.earlierBuild(ctx, pl, t, dup.BuildID)
	}
	s.audit.Finish(ctx, e, err)
	return b, false, err
}

// earlierBuild is the build an earlier delivery created, for the answer to a duplicate.
func (s *Service) earlierBuild(ctx context.Context, pl store.Pipeline, t store.Trigger, id string) (Build, bool, error) {
	prev, err := s.db.GetBuild(ctx, t.AccountID, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return Build{ID: id, AccountID: t.AccountID, PipelineID: pl.ID, Pipeline: fullName(pl)}, true, nil // deleted since
	}
	if err != nil {
		return Build{}, true, err
	}
	b, err := toBuild(prev, fullName(pl), nil)
	return b, true, err
}

// SweepDeliveries forgets, every interval (0: hourly), the webhook deliveries recorded longer
// than webhook.ReplayWindow ago, until ctx ends. Every replica may run it.
func (s *Service) SweepDeliveries(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = deliverySweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			n, err := s.db.DeleteDeliveriesBefore(ctx, s.now().Add(-webhook.ReplayWindow))
			switch {
			case err != nil && ctx.Err() == nil:
				s.log.Warn("sweep old webhook deliveries", "err", err)
			case n > 0:
				s.log.Debug("swept old webhook deliveries", "count", n)
			}
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown sender"
	}
	return s
}

func runInputFromEvent(ev webhook.Event, triggerID string) RunInput {
	in := RunInput{Branch: ev.Branch, SHA: ev.SHA, Repo: ev.Repo.FullName, TriggerType: TriggerGit, TriggerID: triggerID,
		Variables: map[string]string{"CF_GIT_EVENT": ev.CodefreshName(), "CF_REPO_CLONE_URL": ev.Repo.CloneURL}}
	if ev.Kind == webhook.KindTag || ev.Kind == webhook.KindRelease {
		in.Branch = ev.RefName()
		in.Variables["CF_RELEASE_TAG"] = ev.RefName()
	}
	if c := ev.HeadCommit; c != nil {
		in.CommitMessage, in.CommitAuthor = c.Message, c.Author.Name
		in.Variables["CF_COMMIT_URL"] = c.URL
	}
	if pr := ev.PullRequest; pr != nil {
		in.Branch = pr.SourceBranch
		for k, v := range map[string]string{
			"CF_PULL_REQUEST_NUMBER": strconv.Itoa(pr.Number), "CF_PULL_REQUEST_TITLE": pr.Title,
			"CF_PULL_REQUEST_TARGET": pr.TargetBranch, "CF_PULL_REQUEST_ACTION": ev.Action, "CF_PULL_REQUEST_ID": strconv.Itoa(pr.Number),
		} {
			in.Variables[k] = v
		}
		if in.CommitMessage == "" {
			in.CommitMessage = pr.Title
		}
	}
	return in
}

// FireCron queues a build for a cron trigger's scheduled time, once per key: firing the same
// key again queues nothing and returns an error wrapping errdefs.ErrConflict.
func (s *Service) FireCron(ctx context.Context, triggerID, key string, scheduled time.Time) error {
	t, err := s.db.TriggerByID(ctx, triggerID)
	if err != nil {
		return err
	}
	pl, err := s.db.GetPipeline(ctx, t.AccountID, t.PipelineID)
	if err != nil {
		return err
	}
	cfg, err := decodeTriggerConfig(t)
	if err != nil {
		return err
	}
	vars := map[string]string{"CF_CRON_SCHEDULED_TIME": scheduled.UTC().Format(time.RFC3339)}
	for k, v := range cfg.Variables {
		vars[k] = v
	}
	e := audit.System(ctx, t.AccountID, "build.run", "build", "")
	_, err = s.queue(ctx, pl, RunInput{Branch: cfg.Branch, TriggerType: TriggerCron, TriggerID: t.ID, Variables: vars, DedupKey: key}, "cron "+cfg.Expression, e)
	if !errors.Is(err, ErrDuplicate) {
		s.audit.Finish(ctx, e, err)
	}
	return err
}

// cronChanged tells the cron executor that cron triggers changed.
func (s *Service) cronChanged() {
	if s.onCronChange != nil {
		s.onCronChange()
	}
}
