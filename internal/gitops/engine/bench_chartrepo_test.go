package engine_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
)

// EnvBenchChartApps names the app count TestChartRepoBenchmark measures ("100"); unset, it is
// skipped.
const EnvBenchChartApps = "FRESHET_ENGINE_BENCH_CHART_APPS"

// TestChartRepoBenchmark measures N automated applications created at once from one chart of
// one HTTP chart repository (served by the test on 127.0.0.1, a range targetRevision), from
// starting the engine until every app is Synced and Healthy; it reports the chart downloads
// and index reads (the goal: one of each).
//
//	FRESHET_TEST_KUBE=1 FRESHET_ENGINE_BENCH_CHART_APPS=100 go test -run TestChartRepoBenchmark -v ./internal/gitops/engine/
func TestChartRepoBenchmark(t *testing.T) {
	spec := os.Getenv(EnvBenchChartApps)
	if spec == "" {
		t.Skip("set " + EnvBenchChartApps + "=100 to run the chart repository benchmark")
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want an app count", EnvBenchChartApps, spec)
	}
	repo := chartrepo.New(t, "demo", "1.0.0", "1.1.0", "1.1.4")
	charts, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	v := newEnv(t, func(o *engine.Options) { o.Charts = charts })
	for i := range n {
		v.upsert(v.chartApp(fmt.Sprintf("chart-%04d", i), repo.URL, "demo", "1.1.*", "  syncPolicy:\n    automated: {prune: true}\n"))
	}
	u := measureStart()
	v.run()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		ready := 0
		for _, s := range v.e.List() {
			if s.Sync == engine.Synced && s.Health.Status == health.Healthy && s.Revision == "1.1.4" {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d applications Synced and Healthy after 10 minutes", ready, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := charts.Stats()
	u.report(t, fmt.Sprintf("%d apps from one chart repository → all Synced+Healthy", n),
		fmt.Sprintf("downloads %d (served %d), index reads %d (served %d)", st.Downloads, repo.Hits("/charts/demo-1.1.4.tgz"), st.IndexFetches, repo.Hits("/index.yaml")))
	if st.Downloads != 1 || repo.Hits("/charts/demo-1.1.4.tgz") != 1 {
		t.Errorf("the chart was downloaded %d times for %d apps", repo.Hits("/charts/demo-1.1.4.tgz"), n)
	}
}
