package rest

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/webhook"
)

func toTrigger(r *http.Request, t pipeline.Trigger) client.Trigger {
	cfg := t.Config
	out := client.Trigger{ID: t.ID, Type: t.Type, Provider: cfg.Provider, Expression: cfg.Expression, Timezone: cfg.Timezone,
		Branch: cfg.Branch, Variables: cfg.Variables, CreatedAt: t.CreatedAt}
	if g := cfg.Git; g != nil {
		out.Git = &client.GitTrigger{Repo: g.Repo, Events: g.Events, BranchRegex: g.BranchRegex, BranchRegexInput: g.BranchRegexInput,
			PullRequestTargetBranchRegex: g.PullRequestTargetBranchRegex, PullRequestAllowForkEvents: g.PullRequestAllowForkEvents,
			ModifiedFilesGlob: g.ModifiedFilesGlob, Disabled: g.Disabled}
		out.WebhookURL = fmt.Sprintf("%s/api/v1/webhooks/%s/%s", baseURL(r), cfg.Provider, t.ID)
		out.Name = fmt.Sprintf("%s %s %v", cfg.Provider, g.Repo, g.Events)
	} else {
		out.Name = "cron " + cfg.Expression
	}
	return out
}

// baseURL is the URL the client reached the server at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (a *API) listTriggers(w http.ResponseWriter, r *http.Request) error {
	ts, err := a.pipelines.ListTriggers(r.Context(), principal(r), r.PathValue("pipeline"))
	if err != nil {
		return err
	}
	out := client.List[client.Trigger]{Items: []client.Trigger{}}
	for _, t := range ts {
		out.Items = append(out.Items, toTrigger(r, t))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createTrigger(w http.ResponseWriter, r *http.Request) error {
	var in client.TriggerRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	cfg := pipeline.TriggerConfig{Provider: in.Provider, Expression: in.Expression, Timezone: in.Timezone, Branch: in.Branch, Variables: in.Variables}
	if g := in.Git; g != nil {
		cfg.Git = &webhook.Trigger{Repo: g.Repo, Events: g.Events, BranchRegex: g.BranchRegex, BranchRegexInput: g.BranchRegexInput,
			PullRequestTargetBranchRegex: g.PullRequestTargetBranchRegex, PullRequestAllowForkEvents: g.PullRequestAllowForkEvents,
			ModifiedFilesGlob: g.ModifiedFilesGlob, Disabled: g.Disabled}
	}
	t, secret, err := a.pipelines.CreateTrigger(r.Context(), principal(r), r.PathValue("pipeline"), pipeline.TriggerInput{Type: in.Type, Config: cfg, Secret: in.Secret})
	if err != nil {
		return err
	}
	out := client.CreatedTrigger{Trigger: toTrigger(r, t)}
	if in.Secret == "" {
		out.Secret = secret // generated: shown once
	}
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

func (a *API) deleteTrigger(w http.ResponseWriter, r *http.Request) error {
	if err := a.pipelines.DeleteTrigger(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// webhookDelivery receives a git provider's webhook. It needs no credentials: the delivery's
// signature, checked with the trigger's secret, is its authentication.
func (a *API) webhookDelivery(w http.ResponseWriter, r *http.Request) error {
	body, err := webhook.ReadBody(r.Body, webhook.DefaultMaxBodyBytes)
	if err != nil {
		return err
	}
	res, err := a.pipelines.HandleWebhook(r.Context(), r.PathValue("provider"), r.PathValue("trigger"), r.Header, body)
	if errors.Is(err, webhook.ErrUnsupportedEvent) {
		httpx.WriteJSON(w, http.StatusAccepted, map[string]any{"builds": []string{}, "reason": err.Error()})
		return nil
	}
	if err != nil {
		return err
	}
	ids := []string{}
	for _, b := range res.Builds {
		ids = append(ids, b.ID)
	}
	status := http.StatusCreated
	if len(ids) == 0 || res.Duplicate {
		status = http.StatusAccepted
	}
	httpx.WriteJSON(w, status, map[string]any{"builds": ids, "duplicate": res.Duplicate, "reason": res.Reason})
	return nil
}
