package graphql

import (
	"context"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/rbac"
)

type deploymentFilterInput struct {
	Application, Runtime, Cluster, Product, Since, Until *string
}

// productFilter limits f to the applications of the product in names, if it names one.
func (r *resolver) productFilter(ctx context.Context, p rbac.Principal, in *deploymentFilterInput, f *analytics.Filter) error {
	if in == nil || in.Product == nil || *in.Product == "" {
		return nil
	}
	if r.products == nil {
		return errdefs.Invalid("filter.product", *in.Product, "cannot filter: this server has no products service")
	}
	apps, err := r.products.Applications(ctx, p, "filter.product", *in.Product)
	if err != nil {
		return err
	}
	f.Apps, f.AppsSet = apps, true
	return nil
}

func (in *deploymentFilterInput) filter(now time.Time) (analytics.Filter, error) {
	var f analytics.Filter
	if in == nil {
		return f, nil
	}
	get := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	f.App, f.Runtime, f.Cluster = get(in.Application), get(in.Runtime), get(in.Cluster)
	for _, t := range []struct {
		name string
		v    *string
		dst  *time.Time
	}{{"filter.since", in.Since, &f.Since}, {"filter.until", in.Until, &f.Until}} {
		if t.v != nil && *t.v != "" {
			v, err := analytics.ParseTime(t.name, *t.v, now)
			if err != nil {
				return f, err
			}
			*t.dst = v
		}
	}
	return f, nil
}

func (r *resolver) Deployments(ctx context.Context, args struct {
	Filter *deploymentFilterInput
	pageArgs
}) (connection[deploymentResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[deploymentResolver]{}, wrap(err)
	}
	page, err := args.page()
	if err != nil {
		return connection[deploymentResolver]{}, wrap(err)
	}
	f, err := args.Filter.filter(time.Now())
	if err != nil {
		return connection[deploymentResolver]{}, wrap(err)
	}
	if err := r.productFilter(ctx, p, args.Filter, &f); err != nil {
		return connection[deploymentResolver]{}, wrap(err)
	}
	ds, err := r.analytics.ListDeployments(ctx, p, f, page)
	if err != nil {
		return connection[deploymentResolver]{}, wrap(err)
	}
	nodes := make([]deploymentResolver, len(ds))
	last := ""
	for i, d := range ds {
		nodes[i] = deploymentResolver{d}
		last = d.ID
	}
	return newConnection(nodes, page, last), nil
}

func (r *resolver) Dora(ctx context.Context, args struct {
	Filter   *deploymentFilterInput
	Bucket   *string
	Failures *[]string
}) (doraResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return doraResolver{}, wrap(err)
	}
	f, err := args.Filter.filter(time.Now())
	if err != nil {
		return doraResolver{}, wrap(err)
	}
	if err := r.productFilter(ctx, p, args.Filter, &f); err != nil {
		return doraResolver{}, wrap(err)
	}
	q := analytics.Query{Filter: f}
	if args.Bucket != nil {
		q.Bucket = *args.Bucket
	}
	if args.Failures != nil {
		q.Failures = *args.Failures
	}
	rep, err := r.analytics.DORA(ctx, p, q)
	if err != nil {
		return doraResolver{}, wrap(err)
	}
	return doraResolver{rep}, nil
}

type deploymentResolver struct{ d analytics.Deployment }

