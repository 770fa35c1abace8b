package runtimes

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzReport decodes arbitrary bodies as the protocol handler does (runnerv1.Codec) and
// validates them: nothing panics, every refusal is invalid input naming a field, and what is
// accepted is sane: valid names, bounded sizes, rows that hold what was reported.
func FuzzReport(f *testing.F) {
	seeds := []runtimev1.ReportRequest{
		{Snapshot: true, Applications: []runtimev1.Application{app("web", "Healthy"), app("api", "Degraded")}},
		{Events: []runtimev1.AppEvent{changed(app("web", "Healthy")), {Type: runtimev1.AppDeleted, App: "api"}}},
		{Events: []runtimev1.AppEvent{
			{Type: runtimev1.SyncStarted, App: "web", Sync: &runtimev1.SyncRecord{Phase: "Running"}},
			{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: 3, Phase: "Succeeded", Commit: &runtimev1.Commit{Author: "Ann"}}},
			{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{DryRun: true}},
		}},
		{Events: []runtimev1.AppEvent{
			{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: 4, Phase: "Succeeded", Commits: &runtimev1.SyncCommits{Kind: runtimev1.CommitsRange,
				From: strings.Repeat("1", 40), Truncated: true, Commits: []runtimev1.Commit{{SHA: strings.Repeat("a", 40), Author: "Ann", Message: "PROJ-1 fix #2"}}}}},
			{Type: runtimev1.SyncFinished, App: "web", Sync: &runtimev1.SyncRecord{ID: 5, Phase: "Succeeded", Commits: &runtimev1.SyncCommits{Kind: runtimev1.CommitsRollback}}},
		}},
	}
	for _, s := range seeds {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"events":[{}]}`, `{"events":[{"type":"AppChanged","app":"a","application":{}}]}`,
		`{"applications":[{"name":"a","labels":{"":"x"}}]}`, `{"events":[{"type":"SyncFinished","app":"a","sync":{"id":-5}}]}`,
		`{"snapshot":true,"applications":[{"name":"a"},{"name":"a"}]}`,
		`{"events":[{"type":"SyncFinished","app":"a","sync":{"id":1,"commits":{"kind":"first","commits":[{"sha":"ABC","author":"x\u0000"}]}}}]}`,
		`{"applications":[{"name":"a","project":"p\u0000","healthMessage":"x\u0000y"}]}`,
		`{"events":[{"type":"RolloutChanged","app":"a","at":"2026-01-01T00:00:00Z","rollout":{"namespace":"prod","name":"web","kind":"Aborted","phase":"Degraded","step":1,"steps":2}}]}`,
		`{"events":[{"type":"RolloutChanged","app":"a","rollout":{"namespace":"Prod","name":"web","kind":"Exploded","step":-1}}]}`,
		`{"events":[{"type":"WorkflowFinished","at":"2026-01-01T00:00:00Z","workflow":{"namespace":"ci","name":"b-1","uid":"u1","phase":"Failed","trigger":"submit","finishedAt":"2026-01-01T00:00:00Z","nodes":[{"id":"b-1","name":"b-1","type":"Steps","phase":"Failed"}]}}]}`,
		`{"events":[{"type":"WorkflowFinished","app":"x","workflow":{"namespace":"ci","name":"b-1","uid":"","phase":"Running","trigger":"?","nodes":[{"id":""}]}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req runtimev1.ReportRequest
		if err := (runnerv1.Codec{}).Unmarshal(body, &req); err != nil {
			return // the handler answers invalid_argument for undecodable bodies itself
		}
		rep, err := prepareReport(&req)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("refusal %q is not invalid input naming a field", err)
			}
			return
		}
		if len(rep.apps) > MaxReportApplications || len(rep.events) > MaxReportEvents || rep.snapshot != req.Snapshot {
			t.Fatalf("accepted %d applications and %d events", len(rep.apps), len(rep.events))
		}
		seen := map[string]bool{}
		noNULs := func(what string, vals ...string) {
			for _, v := range vals {
				if strings.ContainsRune(v, 0) {
					t.Fatalf("%s: a NUL reaches a column (PostgreSQL refuses it): %q", what, v)
				}
			}
		}
		check := func(row rowLike) {
			if msgs := validation.IsDNS1123Subdomain(row.name); len(msgs) > 0 {
				t.Fatalf("accepted application name %q: %v", row.name, msgs)
			}
			if len(row.data) > MaxApplicationBytes {
				t.Fatalf("accepted an application of %d bytes", len(row.data))
			}
			var back runtimev1.Application
			if err := json.Unmarshal([]byte(row.data), &back); err != nil || back.Name != row.name || !maps.Equal(back.Labels, row.labels) {
				t.Fatalf("row data %q does not hold application %q (%v)", row.data, row.name, err)
			}
		}
		for _, a := range rep.apps {
			if seen[a.Name] {
				t.Fatalf("application %q accepted twice", a.Name)
			}
			seen[a.Name] = true
			check(rowLike{a.Name, a.Data, a.Labels})
			noNULs(a.Name, a.Project, a.RepoURL, a.Path, a.TargetRevision, a.DestServer, a.DestName, a.DestNamespace, a.Sync, a.Health, a.HealthMessage, a.Revision)
			for k, v := range a.Labels {
				noNULs(a.Name+" labels", k, v)
			}
		}
		for i, ev := range rep.events {
			if ev.app != req.Events[i].App || ev.typ != req.Events[i].Type {
				t.Fatalf("event %d changed: %+v", i, ev)
			}
			if ev.typ == runtimev1.WorkflowFinished {
				w := ev.wf
				if ev.app != "" || w == nil || len(validation.IsDNS1123Label(w.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(w.Name)) > 0 ||
					w.UID == "" || w.FinishedAt.IsZero() || w.NodeCount > runtimev1.MaxWorkflowNodes {
					t.Fatalf("accepted workflow %+v of app %q", w, ev.app)
				}
				noNULs(w.Name, w.UID, w.Phase, w.Message, w.Template, w.Trigger, w.TriggeredBy)
				continue
			}
			if msgs := validation.IsDNS1123Subdomain(ev.app); len(msgs) > 0 {
				t.Fatalf("accepted event application %q", ev.app)
			}
			switch ev.typ {
			case runtimev1.AppChanged, runtimev1.HealthChanged:
				if ev.row.Name != ev.app {
					t.Fatalf("event %d about %q stores %q", i, ev.app, ev.row.Name)
				}
				check(rowLike{ev.row.Name, ev.row.Data, ev.row.Labels})
			case runtimev1.SyncStarted, runtimev1.SyncFinished:
				if ev.sync == nil {
					t.Fatalf("event %d: a sync event without its sync", i)
				}
				if c := ev.sync.Commits; c != nil {
					if len(c.Commits) > runtimev1.MaxSyncCommits || !slices.Contains(syncCommitKinds, c.Kind) {
						t.Fatalf("event %d: accepted commits %+v", i, c)
					}
					for _, cm := range c.Commits {
						if !isCommitSHA(cm.SHA) || len(cm.Author) > runtimev1.MaxCommitAuthorBytes || len(cm.Message) > runtimev1.MaxCommitMessageBytes {
							t.Fatalf("event %d: accepted commit %+v", i, cm)
						}
						noNULs("commit", cm.Author, cm.Message)
					}
				}
				if r := ev.rec; r != nil {
					if ev.typ != runtimev1.SyncFinished || r.SyncID <= 0 || ev.sync.DryRun || r.App != ev.app {
						t.Fatalf("event %d records %+v", i, r)
					}
					noNULs("sync", r.Revision, r.Phase, r.Message, r.InitiatedBy, r.CommitAuthor, r.CommitMessage)
				}
			case runtimev1.AppDeleted:
			case runtimev1.RolloutChanged:
				r := ev.ro
				if r == nil || ev.at.IsZero() || !slices.Contains(rolloutKinds, r.Kind) || len(r.Message) > maxRolloutMessage ||
					len(validation.IsDNS1123Label(r.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(r.Name)) > 0 ||
					(r.Step != nil && (*r.Step < 0 || *r.Step > r.Steps)) {
					t.Fatalf("event %d: accepted rollout transition %+v at %v", i, r, ev.at)
				}
			default:
				t.Fatalf("accepted event type %q", ev.typ)
			}
		}
	})
}

type rowLike struct {
	name, data string
	labels     map[string]string
}
