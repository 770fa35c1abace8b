package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/store"
)

// replayOptions size the replay bench.
type replayOptions struct {
	syncs, apps int
	backends    string
}

// replayBench times the replay of recorded syncs into the analytics tables: per backend, a new
// database with syncs recorded syncs (application_syncs, the source every deployment record is
// derived from) of apps applications over 20 runtimes, then analytics.Rebuild with Reset — what
// `freshet admin analytics rebuild --reset` runs — timed, its memory sampled every 100 ms.
func replayBench(pgBase string, o replayOptions) error {
	backends := availableBackends(pgBase, o.backends)
	fmt.Printf("## Analytics: replay of %d recorded syncs of %d applications (`freshet admin analytics rebuild --reset`)\n\n", o.syncs, o.apps)
	fmt.Println("| backend | deployments derived | wall | syncs/s | peak Go heap | peak RSS (before) | load average |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, b := range backends {
		if err := replayBackend(b, pgBase, o); err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
	}
	fmt.Println()
	return nil
}

func replayBackend(backend, pgBase string, o replayOptions) error {
	ctx := context.Background()
	dsn, cleanup, err := freshDSN(backend, pgBase, "replay")
	if err != nil {
		return err
	}
	defer cleanup()
	db, err := store.Open(ctx, dsn, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	al := audit.NewLog(db, nil)
	id := identity.New(identity.Deps{Store: db, Audit: al})
	if _, err := id.Bootstrap(ctx, "bench", "admin@bench.test", adminPassword); err != nil {
		return err
	}
	login, err := id.Login(ctx, "admin@bench.test", adminPassword, "")
	if err != nil {
		return err
	}
	acc := login.Principal.AccountID
	start := time.Now()
	if err := loadSyncs(ctx, db, acc, o); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: %s: recorded %d syncs in %s\n", backend, o.syncs, time.Since(start).Round(time.Millisecond))
	if backend == "postgres" { // as autovacuum would soon after a load this size
		if err := db.Analyze(ctx); err != nil {
			return err
		}
	}

	runtime.GC()
	rssBefore := rssBytes("self")
	var peakHeap, peakRSS uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapInuse)
			peakRSS = max(peakRSS, rssBytes("self"))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	load := loadAverage()
	t0 := time.Now()
	res, err := analytics.Rebuild(ctx, db, analytics.RebuildOptions{AccountID: acc, Reset: true})
	wall := time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if res.Deployments != o.syncs {
		return fmt.Errorf("the rebuild derived %d deployments of %d recorded syncs", res.Deployments, o.syncs)
	}
	fmt.Fprintf(os.Stderr, "bench: %s: rebuilt in %s, load average %s\n", backend, wall.Round(time.Millisecond), loadAverage())
	fmt.Printf("| %s | %d | %s | %.0f | %s | %s (%s) | %s |\n", backend, res.Deployments, wall.Round(time.Second),
		float64(res.Deployments)/wall.Seconds(), mib(peakHeap), mib(peakRSS), mib(rssBefore), load)
	return nil
}

// loadSyncs records o.syncs finished syncs of o.apps applications (20 runtimes, 50 clusters,
// the applications stored with their destinations), finished over the last 365 days in time
// order, each with the runtime's record as its detail: 10 % failed, 3 % rollbacks, a commit
// with a time for the others.
func loadSyncs(ctx context.Context, db *store.DB, accountID string, o replayOptions) error {
	now := time.Now()
	rts := make([]string, 20)
	err := db.Tx(ctx, func(tx *store.Tx) error {
		for i := range rts {
			rts[i] = store.NewID(store.PrefixRuntime)
			r := store.Runtime{ID: rts[i], AccountID: accountID, Name: fmt.Sprintf("rt-%02d", i), Type: "hybrid", AccessMode: "tunnel",
				TokenPrefix: store.NewID("p"), TokenHash: "bench", Status: "healthy", Info: "{}", CreatedAt: now}
			if err := tx.CreateRuntime(ctx, r); err != nil {
				return err
			}
			var apps []store.Application
			for app := i; app < o.apps; app += len(rts) {
				apps = append(apps, store.Application{AccountID: accountID, RuntimeID: rts[i], Name: fmt.Sprintf("app-%05d", app), Project: "default",
					RepoURL: "https://git.example/bench/deploy.git", Path: fmt.Sprintf("apps/app-%05d", app), TargetRevision: "main",
					DestName: fmt.Sprintf("cluster-%02d", app%50), DestNamespace: "ns", Sync: "Synced", Health: "Healthy", Data: "{}"})
			}
			if _, err := tx.ReplaceApplications(ctx, accountID, rts[i], apps); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(4, 4))
	year := int64(365 * 24 * time.Hour)
	const batch = 10000
	for done := 0; done < o.syncs; done += batch {
		ss := make([]store.ApplicationSync, 0, batch)
		for i := done; i < min(done+batch, o.syncs); i++ {
			app := r.IntN(o.apps)
			finished := now.Add(-time.Duration(year - year/int64(o.syncs)*int64(i) - r.Int64N(int64(time.Minute))))
			rec := runtimev1.SyncRecord{ID: int64(i + 1), Revision: fmt.Sprintf("%040x", i), Phase: "Succeeded", InitiatedBy: "automated",
				StartedAt: finished.Add(-time.Minute), FinishedAt: finished}
			switch x := r.IntN(100); {
			case x < 10:
				rec.Phase, rec.Message = "Failed", "one or more objects failed to apply"
			case x < 13:
				rec.InitiatedBy, rec.User = "rollback", "admin@bench.test"
			default:
				lead := 10*time.Minute + time.Duration(r.Int64N(int64(10*24*time.Hour)))
				rec.Commit = &runtimev1.Commit{SHA: rec.Revision, Author: "Ann <ann@bench.test>", Message: "PROJ-" + strconv.Itoa(i%9000+1) + ": change",
					Time: finished.Add(-lead)}
			}
			detail, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			s := store.ApplicationSync{AccountID: accountID, RuntimeID: rts[app%len(rts)], App: fmt.Sprintf("app-%05d", app), SyncID: rec.ID,
				Revision: rec.Revision, Phase: rec.Phase, Message: rec.Message, InitiatedBy: rec.InitiatedBy,
				StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, Detail: string(detail)}
			if c := rec.Commit; c != nil {
				s.CommitAuthor, s.CommitMessage, s.CommitTime = c.Author, c.Message, c.Time
			}
			ss = append(ss, s)
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.InsertSyncs(ctx, ss) }); err != nil {
			return err
		}
	}
	return nil
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
