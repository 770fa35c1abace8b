package runtimes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func finishedWorkflow(name, uid, phase string, at time.Time) runtimev1.AppEvent {
	return runtimev1.AppEvent{Type: runtimev1.WorkflowFinished, At: at, Workflow: &runtimev1.WorkflowRecord{Namespace: "ci", Name: name, UID: uid,
		Phase: phase, StartedAt: at.Add(-90 * time.Second), FinishedAt: at, Template: "release", Trigger: runtimev1.WorkflowTriggerSubmit,
		TriggeredBy: "ann@acme.test", Progress: "1/1",
		Nodes: []runtimev1.WorkflowNodeRecord{
			{ID: name, Name: name, Type: "Steps", Phase: phase, Children: []string{name + "-1"}},
			{ID: name + "-1", Name: name + "[0].build", DisplayName: "build", Type: "Pod", TemplateName: "build", Phase: phase, Message: "Error (exit code 1)"},
		}}}
}

// Finished workflows a runtime reports are archived: once per finish (a report sent twice
// changes nothing), replaced when a retry finishes the same workflow again, listed and read
// back with their nodes, kept after the runtime deletes the Workflow (nothing here depends on
// it), gone with the runtime; bad records change nothing and name the field.
func TestWorkflowArchive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		rt, _ := seedRuntime(t, s, "acme", "edge")
		other, _ := seedRuntime(t, s, "acme", "lab")
		at := time.Unix(1700000000, 0).UTC()
		if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{finishedWorkflow("build-1", "uid-1", "Failed", at)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{finishedWorkflow("build-1", "uid-1", "Failed", at)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Report(ctx, other, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{finishedWorkflow("deploy", "uid-2", "Succeeded", at)}}); err != nil {
			t.Fatal(err)
		}
		out, _ := db.OutboxBatch(ctx, 10)
		if len(out) != 2 || !strings.HasSuffix(out[0].Subject, ".gitops.workflow-finished") {
			t.Fatalf("outbox: %+v (want one workflow-finished per workflow)", out)
		}
		vw := viewer(rt.AccountID)
		l, err := s.ListArchivedWorkflows(ctx, vw, ArchiveFilter{Runtime: "edge"}, paging.Page{})
		if err != nil || len(l) != 1 {
			t.Fatalf("edge's archive: %+v, %v", l, err)
		}
		w := l[0]
		if w.Name != "build-1" || w.Runtime != "edge" || w.Phase != "Failed" || w.Duration() != 90*time.Second || w.Trigger != "submit" ||
			w.TriggeredBy != "ann@acme.test" || w.NodeCount != 2 || w.Nodes != nil || w.Template != "release" {
			t.Fatalf("archived: %+v", w)
		}
		if all, _ := s.ListArchivedWorkflows(ctx, vw, ArchiveFilter{}, paging.Page{}); len(all) != 2 || all[0].Name != "deploy" {
			t.Fatalf("the account's archive, newest first: %+v", all)
		}
		if f, _ := s.ListArchivedWorkflows(ctx, vw, ArchiveFilter{Phase: "Succeeded"}, paging.Page{}); len(f) != 1 || f[0].Name != "deploy" {
			t.Fatalf("Succeeded: %+v", f)
		}
		if _, err := s.ListArchivedWorkflows(ctx, vw, ArchiveFilter{Phase: "Running"}, paging.Page{}); !errors.As(err, new(*errdefs.FieldError)) {
			t.Fatalf("phase Running: %v", err)
		}
		// A retry finishes it again: the same row, the new result.
		if _, err := s.Report(ctx, rt, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{finishedWorkflow("build-1", "uid-1", "Succeeded", at.Add(time.Minute))}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetArchivedWorkflow(ctx, vw, "uid-1")
		if err != nil || got.ID != w.ID || got.Phase != "Succeeded" || len(got.Nodes) != 2 || got.Nodes[1].DisplayName != "build" || got.Progress != "1/1" {
			t.Fatalf("after the retry: %+v, %v", got, err)
		}
		if byID, err := s.GetArchivedWorkflow(ctx, vw, w.ID); err != nil || byID.UID != "uid-1" {
			t.Fatalf("by archive ID: %+v, %v", byID, err)
		}
		if out, _ := db.OutboxBatch(ctx, 10); len(out) != 3 {
			t.Fatalf("outbox after the retry: %d events", len(out))
		}
		// Another account sees none of it.
		stranger, _ := seedRuntime(t, s, "globex", "edge")
		if _, err := s.GetArchivedWorkflow(ctx, viewer(stranger.AccountID), "uid-1"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("another account reads it: %v", err)
		}
		if l, _ := s.ListArchivedWorkflows(ctx, viewer(stranger.AccountID), ArchiveFilter{}, paging.Page{}); len(l) != 0 {
			t.Fatalf("another account lists: %+v", l)
		}

		for _, c := range []struct {
			mutate func(*runtimev1.AppEvent)
			field  string
		}{
			{func(e *runtimev1.AppEvent) { e.Workflow.Phase = "Running" }, "events[0].workflow.phase"},
			{func(e *runtimev1.AppEvent) { e.Workflow.Namespace = "Not A Namespace" }, "events[0].workflow.namespace"},
			{func(e *runtimev1.AppEvent) { e.Workflow.UID = "" }, "events[0].workflow.uid"},
			{func(e *runtimev1.AppEvent) { e.Workflow.Trigger = "magic" }, "events[0].workflow.trigger"},
			{func(e *runtimev1.AppEvent) { e.Workflow.FinishedAt = time.Time{} }, "events[0].workflow.finishedAt"},
			{func(e *runtimev1.AppEvent) { e.Workflow.Message = strings.Repeat("x", 5000) }, "events[0].workflow.message"},
			{func(e *runtimev1.AppEvent) { e.Workflow.Nodes[1].ID = "" }, "events[0].workflow.nodes[1].id"},
			{func(e *runtimev1.AppEvent) { e.Workflow = nil }, "events[0].workflow"},
			{func(e *runtimev1.AppEvent) { e.App = "web" }, "events[0].app"},
		} {
			ev := finishedWorkflow("bad", "uid-bad", "Failed", at)
			c.mutate(&ev)
			_, err := s.Report(ctx, rt, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{ev}})
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("want an error naming %s, got %v", c.field, err)
			}
		}
		if l, _ := s.ListArchivedWorkflows(ctx, vw, ArchiveFilter{Name: "bad"}, paging.Page{}); len(l) != 0 {
			t.Fatalf("a refused report was archived: %+v", l)
		}
		// Deregistering the runtime takes its archive with it.
		if err := db.DeleteRuntime(ctx, rt.AccountID, rt.ID); err != nil {
			t.Fatal(err)
		}
		if l, _ := s.ListArchivedWorkflows(ctx, vw, ArchiveFilter{}, paging.Page{}); len(l) != 1 || l[0].Name != "deploy" {
			t.Fatalf("after deregistering edge: %+v", l)
		}
	})
}
