package appset_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/testenv/usage"
)

// EnvBench names the application count TestApplicationSetBenchmark generates ("500"); unset,
// it is skipped.
const EnvBench = "FRESHET_APPSET_BENCH"

// TestApplicationSetBenchmark measures an ApplicationSet whose git directory generator yields
// N directories (one ConfigMap each, one repository): from handing it to the controller until
// all N generated applications (automated sync) are Synced, against the loopback cluster.
//
//	FRESHET_TEST_KUBE=1 FRESHET_APPSET_BENCH=500 go test -run TestApplicationSetBenchmark -v ./internal/gitops/appset/
func TestApplicationSetBenchmark(t *testing.T) {
	spec := os.Getenv(EnvBench)
	if spec == "" {
		t.Skip("set " + EnvBench + "=500 to run the ApplicationSet benchmark")
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want an application count", EnvBench, spec)
	}
	v := newCenv(t)
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("d%04d", i)
		files["addons/"+name+"/cm.yaml"] = cm("bench-" + name)
	}
	v.repo.Commit("main", files, "addons")
	u := usage.Start()
	v.put(dirSet)
	deadline := time.Now().Add(15 * time.Minute)
	for {
		synced := 0
		gen := v.e.Generated("addons")
		for _, name := range gen {
			if s, err := v.e.Status(name); err == nil && s.Sync == engine.Synced {
				synced++
			}
		}
		if synced == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d generated applications Synced after 15 minutes (%d generated)", synced, n, len(gen))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s, _ := v.ctl.Status("addons")
	u.Report(t, fmt.Sprintf("ApplicationSet: git directory generator, %d apps → all Synced", n), fmt.Sprintf("renders %d, generated at %s", v.e.Stats().Renders, s.GeneratedAt.Format(time.TimeOnly)))
}
