package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// envBench=1 (with FRESHET_TEST_REAL_NODE=1) runs TestBenchRealNodeStepStart, which prints the
// BENCH lines docs/benchmarks.md records.
const envBench = "FRESHET_KUBE_BENCH"

// firstByte records when the first output arrives.
type firstByte struct {
	mu    sync.Mutex
	at    time.Time
	bytes bytes.Buffer
}

func (f *firstByte) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() && len(p) > 0 {
		f.at = time.Now()
	}
	return f.bytes.Write(p)
}

// TestBenchRealNodeStepStart measures a step's start on the real node: from Run to the step's
// first output line, the image present on the node (p50/p90 of 15 sequential steps in one
// workspace), and the whole Run of an `echo` step.
func TestBenchRealNodeStepStart(t *testing.T) {
	if os.Getenv(envBench) != "1" || !realNode() {
		t.Skipf("set %s=1 and FRESHET_TEST_REAL_NODE=1", envBench)
	}
	e := newTestEnv(t)
	k := e.executor(t, Options{})
	ws := prepare(t, e, k, "bench", nil)
	step := executor.Step{Name: "start", Image: e.image(), Commands: []string{"echo started"}}
	run(t, k, ws, step) // the image is on the node from here on
	const runs = 15
	var first, whole []time.Duration
	for i := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), testBound)
		out := &firstByte{}
		t0 := time.Now()
		res, err := k.Run(ctx, ws, executor.Step{Name: fmt.Sprintf("start-%d", i), Image: e.image(), Commands: []string{"echo started"}}, out)
		cancel()
		if err != nil || !res.Succeeded() || out.at.IsZero() {
			t.Fatalf("run %d: %+v %v %q", i, res, err, out.bytes.String())
		}
		first = append(first, out.at.Sub(t0))
		whole = append(whole, time.Since(t0))
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))].Round(time.Millisecond)
	}
	fmt.Printf("BENCH real-node step-start first-output p50=%s p90=%s (n=%d)\n", pct(first, .5), pct(first, .9), runs)
	fmt.Printf("BENCH real-node step-run whole p50=%s p90=%s (n=%d)\n", pct(whole, .5), pct(whole, .9), runs)
}
