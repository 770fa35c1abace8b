package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Build statistics cover every day of the window (today last, UTC), count the builds queued
// now, narrow to one pipeline or split per pipeline, and refuse a window out of range (naming
// the field) and a principal who may not read pipelines.
func TestBuildStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		f.pipeline(t, "web", "ci", pipeline.Config{})
		f.pipeline(t, "api", "deploy", pipeline.Config{})
		for _, ref := range []string{"web/ci", "web/ci", "api/deploy"} {
			if _, err := f.svc.Run(ctx, f.p, ref, pipeline.RunInput{Branch: "main"}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := f.svc.BuildStats(ctx, f.p, "", 7, true)
		if err != nil {
			t.Fatal(err)
		}
		today := time.Now().UTC().Format(time.DateOnly)
		if len(st.Days) != 7 || st.Days[6].Date.Format(time.DateOnly) != today || st.Days[6].Total != 3 || st.Queued != 3 || st.Running != 0 {
			t.Fatalf("stats %+v", st)
		}
		if !st.Since.Equal(st.Days[0].Date) || st.Days[0].Date.AddDate(0, 0, 6) != st.Days[6].Date {
			t.Errorf("window %v: days %v … %v", st.Since, st.Days[0].Date, st.Days[6].Date)
		}
		if len(st.Pipelines) != 2 {
			t.Errorf("per pipeline: %+v", st.Pipelines)
		}
		one, err := f.svc.BuildStats(ctx, f.p, "web/ci", 1, false)
		if err != nil || len(one.Days) != 1 || one.Days[0].Total != 2 || one.Queued != 2 || one.Pipelines != nil {
			t.Errorf("web/ci alone: %+v %v", one, err)
		}
		if _, err := f.svc.BuildStats(ctx, f.p, "web/nope", 7, false); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("unknown pipeline: %v", err)
		}
		for _, d := range []int{0, pipeline.MaxStatsDays + 1} {
			if _, err := f.svc.BuildStats(ctx, f.p, "", d, false); errdefs.Field(err) != "days" {
				t.Errorf("days=%d: %v, want an invalid argument naming days", d, err)
			}
		}
		if _, err := pipeline.ParseStatsDays("a week"); errdefs.Field(err) != "days" {
			t.Errorf("ParseStatsDays: %v", err)
		}
		if n, err := pipeline.ParseStatsDays(""); err != nil || n != pipeline.DefaultStatsDays {
			t.Errorf("ParseStatsDays(\"\") = %d, %v", n, err)
		}
		nobody := rbac.Principal{AccountID: f.p.AccountID, Email: "x@acme.test", Role: "nobody"}
		if _, err := f.svc.BuildStats(ctx, nobody, "", 7, false); !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("a principal without a role: %v", err)
		}
	})
}
