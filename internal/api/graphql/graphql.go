// Package graphql serves the GitOps-facing GraphQL API at /api/graphql with
// graph-gophers/graphql-go, schema first (api/graphql/schema.graphql). Resolvers call the same
// services as the REST API, with the same principal, so authorization has one path. Every
// request runs through a gqlguard.Guard, within Limits.
package graphql

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/api"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/api/rest"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gqlguard"
	"github.com/freshet-dev/freshet/internal/hub"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/products"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

// Query limits (the rest are gqlguard's defaults; docs/api.md, "Limits"). A cost unit is about
// what resolving one field takes, 2 µs; the weights are measured on 1,000 applications in
// SQLite (internal/security's GraphQL tests) and rounded up.
const (
	MaxDepth       = 12
	MaxQueryLength = 64 << 10
	// MaxCost is about 70 ms of work: the web UI's largest query, a page of 500 applications
	// with the list's 20 fields, costs 31,004.
	MaxCost = 35000
	// Timeout is a query's deadline: the slowest field, an application's live tree, is read
	// from its runtime through the tunnel and gives up after 15 s itself.
	Timeout = 20 * time.Second

	readWeight        = 250  // a database read by key, or one page: 0.1–0.5 ms
	scanWeight        = 4000 // a read that may scan all the account's applications (filters, counts): 3–5 ms
	historyWeight     = 500  // one application's syncs: 1 ms
	applicationWeight = 10   // each application read and decoded: 20–40 µs
	treeWeight        = 2500 // an application's tree, read live from its runtime through the tunnel
	doraWeight        = 4000 // a DORA report: aggregates over the range's deployments (docs/benchmarks.md)
)

// Limits are the bounds of one GraphQL request: gqlguard's defaults with the page sizes of
// internal/paging and the weights of what reads storage or a runtime.
func Limits() gqlguard.Limits {
	w := map[string]int{"Query.applications": scanWeight, "Query.applicationCounts": scanWeight, "Query.product": scanWeight, "Query.hubTemplates": scanWeight, "Query.hubTemplate": scanWeight, "Query.dora": doraWeight, "Query.workflowRunStats": scanWeight,
		"Query.deployments": readWeight, "Deployment": applicationWeight,
		"Application.history": historyWeight, "Application.tree": treeWeight, "Application": applicationWeight}
	for _, f := range []string{"me", "account", "users", "apiKeys", "auditEvents", "runtimes", "runtime", "application"} {
		w["Query."+f] = readWeight
	}
	return gqlguard.Limits{MaxLength: MaxQueryLength, MaxDepth: MaxDepth, MaxCost: MaxCost, Timeout: Timeout,
		PageArg: "first", PageSize: paging.DefaultLimit, MaxPage: paging.MaxLimit, Weights: w}
}

// Handler serves GraphQL requests.
type Handler struct {
	guard *gqlguard.Guard
	log   *slog.Logger
}

// New parses the schema and binds it to the services.
func New(id *identity.Service, a *audit.Log, rts *runtimes.Service, stats *analytics.Service, prods *products.Service, ims *images.Service, hubs *hub.Service, log *slog.Logger) (*Handler, error) {
	g, err := gqlguard.New(api.GraphQLSchema, &resolver{id: id, audit: a, runtimes: rts, analytics: stats, products: prods, images: ims, hub: hubs}, Limits(), gql.UseFieldResolvers())
	if err != nil {
		return nil, err
	}
	return &Handler{guard: g, log: log}, nil
}

type request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
	Extensions    map[string]any `json:"extensions,omitempty"`
}

// ServeHTTP runs one GraphQL request within Limits. It needs an authenticated principal.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := httpx.Principal(r.Context()); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="freshet"`)
		httpx.WriteError(w, r, h.log, errors.Join(errdefs.ErrUnauthenticated, errors.New("authentication required")))
		return
	}
	var req request
	switch r.Method {
	case http.MethodPost:
		if err := httpx.DecodeJSON(r, &req); err != nil {
			httpx.WriteError(w, r, h.log, err)
			return
		}
	case http.MethodGet:
		req.Query = r.URL.Query().Get("query")
	default:
		w.Header().Set("Allow", "GET, POST")
		httpx.WriteJSON(w, http.StatusMethodNotAllowed, errdefs.Body{Error: errdefs.Detail{Code: "invalid_argument", Message: "use GET or POST"}})
		return
	}
	if req.Query == "" {
		httpx.WriteError(w, r, h.log, errdefs.Invalid("query", "", "is required"))
		return
	}
	resp := h.guard.Exec(r.Context(), req.Query, req.OperationName, req.Variables)
	httpx.WriteJSON(w, http.StatusOK, resp)
}

