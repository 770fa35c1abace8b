package runtimes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
	"github.com/freshet-dev/freshet/internal/webhook"
)

// Push notifications.
const (
	// NotifyPath is where a runtime's app-proxy takes push notifications.
	NotifyPath = "/app-proxy/api/v1/notify"
	// notifyTimeout bounds one runtime's notification.
	notifyTimeout = 10 * time.Second
	// minWebhookSecret is the shortest GitOps webhook secret accepted.
	minWebhookSecret = 16
)

// Notification is what a runtime is told of a push: the repository (clone URL) and the
// revision (a branch or tag name, or a full ref).
type Notification struct {
	RepoURL  string `json:"repoURL"`
	Revision string `json:"revision"`
}

// SystemPrincipal is the identity the platform acts with towards account's runtimes: role
// member, no user.
func SystemPrincipal(accountID string) rbac.Principal {
	return rbac.Principal{AccountID: accountID, Email: "system", Role: rbac.Member}
}

// PushNotifications returns what runtimes are told of a verified webhook event: one
// notification per repository URL the event names (HTTPS and SSH clone URLs, so that
// applications find it whichever they use), for pushes to branches and tags (deletions too:
// the applications on a deleted branch should learn it now). Other events tell nothing.
func PushNotifications(ev webhook.Event) []Notification {
	if ev.Kind != webhook.KindPush && ev.Kind != webhook.KindTag {
		return nil
	}
	rev := ev.Branch
	if ev.Kind == webhook.KindTag {
		rev = ev.Tag
	}
	if rev == "" {
		rev = ev.Ref
	}
	var out []Notification
	seen := map[string]bool{}
	for _, u := range []string{ev.Repo.CloneURL, ev.Repo.SSHURL} {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, Notification{RepoURL: u, Revision: rev})
		}
	}
	return out
}

// NotifyPush tells every tunnel-connected runtime of account about the pushes in ns
// (POST NotifyPath, as SystemPrincipal(account)), so that the applications following the
// repository refresh now rather than at their next poll. It returns at once: the requests run in
// the background, each bounded by a short timeout, and failures are logged. The returned
// channel is closed when they are done (tests wait on it; callers may ignore it).
func (s *Service) NotifyPush(ctx context.Context, accountID string, ns []Notification) <-chan struct{} {
	done := make(chan struct{})
	if len(ns) == 0 || s.tunnel == nil {
		close(done)
		return done
	}
	ctx = context.WithoutCancel(ctx) // the webhook has been answered by then
	go func() {
		defer close(done)
		rts, err := s.db.ListRuntimes(ctx, accountID)
		if err != nil {
			s.log.Warn("push notification: list runtimes", "account", accountID, "err", err)
			return
		}
		p := SystemPrincipal(accountID)
		var wg sync.WaitGroup
		for _, rt := range rts {
			if rt.AccessMode != AccessTunnel {
				continue // ingress runtimes are not reachable through a tunnel
			}
			wg.Go(func() {
				for _, n := range ns {
					err := s.callRuntime(ctx, p, rt.AccountID, rt.ID, rt.Name, http.MethodPost, NotifyPath, n, nil, 0, notifyTimeout)
					switch {
					case errors.Is(err, ErrDisconnected):
						s.log.Debug("push notification: runtime not connected", "runtime", rt.Name, "account", accountID)
						return
					case err != nil:
						s.log.Warn("push notification failed", "runtime", rt.Name, "account", accountID, "repo", n.RepoURL, "revision", n.Revision, "err", err)
					default:
						s.log.Debug("push notification sent", "runtime", rt.Name, "account", accountID, "repo", n.RepoURL, "revision", n.Revision)
					}
				}
			})
		}
		wg.Wait()
	}()
	return done
}

// webhookSecretAAD binds an account's encrypted GitOps webhook secret to the account.
func webhookSecretAAD(accountID string) []byte { return secrets.AAD(accountID, "gitops-webhook") }

// GitOpsWebhook is an account's GitOps push webhook: whether it has a secret, since when.
type GitOpsWebhook struct {
	Configured bool
	CreatedAt  time.Time
}

// WebhookInfo says whether p's account has a GitOps webhook secret.
func (s *Service) WebhookInfo(ctx context.Context, p rbac.Principal) (GitOpsWebhook, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return GitOpsWebhook{}, err
	}
	w, err := s.db.GetGitOpsWebhook(ctx, p.AccountID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return GitOpsWebhook{}, nil
	}
	if err != nil {
		return GitOpsWebhook{}, err
	}
	return GitOpsWebhook{Configured: true, CreatedAt: w.CreatedAt}, nil
}

