package graphql

import (
	"context"
	"errors"
	"math"
	"sort"
	"strconv"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

type applicationFilterInput struct {
	Runtime, Cluster, Health, Sync, Project, Search *string
	Labels                                          *[]string
}

func (in *applicationFilterInput) filter() runtimes.AppFilter {
	if in == nil {
		return runtimes.AppFilter{}
	}
	get := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	f := runtimes.AppFilter{Runtime: get(in.Runtime), Cluster: get(in.Cluster), Health: get(in.Health), Sync: get(in.Sync),
		Project: get(in.Project), Search: get(in.Search)}
	if in.Labels != nil {
		f.Labels = *in.Labels
	}
	return f
}

func (r *resolver) Applications(ctx context.Context, args struct {
	Filter *applicationFilterInput
	pageArgs
}) (connection[*applicationResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[*applicationResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[*applicationResolver]{}, wrap(err)
	}
	apps, err := r.runtimes.ListApplications(ctx, p, args.Filter.filter(), page)
	if err != nil {
		return connection[*applicationResolver]{}, wrap(err)
	}
	nodes := make([]*applicationResolver, 0, len(apps))
	last := ""
	for _, a := range apps {
		nodes = append(nodes, r.newApplication(a))
		last = a.ID
	}
	return newConnection(nodes, page, last), nil
}

// ApplicationCounts resolves applicationCounts.
func (r *resolver) ApplicationCounts(ctx context.Context, args struct{ Filter *applicationFilterInput }) (appCounts, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return appCounts{}, wrap(err)
	}
	n, err := r.runtimes.CountApplications(ctx, p, args.Filter.filter())
	if err != nil {
		return appCounts{}, wrap(err)
	}
	return appCounts{Total: int32(n.Total), Health: statusCounts(n.Health), Sync: statusCounts(n.Sync)}, nil
}

type appCounts struct {
	Total  int32
	Health []statusCount
	Sync   []statusCount
}

type statusCount struct {
	Status string
	Count  int32
}

// statusCounts orders counts most first, then by status.
func statusCounts(m map[string]int) []statusCount {
	out := make([]statusCount, 0, len(m))
	for s, n := range m {
		out = append(out, statusCount{Status: s, Count: int32(n)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Status < out[j].Status
	})
	return out
}

func (r *resolver) Application(ctx context.Context, args struct{ Runtime, Name string }) (*applicationResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	a, err := r.runtimes.GetApplication(ctx, p, args.Runtime, args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	return r.newApplication(a), nil
}

func (r *resolver) newApplication(a runtimes.Application) *applicationResolver {
	return &applicationResolver{rts: r.runtimes, a: a}
}

type applicationResolver struct {
	rts *runtimes.Service
	a   runtimes.Application
}

func (a *applicationResolver) ID() gql.ID        { return gql.ID(a.a.ID) }
func (a *applicationResolver) Runtime() string   { return a.a.Runtime }
func (a *applicationResolver) RuntimeID() gql.ID { return gql.ID(a.a.RuntimeID) }
func (a *applicationResolver) Name() string      { return a.a.Name }
func (a *applicationResolver) Project() string   { return a.a.Project }
func (a *applicationResolver) RepoURL() string   { return a.a.RepoURL }
func (a *applicationResolver) Path() *string     { return strPtr(a.a.Path) }
func (a *applicationResolver) TargetRevision() *string {
	return strPtr(a.a.TargetRevision)
}
func (a *applicationResolver) SourceType() *string    { return strPtr(a.a.SourceType) }
func (a *applicationResolver) Owner() *string         { return strPtr(a.a.Owner) }
func (a *applicationResolver) OwnerKind() *string     { return strPtr(a.a.OwnerKind) }
func (a *applicationResolver) AutoSync() bool         { return a.a.AutoSync }
func (a *applicationResolver) Prune() bool            { return a.a.Prune }
func (a *applicationResolver) SelfHeal() bool         { return a.a.SelfHeal }
func (a *applicationResolver) AutoSyncDisabled() bool { return a.a.AutoSyncDisabled }
func (a *applicationResolver) SyncStatus() string     { return a.a.Sync }
func (a *applicationResolver) HealthStatus() string   { return a.a.Health }
func (a *applicationResolver) HealthMessage() *string { return strPtr(a.a.HealthMessage) }
func (a *applicationResolver) Revision() *string      { return strPtr(a.a.Revision) }
func (a *applicationResolver) Commit() *commitResolver {
	return newCommit(a.a.Commit)
}
func (a *applicationResolver) ReconciledAt() *string { return timeStr(a.a.ReconciledAt) }
func (a *applicationResolver) UpdatedAt() string     { return a.a.UpdatedAt.Format(time.RFC3339Nano) }

func (a *applicationResolver) Labels() []labelResolver {
	out := make([]labelResolver, 0, len(a.a.Labels))
	for k, v := range a.a.Labels {
		out = append(out, labelResolver{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

type labelResolver struct{ Key, Value string }

func (a *applicationResolver) Destination() destinationResolver {
	return destinationResolver{Server: strPtr(a.a.DestServer), Name: strPtr(a.a.DestName), Namespace: strPtr(a.a.DestNamespace)}
}

type destinationResolver struct{ Server, Name, Namespace *string }

func (a *applicationResolver) Conditions() []conditionResolver {
	out := make([]conditionResolver, len(a.a.Conditions))
	for i, c := range a.a.Conditions {
		out[i] = conditionResolver{c}
	}
	return out
}

// problemConditions are the condition types that keep an application from being compared,
// synced or placed: problems to fix, not states to wait out (the engine's ComparisonError,
// InvalidSpecError, NoClusterConfigured and SyncError).
var problemConditions = map[string]bool{"ComparisonError": true, "InvalidSpecError": true, "NoClusterConfigured": true, "SyncError": true}

// Problem is the first such condition as "Type: message", for a list row: one scalar, where
// the conditions list would cost a 500-row page ten times as much.
func (a *applicationResolver) Problem() *string {
	for _, c := range a.a.Conditions {
		if problemConditions[c.Type] {
			s := c.Type + ": " + c.Message
			return &s
		}
	}
	return nil
}

type conditionResolver struct{ c runtimev1.AppCondition }

func (c conditionResolver) Type() string    { return c.c.Type }
func (c conditionResolver) Message() string { return c.c.Message }
func (c conditionResolver) File() *string   { return strPtr(c.c.File) }
func (c conditionResolver) Line() *int32 {
	if c.c.Line <= 0 {
		return nil
	}
	l := int32(min(c.c.Line, math.MaxInt32))
	return &l
}
func (c conditionResolver) Since() *string { return timeStr(c.c.Since) }

func (a *applicationResolver) Resources() []resourceResolver {
	out := make([]resourceResolver, len(a.a.Resources))
	for i, r := range a.a.Resources {
		out[i] = resourceResolver{r}
	}
	return out
}

type resourceResolver struct{ r runtimev1.AppResource }

func (r resourceResolver) Group() *string         { return strPtr(r.r.Group) }
func (r resourceResolver) Version() *string       { return strPtr(r.r.Version) }
func (r resourceResolver) Kind() string           { return r.r.Kind }
func (r resourceResolver) Namespace() *string     { return strPtr(r.r.Namespace) }
func (r resourceResolver) Name() string           { return r.r.Name }
func (r resourceResolver) Status() string         { return r.r.Status }
func (r resourceResolver) Health() *string        { return strPtr(r.r.Health) }
func (r resourceResolver) HealthMessage() *string { return strPtr(r.r.HealthMessage) }
func (r resourceResolver) RequiresPruning() bool  { return r.r.RequiresPrune }

func (a *applicationResolver) Operation() *syncResolver {
	if a.a.Operation == nil {
		return nil
	}
	return &syncResolver{*a.a.Operation}
}

func (a *applicationResolver) History(ctx context.Context, args pageArgs) (connection[syncResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[syncResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[syncResolver]{}, wrap(err)
	}
	deps, err := a.rts.ListSyncs(ctx, p, a.a, page)
	if err != nil {
		return connection[syncResolver]{}, wrap(err)
	}
	nodes := make([]syncResolver, len(deps))
	last := ""
	for i, d := range deps {
		nodes[i] = syncResolver{d.SyncRecord}
		last = strconv.FormatInt(d.ID, 10)
	}
	return newConnection(nodes, page, last), nil
}

// Tree is live: read from the runtime when asked for. A disconnected runtime makes it null with
// an error; the rest of the application still resolves.
func (a *applicationResolver) Tree(ctx context.Context) (*[]*treeResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	nodes, err := a.rts.Tree(ctx, p, a.a)
	if err != nil {
		return nil, wrap(err)
	}
	out := treeResolvers(nodes)
	return &out, nil
}

func treeResolvers(nodes []*runtimes.TreeNode) []*treeResolver {
	out := make([]*treeResolver, 0, len(nodes))
	for _, n := range nodes {
		if n != nil {
			out = append(out, &treeResolver{n})
		}
	}
	return out
}

type treeResolver struct{ n *runtimes.TreeNode }

func (t *treeResolver) Group() *string     { return strPtr(t.n.Group) }
func (t *treeResolver) Version() string    { return t.n.Version }
func (t *treeResolver) Kind() string       { return t.n.Kind }
func (t *treeResolver) Namespace() *string { return strPtr(t.n.Namespace) }
func (t *treeResolver) Name() string       { return t.n.Name }
func (t *treeResolver) UID() string        { return t.n.UID }
func (t *treeResolver) Health() healthResolver {
	return healthResolver{Status: t.n.Health.Status, Message: strPtr(t.n.Health.Message)}
}
func (t *treeResolver) Sync() *string      { return strPtr(t.n.Sync) }
func (t *treeResolver) CreatedAt() *string { return timeStr(t.n.CreatedAt) }
func (t *treeResolver) Images() []string {
	if t.n.Images == nil {
		return []string{}
	}
	return t.n.Images
}
func (t *treeResolver) Children() []*treeResolver { return treeResolvers(t.n.Children) }

type healthResolver struct {
	Status  string
	Message *string
}

type syncResolver struct{ s runtimev1.SyncRecord }

func (s syncResolver) ID() *int32 {
	if s.s.ID <= 0 || s.s.ID > math.MaxInt32 {
		return nil
	}
	id := int32(s.s.ID)
	return &id
}
func (s syncResolver) Revision() string    { return s.s.Revision }
func (s syncResolver) Phase() string       { return s.s.Phase }
func (s syncResolver) Message() *string    { return strPtr(s.s.Message) }
func (s syncResolver) InitiatedBy() string { return s.s.InitiatedBy }
func (s syncResolver) User() *string {
	if s.s.User == "" {
		return nil
	}
	return &s.s.User
}
func (s syncResolver) DryRun() bool            { return s.s.DryRun }
func (s syncResolver) Prune() bool             { return s.s.Prune }
func (s syncResolver) Commit() *commitResolver { return newCommit(s.s.Commit) }
func (s syncResolver) StartedAt() string       { return s.s.StartedAt.Format(time.RFC3339Nano) }
func (s syncResolver) FinishedAt() *string     { return timeStr(s.s.FinishedAt) }
func (s syncResolver) Changed() []changeResolver {
	out := make([]changeResolver, len(s.s.Changed))
	for i, c := range s.s.Changed {
		out[i] = changeResolver{c}
	}
	return out
}

type changeResolver struct{ c runtimev1.ResourceChange }

func (c changeResolver) Kind() string       { return c.c.Kind }
func (c changeResolver) Namespace() *string { return strPtr(c.c.Namespace) }
func (c changeResolver) Name() string       { return c.c.Name }
func (c changeResolver) Result() string     { return c.c.Result }
func (c changeResolver) Message() *string   { return strPtr(c.c.Message) }

type commitResolver struct{ c runtimev1.Commit }

func newCommit(c *runtimev1.Commit) *commitResolver {
	if c == nil {
		return nil
	}
	return &commitResolver{*c}
}

func (c *commitResolver) SHA() *string     { return strPtr(c.c.SHA) }
func (c *commitResolver) Author() *string  { return strPtr(c.c.Author) }
func (c *commitResolver) Message() *string { return strPtr(c.c.Message) }
func (c *commitResolver) Time() *string    { return timeStr(c.c.Time) }

func timeStr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.Format(time.RFC3339Nano)
	return &s
}
