// Package rest serves the REST API under /api/v1. Routes are declared in one table (Routes), so
// tests can enumerate every route: the OpenAPI spec in api/openapi.yaml must document each one,
// and the tenant-isolation test must cover each one.
//
// Handlers return errors; httpx maps them to status codes and the one error body.
package rest

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/hub"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/notify"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/products"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

// Route is one REST endpoint.
type Route struct {
	Method  string
	Path    string // a net/http ServeMux pattern path, e.g. /api/v1/users/{id}
	Public  bool   // served without credentials
	Handler func(w http.ResponseWriter, r *http.Request) error
}

// API is the REST API.
type API struct {
	id        *identity.Service
	audit     *audit.Log
	pipelines *pipeline.Service
	dispatch  *pipeline.Dispatcher
	runtimes  *runtimes.Service
	analytics *analytics.Service
	images    *images.Service
	notify    *notify.Service
	products  *products.Service
	hub       *hub.Service
	billing   *billing.Service
	log       *slog.Logger
	secure    bool // cookies get the Secure attribute (the server speaks TLS)
	access    *httpx.Access
	publicURL string // where browsers reach the server, for the SSO callback URL
}

// Deps are the services the REST API serves.
type Deps struct {
	Identity   *identity.Service
	Audit      *audit.Log
	Pipelines  *pipeline.Service
	Dispatcher *pipeline.Dispatcher
	Runtimes   *runtimes.Service
	Analytics  *analytics.Service
	Images     *images.Service
	// Notifications serves /api/v1/notifications/…
	Notifications *notify.Service
	// Products serves /api/v1/environments/… and /api/v1/products/…
	Products *products.Service
	// Hub serves /api/v1/hub/…
	Hub     *hub.Service
	Billing *billing.Service
	Log     *slog.Logger
	// SecureCookies marks session cookies Secure (the server speaks TLS).
	SecureCookies bool
	// Access ends streams (a followed log) whose caller lost access.
	Access *httpx.Access
	// PublicURL is the URL browsers reach the server at; the SSO callback is
	// PublicURL + /auth/sso/callback, which the identity provider must have registered.
	PublicURL string
}

// New returns the REST API over the given services.
func New(d Deps) *API {
	return &API{id: d.Identity, audit: d.Audit, pipelines: d.Pipelines, dispatch: d.Dispatcher, runtimes: d.Runtimes, analytics: d.Analytics, images: d.Images, notify: d.Notifications, products: d.Products, hub: d.Hub, billing: d.Billing, log: d.Log, secure: d.SecureCookies, access: d.Access, publicURL: strings.TrimSuffix(d.PublicURL, "/")}
}

