package graphql

import (
	"context"
	"errors"
	"time"

	gql "github.com/graph-gophers/graphql-go"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/products"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

// The delivery dashboards' data beside REST: the products list, Helm releases and reported
// images (GET /api/v1/products, /helm-releases, /images).

func (r *resolver) Products(ctx context.Context) ([]productResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	if r.products == nil {
		return nil, wrap(errdefs.ErrUnavailable)
	}
	ps, err := r.products.ListProducts(ctx, p)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]productResolver, len(ps))
	for i, x := range ps {
		out[i] = productResolver{x}
	}
	return out, nil
}

type productResolver struct{ p products.Product }

func (p productResolver) Name() string  { return p.p.Name }
func (p productResolver) Defined() bool { return p.p.Defined }
func (p productResolver) Patterns() []string {
	if p.p.Patterns == nil {
		return []string{}
	}
	return p.p.Patterns
}
func (p productResolver) Applications() int32 { return int32(p.p.Applications) }
func (p productResolver) CreatedAt() *string  { return timeStr(p.p.CreatedAt) }

type helmArgs struct {
	Runtime, Cluster, Namespace *string
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (r *resolver) HelmReleases(ctx context.Context, args helmArgs) ([]helmReleaseResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	hs, err := r.runtimes.ListHelmReleases(ctx, p, runtimes.HelmReleaseFilter{Runtime: deref(args.Runtime), Cluster: deref(args.Cluster), Namespace: deref(args.Namespace)})
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]helmReleaseResolver, len(hs))
	for i, h := range hs {
		out[i] = helmReleaseResolver{h}
	}
	return out, nil
}

func (r *resolver) HelmRelease(ctx context.Context, args struct {
	Namespace, Name  string
	Runtime, Cluster *string
}) (*helmReleaseResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	h, err := r.runtimes.GetHelmRelease(ctx, p, args.Namespace, args.Name, runtimes.HelmReleaseFilter{Runtime: deref(args.Runtime), Cluster: deref(args.Cluster)})
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	return &helmReleaseResolver{h}, nil
}

func (r *resolver) WorkflowRunStats(ctx context.Context, args struct{ Days *int32 }) (workflowRunStatsResolver, error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return workflowRunStatsResolver{}, wrap(err)
	}
	days := runtimes.DefaultWorkflowStatsDays
	if args.Days != nil {
		days = int(*args.Days)
	}
	st, err := r.runtimes.WorkflowRunStats(ctx, p, days)
	if err != nil {
		return workflowRunStatsResolver{}, wrap(err)
	}
	return workflowRunStatsResolver{st}, nil
}

type workflowRunStatsResolver struct{ s runtimes.WorkflowRunStats }

func (w workflowRunStatsResolver) Since() string { return w.s.Since.Format(time.RFC3339) }
func (w workflowRunStatsResolver) Until() string { return w.s.Until.Format(time.RFC3339) }
func (w workflowRunStatsResolver) Days() []workflowRunDayResolver {
	out := make([]workflowRunDayResolver, len(w.s.Days))
	for i, d := range w.s.Days {
		out[i] = workflowRunDayResolver{d}
	}
	return out
}

type workflowRunDayResolver struct{ d runtimes.WorkflowRunDay }

func (d workflowRunDayResolver) Date() string     { return d.d.Day.Format(time.DateOnly) }
func (d workflowRunDayResolver) Succeeded() int32 { return int32(d.d.Succeeded) }
func (d workflowRunDayResolver) Failed() int32    { return int32(d.d.Failed) }
func (d workflowRunDayResolver) Error() int32     { return int32(d.d.Errored) }

type helmReleaseResolver struct{ h runtimes.HelmRelease }

