package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gqlguard"
)

// JSON is the schema's JSON scalar.
type JSON struct{ V any }

// ImplementsGraphQLType tells graphql-go which scalar this is.
func (JSON) ImplementsGraphQLType(name string) bool { return name == "JSON" }

// UnmarshalGraphQL accepts any input value.
func (j *JSON) UnmarshalGraphQL(input any) error {
	j.V = input
	return nil
}

// MarshalJSON writes the value as is.
func (j JSON) MarshalJSON() ([]byte, error) { return json.Marshal(j.V) }

type callerKey struct{}

// graphqlLimits bound one GraphQL request (gqlguard; docs/appproxy.md, "Limits"): gqlguard's
// defaults but for these.
func (h *Host) graphqlLimits() gqlguard.Limits {
	return gqlguard.Limits{
		MaxLength: 32 << 10,
		MaxDepth:  8, // the schema's deepest path is 3
		// A cost unit is about 2 µs. Measured (internal/security's app-proxy tests, and a real
		// cluster for trees and diffs) and rounded up:
		Weights: map[string]int{
			// The engine's whole objects as JSON: about 0.5 ms an application for the three,
			// answered through the tunnel.
			"Application.spec": 100, "Application.status": 100, "Application.history": 100,
			// A tree or a diff renders the application's manifests and reads its live objects:
			// 3–5 ms for a small application.
			"Application.tree": 2000, "Application.diff": 3000,
			// A Rollout's detail lists its ReplicaSets and AnalysisRuns from the cluster.
			"Rollout.detail": 2000, "Query.rollout": 500, "Query.rollouts": 500,
			// A mutation commits to git or syncs a cluster: ten in one request at most.
			"Mutation.*": 2500,
		},
		// The lists hold what the runtime holds.
		Lengths: func(field string) int {
			h.mu.Lock()
			defer h.mu.Unlock()
			switch field {
			case "Query.applications":
				return len(h.apps)
			case "Query.gitSources":
				return len(h.sources)
			}
			return 0
		},
		// A query reads the engine's state, or renders and reads a cluster for a tree or a
		// diff, whose client gives up after 60 s.
		Timeout: 70 * time.Second,
		// syncApplication waits for the sync, which the engine bounds itself (hooks 15 min,
		// health 5 min): the deadline must not cut a sync short.
		MutationTimeout: 30 * time.Minute,
	}
}