// Error carries the error code to GraphQL clients in extensions.code.
type Error struct{ err error }

func (e Error) Error() string { return errdefs.Public(e.err, "").Message }

// Extensions implements graph-gophers' error extensions.
func (e Error) Extensions() map[string]any {
	ext := map[string]any{"code": errdefs.Code(e.err)}
	if f := errdefs.Field(e.err); f != "" {
		ext["field"] = f
	}
	return ext
}

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return Error{err}
}

type resolver struct {
	id        *identity.Service
	audit     *audit.Log
	runtimes  *runtimes.Service
	analytics *analytics.Service
	products  *products.Service
	hub       *hub.Service
	images    *images.Service
}

type runtimeResolver struct{ r client.Runtime }

func (r runtimeResolver) ID() gql.ID             { return gql.ID(r.r.ID) }
func (r runtimeResolver) Name() string           { return r.r.Name }
func (r runtimeResolver) Type() string           { return r.r.Type }
func (r runtimeResolver) AccessMode() string     { return r.r.AccessMode }
func (r runtimeResolver) IngressURL() *string    { return strPtr(r.r.IngressURL) }
func (r runtimeResolver) Version() *string       { return strPtr(r.r.Version) }
func (r runtimeResolver) Status() string         { return r.r.Status }
func (r runtimeResolver) LastHeartbeat() *string { return timePtr(r.r.LastHeartbeat) }
func (r runtimeResolver) OwnerTeam() *string     { return strPtr(r.r.OwnerTeam) }
func (r runtimeResolver) Capabilities() []string {
	if r.r.Capabilities == nil {
		return []string{}
	}
	return r.r.Capabilities
}
func (r runtimeResolver) Components() []componentResolver {
	out := []componentResolver{}
	for _, c := range r.r.Components {
		out = append(out, componentResolver{c})
	}
	return out
}
func (r runtimeResolver) Clusters() []clusterResolver {
	out := []clusterResolver{}
	for _, c := range r.r.Clusters {
		out = append(out, clusterResolver{c})
	}
	return out
}

type componentResolver struct{ c client.RuntimeComponent }

func (c componentResolver) Name() string     { return c.c.Name }
func (c componentResolver) Health() string   { return c.c.Health }
func (c componentResolver) Message() *string { return strPtr(c.c.Message) }

type clusterResolver struct{ c client.RuntimeCluster }

func (c clusterResolver) Name() string   { return c.c.Name }
func (c clusterResolver) Server() string { return c.c.Server }
func (c clusterResolver) Health() *string {
	if c.c.Health == "" {
		return nil
	}
	return &c.c.Health
}

func (r *resolver) Runtimes(ctx context.Context, args struct{ Owner *string }) ([]runtimeResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	var rts []runtimes.Runtime
	if args.Owner != nil && *args.Owner != "" {
		rts, err = r.runtimes.ListOwnedBy(ctx, p, *args.Owner)
	} else {
		rts, err = r.runtimes.List(ctx, p)
	}
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]runtimeResolver, len(rts))
	for i, rt := range rts {
		out[i] = runtimeResolver{rest.ToRuntime(rt)}
	}
	return out, nil
}

func (r *resolver) Runtime(ctx context.Context, args struct{ Name string }) (*runtimeResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	rt, err := r.runtimes.Get(ctx, p, args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	return &runtimeResolver{rest.ToRuntime(rt)}, nil
}

type meResolver struct {
	client.Me
	id *identity.Service
}

func (m meResolver) User() userResolver     { return userResolver{m.Me.User} }
func (m meResolver) Account() accountR      { return accountR{m.Me.Account} }
func (m meResolver) Role() string           { return m.Me.Role }
func (m meResolver) Accounts() []membership { return toMemberships(m.Me.Accounts) }

func (m meResolver) Invitations(ctx context.Context) ([]invitationResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	invs, err := m.id.ListInvitations(ctx, p)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]invitationResolver, len(invs))
	for i, inv := range invs {
		out[i] = invitationResolver{rest.ToInvitation(inv)}
	}
	return out, nil
}

