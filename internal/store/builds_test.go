package store_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func queueBuild(ctx context.Context, db *store.DB, p store.Pipeline) (store.Build, error) {
	b := store.Build{ID: store.NewID(store.PrefixBuild), AccountID: p.AccountID, PipelineID: p.ID, Status: "queued",
		Variables: "{}", Labels: "{}", CreatedAt: time.Now()}
	err := db.Tx(ctx, func(tx *store.Tx) error { return tx.CreateBuild(ctx, &b) })
	return b, err
}

// Builds of one pipeline queued at once get consecutive numbers, none twice and none skipped;
// each pipeline counts on its own, a build that rolls back takes no number, and a pipeline of
// another account is not found.
func TestBuildNumbersAreConsecutiveUnderConcurrency(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		pr := createProject(t, db, a.ID, "web")
		one, two := createPipeline(t, db, a.ID, pr.ID, "one"), createPipeline(t, db, a.ID, pr.ID, "two")

		const builds, workers = 60, 16
		work := make(chan store.Pipeline, 2*builds)
		for range builds {
			work <- one
			work <- two
		}
		close(work)
		var mu sync.Mutex
		got := map[string][]int64{}
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for p := range work {
					bl, err := queueBuild(ctx, db, p)
					if err != nil {
						t.Errorf("queue a build of %s: %v", p.Name, err)
						continue
					}
					mu.Lock()
					got[p.ID] = append(got[p.ID], bl.Number)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, p := range []store.Pipeline{one, two} {
			ns := got[p.ID]
			slices.Sort(ns)
			for i, n := range ns {
				if n != int64(i+1) {
					t.Fatalf("pipeline %s: numbers %v, want 1…%d", p.Name, ns, builds)
				}
			}
		}

		// A build that rolls back gives its number back.
		rollback := errors.New("rolled back")
		err := db.Tx(ctx, func(tx *store.Tx) error {
			bl := store.Build{ID: store.NewID(store.PrefixBuild), AccountID: a.ID, PipelineID: one.ID, Status: "queued", Variables: "{}", Labels: "{}"}
			if err := tx.CreateBuild(ctx, &bl); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if bl, err := queueBuild(ctx, db, one); err != nil || bl.Number != builds+1 {
			t.Fatalf("after a rollback: number %d, %v, want %d", bl.Number, err, builds+1)
		}
		// Another account's pipeline is not found.
		other := one
		other.AccountID = b.ID
		if _, err := queueBuild(ctx, db, other); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("a build of another account's pipeline: %v, want ErrNotFound", err)
		}
	})
}

// Migrating a database whose pipelines have builds already continues their numbers after the
// highest one.
func TestBuildNumbersContinueAfterMigration(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, err := store.OpenUnmigrated(ctx, storetest.DSN(t, d))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			all := os.DirFS(".")
			before := fstest.MapFS{}
			entries, err := os.ReadDir("migrations")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() >= "0007" {
					break
				}
				data, err := os.ReadFile("migrations/" + e.Name())
				if err != nil {
					t.Fatal(err)
				}
				before["migrations/"+e.Name()] = &fstest.MapFile{Data: data}
			}
			if err := db.MigrateFS(ctx, before); err != nil {
				t.Fatal(err)
			}
			a, _ := seed(t, db, "acme")
			pr := createProject(t, db, a.ID, "web")
			used, fresh := createPipeline(t, db, a.ID, pr.ID, "used"), createPipeline(t, db, a.ID, pr.ID, "fresh")
			for _, n := range []int{1, 2, 7} { // a gap: numbers deleted builds had stay used
				cols := strings.Repeat(", ''", 14)
				if err := db.Exec(ctx, `INSERT INTO builds (id, account_id, pipeline_id, number, status, trigger_type, trigger_id, triggered_by,
					repo, branch, sha, commit_message, commit_author, variables, spec_yaml, labels, runner_id, lease_id,
					lease_expires, attempt, restart_of, reason, log_size, created_at, started_at, finished_at)
					VALUES (?, ?, ?, ?`+cols+`, 0, 0, '', '', 0, 0, 0, 0)`, store.NewID(store.PrefixBuild), a.ID, used.ID, n); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.MigrateFS(ctx, all); err != nil {
				t.Fatal(err)
			}
			if b, err := queueBuild(ctx, db, used); err != nil || b.Number != 8 {
				t.Fatalf("next build of a pipeline with builds 1, 2, 7: number %d, %v, want 8", b.Number, err)
			}
			if b, err := queueBuild(ctx, db, fresh); err != nil || b.Number != 1 {
				t.Fatalf("first build of a pipeline without builds: number %d, %v, want 1", b.Number, err)
			}
		})
	}
}
