package runtimes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// The Delivery Pipelines runs of the last days, counted from the workflow archive per UTC day and
// phase: a retried workflow once (its last finish), another account's not at all, days outside
// the window left out; a bad days value and a principal whose rules limit workflows refused.
func TestWorkflowRunStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		rt, _ := seedRuntime(t, s, "acme", "edge")
		other, _ := seedRuntime(t, s, "globex", "edge")
		now := time.Now().UTC()
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		report := func(r Runtime, evs ...runtimev1.AppEvent) {
			t.Helper()
			if _, err := s.Report(ctx, r, runtimev1.ReportRequest{Events: evs}); err != nil {
				t.Fatal(err)
			}
		}
		report(rt,
			finishedWorkflow("a", "uid-a", "Succeeded", today.Add(time.Minute)),
			finishedWorkflow("b", "uid-b", "Failed", today.Add(2*time.Minute)),
			finishedWorkflow("c", "uid-c", "Error", today.AddDate(0, 0, -2).Add(time.Hour)),
			finishedWorkflow("d", "uid-d", "Failed", today.AddDate(0, 0, -2).Add(2*time.Hour)),
			finishedWorkflow("old", "uid-old", "Succeeded", today.AddDate(0, 0, -20)),
		)
		// d retried: it succeeded later the same day; counted once, as its last finish.
		report(rt, finishedWorkflow("d", "uid-d", "Succeeded", today.AddDate(0, 0, -2).Add(3*time.Hour)))
		report(other, finishedWorkflow("x", "uid-x", "Failed", today.Add(time.Minute)))

		st, err := s.WorkflowRunStats(ctx, viewer(rt.AccountID), 14)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Days) != 14 || !st.Since.Equal(today.AddDate(0, 0, -13)) || !st.Days[13].Day.Equal(today) {
			t.Fatalf("window: since %s, %d days, last %v", st.Since, len(st.Days), st.Days[len(st.Days)-1].Day)
		}
		want := map[int]WorkflowRunDay{13: {Succeeded: 1, Failed: 1}, 11: {Succeeded: 1, Errored: 1}}
		for i, d := range st.Days {
			w := want[i]
			if d.Succeeded != w.Succeeded || d.Failed != w.Failed || d.Errored != w.Errored {
				t.Errorf("day %d (%s): %+v, want %+v", i, d.Day.Format(time.DateOnly), d, w)
			}
		}
		if st, err := s.WorkflowRunStats(ctx, viewer(rt.AccountID), 30); err != nil || st.Days[9].Succeeded != 1 {
			t.Fatalf("30 days: the one 20 days ago: %+v, %v", st.Days[9], err)
		}
		for _, days := range []int{0, MaxWorkflowStatsDays + 1} {
			if _, err := s.WorkflowRunStats(ctx, viewer(rt.AccountID), days); !errors.As(err, new(*errdefs.FieldError)) {
				t.Fatalf("days %d: %v", days, err)
			}
		}
		bound := viewer(rt.AccountID)
		bound.Rules = rbac.NewRules([]rbac.Kind{rbac.KindWorkflows}, nil)
		if _, err := s.WorkflowRunStats(ctx, bound, 14); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("a principal whose rules limit workflows: %v", err)
		}
	})
}

func TestParseWorkflowStatsDays(t *testing.T) {
	for v, want := range map[string]int{"": DefaultWorkflowStatsDays, "1": 1, "90": 90} {
		if n, err := ParseWorkflowStatsDays(v); err != nil || n != want {
			t.Errorf("%q: %d, %v", v, n, err)
		}
	}
	for _, v := range []string{"0", "91", "x", "-1", "1.5"} {
		if _, err := ParseWorkflowStatsDays(v); !errors.As(err, new(*errdefs.FieldError)) {
			t.Errorf("%q: %v", v, err)
		}
	}
}