// Routes lists every REST endpoint.
func (a *API) Routes() []Route {
	return []Route{
		{Method: "GET", Path: "/api/v1/openapi.yaml", Public: true, Handler: serveSpec},
		{Method: "GET", Path: "/api/v1/docs", Public: true, Handler: serveDocs},
		{Method: "POST", Path: "/api/v1/auth/login", Public: true, Handler: a.login},
		{Method: "POST", Path: "/api/v1/auth/logout", Handler: a.logout},
		{Method: "POST", Path: "/api/v1/auth/switch-account", Handler: a.switchAccount},
		{Method: "GET", Path: "/api/v1/me", Handler: a.me},
		{Method: "POST", Path: "/api/v1/me/password", Handler: a.changePassword},
		{Method: "GET", Path: "/api/v1/me/sessions", Handler: a.listSessions},
		{Method: "DELETE", Path: "/api/v1/me/sessions/{id}", Handler: a.revokeSession},
		{Method: "POST", Path: "/api/v1/auth/password-reset", Public: true, Handler: a.resetPassword},
		{Method: "GET", Path: "/auth/sso/{account}/login", Public: true, Handler: a.ssoLogin},
		{Method: "GET", Path: "/auth/sso/callback", Public: true, Handler: a.ssoCallback},
		{Method: "POST", Path: "/auth/sso/token", Public: true, Handler: a.ssoToken},
		{Method: "POST", Path: "/auth/sso/{account}/device", Public: true, Handler: a.ssoDevice},
		{Method: "POST", Path: "/auth/sso/device/token", Public: true, Handler: a.ssoDeviceToken},
		{Method: "GET", Path: "/auth/sso/device", Public: true, Handler: a.deviceVerify},
		{Method: "GET", Path: "/api/v1/sso", Handler: a.getSSO},
		{Method: "PUT", Path: "/api/v1/sso", Handler: a.setSSO},
		{Method: "DELETE", Path: "/api/v1/sso", Handler: a.deleteSSO},
		{Method: "GET", Path: "/api/v1/account", Handler: a.account},
		{Method: "DELETE", Path: "/api/v1/account", Handler: a.deleteAccount},
		{Method: "GET", Path: "/api/v1/plan", Handler: a.getPlan},
		{Method: "GET", Path: "/api/v1/usage", Handler: a.getUsage},
		{Method: "POST", Path: "/api/v1/accounts", Handler: a.createAccount},
		{Method: "GET", Path: "/api/v1/users", Handler: a.listUsers},
		{Method: "POST", Path: "/api/v1/users", Handler: a.createUser},
		{Method: "GET", Path: "/api/v1/users/{id}", Handler: a.getUser},
		{Method: "PATCH", Path: "/api/v1/users/{id}", Handler: a.updateUser},
		{Method: "DELETE", Path: "/api/v1/users/{id}", Handler: a.deleteUser},
		{Method: "POST", Path: "/api/v1/users/{id}/password-reset", Handler: a.issuePasswordReset},
		{Method: "GET", Path: "/api/v1/invitations", Handler: a.listInvitations},
		{Method: "POST", Path: "/api/v1/invitations/{id}/accept", Handler: a.acceptInvitation},
		{Method: "POST", Path: "/api/v1/invitations/{id}/decline", Handler: a.declineInvitation},
		{Method: "GET", Path: "/api/v1/apikeys", Handler: a.listAPIKeys},
		{Method: "POST", Path: "/api/v1/apikeys", Handler: a.createAPIKey},
		{Method: "DELETE", Path: "/api/v1/apikeys/{id}", Handler: a.revokeAPIKey},
		{Method: "GET", Path: "/api/v1/audit", Handler: a.listAudit},
		{Method: "GET", Path: "/api/v1/teams", Handler: a.listTeams},
		{Method: "POST", Path: "/api/v1/teams", Handler: a.createTeam},
		{Method: "GET", Path: "/api/v1/teams/{team}", Handler: a.getTeam},
		{Method: "DELETE", Path: "/api/v1/teams/{team}", Handler: a.deleteTeam},
		{Method: "POST", Path: "/api/v1/teams/{team}/members", Handler: a.addTeamMember},
		{Method: "DELETE", Path: "/api/v1/teams/{team}/members/{user}", Handler: a.removeTeamMember},
		{Method: "GET", Path: "/api/v1/rules", Handler: a.listRules},
		{Method: "POST", Path: "/api/v1/rules", Handler: a.createRule},
		{Method: "DELETE", Path: "/api/v1/rules/{id}", Handler: a.deleteRule},
		{Method: "GET", Path: "/api/v1/authz/explain", Handler: a.explainAuthz},
		{Method: "GET", Path: "/api/v1/projects", Handler: a.listProjects},
		{Method: "POST", Path: "/api/v1/projects", Handler: a.createProject},
		{Method: "GET", Path: "/api/v1/projects/{project}", Handler: a.getProject},
		{Method: "DELETE", Path: "/api/v1/projects/{project}", Handler: a.deleteProject},
		{Method: "PUT", Path: "/api/v1/projects/{project}/owner", Handler: a.setProjectOwner},
		{Method: "POST", Path: "/api/v1/pipelines/lint", Handler: a.lintPipeline},
		{Method: "GET", Path: "/api/v1/pipelines", Handler: a.listPipelines},
		{Method: "POST", Path: "/api/v1/pipelines", Handler: a.createPipeline},
		{Method: "GET", Path: "/api/v1/pipelines/{pipeline}", Handler: a.getPipeline},
		{Method: "PUT", Path: "/api/v1/pipelines/{pipeline}", Handler: a.updatePipeline},
		{Method: "DELETE", Path: "/api/v1/pipelines/{pipeline}", Handler: a.deletePipeline},
		{Method: "POST", Path: "/api/v1/pipelines/{pipeline}/runs", Handler: a.runPipeline},
		{Method: "GET", Path: "/api/v1/pipelines/{pipeline}/triggers", Handler: a.listTriggers},
		{Method: "POST", Path: "/api/v1/pipelines/{pipeline}/triggers", Handler: a.createTrigger},
		{Method: "DELETE", Path: "/api/v1/triggers/{id}", Handler: a.deleteTrigger},
		{Method: "POST", Path: "/api/v1/webhooks/{provider}/{trigger}", Public: true, Handler: a.webhookDelivery},
		{Method: "GET", Path: "/api/v1/builds", Handler: a.listBuilds},
		{Method: "GET", Path: "/api/v1/builds/stats", Handler: a.buildStats},
		{Method: "GET", Path: "/api/v1/builds/{id}", Handler: a.getBuild},
		{Method: "GET", Path: "/api/v1/builds/{id}/logs", Handler: a.buildLogs},
		{Method: "POST", Path: "/api/v1/builds/{id}/cancel", Handler: a.cancelBuild},
		{Method: "POST", Path: "/api/v1/builds/{id}/restart", Handler: a.restartBuild},
		{Method: "POST", Path: "/api/v1/builds/{id}/approve", Handler: a.approveBuild},
		{Method: "POST", Path: "/api/v1/builds/{id}/deny", Handler: a.denyBuild},
		{Method: "GET", Path: "/api/v1/contexts", Handler: a.listContexts},
		{Method: "POST", Path: "/api/v1/contexts", Handler: a.createContext},
		{Method: "GET", Path: "/api/v1/contexts/{name}", Handler: a.getContext},
		{Method: "PUT", Path: "/api/v1/contexts/{name}", Handler: a.updateContext},
		{Method: "DELETE", Path: "/api/v1/contexts/{name}", Handler: a.deleteContext},
		{Method: "GET", Path: "/api/v1/runtimes", Handler: a.listRuntimes},
		{Method: "POST", Path: "/api/v1/runtimes", Handler: a.registerRuntime},
		{Method: "POST", Path: "/api/v1/runtimes/hosted", Handler: a.createHostedRuntime},
		{Method: "GET", Path: "/api/v1/runtimes/{runtime}", Handler: a.getRuntime},
		{Method: "DELETE", Path: "/api/v1/runtimes/{runtime}", Handler: a.deleteRuntime},
		{Method: "POST", Path: "/api/v1/runtimes/{runtime}/token", Handler: a.rotateRuntimeToken},
		{Method: "PUT", Path: "/api/v1/runtimes/{runtime}/owner", Handler: a.setRuntimeOwner},
		{Method: "GET", Path: "/api/v1/archived-workflows", Handler: a.listArchivedWorkflows},
		{Method: "GET", Path: "/api/v1/archived-workflows/stats", Handler: a.workflowRunStats},
		{Method: "GET", Path: "/api/v1/archived-workflows/{id}", Handler: a.getArchivedWorkflow},
		{Method: "GET", Path: "/api/v1/helm-releases", Handler: a.listHelmReleases},
		{Method: "GET", Path: "/api/v1/helm-releases/{namespace}/{name}", Handler: a.getHelmRelease},
		{Method: "GET", Path: "/api/v1/gitops/webhook", Handler: a.getGitOpsWebhook},
		{Method: "POST", Path: "/api/v1/gitops/webhook", Handler: a.setGitOpsWebhook},
		{Method: "POST", Path: "/api/v1/webhooks/gitops/{provider}/{account}", Public: true, Handler: a.gitopsWebhookDelivery},
		{Method: "GET", Path: "/api/v1/deployments", Handler: a.listDeployments},
		{Method: "GET", Path: "/api/v1/dora", Handler: a.dora},
		{Method: "GET", Path: "/api/v1/images", Handler: a.listImages},
		{Method: "POST", Path: "/api/v1/images", Handler: a.reportImage},
		{Method: "GET", Path: "/api/v1/issue-trackers", Handler: a.listIssueTrackers},
		{Method: "POST", Path: "/api/v1/issue-trackers", Handler: a.createIssueTracker},
		{Method: "DELETE", Path: "/api/v1/issue-trackers/{name}", Handler: a.deleteIssueTracker},
		{Method: "GET", Path: "/api/v1/environments", Handler: a.listEnvironments},
		{Method: "POST", Path: "/api/v1/environments", Handler: a.createEnvironment},
		{Method: "GET", Path: "/api/v1/environments/{name}", Handler: a.getEnvironment},
		{Method: "PUT", Path: "/api/v1/environments/{name}", Handler: a.updateEnvironment},
		{Method: "DELETE", Path: "/api/v1/environments/{name}", Handler: a.deleteEnvironment},
		{Method: "GET", Path: "/api/v1/products", Handler: a.listProducts},
		{Method: "POST", Path: "/api/v1/products", Handler: a.createProduct},
		{Method: "GET", Path: "/api/v1/products/{name}", Handler: a.getProduct},
		{Method: "PUT", Path: "/api/v1/products/{name}", Handler: a.updateProduct},
		{Method: "DELETE", Path: "/api/v1/products/{name}", Handler: a.deleteProduct},
		{Method: "GET", Path: "/api/v1/hub/templates", Handler: a.listHubTemplates},
		{Method: "GET", Path: "/api/v1/hub/templates/{name}", Handler: a.getHubTemplate},
		{Method: "POST", Path: "/api/v1/hub/templates/{name}/use", Handler: a.useHubTemplate},
		{Method: "GET", Path: "/api/v1/hub/sources", Handler: a.listHubSources},
		{Method: "POST", Path: "/api/v1/hub/sources", Handler: a.addHubSource},
		{Method: "DELETE", Path: "/api/v1/hub/sources/{name}", Handler: a.deleteHubSource},
		{Method: "GET", Path: "/api/v1/notifications/channels", Handler: a.listNotificationChannels},
		{Method: "POST", Path: "/api/v1/notifications/channels", Handler: a.createNotificationChannel},
		{Method: "DELETE", Path: "/api/v1/notifications/channels/{name}", Handler: a.deleteNotificationChannel},
		{Method: "POST", Path: "/api/v1/notifications/channels/{name}/test", Handler: a.testNotificationChannel},
		{Method: "GET", Path: "/api/v1/notifications/subscriptions", Handler: a.listNotificationSubscriptions},
		{Method: "POST", Path: "/api/v1/notifications/subscriptions", Handler: a.createNotificationSubscription},
		{Method: "DELETE", Path: "/api/v1/notifications/subscriptions/{id}", Handler: a.deleteNotificationSubscription},
		{Method: "GET", Path: "/api/v1/notifications/deliveries", Handler: a.listNotificationDeliveries},
		{Method: "GET", Path: "/api/v1/runners", Handler: a.listRunners},
		{Method: "POST", Path: "/api/v1/runners", Handler: a.registerRunner},
		{Method: "DELETE", Path: "/api/v1/runners/{id}", Handler: a.deleteRunner},
		{Method: "POST", Path: "/api/v1/runners/{id}/drain", Handler: a.drainRunner},
	}
}