type invitationResolver struct{ i client.Invitation }

func (i invitationResolver) ID() gql.ID        { return gql.ID(i.i.ID) }
func (i invitationResolver) Account() accountR { return accountR{i.i.Account} }
func (i invitationResolver) Role() string      { return i.i.Role }
func (i invitationResolver) InvitedBy() string { return i.i.InvitedBy }
func (i invitationResolver) CreatedAt() string { return i.i.CreatedAt.Format(time.RFC3339Nano) }
func (i invitationResolver) ExpiresAt() string { return i.i.ExpiresAt.Format(time.RFC3339Nano) }

type membership struct{ client.AccountMembership }

func (m membership) ID() gql.ID { return gql.ID(m.AccountMembership.ID) }

func toMemberships(in []client.AccountMembership) []membership {
	out := make([]membership, len(in))
	for i, x := range in {
		out[i] = membership{x}
	}
	return out
}

type accountR struct{ a client.Account }

func (a accountR) ID() gql.ID        { return gql.ID(a.a.ID) }
func (a accountR) Name() string      { return a.a.Name }
func (a accountR) CreatedAt() string { return a.a.CreatedAt.Format(time.RFC3339Nano) }

type userResolver struct{ u client.User }

func (u userResolver) ID() gql.ID        { return gql.ID(u.u.ID) }
func (u userResolver) Email() string     { return u.u.Email }
func (u userResolver) Name() string      { return u.u.Name }
func (u userResolver) Role() string      { return u.u.Role }
func (u userResolver) CreatedAt() string { return u.u.CreatedAt.Format(time.RFC3339Nano) }

type apiKeyResolver struct{ k client.APIKey }

func (k apiKeyResolver) ID() gql.ID          { return gql.ID(k.k.ID) }
func (k apiKeyResolver) Name() string        { return k.k.Name }
func (k apiKeyResolver) Prefix() string      { return k.k.Prefix }
func (k apiKeyResolver) Role() string        { return k.k.Role }
func (k apiKeyResolver) UserID() gql.ID      { return gql.ID(k.k.UserID) }
func (k apiKeyResolver) Status() string      { return k.k.Status }
func (k apiKeyResolver) CreatedAt() string   { return k.k.CreatedAt.Format(time.RFC3339Nano) }
func (k apiKeyResolver) ExpiresAt() *string  { return timePtr(k.k.ExpiresAt) }
func (k apiKeyResolver) RevokedAt() *string  { return timePtr(k.k.RevokedAt) }
func (k apiKeyResolver) LastUsedAt() *string { return timePtr(k.k.LastUsedAt) }

type auditResolver struct{ e client.AuditEvent }

func (a auditResolver) ID() gql.ID           { return gql.ID(a.e.ID) }
func (a auditResolver) Time() string         { return a.e.Time.Format(time.RFC3339Nano) }
func (a auditResolver) ActorID() *string     { return strPtr(a.e.ActorID) }
func (a auditResolver) Actor() string        { return a.e.Actor }
func (a auditResolver) Action() string       { return a.e.Action }
func (a auditResolver) ResourceType() string { return a.e.ResourceType }
func (a auditResolver) ResourceID() *string  { return strPtr(a.e.ResourceID) }
func (a auditResolver) Result() string       { return a.e.Result }
func (a auditResolver) RequestID() *string   { return strPtr(a.e.RequestID) }
func (a auditResolver) SourceIP() *string    { return strPtr(a.e.SourceIP) }
func (a auditResolver) Detail() *string      { return strPtr(a.e.Detail) }

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.Format(time.RFC3339Nano)
	return &s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type pageInfo struct {
	EndCursor   *string
	HasNextPage bool
}

type connection[T any] struct {
	Nodes    []T
	PageInfo pageInfo
}

