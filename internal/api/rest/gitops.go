package rest

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// GitOpsWebhook is the account's GitOps push webhook. (Its wire type lives here until the
// public client gains it.)
type GitOpsWebhook struct {
	Configured bool       `json:"configured"`
	CreatedAt  *time.Time `json:"createdAt,omitempty"`
	// URLs are the payload URLs to give each git provider.
	URLs map[string]string `json:"urls"`
	// Secret is set only in the answer that set it: it is shown once.
	Secret string `json:"secret,omitempty"`
}

// GitOpsWebhookResult is what a GitOps webhook delivery led to.
type GitOpsWebhookResult struct {
	Notifications []GitOpsNotification `json:"notifications"`
	// Reason says why nothing is notified.
	Reason string `json:"reason,omitempty"`
	// Duplicate: the same payload was handled before (a redelivery or a replay).
	Duplicate bool `json:"duplicate,omitempty"`
}

// GitOpsNotification is what the account's runtimes are told of a push.
type GitOpsNotification struct {
	RepoURL  string `json:"repoURL"`
	Revision string `json:"revision"` // the branch or tag name, or the full ref
}

func gitopsWebhookURLs(r *http.Request, accountID string) map[string]string {
	out := map[string]string{}
	for _, p := range webhook.Providers() {
		out[string(p)] = baseURL(r) + "/api/v1/webhooks/gitops/" + string(p) + "/" + url.PathEscape(accountID)
	}
	return out
}

func (a *API) getGitOpsWebhook(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	info, err := a.runtimes.WebhookInfo(r.Context(), p)
	if err != nil {
		return err
	}
	out := GitOpsWebhook{Configured: info.Configured, URLs: gitopsWebhookURLs(r, p.AccountID)}
	if info.Configured {
		out.CreatedAt = timePtr(info.CreatedAt)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) setGitOpsWebhook(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Secret string `json:"secret"`
	}
	if r.ContentLength != 0 {
		if err := httpx.DecodeJSON(r, &in); err != nil {
			return err
		}
	}
	p := principal(r)
	secret, info, err := a.runtimes.SetWebhookSecret(r.Context(), p, in.Secret)
	if err != nil {
		return err
	}
	out := GitOpsWebhook{Configured: true, CreatedAt: timePtr(info.CreatedAt), URLs: gitopsWebhookURLs(r, p.AccountID)}
	if in.Secret == "" {
		out.Secret = secret // generated: shown once
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// gitopsWebhookDelivery receives a git provider's webhook for an account's GitOps runtimes. It
// needs no credentials: the delivery's signature, checked with the account's GitOps webhook
// secret, is its authentication. Pushes are passed on to the account's connected runtimes in
// the background; the answer does not wait for them.
func (a *API) gitopsWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	body, err := webhook.ReadBody(r.Body, webhook.DefaultMaxBodyBytes)
	if err != nil {
		return err
	}
	res, err := a.runtimes.HandleWebhook(r.Context(), r.PathValue("provider"), r.PathValue("account"), r.Header, body)
	if errors.Is(err, webhook.ErrUnsupportedEvent) {
		httpx.WriteJSON(w, http.StatusAccepted, GitOpsWebhookResult{Notifications: []GitOpsNotification{}, Reason: err.Error()})
		return nil
	}
	if err != nil {
		return err
	}
	out := GitOpsWebhookResult{Notifications: make([]GitOpsNotification, 0, len(res.Notifications)), Reason: res.Reason, Duplicate: res.Duplicate}
	for _, n := range res.Notifications {
		out.Notifications = append(out.Notifications, GitOpsNotification{RepoURL: n.RepoURL, Revision: n.Revision})
	}
	httpx.WriteJSON(w, http.StatusAccepted, out)
	return nil
}
