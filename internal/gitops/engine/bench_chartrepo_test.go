package engine_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// EnvBenchChartApps names the app count TestChartRepoBenchmark measures ("100"); unset, it is
// skipped.
const EnvBenchChartApps = "FRESHET_ENGINE_BENCH_CHART_APPS"

// TestChartRepoBenchmark measures N automated applications created at once from one chart of
// one HTTP chart repository (served by the test on 127.0.0.1, a range targetRevision), from
// starting the engine until every app is Synced and Healthy; it reports the chart downloads
// and index reads and fails unless the chart was downloaded once.
//
//	FRESHET_TEST_KUBE=1 FRESHET_ENGINE_BENCH_CHART_APPS=100 go test -run TestChartRepoBenchmark -v ./internal/gitops/engine/
func TestChartRepoBenchmark(t *testing.T) {
	n := benchChartApps(t)
	repo := chartrepo.New(t, "demo", "1.0.0", "1.1.0", "1.1.4")
	charts := benchChartCache(t)
	runChartBenchmark(t, n, charts, repo.URL, "HTTP chart repository", func(st helmrepo.Stats) (string, bool) {
		served := repo.Hits("/charts/demo-1.1.4.tgz")
		return fmt.Sprintf("downloads %d (served %d), index reads %d (served %d)", st.Downloads, served, st.IndexFetches, repo.Hits("/index.yaml")),
			st.Downloads == 1 && served == 1
	})
}

// TestOCIChartBenchmark is TestChartRepoBenchmark with the chart in the loopback OCI registry
// (TLS from its own CA, basic auth; pushed with the Helm SDK): one tag list, one pull.
//
//	FRESHET_TEST_KUBE=1 FRESHET_TEST_CONTAINERS=1 FRESHET_ENGINE_BENCH_CHART_APPS=100 go test -run TestOCIChartBenchmark -v ./internal/gitops/engine/
func TestOCIChartBenchmark(t *testing.T) {
	n := benchChartApps(t)
	reg := containers.Registry(t)
	url := chartrepo.PushOCI(t, reg, "bench/charts", "demo", "1.0.0", "1.1.0", "1.1.4")
	charts := benchChartCache(t)
	cred := git.Credentials{Username: reg.Username, Password: reg.Password, CABundle: reg.CACert}
	runChartBenchmark(t, n, charts, url, "OCI registry", func(st helmrepo.Stats) (string, bool) {
		return fmt.Sprintf("pulls %d, tag lists %d", st.Downloads, st.IndexFetches), st.Downloads == 1
	}, func(o *engine.Options) { o.Credentials = func(string) git.Credentials { return cred } })
}

func benchChartApps(t *testing.T) int {
	spec := os.Getenv(EnvBenchChartApps)
	if spec == "" {
		t.Skip("set " + EnvBenchChartApps + "=100 to run the chart benchmarks")
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want an app count", EnvBenchChartApps, spec)
	}
	return n
}

func benchChartCache(t *testing.T) *helmrepo.Cache {
	charts, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	return charts
}

// runChartBenchmark creates n automated apps of chart demo 1.1.* from repoURL at once, starts
// the engine, waits until all are Synced and Healthy at 1.1.4 and reports; stats describes
// the network work and says whether the chart was fetched once.
func runChartBenchmark(t *testing.T, n int, charts *helmrepo.Cache, repoURL, what string, stats func(helmrepo.Stats) (string, bool), opts ...envOption) {
	v := newEnv(t, append([]envOption{func(o *engine.Options) { o.Charts = charts }}, opts...)...)
	for i := range n {
		v.upsert(v.chartApp(fmt.Sprintf("chart-%04d", i), repoURL, "demo", "1.1.*", "  syncPolicy:\n    automated: {prune: true}\n"))
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
	desc, once := stats(charts.Stats())
	u.report(t, fmt.Sprintf("%d apps from one %s → all Synced+Healthy", n, what), desc)
	if !once {
		t.Errorf("%d apps: the chart was not fetched exactly once: %s", n, desc)
	}
}
