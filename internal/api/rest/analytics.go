package rest

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// productFilter limits f to the applications of the product the product parameter names, if
// it names one.
func (a *API) productFilter(r *http.Request, f *analytics.Filter) error {
	name := r.URL.Query().Get("product")
	if name == "" {
		return nil
	}
	if a.products == nil {
		return errdefs.Invalid("product", name, "cannot filter: this server has no products service")
	}
	apps, err := a.products.Applications(r.Context(), principal(r), "product", name)
	if err != nil {
		return err
	}
	f.Apps, f.AppsSet = apps, true
	return nil
}

// analyticsFilter reads the app, runtime, cluster, since and until parameters.
func analyticsFilter(q url.Values, now time.Time) (analytics.Filter, error) {
	f := analytics.Filter{App: q.Get("app"), Runtime: q.Get("runtime"), Cluster: q.Get("cluster")}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(t.name); s != "" {
			v, err := analytics.ParseTime(t.name, s, now)
			if err != nil {
				return f, err
			}
			*t.dst = v
		}
	}
	return f, nil
}

func (a *API) listDeployments(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	f, err := analyticsFilter(r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	if err := a.productFilter(r, &f); err != nil {
		return err
	}
	ds, err := a.analytics.ListDeployments(r.Context(), principal(r), f, page)
	if err != nil {
		return err
	}
	out := client.List[client.Deployment]{Items: make([]client.Deployment, 0, len(ds))}
	for _, d := range ds {
		out.Items = append(out.Items, ToDeployment(d))
	}
	if len(ds) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ds), ds[len(ds)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) dora(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := analyticsFilter(q, time.Now())
	if err != nil {
		return err
	}
	if err := a.productFilter(r, &f); err != nil {
		return err
	}
	dq := analytics.Query{Filter: f, Bucket: q.Get("bucket")}
	if s := q.Get("failures"); s != "" {
		dq.Failures = strings.Split(s, ",")
	}
	rep, err := a.analytics.DORA(r.Context(), principal(r), dq)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToDORAReport(rep))
	return nil
}

// ToDeployment converts a deployment record to its API form.
func ToDeployment(d analytics.Deployment) client.Deployment {
	out := client.Deployment{ID: d.ID, Runtime: d.Runtime, RuntimeID: d.RuntimeID, Application: d.Application, Project: d.Project,
		Cluster: d.Cluster, Namespace: d.Namespace, Revision: d.Revision, SyncID: d.SyncID, Trigger: d.Trigger, InitiatedBy: d.InitiatedBy,
		User: d.User, Result: d.Result, Message: d.Message, Images: []client.DeployedImage{}, StartedAt: timeOrNil(d.StartedAt),
		FinishedAt: d.FinishedAt, DurationSeconds: d.Duration.Seconds(), DegradedAt: timeOrNil(d.DegradedAt), RolledBackAt: timeOrNil(d.RolledBackAt)}
	if c := d.Commit; c.Author != "" || c.Message != "" || !c.Time.IsZero() {
		out.Commit = &client.DeploymentCommit{Author: c.Author, Message: c.Message, Time: timeOrNil(c.Time)}
	}
	if d.LeadTime >= 0 {
		s := d.LeadTime.Seconds()
		out.LeadTimeSeconds = &s
	}
	out.Commits = make([]client.DeployedCommit, 0, len(d.Commits))
	for _, c := range d.Commits {
		out.Commits = append(out.Commits, client.DeployedCommit{SHA: c.SHA, Author: c.Author, Message: c.Message, AuthorTime: timeOrNil(c.AuthorTime),
			Time: timeOrNil(c.Time), Issues: nonNil(c.Issues), Sources: nonNil(c.Sources)})
	}
	if r := d.Range; r != nil {
		out.CommitRange = &client.DeploymentCommitRange{Kind: r.Kind, From: r.From, Truncated: r.Truncated}
	}
	for _, im := range d.Images {
		di := client.DeployedImage{Registry: im.Registry, Repository: im.Repository, Tags: im.Tags,
			Digest: im.Digest, BuildID: im.BuildID, Commits: make([]client.ImageCommit, 0, len(im.Commits)), Issues: ToImageIssues(im.Issues)}
		for _, c := range im.Commits {
			di.Commits = append(di.Commits, *ToImageCommit(c))
		}
		out.Images = append(out.Images, di)
	}
	return out
}

// ToDORAReport converts a DORA report to its API form.
func ToDORAReport(r analytics.Report) client.DORAReport {
	m := func(x analytics.Metric) client.DORAMetric {
		return client.DORAMetric{Value: x.Value, Unit: x.Unit, Band: x.Band}
	}
	out := client.DORAReport{Since: r.Since, Until: r.Until, Bucket: r.Bucket, Failures: r.Failures, FailureWindowSeconds: r.FailureWindow.Seconds(),
		DeploymentFrequency: m(r.DeploymentFrequency), LeadTimeForChanges: m(r.LeadTimeForChanges), ChangeFailureRate: m(r.ChangeFailureRate),
		TimeToRestore: m(r.TimeToRestore), Deployments: r.Deployments, Successful: r.Successful, FailedChanges: r.FailedChanges,
		Incidents: r.Incidents, OpenIncidents: r.OpenIncidents, Series: make([]client.DORABucket, 0, len(r.Series))}
	if out.Failures == nil {
		out.Failures = []string{}
	}
	for _, b := range r.Series {
		cb := client.DORABucket{Start: b.Start, Deployments: b.Deployments, Successful: b.Successful, Failures: b.Failures,
			Incidents: b.Incidents, OpenIncidents: b.OpenIncidents}
		if b.LeadTime >= 0 {
			s := b.LeadTime.Seconds()
			cb.LeadTimeSeconds = &s
		}
		if b.TimeToRestore >= 0 {
			s := b.TimeToRestore.Seconds()
			cb.TimeToRestoreSeconds = &s
		}
		out.Series = append(out.Series, cb)
	}
	return out
}