type pageArgs struct {
	First *int32
	After *string
}

func (a pageArgs) page() (paging.Page, error) {
	var p paging.Page
	if a.First != nil {
		if *a.First < 1 || *a.First > paging.MaxLimit {
			return p, errdefs.Invalid("first", "", "must be from 1 to 1000")
		}
		p.Limit = int(*a.First)
	}
	if a.After != nil {
		after, err := httpx.DecodeCursor("after", *a.After)
		if err != nil {
			return p, err
		}
		p.After = after
	}
	return p, nil
}

func newConnection[T any](nodes []T, p paging.Page, lastID string) connection[T] {
	c := connection[T]{Nodes: nodes}
	if next := httpx.NextCursor(p, len(nodes), lastID); next != "" {
		c.PageInfo = pageInfo{EndCursor: &next, HasNextPage: true}
	} else if lastID != "" {
		end := httpx.EncodeCursor(lastID)
		c.PageInfo.EndCursor = &end
	}
	return c
}

func (r *resolver) Me(ctx context.Context) (meResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return meResolver{}, wrap(err)
	}
	me, err := r.id.Me(ctx, p)
	if err != nil {
		return meResolver{}, wrap(err)
	}
	return meResolver{rest.ToMe(me, p), r.id}, nil
}

func (r *resolver) Account(ctx context.Context) (accountR, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return accountR{}, wrap(err)
	}
	a, err := r.id.Account(ctx, p)
	if err != nil {
		return accountR{}, wrap(err)
	}
	return accountR{rest.ToAccount(a)}, nil
}

func (r *resolver) Users(ctx context.Context, args pageArgs) (connection[userResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[userResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[userResolver]{}, wrap(err)
	}
	ms, err := r.id.ListUsers(ctx, p, page)
	if err != nil {
		return connection[userResolver]{}, wrap(err)
	}
	nodes := make([]userResolver, len(ms))
	last := ""
	for i, m := range ms {
		nodes[i] = userResolver{rest.ToUser(m)}
		last = m.ID
	}
	return newConnection(nodes, page, last), nil
}

func (r *resolver) APIKeys(ctx context.Context, args pageArgs) (connection[apiKeyResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[apiKeyResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[apiKeyResolver]{}, wrap(err)
	}
	ks, err := r.id.ListAPIKeys(ctx, p, page)
	if err != nil {
		return connection[apiKeyResolver]{}, wrap(err)
	}
	nodes := make([]apiKeyResolver, len(ks))
	last := ""
	for i, k := range ks {
		nodes[i] = apiKeyResolver{rest.ToAPIKey(k)}
		last = k.ID
	}
	return newConnection(nodes, page, last), nil
}

type auditFilterInput struct {
	Actor, Action, ResourceType, ResourceID, Result, Since, Until *string
}

func (r *resolver) AuditEvents(ctx context.Context, args struct {
	Filter *auditFilterInput
	pageArgs
}) (connection[auditResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[auditResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[auditResolver]{}, wrap(err)
	}
	var f audit.Filter
	if in := args.Filter; in != nil {
		get := func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		}
		f = audit.Filter{Actor: get(in.Actor), Action: get(in.Action), ResourceType: get(in.ResourceType), ResourceID: get(in.ResourceID), Result: get(in.Result)}
		for _, t := range []struct {
			name string
			v    *string
			dst  *time.Time
		}{{"filter.since", in.Since, &f.Since}, {"filter.until", in.Until, &f.Until}} {
			if t.v != nil && *t.v != "" {
				v, err := rest.ParseTime(*t.v, time.Now())
				if err != nil {
					return connection[auditResolver]{}, wrap(errdefs.Invalid(t.name, *t.v, "is not a time: use RFC 3339 or a duration ago (24h)"))
				}
				*t.dst = v
			}
		}
	}
	evs, err := r.audit.List(ctx, p, f, page)
	if err != nil {
		return connection[auditResolver]{}, wrap(err)
	}
	nodes := make([]auditResolver, len(evs))
	last := ""
	for i, e := range evs {
		nodes[i] = auditResolver{rest.ToAuditEvent(e)}
		last = e.ID
	}
	return newConnection(nodes, page, last), nil
}
