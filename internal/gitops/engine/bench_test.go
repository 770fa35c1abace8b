package engine_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/testenv/usage"
)

// EnvBench names the application counts TestRefreshBenchmark measures ("100" or "100,1000");
// unset, the benchmark is skipped.
const EnvBench = "FRESHET_ENGINE_BENCH"

// TestRefreshBenchmark measures, against the loopback cluster and a repository over HTTP:
// the first sync of N applications (one ConfigMap and one Deployment each, each in its own
// directory), a refresh of all N unchanged applications on a warm engine (what every poll
// costs), and the same on a freshly started engine (clone, render, informer lists, one
// dry-run per object). Wall time, CPU seconds and peak RSS of this process are printed.
//
//	FRESHET_TEST_KUBE=1 FRESHET_ENGINE_BENCH=100,1000 go test -run TestRefreshBenchmark -v -timeout 30m ./internal/gitops/engine/
func TestRefreshBenchmark(t *testing.T) {
	spec := os.Getenv(EnvBench)
	if spec == "" {
		t.Skip("set " + EnvBench + "=100 (or 100,1000) to run the refresh benchmark")
	}
	for _, s := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want application counts", EnvBench, spec)
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) { benchRefresh(t, n) })
	}
}

// measured is what the benchmarks measure (package usage).
type measured struct{ u usage.Usage }

func measureStart() measured { return measured{usage.Start()} }

func (m measured) report(t *testing.T, what string, extra string) { m.u.Report(t, what, extra) }

func benchRefresh(t *testing.T, n int) {
	qps := engine.DefaultClientQPS
	if s := os.Getenv(EnvBench + "_QPS"); s != "" {
		qps, _ = strconv.Atoi(s)
	}
	v := newEnv(t, func(o *engine.Options) {
		o.PollInterval = time.Hour
		o.Workers = 8
		o.HealthTimeout = 5 * time.Minute
		o.ClientQPS, o.ClientBurst = float32(qps), 2*qps
	})
	t.Logf("client QPS %d", qps)
	v.restartWith(git.Options{}) // the default RefsTTL: refs are shared by every app
	reps := 1
	if n > 200 {
		reps = 0 // keep the fake node's pod count sane; the Deployment is still compared and assessed
	}
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("apps/app-%04d/cm.yaml", i)] = configMap(fmt.Sprintf("cm-%04d", i), "v1")
		files[fmt.Sprintf("apps/app-%04d/deploy.yaml", i)] = deployment(fmt.Sprintf("web-%04d", i), reps, "")
	}
	v.repo.Commit("main", files, "bench apps")
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("app-%04d", i)
		v.upsert(v.application(names[i], "apps/"+names[i], ""))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// First sync of N apps.
	u := measureStart()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var failed sync.Map
	for _, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := v.e.Sync(ctx, name, engine.SyncOptions{})
			if err != nil || res.Phase != engine.PhaseSucceeded {
				failed.Store(name, fmt.Sprint(err, res))
			}
		})
	}
	wg.Wait()
	failed.Range(func(k, val any) bool { t.Fatalf("sync %s: %v", k, val); return false })
	u.report(t, fmt.Sprintf("first sync of %d apps", n), "")

	// Wait until everything is Healthy (Deployments Available).
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if err := v.e.RefreshAll(ctx); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, s := range v.e.List() {
			if !healthy(s) {
				bad++
			}
		}
		if bad == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d apps not Synced+Healthy after 10m", bad)
		}
		time.Sleep(time.Second)
	}

	// Unchanged refresh on a warm engine: each cycle asks git once for the refs (as a poll
	// after RefsTTL would), the rest comes from caches.
	for round := 1; round <= 3; round++ {
		v.cache.Invalidate(v.repo.URL())
		before, gs := v.e.Stats(), v.cache.Stats()
		u = measureStart()
		if err := v.e.RefreshAll(ctx); err != nil {
			t.Fatal(err)
		}
		after, ga := v.e.Stats(), v.cache.Stats()
		u.report(t, fmt.Sprintf("refresh %d unchanged apps (warm, round %d)", n, round),
			fmt.Sprintf("renders %d, dry-runs %d, ls-remotes %d, fetches %d", after.Renders-before.Renders, after.DryRuns-before.DryRuns, ga.LsRemotes-gs.LsRemotes, ga.Fetches-gs.Fetches))
	}
	for _, s := range v.e.List() {
		if !healthy(s) {
			t.Errorf("%s: %s/%s", s.Name, s.Sync, s.Health.Status)
			break
		}
	}

	// A freshly started engine: empty git cache, no informers, nothing rendered.
	v.restartWith(git.Options{})
	for _, name := range names {
		v.upsert(v.application(name, "apps/"+name, ""))
	}
	u = measureStart()
	if err := v.e.RefreshAll(ctx); err != nil {
		t.Fatal(err)
	}
	st := v.e.Stats()
	u.report(t, fmt.Sprintf("refresh %d unchanged apps (new engine)", n), fmt.Sprintf("renders %d, dry-runs %d", st.Renders, st.DryRuns))
	u = measureStart()
	v.cache.Invalidate(v.repo.URL())
	if err := v.e.RefreshAll(ctx); err != nil {
		t.Fatal(err)
	}
	st2 := v.e.Stats()
	u.report(t, fmt.Sprintf("refresh %d unchanged apps (after restart, 2nd)", n), fmt.Sprintf("renders %d, dry-runs %d", st2.Renders-st.Renders, st2.DryRuns-st.DryRuns))
	synced := 0
	for _, s := range v.e.List() {
		if healthy(s) {
			synced++
		}
	}
	if synced != n {
		t.Errorf("after restart %d of %d apps Synced+Healthy", synced, n)
	}
}