func (h *Host) graphqlHandler() http.Handler {
	guard := gqlguard.MustNew(appproxyv1.GraphQLSchema, &gqlRoot{h: h}, h.graphqlLimits(), gql.UseFieldResolvers())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query         string         `json:"query"`
			OperationName string         `json:"operationName"`
			Variables     map[string]any `json:"variables"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
			writeError(w, errdefs.Invalid("body", "", "is not a GraphQL request: "+err.Error()))
			return
		}
		ctx := context.WithValue(r.Context(), callerKey{}, callerOf(r))
		resp := guard.Exec(ctx, req.Query, req.OperationName, req.Variables)
		writeJSON(w, http.StatusOK, resp)
	})
}

func callerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

type gqlRoot struct{ h *Host }

func (q *gqlRoot) Applications() []*gqlApp {
	var out []*gqlApp
	for _, a := range q.h.Applications() {
		out = append(out, &gqlApp{h: q.h, a: a})
	}
	return out
}

func (q *gqlRoot) Application(args struct{ Name string }) (*gqlApp, error) {
	a, err := q.h.Application(args.Name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &gqlApp{h: q.h, a: a}, nil
}

func (q *gqlRoot) GitSources() []*gqlGitSource {
	var out []*gqlGitSource
	for _, g := range q.h.GitSources() {
		out = append(out, &gqlGitSource{g})
	}
	return out
}

func (q *gqlRoot) Clusters() []appproxyv1.Cluster { return wireClusters(q.h.Clusters()) }

func (q *gqlRoot) CreateApplication(ctx context.Context, args struct {
	Manifest  string
	Upsert    *bool
	GitSource *string
}) (*gqlApp, error) {
	a, err := q.h.CreateApplication(ctx, callerFrom(ctx), []byte(args.Manifest), deref(args.Upsert), derefS(args.GitSource))
	if err != nil {
		return nil, err
	}
	return &gqlApp{h: q.h, a: a}, nil
}

func (q *gqlRoot) DeleteApplication(ctx context.Context, args struct {
	Name    string
	Cascade *bool
}) (bool, error) {
	cascade := args.Cascade == nil || *args.Cascade
	return true, q.h.DeleteApplication(ctx, callerFrom(ctx), args.Name, cascade)
}

func (q *gqlRoot) RefreshApplication(ctx context.Context, args struct {
	Name string
	Hard *bool
}) (*gqlApp, error) {
	a, err := q.h.RefreshApplication(ctx, callerFrom(ctx), args.Name, deref(args.Hard))
	if err != nil {
		return nil, err
	}
	return &gqlApp{h: q.h, a: a}, nil
}

func (q *gqlRoot) SyncApplication(ctx context.Context, args struct {
	Name      string
	Revision  *string
	Prune     *bool
	DryRun    *bool
	Resources *[]string
}) (JSON, error) {
	req := SyncRequest{Revision: derefS(args.Revision), Prune: deref(args.Prune), DryRun: deref(args.DryRun)}
	if args.Resources != nil {
		req.Resources = *args.Resources
	}
	res, err := q.h.SyncApplication(ctx, callerFrom(ctx), args.Name, req)
	return JSON{wireSync(res)}, err
}

func (q *gqlRoot) TerminateSync(ctx context.Context, args struct{ Name string }) (bool, error) {
	return q.h.TerminateSync(callerFrom(ctx), args.Name)
}

func (q *gqlRoot) RollbackApplication(ctx context.Context, args struct {
	Name  string
	ID    int32
	Prune *bool
}) (JSON, error) {
	res, err := q.h.RollbackApplication(ctx, callerFrom(ctx), args.Name, int64(args.ID), deref(args.Prune))
	return JSON{wireRollback(res)}, err
}

func (q *gqlRoot) SetAutoSync(ctx context.Context, args struct {
	Name    string
	Enabled bool
}) (*gqlApp, error) {
	a, err := q.h.SetAutoSync(callerFrom(ctx), args.Name, args.Enabled)
	if err != nil {
		return nil, err
	}
	return &gqlApp{h: q.h, a: a}, nil
}

func (q *gqlRoot) CreateGitSource(ctx context.Context, args struct {
	Manifest string
	Upsert   *bool
}) (*gqlGitSource, error) {
	g, err := q.h.PutGitSource(ctx, callerFrom(ctx), []byte(args.Manifest), deref(args.Upsert))
	if err != nil {
		return nil, err
	}
	return &gqlGitSource{g}, nil
}

func (q *gqlRoot) DeleteGitSource(ctx context.Context, args struct{ Name string }) (bool, error) {
	return true, q.h.DeleteGitSource(ctx, callerFrom(ctx), args.Name)
}

type gqlApp struct {
	h *Host
	a Application
}

func (r *gqlApp) Name() string       { return r.a.Name }
func (r *gqlApp) Project() string    { return r.a.Status.Project }
func (r *gqlApp) File() *string      { return opt(r.a.File) }
func (r *gqlApp) GitSource() *string { return opt(r.a.Source) }
func (r *gqlApp) Owner() *string     { return opt(r.a.Owner) }
func (r *gqlApp) OwnerKind() *string { return opt(r.a.OwnerKind) }
func (r *gqlApp) RepoUrl() *string { //nolint:revive // the schema's name
	if r.a.Spec == nil || r.a.Spec.EffectiveSource() == nil {
		return nil
	}
	return opt(r.a.Spec.EffectiveSource().RepoURL)
}
func (r *gqlApp) Path() *string {
	if r.a.Spec == nil || r.a.Spec.EffectiveSource() == nil {
		return nil
	}
	return opt(r.a.Spec.EffectiveSource().Path)
}
func (r *gqlApp) TargetRevision() *string { return opt(r.a.Status.TargetRevision) }
func (r *gqlApp) Destination() gqlDestination {
	if r.a.Spec == nil {
		return gqlDestination{}
	}
	d := r.a.Spec.Spec.Destination
	return gqlDestination{opt(d.Server), opt(d.Name), opt(d.Namespace)}
}
func (r *gqlApp) SyncStatus() string     { return string(r.a.Status.Sync) }
func (r *gqlApp) HealthStatus() string   { return string(r.a.Status.Health.Status) }
func (r *gqlApp) HealthMessage() *string { return opt(r.a.Status.Health.Message) }
func (r *gqlApp) Revision() *string      { return opt(r.a.Status.Revision) }
func (r *gqlApp) Conditions() []gqlCondition {
	out := []gqlCondition{}
	for _, c := range r.a.Status.Conditions {
		out = append(out, gqlCondition{Type: c.Type, Message: c.Message})
	}
	return out
}
func (r *gqlApp) Spec() *JSON {
	if r.a.Spec == nil {
		return nil
	}
	return &JSON{wireManifest(r.a.Spec)}
}
func (r *gqlApp) Status() JSON { return JSON{wireStatus(r.a.Status)} }
func (r *gqlApp) History() (JSON, error) {
	h, err := r.h.eng.History(r.a.Name)
	return JSON{wireHistory(h)}, err
}
func (r *gqlApp) Tree(ctx context.Context) (JSON, error) {
	t, err := r.h.eng.Tree(ctx, r.a.Name)
	return JSON{wireTree(t)}, err
}
func (r *gqlApp) Diff(ctx context.Context) (JSON, error) {
	d, err := r.h.eng.Diff(ctx, r.a.Name)
	return JSON{wireDiffs(d)}, err
}

type gqlDestination struct{ Server, Name, Namespace *string }

type gqlCondition struct{ Type, Message string }

type gqlGitSource struct{ g *GitSource }

func (r *gqlGitSource) Name() string            { return r.g.Metadata.Name }
func (r *gqlGitSource) RepoUrl() string         { return r.g.Spec.RepoURL } //nolint:revive // the schema's name
func (r *gqlGitSource) Path() *string           { return opt(r.g.Spec.Path) }
func (r *gqlGitSource) TargetRevision() *string { return opt(r.g.Spec.TargetRevision) }
func (r *gqlGitSource) Include() *string        { return opt(r.g.Spec.Include) }
func (r *gqlGitSource) Exclude() *string        { return opt(r.g.Spec.Exclude) }
func (r *gqlGitSource) Destination() gqlDestination {
	d := r.g.Spec.Destination
	return gqlDestination{opt(d.Server), opt(d.Name), opt(d.Namespace)}
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(b *bool) bool { return b != nil && *b }

func derefS(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
