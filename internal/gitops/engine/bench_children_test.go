package engine_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
)

// EnvBenchAppOfApps names the child counts TestAppOfAppsBenchmark measures ("100"); unset,
// it is skipped.
const EnvBenchAppOfApps = "FRESHET_ENGINE_BENCH_APP_OF_APPS"

// TestAppOfAppsBenchmark measures an app of apps against the loopback cluster: one parent
// rendering N automated child Applications (one ConfigMap each, all from one directory of one
// repository), from the parent's sync until the parent and every child are Synced and Healthy.
//
//	FRESHET_TEST_KUBE=1 FRESHET_ENGINE_BENCH_APP_OF_APPS=100 go test -run TestAppOfAppsBenchmark -v ./internal/gitops/engine/
func TestAppOfAppsBenchmark(t *testing.T) {
	spec := os.Getenv(EnvBenchAppOfApps)
	if spec == "" {
		t.Skip("set " + EnvBenchAppOfApps + "=100 to run the app-of-apps benchmark")
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a child count", EnvBenchAppOfApps, spec)
	}
	v := newEnv(t)
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("kid-%04d", i)
		files["kids/"+name+"/cm.yaml"] = configMap(name, strconv.Itoa(i))
		files["root/"+name+".yaml"] = v.childApp(name, "kids/"+name, "default", true)
	}
	v.repo.Commit("main", files, "kids")
	v.upsert(v.application("root", "root", "  syncPolicy:\n    automated: {prune: true}\n"))
	u := measureStart()
	v.run()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		ready := 0
		for _, s := range v.e.List() {
			if s.Sync == engine.Synced && s.Health.Status == health.Healthy {
				ready++
			}
		}
		if ready == n+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d applications Synced and Healthy after 10 minutes", ready, n+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	u.report(t, fmt.Sprintf("app of apps: parent + %d children → all Synced+Healthy", n), strings.TrimSpace(fmt.Sprintf("renders %d", v.e.Stats().Renders)))
}
