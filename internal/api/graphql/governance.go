package graphql

import (
	"context"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/api/rest"
	"github.com/freshet-dev/freshet/internal/rbac"
)

type teamResolver struct{ t client.Team }

func (t teamResolver) ID() gql.ID        { return gql.ID(t.t.ID) }
func (t teamResolver) Name() string      { return t.t.Name }
func (t teamResolver) CreatedAt() string { return t.t.CreatedAt.Format(time.RFC3339Nano) }
func (t teamResolver) Members() []teamMemberResolver {
	out := make([]teamMemberResolver, len(t.t.Members))
	for i, m := range t.t.Members {
		out[i] = teamMemberResolver{m}
	}
	return out
}

func (t teamResolver) Owns() teamOwnsResolver { return teamOwnsResolver{t.t.Owns} }

type teamOwnsResolver struct{ o client.TeamOwns }

func (o teamOwnsResolver) Projects() []string { return orEmpty(o.o.Projects) }
func (o teamOwnsResolver) Runtimes() []string { return orEmpty(o.o.Runtimes) }

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type teamMemberResolver struct{ m client.TeamMember }

func (m teamMemberResolver) UserID() gql.ID  { return gql.ID(m.m.UserID) }
func (m teamMemberResolver) Email() string   { return m.m.Email }
func (m teamMemberResolver) AddedAt() string { return m.m.AddedAt.Format(time.RFC3339Nano) }

type ruleResolver struct{ r client.Rule }

func (r ruleResolver) ID() gql.ID         { return gql.ID(r.r.ID) }
func (r ruleResolver) Team() *string      { return strPtr(r.r.Team) }
func (r ruleResolver) User() *string      { return strPtr(r.r.User) }
func (r ruleResolver) Action() string     { return r.r.Action }
func (r ruleResolver) Kind() string       { return r.r.Kind }
func (r ruleResolver) Runtime() *string   { return strPtr(r.r.Runtime) }
func (r ruleResolver) Cluster() *string   { return strPtr(r.r.Cluster) }
func (r ruleResolver) Namespace() *string { return strPtr(r.r.Namespace) }
func (r ruleResolver) Summary() string    { return r.r.Summary }
func (r ruleResolver) Owner() *string     { return strPtr(r.r.Owner) }
func (r ruleResolver) CreatedAt() string  { return r.r.CreatedAt.Format(time.RFC3339Nano) }
func (r ruleResolver) Tags() []string {
	if r.r.Tags == nil {
		return []string{}
	}
	return r.r.Tags
}

type explanationResolver struct{ e client.AuthzExplanation }

func (e explanationResolver) User() string        { return e.e.User }
func (e explanationResolver) Action() string      { return e.e.Action }
func (e explanationResolver) Resource() string    { return e.e.Resource }
func (e explanationResolver) Allowed() bool       { return e.e.Allowed }
func (e explanationResolver) Role() string        { return e.e.Role }
func (e explanationResolver) Permission() *string { return strPtr(e.e.Permission) }
func (e explanationResolver) RoleAllows() bool    { return e.e.RoleOK }
func (e explanationResolver) Governed() bool      { return e.e.Governed }
func (e explanationResolver) Rule() *gql.ID {
	if e.e.Rule == "" {
		return nil
	}
	id := gql.ID(e.e.Rule)
	return &id
}
func (e explanationResolver) Reasons() []string { return e.e.Reasons }
func (e explanationResolver) Owner() *string    { return strPtr(e.e.Owner) }

func (r *resolver) Teams(ctx context.Context, args pageArgs) (connection[teamResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[teamResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[teamResolver]{}, wrap(err)
	}
	ts, err := r.id.ListTeams(ctx, p, page)
	if err != nil {
		return connection[teamResolver]{}, wrap(err)
	}
	nodes := make([]teamResolver, len(ts))
	last := ""
	for i, t := range ts {
		nodes[i] = teamResolver{rest.ToTeam(t)}
		last = t.ID
	}
	return newConnection(nodes, page, last), nil
}

func (r *resolver) Rules(ctx context.Context, args pageArgs) (connection[ruleResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[ruleResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[ruleResolver]{}, wrap(err)
	}
	rs, err := r.id.ListRules(ctx, p, page)
	if err != nil {
		return connection[ruleResolver]{}, wrap(err)
	}
	nodes := make([]ruleResolver, len(rs))
	last := ""
	for i, x := range rs {
		nodes[i] = ruleResolver{rest.ToRule(x)}
		last = x.ID
	}
	return newConnection(nodes, page, last), nil
}

func (r *resolver) AuthzExplain(ctx context.Context, args struct {
	User     *string
	Action   string
	Resource string
}) (explanationResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return explanationResolver{}, wrap(err)
	}
	user := ""
	if args.User != nil {
		user = *args.User
	}
	ex, err := r.id.Explain(ctx, p, user, args.Action, args.Resource, rbac.Attributes{})
	if err != nil {
		return explanationResolver{}, wrap(err)
	}
	return explanationResolver{rest.ToExplanation(ex)}, nil
}

type sessionResolver struct{ s client.Session }

func (s sessionResolver) ID() gql.ID        { return gql.ID(s.s.ID) }
func (s sessionResolver) Account() accountR { return accountR{s.s.Account} }
func (s sessionResolver) CreatedAt() string { return s.s.CreatedAt.Format(time.RFC3339Nano) }
func (s sessionResolver) ExpiresAt() string { return s.s.ExpiresAt.Format(time.RFC3339Nano) }
func (s sessionResolver) Current() bool     { return s.s.Current }

func (r *resolver) Sessions(ctx context.Context) ([]sessionResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	ss, err := r.id.ListSessions(ctx, p)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]sessionResolver, len(ss))
	for i, s := range ss {
		out[i] = sessionResolver{rest.ToSession(s)}
	}
	return out, nil
}
