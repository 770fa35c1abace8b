package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Builds add up per pipeline and day in SQL, on SQLite and PostgreSQL alike: counts by status,
// run durations (only of builds that started and finished), queue waits (only of builds that
// started), days before the window and other accounts left out, one pipeline on its own; and
// the active builds counted by status.
func TestBuildStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		pr := createProject(t, db, a.ID, "web")
		one, two := createPipeline(t, db, a.ID, pr.ID, "one"), createPipeline(t, db, a.ID, pr.ID, "two")
		other := createPipeline(t, db, b.ID, createProject(t, db, b.ID, "web").ID, "one")

		since := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		at := func(day int, h, m int) time.Time {
			return since.AddDate(0, 0, day).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
		}
		add := func(p store.Pipeline, status string, created, started, finished time.Time) {
			t.Helper()
			bl := store.Build{ID: store.NewID(store.PrefixBuild), AccountID: p.AccountID, PipelineID: p.ID, Status: status,
				Variables: "{}", Labels: "{}", CreatedAt: created, StartedAt: started, FinishedAt: finished}
			if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.CreateBuild(ctx, &bl) }); err != nil {
				t.Fatal(err)
			}
		}
		// Day 0, pipeline one: a success of 2 min after 1 min queued, a failure of 4 min after 3.
		add(one, "success", at(0, 9, 0), at(0, 9, 1), at(0, 9, 3))
		add(one, "failed", at(0, 10, 0), at(0, 10, 3), at(0, 10, 7))
		// Day 0, pipeline two: terminated before it started (finished, no duration, no wait).
		add(two, "terminated", at(0, 11, 0), time.Time{}, at(0, 11, 5))
		// Day 2, pipeline one: one running (waited 30 s), one queued.
		add(one, "running", at(2, 8, 0), at(2, 8, 0).Add(30*time.Second), time.Time{})
		add(one, "queued", at(2, 23, 59), time.Time{}, time.Time{})
		// Before the window, and another account's: not counted.
		add(one, "success", at(-1, 23, 0), at(-1, 23, 1), at(-1, 23, 2))
		add(other, "success", at(0, 9, 0), at(0, 9, 1), at(0, 9, 2))

		got, err := db.BuildStats(ctx, a.ID, "", since, "success", "failed")
		if err != nil {
			t.Fatal(err)
		}
		want := []store.BuildDay{
			{PipelineID: one.ID, Day: 0, Total: 2, Finished: 2, Succeeded: 1, Failed: 1, Timed: 2, RunMicros: (6 * time.Minute).Microseconds(), MaxMicros: (4 * time.Minute).Microseconds(), Waited: 2, WaitMicros: (4 * time.Minute).Microseconds()},
			{PipelineID: one.ID, Day: 2, Total: 2, Waited: 1, WaitMicros: (30 * time.Second).Microseconds()},
			{PipelineID: two.ID, Day: 0, Total: 1, Finished: 1},
		}
		if one.ID > two.ID { // ordered by pipeline ID
			want = []store.BuildDay{want[2], want[0], want[1]}
		}
		if len(got) != len(want) {
			t.Fatalf("got %d rows %+v, want %+v", len(got), got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}

		only, err := db.BuildStats(ctx, a.ID, two.ID, since, "success", "failed")
		if err != nil {
			t.Fatal(err)
		}
		if len(only) != 1 || only[0].PipelineID != two.ID || only[0].Total != 1 {
			t.Errorf("pipeline two alone: %+v", only)
		}

		counts, err := db.CountBuilds(ctx, a.ID, "", "queued", "running", "pending-approval")
		if err != nil {
			t.Fatal(err)
		}
		if counts["queued"] != 1 || counts["running"] != 1 || counts["pending-approval"] != 0 || len(counts) != 2 {
			t.Errorf("counts: %v", counts)
		}
		if c, err := db.CountBuilds(ctx, b.ID, one.ID, "queued", "running"); err != nil || len(c) != 0 {
			t.Errorf("another account's pipeline: %v %v", c, err)
		}
	})
}