func (d deploymentResolver) ID() gql.ID          { return gql.ID(d.d.ID) }
func (d deploymentResolver) Runtime() string     { return d.d.Runtime }
func (d deploymentResolver) RuntimeID() gql.ID   { return gql.ID(d.d.RuntimeID) }
func (d deploymentResolver) Application() string { return d.d.Application }
func (d deploymentResolver) Project() *string    { return strPtr(d.d.Project) }
func (d deploymentResolver) Cluster() *string    { return strPtr(d.d.Cluster) }
func (d deploymentResolver) Namespace() *string  { return strPtr(d.d.Namespace) }
func (d deploymentResolver) Revision() string    { return d.d.Revision }
func (d deploymentResolver) SyncID() float64     { return float64(d.d.SyncID) }
func (d deploymentResolver) Trigger() string     { return d.d.Trigger }
func (d deploymentResolver) InitiatedBy() string { return d.d.InitiatedBy }
func (d deploymentResolver) User() *string       { return strPtr(d.d.User) }
func (d deploymentResolver) Result() string      { return d.d.Result }
func (d deploymentResolver) Message() *string    { return strPtr(d.d.Message) }
func (d deploymentResolver) Commit() *commitResolver {
	c := d.d.Commit
	if c.Author == "" && c.Message == "" && c.Time.IsZero() {
		return nil
	}
	return newCommit(&runtimev1.Commit{Author: c.Author, Message: c.Message, Time: c.Time})
}
func (d deploymentResolver) Images() []imageResolver {
	out := make([]imageResolver, len(d.d.Images))
	for i, im := range d.d.Images {
		out[i] = imageResolver{im}
	}
	return out
}
func (d deploymentResolver) Commits() []deployedCommitResolver {
	out := make([]deployedCommitResolver, len(d.d.Commits))
	for i, c := range d.d.Commits {
		out[i] = deployedCommitResolver{c}
	}
	return out
}
func (d deploymentResolver) CommitRange() *commitRangeResolver {
	if d.d.Range == nil {
		return nil
	}
	return &commitRangeResolver{*d.d.Range}
}
func (d deploymentResolver) StartedAt() *string       { return timeStr(d.d.StartedAt) }
func (d deploymentResolver) FinishedAt() string       { return d.d.FinishedAt.Format(time.RFC3339Nano) }
func (d deploymentResolver) DurationSeconds() float64 { return d.d.Duration.Seconds() }
func (d deploymentResolver) LeadTimeSeconds() *float64 {
	if d.d.LeadTime < 0 {
		return nil
	}
	s := d.d.LeadTime.Seconds()
	return &s
}
func (d deploymentResolver) DegradedAt() *string   { return timeStr(d.d.DegradedAt) }
func (d deploymentResolver) RolledBackAt() *string { return timeStr(d.d.RolledBackAt) }

type deployedCommitResolver struct{ c analytics.DeployedCommit }

func (c deployedCommitResolver) SHA() string         { return c.c.SHA }
func (c deployedCommitResolver) Author() *string     { return strPtr(c.c.Author) }
func (c deployedCommitResolver) Message() *string    { return strPtr(c.c.Message) }
func (c deployedCommitResolver) AuthorTime() *string { return timeStr(c.c.AuthorTime) }
func (c deployedCommitResolver) Time() *string       { return timeStr(c.c.Time) }
func (c deployedCommitResolver) Issues() []string    { return orEmpty(c.c.Issues) }
func (c deployedCommitResolver) Sources() []string   { return orEmpty(c.c.Sources) }

type commitRangeResolver struct{ r analytics.CommitRange }

func (r commitRangeResolver) Kind() string    { return r.r.Kind }
func (r commitRangeResolver) From() *string   { return strPtr(r.r.From) }
func (r commitRangeResolver) Truncated() bool { return r.r.Truncated }

type imageResolver struct{ i analytics.Image }

func (i imageResolver) Registry() *string  { return strPtr(i.i.Registry) }
func (i imageResolver) Repository() string { return i.i.Repository }
func (i imageResolver) Tags() []string {
	if i.i.Tags == nil {
		return []string{}
	}
	return i.i.Tags
}
func (i imageResolver) Digest() string   { return i.i.Digest }
func (i imageResolver) BuildID() *string { return strPtr(i.i.BuildID) }
func (i imageResolver) Commits() []imageCommitResolver {
	out := make([]imageCommitResolver, len(i.i.Commits))
	for j, c := range i.i.Commits {
		out[j] = imageCommitResolver{c}
	}
	return out
}
func (i imageResolver) Issues() []imageIssueResolver {
	out := make([]imageIssueResolver, len(i.i.Issues))
	for j, is := range i.i.Issues {
		out[j] = imageIssueResolver{is}
	}
	return out
}

type imageCommitResolver struct{ c images.Commit }

