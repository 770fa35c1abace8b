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

// migrateBefore applies this binary's migrations older than version to db.
func migrateBefore(t *testing.T, db *store.DB, version string) {
	t.Helper()
	before := fstest.MapFS{}
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() >= version {
			break
		}
		data, err := os.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		before["migrations/"+e.Name()] = &fstest.MapFile{Data: data}
	}
	if err := db.MigrateFS(context.Background(), before); err != nil {
		t.Fatal(err)
	}
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
			migrateBefore(t, db, "0009")
			a, _ := seed(t, db, "acme")
			// The project as the schema before 0009 has it (later migrations add columns
			// CreateProject writes).
			pr := store.Project{ID: store.NewID(store.PrefixProject), AccountID: a.ID, Name: "web"}
			if err := db.Exec(ctx, `INSERT INTO projects (id, account_id, name, created_at) VALUES (?, ?, ?, 0)`, pr.ID, pr.AccountID, pr.Name); err != nil {
				t.Fatal(err)
			}
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
			if err := db.MigrateFS(ctx, os.DirFS(".")); err != nil {
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

// A build's log: chunks are appended at the offset where the log ends; a chunk sent again is
// answered as stored; one that starts inside the log and runs past its end, or leaves a gap,
// gets the log's size; one that differs from what it overlaps is a conflict. A chunk an older
// version stored without the size (an append interrupted between its two statements) is not
// part of the log, and the next append at its offset takes its place.
func TestAppendLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		p := createPipeline(t, db, a.ID, createProject(t, db, a.ID, "web").ID, "ci")
		b, err := queueBuild(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			offset  int64
			data    string
			size    int64
			wantErr error
		}{
			{0, "aaa", 3, nil},
			{0, "aaa", 3, nil}, // sent again
			{3, "bbbb", 7, nil},
			{0, "aaabb", 7, nil}, // spans two stored chunks, all stored
			{2, "ab", 7, nil},
			{3, "bbbbcc", 7, store.ErrLogOffset}, // its first 4 bytes are stored
			{0, "aab", 7, store.ErrLogMismatch},
			{5, "bx", 7, store.ErrLogMismatch},
			{5, "bXcc", 7, store.ErrLogMismatch}, // differs in the stored part
			{9, "dd", 7, store.ErrLogOffset},     // a gap
			{7, "cc", 9, nil},
		}
		for _, s := range steps {
			size, err := db.AppendLog(ctx, b.ID, s.offset, []byte(s.data))
			if size != s.size || !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
				t.Fatalf("AppendLog(%d, %q) = %d, %v; want %d, %v", s.offset, s.data, size, err, s.size, s.wantErr)
			}
		}
		if _, err := db.AppendLog(ctx, b.ID, 0, []byte("x")); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("a conflicting chunk is a conflict for the API's error mapping: %v", err)
		}
		// Chunks left without the size that covers them: one that differs from what comes, one
		// identical to it.
		for _, o := range []struct {
			pos  int
			data string
		}{{9, "zz"}, {11, "ee"}} {
			if err := db.Exec(ctx, `INSERT INTO build_log_chunks (build_id, position, data) VALUES (?, ?, ?)`, b.ID, o.pos, []byte(o.data)); err != nil {
				t.Fatal(err)
			}
		}
		if log, err := db.ReadLog(ctx, b.ID, 0, 1<<20); err != nil || string(log) != "aaabbbbcc" {
			t.Fatalf("ReadLog with stray chunks = %q, %v", log, err)
		}
		for _, s := range []struct {
			offset int64
			data   string
			size   int64
		}{{9, "dd", 11}, {11, "ee", 13}} {
			if size, err := db.AppendLog(ctx, b.ID, s.offset, []byte(s.data)); size != s.size || err != nil {
				t.Fatalf("AppendLog(%d, %q) over a stray chunk = %d, %v; want %d", s.offset, s.data, size, err, s.size)
			}
		}
		if log, err := db.ReadLog(ctx, b.ID, 0, 1<<20); err != nil || string(log) != "aaabbbbccddee" {
			t.Fatalf("ReadLog = %q, %v", log, err)
		}
		if log, err := db.ReadLog(ctx, b.ID, 8, 1<<20); err != nil || string(log) != "cddee" {
			t.Fatalf("ReadLog from 8 = %q, %v", log, err)
		}
		if _, err := db.AppendLog(ctx, "bld_missing", 0, []byte("x")); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("AppendLog to a missing build: %v, want ErrNotFound", err)
		}
	})
}

// Uploads of one log racing each other (a retry sent while the first attempt is still being
// stored) all succeed and store each byte once.
func TestAppendLogConcurrentRetries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		p := createPipeline(t, db, a.ID, createProject(t, db, a.ID, "web").ID, "ci")
		b, err := queueBuild(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		var chunks []string
		for i := range 40 {
			c := strings.Repeat(string(rune('a'+i%26)), 1+i%7) + "\n"
			chunks = append(chunks, c)
			want.WriteString(c)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				offset := int64(0)
				for _, c := range chunks {
					size, err := db.AppendLog(ctx, b.ID, offset, []byte(c))
					if err != nil || size < offset+int64(len(c)) {
						t.Errorf("AppendLog(%d, %q) = %d, %v", offset, c, size, err)
						return
					}
					offset += int64(len(c))
				}
			})
		}
		wg.Wait()
		if log, err := db.ReadLog(ctx, b.ID, 0, 1<<20); err != nil || string(log) != want.String() {
			t.Fatalf("ReadLog = %q, %v; want %q", log, err, want.String())
		}
	})
}