// Register adds every route to mux. Non-public routes answer 401 without a principal.
func (a *API) Register(mux *http.ServeMux) {
	for _, rt := range a.Routes() {
		h := rt.Handler
		public := rt.Public
		mux.HandleFunc(rt.Method+" "+rt.Path, func(w http.ResponseWriter, r *http.Request) {
			if !public {
				if _, err := httpx.Principal(r.Context()); err != nil {
					w.Header().Set("WWW-Authenticate", `Bearer realm="freshet"`)
					httpx.WriteError(w, r, a.log, errUnauthenticated)
					return
				}
			}
			if err := h(w, r); err != nil {
				httpx.WriteError(w, r, a.log, err)
			}
		})
	}
	// Anything else under /api/v1 is a JSON 404, not the UI.
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, a.log, errNoRoute(r))
	})
}

func serveSpec(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	_, err := w.Write(api.OpenAPI)
	return err
}

func principal(r *http.Request) rbac.Principal {
	p, _ := httpx.Principal(r.Context())
	return p
}

// ToUser converts a member of an account to its API form.
func ToUser(m identity.Member) client.User {
	return client.User{ID: m.ID, Email: m.Email, Name: m.Name, Role: string(m.Role), CreatedAt: m.CreatedAt}
}

// ToAccount converts an account to its API form.
func ToAccount(a identity.Account) client.Account {
	return client.Account{ID: a.ID, Name: a.Name, CreatedAt: a.CreatedAt}
}