func (c imageCommitResolver) SHA() *string     { return strPtr(c.c.SHA) }
func (c imageCommitResolver) Branch() *string  { return strPtr(c.c.Branch) }
func (c imageCommitResolver) RepoURL() *string { return strPtr(c.c.RepoURL) }
func (c imageCommitResolver) Message() *string { return strPtr(c.c.Message) }
func (c imageCommitResolver) Author() *string  { return strPtr(c.c.Author) }
func (c imageCommitResolver) Time() *string    { return timeStr(c.c.Time) }

type imageIssueResolver struct{ i images.Issue }

func (i imageIssueResolver) Key() string      { return i.i.Key }
func (i imageIssueResolver) Tracker() *string { return strPtr(i.i.Tracker) }
func (i imageIssueResolver) Kind() *string    { return strPtr(i.i.Kind) }
func (i imageIssueResolver) Title() *string   { return strPtr(i.i.Title) }
func (i imageIssueResolver) State() *string   { return strPtr(i.i.State) }
func (i imageIssueResolver) URL() *string     { return strPtr(i.i.URL) }
func (i imageIssueResolver) Error() *string   { return strPtr(i.i.Error) }

type doraResolver struct{ r analytics.Report }

type metricResolver struct{ m analytics.Metric }

func (m metricResolver) Value() float64 { return m.m.Value }
func (m metricResolver) Unit() string   { return m.m.Unit }
func (m metricResolver) Band() string   { return m.m.Band }

func (d doraResolver) Since() string                 { return d.r.Since.Format(time.RFC3339Nano) }
func (d doraResolver) Until() string                 { return d.r.Until.Format(time.RFC3339Nano) }
func (d doraResolver) Bucket() string                { return d.r.Bucket }
func (d doraResolver) Failures() []string            { return d.r.Failures }
func (d doraResolver) FailureWindowSeconds() float64 { return d.r.FailureWindow.Seconds() }
func (d doraResolver) DeploymentFrequency() metricResolver {
	return metricResolver{d.r.DeploymentFrequency}
}
func (d doraResolver) LeadTimeForChanges() metricResolver {
	return metricResolver{d.r.LeadTimeForChanges}
}
func (d doraResolver) ChangeFailureRate() metricResolver {
	return metricResolver{d.r.ChangeFailureRate}
}
func (d doraResolver) TimeToRestore() metricResolver { return metricResolver{d.r.TimeToRestore} }
func (d doraResolver) Deployments() int32            { return int32(d.r.Deployments) }
func (d doraResolver) Successful() int32             { return int32(d.r.Successful) }
func (d doraResolver) FailedChanges() int32          { return int32(d.r.FailedChanges) }
func (d doraResolver) Incidents() int32              { return int32(d.r.Incidents) }
func (d doraResolver) OpenIncidents() int32          { return int32(d.r.OpenIncidents) }
func (d doraResolver) Series() []bucketResolver {
	out := make([]bucketResolver, len(d.r.Series))
	for i, b := range d.r.Series {
		out[i] = bucketResolver{b}
	}
	return out
}

type bucketResolver struct{ b analytics.Bucket }

func (b bucketResolver) Start() string        { return b.b.Start.Format(time.RFC3339) }
func (b bucketResolver) Deployments() int32   { return int32(b.b.Deployments) }
func (b bucketResolver) Successful() int32    { return int32(b.b.Successful) }
func (b bucketResolver) Failures() int32      { return int32(b.b.Failures) }
func (b bucketResolver) Incidents() int32     { return int32(b.b.Incidents) }
func (b bucketResolver) OpenIncidents() int32 { return int32(b.b.OpenIncidents) }
func (b bucketResolver) TimeToRestoreSeconds() *float64 {
	if b.b.TimeToRestore < 0 {
		return nil
	}
	s := b.b.TimeToRestore.Seconds()
	return &s
}
func (b bucketResolver) LeadTimeSeconds() *float64 {
	if b.b.LeadTime < 0 {
		return nil
	}
	s := b.b.LeadTime.Seconds()
	return &s
}
