package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// A deployment's commits through the real server: a runtime reports finished syncs with the
// commits it walked in the source repository (first deployment, a range, a rollback) and an
// older runtime's sync without them; the deployments reach analytics through the outbox and
// the bus, and the REST API and GraphQL show the range's commits merged with the deployed
// image's build commit (one SHA once, both sources), the issue keys of their messages, and
// lead time from the range's earliest commit. Bad commit ranges are refused naming the field.
func TestDeploymentCommitRange(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
			if err != nil {
				t.Fatal(err)
			}
			sha := func(c byte) string { return strings.Repeat(string(c), 40) }
			rev1, mid, rev2 := sha('1'), sha('a'), sha('2')
			const digest = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
			if _, err := s.Admin.ReportImage(ctx, client.ReportImageRequest{Image: "registry.example/acme/web:2", Digest: digest, Commit: rev2,
				Message: "SHOP-9 checkout", Issues: []string{"SHOP-9"}}); err != nil {
				t.Fatal(err)
			}
			at := time.Unix(1700000000, 0).UTC()
			sync := func(id int64, rev, by string, commits *runtimev1.SyncCommits) runtimev1.AppEvent {
				start := at.Add(time.Duration(id) * time.Hour)
				return runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: id, Revision: rev, Phase: "Succeeded",
					InitiatedBy: by, StartedAt: start, FinishedAt: start.Add(time.Minute), Commit: &runtimev1.Commit{SHA: rev, Message: "tip", Time: start.Add(-time.Minute)},
					Commits: commits}}
			}
			web := runtimev1.Application{Name: "web", RepoURL: "https://git.example/acme/apps.git", Path: "web", DestName: "prod", DestNamespace: "shop",
				Sync: "Synced", Health: "Healthy", Revision: rev2, ReconciledAt: at}
			t2 := at.Add(2 * time.Hour)
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{web}, Events: []runtimev1.AppEvent{
				sync(1, rev1, "automated", &runtimev1.SyncCommits{Kind: runtimev1.CommitsFirst, Commits: []runtimev1.Commit{
					{SHA: rev1, Author: "Ada", Message: "PROJ-1 start", Time: at.Add(-time.Hour), AuthorTime: at.Add(-2 * time.Hour)}}}),
				sync(2, rev2, "automated", &runtimev1.SyncCommits{Kind: runtimev1.CommitsRange, From: rev1, Truncated: true, Commits: []runtimev1.Commit{
					{SHA: rev2, Author: "Bob", Message: "SHOP-9 checkout", Time: t2.Add(-10 * time.Minute)},
					{SHA: mid, Author: "<script>alert(1)</script>", Message: "fix acme/web#12 and #7", Time: t2.Add(-90 * time.Minute)}}}),
				sync(3, rev1, "rollback", &runtimev1.SyncCommits{Kind: runtimev1.CommitsRollback, From: rev2}),
				sync(4, rev2, "automated", nil), // an older runtime: no commits
			}})

			var ds client.List[client.Deployment]
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				ds, err = s.Admin.ListDeployments(ctx, client.DeploymentFilter{App: "web"})
				if err != nil {
					t.Fatal(err)
				}
				if len(ds.Items) == 4 && len(ds.Items[2].Images) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("deployments: %+v", ds)
				}
			}
			bySync := map[int64]client.Deployment{}
			for _, dep := range ds.Items {
				bySync[dep.SyncID] = dep
			}
			show := func(dep client.Deployment) string {
				var parts []string
				for _, c := range dep.Commits {
					parts = append(parts, fmt.Sprintf("%s:%s:%s:%v:%v", c.SHA[:1], c.Author, c.Message, c.Issues, c.Sources))
				}
				return strings.Join(parts, " | ")
			}
			first := bySync[1]
			if first.CommitRange == nil || first.CommitRange.Kind != "first" || show(first) != "1:Ada:PROJ-1 start:[PROJ-1]:[git]" ||
				first.Commits[0].AuthorTime == nil || !first.Commits[0].AuthorTime.Equal(at.Add(-2*time.Hour)) {
				t.Errorf("first deployment: %+v %s", first.CommitRange, show(first))
			}
			// The first deployment's lead time: from its one commit.
			if first.LeadTimeSeconds == nil || *first.LeadTimeSeconds != (time.Hour+time.Hour+time.Minute).Seconds() {
				t.Errorf("first deployment's lead time = %v", first.LeadTimeSeconds)
			}
			second := bySync[2]
			if second.CommitRange == nil || second.CommitRange.Kind != "range" || second.CommitRange.From != rev1 || !second.CommitRange.Truncated {
				t.Errorf("second deployment's range: %+v", second.CommitRange)
			}
			// The image's build commit is the range's newest: one commit, both sources; the
			// author is data, as given.
			if got := show(second); got != "2:Bob:SHOP-9 checkout:[SHOP-9]:[git image] | a:<script>alert(1)</script>:fix acme/web#12 and #7:[acme/web#12 #7]:[git]" {
				t.Errorf("second deployment's commits: %s", got)
			}
			// Lead time from the range's earliest commit (90 minutes before the sync started).
			if second.LeadTimeSeconds == nil || *second.LeadTimeSeconds != (91*time.Minute).Seconds() {
				t.Errorf("second deployment's lead time = %v", second.LeadTimeSeconds)
			}
			if rb := bySync[3]; rb.CommitRange == nil || rb.CommitRange.Kind != "rollback" || rb.CommitRange.From != rev2 || len(rb.Commits) != 0 || rb.Commits == nil {
				t.Errorf("rollback: %+v %s", rb.CommitRange, show(rb))
			}
			// An older runtime's deployment: the image's commit only, lead time from the revision.
			old := bySync[4]
			if old.CommitRange != nil || show(old) != "2::SHOP-9 checkout:[SHOP-9]:[image]" || old.LeadTimeSeconds == nil || *old.LeadTimeSeconds != 120 {
				t.Errorf("older runtime's deployment: %+v %s lead %v", old.CommitRange, show(old), old.LeadTimeSeconds)
			}

			var out struct {
				Deployments struct {
					Nodes []struct {
						SyncID      float64 `json:"syncId"`
						CommitRange *struct {
							Kind      string `json:"kind"`
							Truncated bool   `json:"truncated"`
						} `json:"commitRange"`
						Commits []struct {
							SHA     string   `json:"sha"`
							Issues  []string `json:"issues"`
							Sources []string `json:"sources"`
						} `json:"commits"`
					} `json:"nodes"`
				} `json:"deployments"`
			}
			if err := s.Admin.GraphQL(ctx, `{ deployments(filter: {application: "web"}, first: 10) { nodes { syncId commitRange { kind truncated } commits { sha issues sources } } } }`, nil, &out); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range out.Deployments.Nodes {
				g := fmt.Sprint(n.SyncID, " ")
				if n.CommitRange != nil {
					g += fmt.Sprintf("%s%v", n.CommitRange.Kind, n.CommitRange.Truncated)
				}
				for _, c := range n.Commits {
					g += fmt.Sprintf(" %s%v%v", c.SHA[:1], c.Issues, c.Sources)
				}
				got = append(got, g)
			}
			if want := "[4  2[SHOP-9][image] 3 rollbackfalse 2 rangetrue 2[SHOP-9][git image] a[acme/web#12 #7][git] 1 firstfalse 1[PROJ-1][git]]"; fmt.Sprint(got) != want {
				t.Errorf("GraphQL deployments:\n got %s\nwant %s", got, want)
			}

			// Bad ranges are refused, naming the field; nothing of the report is stored.
			bad := func(c *runtimev1.SyncCommits) error {
				cl := connect.NewClient[runtimev1.ReportRequest, runtimev1.ReportResponse](http.DefaultClient, s.URL+runtimev1.ProcedureReport, connect.WithCodec(runnerv1.Codec{}))
				r := connect.NewRequest(&runtimev1.ReportRequest{Events: []runtimev1.AppEvent{sync(5, rev2, "automated", c)}})
				r.Header().Set("Authorization", "Bearer "+reg.Token)
				_, err := cl.CallUnary(ctx, r)
				return err
			}
			for _, tc := range []struct {
				c     *runtimev1.SyncCommits
				field string
			}{
				{&runtimev1.SyncCommits{Kind: "sideways"}, "events[0].sync.commits.kind"},
				{&runtimev1.SyncCommits{Kind: "range", Commits: []runtimev1.Commit{{SHA: "HEAD"}}}, "events[0].sync.commits.commits[0].sha"},
				{&runtimev1.SyncCommits{Kind: "range", Commits: []runtimev1.Commit{{SHA: rev2, Author: strings.Repeat("x", 101)}}}, "events[0].sync.commits.commits[0].author"},
				{&runtimev1.SyncCommits{Kind: "range", Commits: []runtimev1.Commit{{SHA: rev2, Message: strings.Repeat("m", 201)}}}, "events[0].sync.commits.commits[0].message"},
				{&runtimev1.SyncCommits{Kind: "rollback", Commits: []runtimev1.Commit{{SHA: rev2}}}, "events[0].sync.commits.commits"},
				{&runtimev1.SyncCommits{Kind: "range", Commits: make([]runtimev1.Commit, 51)}, "events[0].sync.commits.commits"},
			} {
				err := bad(tc.c)
				if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.field) {
					t.Errorf("report with %+v: %v, want invalid %s", tc.c, err, tc.field)
				}
			}
			if ds, err := s.Admin.ListDeployments(ctx, client.DeploymentFilter{App: "web"}); err != nil || len(ds.Items) != 4 {
				t.Errorf("after refused reports: %d deployments, %v", len(ds.Items), err)
			}
		})
	}
}