// The dispatcher's view of runners' load: the builds each runner holds a lease on, across
// accounts (RunnerLeases), and one runner's within its account (LeasedBuilds). Queued and
// finished builds hold none.
func TestRunnerLeases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		pa := createPipeline(t, db, a.ID, createProject(t, db, a.ID, "web").ID, "ci")
		pb := createPipeline(t, db, b.ID, createProject(t, db, b.ID, "web").ID, "ci")
		now := time.Now()
		claim := func(p store.Pipeline, runner string) store.Build {
			t.Helper()
			bl, err := queueBuild(ctx, db, p)
			if err != nil {
				t.Fatal(err)
			}
			if runner != "" {
				if ok, err := db.ClaimBuild(ctx, p.AccountID, bl.ID, runner, store.NewID(store.PrefixLease), now.Add(time.Minute), now); !ok || err != nil {
					t.Fatalf("ClaimBuild = %v, %v", ok, err)
				}
			}
			return bl
		}
		r1a, r1b := claim(pa, "run_1"), claim(pa, "run_1")
		r2 := claim(pb, "run_2")
		claim(pa, "") // queued
		done := claim(pa, "run_1")
		if ok, err := db.SetBuildStatus(ctx, a.ID, done.ID, "", nil, "success", "", now); !ok || err != nil {
			t.Fatalf("SetBuildStatus = %v, %v", ok, err)
		}
		leases, err := db.RunnerLeases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(leases) != 2 || !slices.Equal(leases["run_1"], []string{r1a.ID, r1b.ID}) || !slices.Equal(leases["run_2"], []string{r2.ID}) {
			t.Fatalf("RunnerLeases = %v", leases)
		}
		got, err := db.LeasedBuilds(ctx, a.ID, "run_1")
		if err != nil || len(got) != 2 || got[0].ID != r1a.ID || got[1].ID != r1b.ID {
			t.Fatalf("LeasedBuilds(acme, run_1) = %+v, %v", got, err)
		}
		if got, err := db.LeasedBuilds(ctx, b.ID, "run_1"); err != nil || len(got) != 0 {
			t.Fatalf("LeasedBuilds(globex, run_1) = %+v, %v; want none", got, err)
		}
	})
}

// RequeueBuild requeues a build and appends its marker to the log in one transaction: the next
// attempt, claimed after it, starts its log after the marker and appends there. A stale lease
// changes nothing, marker included.
func TestRequeueBuildAppendsItsMarker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		p := createPipeline(t, db, a.ID, createProject(t, db, a.ID, "web").ID, "ci")
		bl, err := queueBuild(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		lease := store.NewID(store.PrefixLease)
		if ok, err := db.ClaimBuild(ctx, a.ID, bl.ID, "run_1", lease, now.Add(time.Minute), now); !ok || err != nil {
			t.Fatalf("ClaimBuild = %v, %v", ok, err)
		}
		if _, err := db.AppendLog(ctx, bl.ID, 0, []byte("line 1\n")); err != nil {
			t.Fatal(err)
		}
		marker := []byte("\n[freshet] lease expired; requeued\n")
		if ok, _, err := db.RequeueBuild(ctx, a.ID, bl.ID, "lse_stale", "stale", marker); ok || err != nil {
			t.Fatalf("RequeueBuild under a stale lease = %v, %v; want false, nil", ok, err)
		}
		ok, at, err := db.RequeueBuild(ctx, a.ID, bl.ID, lease, "lease expired", marker)
		if !ok || err != nil || at != 7 {
			t.Fatalf("RequeueBuild = %v, %d, %v; want true, 7, nil", ok, at, err)
		}
		got, err := db.GetBuild(ctx, a.ID, bl.ID)
		if err != nil || got.Status != "queued" || got.LogSize != 7+int64(len(marker)) {
			t.Fatalf("after the requeue: %s, log size %d, %v; want queued, %d", got.Status, got.LogSize, err, 7+len(marker))
		}
		// The next attempt continues the log where the claim finds it ending.
		if ok, err := db.ClaimBuild(ctx, a.ID, bl.ID, "run_2", store.NewID(store.PrefixLease), now.Add(time.Minute), now); !ok || err != nil {
			t.Fatalf("ClaimBuild again = %v, %v", ok, err)
		}
		if _, err := db.AppendLog(ctx, bl.ID, got.LogSize, []byte("line 1\n")); err != nil {
			t.Fatalf("the next attempt's first chunk: %v", err)
		}
		want := "line 1\n" + string(marker) + "line 1\n"
		if log, err := db.ReadLog(ctx, bl.ID, 0, 1<<20); err != nil || string(log) != want {
			t.Fatalf("ReadLog = %q, %v; want %q", log, err, want)
		}
	})
}