// ToInvitation converts an invitation to its API form.
func ToInvitation(i identity.Invitation) client.Invitation {
	return client.Invitation{ID: i.ID, Account: ToAccount(i.Account), Role: string(i.Role), InvitedBy: i.InvitedBy,
		CreatedAt: i.CreatedAt, ExpiresAt: i.ExpiresAt}
}

// ToAPIKey converts an API key to its API form.
func ToAPIKey(k identity.APIKey) client.APIKey {
	return client.APIKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Role: string(k.Role), UserID: k.UserID, CreatedAt: k.CreatedAt,
		ExpiresAt: timeOrNil(k.ExpiresAt), RevokedAt: timeOrNil(k.RevokedAt), LastUsedAt: timeOrNil(k.LastUsedAt), Status: string(k.Status)}
}

// timeOrNil is nil for the zero time, which the API leaves out.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ToAuditEvent converts an audit record to its API form.
func ToAuditEvent(e audit.Event) client.AuditEvent {
	return client.AuditEvent{ID: e.ID, Time: e.Time, ActorID: e.ActorID, Actor: e.Actor, Action: e.Action,
		ResourceType: e.ResourceType, ResourceID: e.ResourceID, Result: e.Result, RequestID: e.RequestID, SourceIP: e.SourceIP, Detail: e.Detail}
}

// ToMe converts identity.Me to its API form.
func ToMe(m identity.Me, p rbac.Principal) client.Me {
	out := client.Me{
		User:    client.User{ID: m.User.ID, Email: m.User.Email, Name: m.User.Name, Role: string(m.Role), CreatedAt: m.User.CreatedAt},
		Account: ToAccount(m.Account), Role: string(m.Role), Via: "session",
	}
	if p.KeyID != "" {
		out.Via = "apikey"
	}
	for _, ms := range m.Memberships {
		out.Accounts = append(out.Accounts, client.AccountMembership{ID: ms.Account.ID, Name: ms.Account.Name, Role: string(ms.Role)})
	}
	return out
}
