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
		if err := cron.Validate(cfg.Expression, cfg.Timezone); err != nil {
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
	Duplicate bool   // the delivery was seen before; Builds are the ones it created then
	Reason    string // why nothing was built
}

// ErrTriggerMismatch is wrapped by webhook deliveries that name a trigger of another provider.
var ErrTriggerMismatch = errors.New("trigger is for another provider")

// HandleWebhook verifies a delivery against the trigger's secret, matches it, and queues a
// build for each matching event. A redelivery (same delivery ID) creates nothing new.
func (s *Service) HandleWebhook(ctx context.Context, provider, triggerID string, h http.Header, body []byte) (WebhookResult, error) {
	var res WebhookResult
	prov, err := webhook.ParseProvider(provider)
	if err != nil {
		return res, errdefs.Invalid("provider", provider, "is not github, gitlab, gitea or bitbucket")
	}
	t, err := s.db.TriggerByID(ctx, triggerID)
	if err != nil || t.Type != TriggerGit {
		// Say the same for "no such trigger" and "bad signature": neither tells a prober anything.
		return res, webhook.ErrSignature
	}
	cfg, err := decodeTriggerConfig(t)
	if err != nil {
		return res, err
	}
	if cfg.Provider != string(prov) {
		return res, fmt.Errorf("trigger %s expects %s deliveries: %w", triggerID, cfg.Provider, errdefs.ErrInvalid)
	}
	secret, err := s.keys.Decrypt(t.SecretEnc, webhookAAD(t.AccountID, t.ID))
	if err != nil {
		return res, err
	}
	evs, err := webhook.ParseAll(prov, h, body, string(secret))
	if err != nil {
		return res, err
	}
	if s.onPush != nil {
		s.onPush(ctx, t.AccountID, evs)
	}
	pl, err := s.db.GetPipeline(ctx, t.AccountID, t.PipelineID)
	if err != nil {
		return res, err
	}
	var reasons []string
	for _, ev := range evs {
		if ev.Kind == webhook.KindPing {
			reasons = append(reasons, "ping")
			continue
		}
		if ok, why := webhook.Match(*cfg.Git, ev); !ok {
			reasons = append(reasons, why)
			continue
		}
		b, dup, err := s.queueDelivery(ctx, pl, t, ev)
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

// queueDelivery queues the build of one event unless its delivery was handled before.
func (s *Service) queueDelivery(ctx context.Context, pl store.Pipeline, t store.Trigger, ev webhook.Event) (Build, bool, error) {
	in := runInputFromEvent(ev, t.ID)
	in.DedupKey = ev.DeliveryID
	if in.DedupKey == "" {
		in.DedupKey = string(ev.Provider) + ":" + ev.Ref + ":" + ev.SHA // no id: the same push is the same delivery
	}
	e := audit.System(ctx, t.AccountID, "build.run", "build", "")
	b, err := s.queue(ctx, pl, in, fmt.Sprintf("%s webhook (%s)", ev.Provider, orUnknown(ev.Sender.Login)), e)
	var dup *DuplicateError
	if errors.As(err, &dup) {
		// A redelivery: no audit record, nothing changed.
		prev, err := s.db.GetBuild(ctx, t.AccountID, dup.BuildID)
		if err != nil {
			return Build{}, true, err
		}
		b, err := toBuild(prev, fullName(pl), nil)
		return b, true, err
	}
	s.audit.Finish(ctx, e, err)
	return b, false, err
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