// SetWebhookSecret sets p's account's GitOps webhook secret (admins), replacing the previous
// one at once, and returns it; an empty secret has one generated. It is stored encrypted.
func (s *Service) SetWebhookSecret(ctx context.Context, p rbac.Principal, secret string) (out string, w GitOpsWebhook, err error) {
	e := audit.Start(ctx, p, "gitops-webhook.set", "account", p.AccountID)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRuntimes); err != nil {
		return "", w, err
	}
	if s.keys == nil {
		return "", w, fmt.Errorf("this server has no master key to keep webhook secrets with: %w", errdefs.ErrUnavailable)
	}
	if secret == "" {
		secret = token.Random(32)
		e.Detail("generated secret")
	} else if len(secret) < minWebhookSecret {
		return "", w, errdefs.Invalid("secret", "", fmt.Sprintf("is shorter than %d characters: use a long random secret, or leave it empty to have one generated", minWebhookSecret))
	}
	enc, err := s.keys.Encrypt([]byte(secret), webhookSecretAAD(p.AccountID))
	if err != nil {
		return "", w, err
	}
	row := store.GitOpsWebhook{AccountID: p.AccountID, SecretEnc: enc, CreatedAt: s.now().UTC().Truncate(time.Microsecond)} // as stored
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.SetGitOpsWebhook(ctx, row); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return "", w, err
	}
	return secret, GitOpsWebhook{Configured: true, CreatedAt: row.CreatedAt}, nil
}

// WebhookResult is what a GitOps webhook delivery led to.
type WebhookResult struct {
	Notifications []Notification
	// Reason says why nothing is notified (a ping, a pull request event, a replay, ...).
	Reason string
	// Duplicate: the same payload was handled within webhook.ReplayWindow; nothing is notified.
	Duplicate bool
	// Done is closed when the notifications have been sent (or failed).
	Done <-chan struct{}
}

// HandleWebhook verifies a git provider's delivery to accountID's GitOps webhook with the
// account's secret and passes pushes on to the account's runtimes (NotifyPush). An unknown
// account, an account without a secret and a missing or wrong signature are all answered with
// the same webhook.Unauthenticated error, after the same work (a decoy secret stands in for the
// one that does not exist): none tells a prober anything.
//
// A payload handled before (webhook.Digest, within webhook.ReplayWindow, on this replica) is
// answered as a duplicate and notifies nothing. A replay could do no harm beyond that work — a
// refresh reads the repository as it is now, whatever revision the payload names — so this
// filter is kept in memory rather than in the database: after a restart, or on another replica,
// a replay makes the runtimes refresh once more.
func (s *Service) HandleWebhook(ctx context.Context, provider, accountID string, h http.Header, body []byte) (WebhookResult, error) {
	var res WebhookResult
	prov, err := webhook.ParseProvider(provider)
	if err != nil {
		return res, err
	}
	if s.keys == nil {
		return res, fmt.Errorf("this server has no master key to read webhook secrets with: %w", errdefs.ErrUnavailable)
	}
	var secret string
	known := false
	w, err := s.db.GetGitOpsWebhook(ctx, accountID)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		secret = s.decoy.Open(s.keys) // the same work as for a real secret
	case err != nil:
		return res, err
	default:
		plain, err := s.keys.Decrypt(w.SecretEnc, webhookSecretAAD(accountID))
		if err != nil {
			return res, fmt.Errorf("GitOps webhook secret of account %s: %w", accountID, err)
		}
		secret, known = string(plain), true
	}
	evs, err := webhook.ParseAll(prov, h, body, secret)
	if !known || errors.Is(err, webhook.ErrSignature) {
		why := "the account has no GitOps webhook"
		if known {
			why = err.Error()
		}
		s.log.Debug("GitOps webhook delivery refused", "provider", prov, "account", accountID, "reason", why)
		return res, webhook.Unauthenticated(prov)
	}
	if err != nil {
		return res, err
	}
	if !s.recentPushes.First(webhook.Digest(prov, "gitops:"+accountID, body), s.now()) {
		res.Duplicate, res.Reason = true, "this payload was handled before: nothing to notify"
		res.Done = closedChan()
		return res, nil
	}
	for _, ev := range evs {
		res.Notifications = append(res.Notifications, PushNotifications(ev)...)
	}
	if len(res.Notifications) == 0 {
		res.Reason = fmt.Sprintf("%s events do not change what applications deploy: nothing to notify", evs[0].Kind)
	}
	res.Done = s.NotifyPush(ctx, accountID, res.Notifications)
	return res, nil
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// ReencryptSecrets rewrites the accounts' GitOps webhook secrets under k's primary key in tx,
// and reports how many changed. The control plane's ReencryptSecrets runs it beside the other
// domains' in one transaction.
func ReencryptSecrets(ctx context.Context, tx *store.Tx, k secrets.Reencrypter) (int, error) {
	hooks, err := tx.AllGitOpsWebhooks(ctx)
	if err != nil {
		return 0, err
	}
	changed, err := reencryptHostedTokens(ctx, tx, k)
	if err != nil {
		return changed, err
	}
	for _, w := range hooks {
		out, ch, err := k.Reencrypt(w.SecretEnc, webhookSecretAAD(w.AccountID))
		if err != nil {
			return changed, fmt.Errorf("GitOps webhook of account %s: %w", w.AccountID, err)
		}
		if ch {
			w.SecretEnc = out
			if err := tx.SetGitOpsWebhook(ctx, w); err != nil {
				return changed, err
			}
			changed++
		}
	}
	return changed, nil
}