func (h helmReleaseResolver) ID() gql.ID           { return gql.ID(h.h.ID) }
func (h helmReleaseResolver) Runtime() string      { return h.h.Runtime }
func (h helmReleaseResolver) RuntimeID() string    { return h.h.RuntimeID }
func (h helmReleaseResolver) Cluster() string      { return h.h.Cluster }
func (h helmReleaseResolver) Namespace() string    { return h.h.Namespace }
func (h helmReleaseResolver) Name() string         { return h.h.Name }
func (h helmReleaseResolver) Chart() string        { return h.h.Chart }
func (h helmReleaseResolver) ChartVersion() string { return h.h.ChartVersion }
func (h helmReleaseResolver) AppVersion() string   { return h.h.AppVersion }
func (h helmReleaseResolver) Status() string       { return h.h.Status }
func (h helmReleaseResolver) Revision() int32      { return int32(h.h.Revision) }
func (h helmReleaseResolver) Updated() *string     { return timeStr(h.h.Updated) }
func (h helmReleaseResolver) Description() string  { return h.h.Description }
func (h helmReleaseResolver) ReportedAt() string   { return h.h.ReportedAt.Format(time.RFC3339Nano) }
func (h helmReleaseResolver) History() []helmRevisionResolver {
	out := make([]helmRevisionResolver, len(h.h.History))
	for i, r := range h.h.History {
		out[i] = helmRevisionResolver{r}
	}
	return out
}

type helmRevisionResolver struct{ r runtimev1.HelmRevision }

func (r helmRevisionResolver) Revision() int32      { return int32(r.r.Revision) }
func (r helmRevisionResolver) Status() string       { return r.r.Status }
func (r helmRevisionResolver) Chart() string        { return r.r.Chart }
func (r helmRevisionResolver) ChartVersion() string { return r.r.ChartVersion }
func (r helmRevisionResolver) AppVersion() string   { return r.r.AppVersion }
func (r helmRevisionResolver) Updated() *string     { return timeStr(r.r.Updated) }
func (r helmRevisionResolver) Description() string  { return r.r.Description }

type imageFilterInput struct {
	Repository, Digest, Commit *string
}

func (r *resolver) Images(ctx context.Context, args struct {
	Filter *imageFilterInput
	pageArgs
}) (connection[reportedImageResolver], error) {
	p, err := httpx.Principal(ctx)
	if err != nil {
		return connection[reportedImageResolver]{}, wrap(err)
	}
	if r.images == nil {
		return connection[reportedImageResolver]{}, wrap(errdefs.ErrUnavailable)
	}
	page, err := args.page()
	if err != nil {
		return connection[reportedImageResolver]{}, wrap(err)
	}
	var f images.ImageFilter
	if args.Filter != nil {
		f = images.ImageFilter{Repository: deref(args.Filter.Repository), Digest: deref(args.Filter.Digest), Commit: deref(args.Filter.Commit)}
	}
	ims, err := r.images.ListImages(ctx, p, f, page)
	if err != nil {
		return connection[reportedImageResolver]{}, wrap(err)
	}
	nodes := make([]reportedImageResolver, len(ims))
	last := ""
	for i, im := range ims {
		nodes[i] = reportedImageResolver{im}
		last = im.ID
	}
	return newConnection(nodes, page, last), nil
}

type reportedImageResolver struct{ i images.Image }

func (i reportedImageResolver) ID() gql.ID         { return gql.ID(i.i.ID) }
func (i reportedImageResolver) Registry() *string  { return strPtr(i.i.Registry) }
func (i reportedImageResolver) Repository() string { return i.i.Repository }
func (i reportedImageResolver) Digest() string     { return i.i.Digest }
func (i reportedImageResolver) Tags() []string {
	if i.i.Tags == nil {
		return []string{}
	}
	return i.i.Tags
}
func (i reportedImageResolver) BuildID() *string { return strPtr(i.i.BuildID) }
func (i reportedImageResolver) Commit() *imageCommitResolver {
	c := i.i.Commit
	if c == (images.Commit{}) {
		return nil
	}
	return &imageCommitResolver{c}
}
func (i reportedImageResolver) Issues() []imageIssueResolver {
	out := make([]imageIssueResolver, len(i.i.Issues))
	for j, is := range i.i.Issues {
		out[j] = imageIssueResolver{is}
	}
	return out
}
func (i reportedImageResolver) ReportedBy() *string { return strPtr(i.i.ReportedBy) }
func (i reportedImageResolver) CreatedAt() string   { return i.i.CreatedAt.Format(time.RFC3339Nano) }
func (i reportedImageResolver) UpdatedAt() string   { return i.i.UpdatedAt.Format(time.RFC3339Nano) }
