package container

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// The container executor's benchmark (make bench-containers, part of make bench): it prints
// BENCH lines that docs/benchmarks.md records. FRESHET_CONTAINERS_BENCH=1 runs it.
const envBench = "FRESHET_CONTAINERS_BENCH"

func benchOnly(t *testing.T) {
	if os.Getenv(envBench) != "1" {
		t.Skipf("set %s=1 to run the container executor's benchmark", envBench)
	}
}

// firstByte records when the first byte was written.
type firstByte struct {
	once sync.Once
	at   time.Time
}

func (f *firstByte) Write(p []byte) (int, error) {
	if len(p) > 0 && !bytes.HasPrefix(p, []byte(executor.NoticePrefix)) {
		f.once.Do(func() { f.at = time.Now() })
	}
	return len(p), nil
}

func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestBenchStepStart: from Run to the step's first output line, image present, against plain
// `podman run` of the same image on the same storage, interleaved.
func TestBenchStepStart(t *testing.T) {
	benchOnly(t)
	e := newEnv(t)
	e.pull(t, containers.ImageBusybox)
	image := e.reg.Ref(containers.ImageBusybox)
	c := e.executor(t, Options{})
	ctx := context.Background()
	ws, err := c.Prepare(ctx, executor.Build{ID: "bench-start"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Cleanup(ctx, ws)
	const runs = 20
	var ours, podman []time.Duration
	for i := range runs + 1 {
		var fb firstByte
		start := time.Now()
		res, err := c.Run(ctx, ws, executor.Step{Name: "start", Image: image, Commands: []string{"echo first"}}, &fb)
		if err != nil || !res.Succeeded() {
			t.Fatalf("run: %+v %v", res, err)
		}
		cmd := exec.Command("podman", "run", "--rm", "--init", image, "sh", "-c", "echo first")
		cmd.Env = e.eng.PodmanEnv
		out, _ := cmd.StdoutPipe()
		pstart := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := io.ReadFull(out, b); err != nil {
			t.Fatalf("podman run: %v", err)
		}
		pd := time.Since(pstart)
		_, _ = io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("podman run: %v", err)
		}
		if i == 0 {
			continue // warm-up
		}
		ours, podman = append(ours, fb.at.Sub(start)), append(podman, pd)
	}
	fmt.Printf("BENCH step-start container-executor p50=%s p99=%s (n=%d)\n", pct(ours, .5).Round(time.Millisecond), pct(ours, .99).Round(time.Millisecond), runs)
	fmt.Printf("BENCH step-start podman-run         p50=%s p99=%s (n=%d)\n", pct(podman, .5).Round(time.Millisecond), pct(podman, .99).Round(time.Millisecond), runs)
	fmt.Printf("BENCH step-start overhead p50=%s\n", (pct(ours, .5) - pct(podman, .5)).Round(time.Millisecond))
}

// TestBenchRebuild: the second build of an unchanged Dockerfile (layer cache).
func TestBenchRebuild(t *testing.T) {
	benchOnly(t)
	e := newEnv(t)
	e.pull(t, containers.ImageBusybox)
	image := e.reg.Ref(containers.ImageBusybox)
	c := e.executor(t, Options{})
	ctx := context.Background()
	ws, err := c.Prepare(ctx, executor.Build{ID: "bench-build"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Cleanup(ctx, ws)
	df := fmt.Sprintf(`printf 'FROM %s\nRUN echo %d > /a\nRUN seq 1 1000 > /b\nCMD ["cat", "/a"]\n' > Dockerfile`, image, time.Now().UnixNano())
	if res, err := c.Run(ctx, ws, executor.Step{Name: "write", Image: image, Commands: []string{df}}, io.Discard); err != nil || !res.Succeeded() {
		t.Fatalf("write: %+v %v", res, err)
	}
	var times []time.Duration
	for i := range 3 {
		var out bytes.Buffer
		start := time.Now()
		res, err := c.Build(ctx, ws, executor.BuildSpec{Name: "b", ContextDir: VolumePath, Tags: []string{"freshet-bench/rebuild:v1"}}, &out)
		if err != nil || res.Message != "" {
			t.Fatalf("build %d: %+v %v\n%s", i, res, err, out.String())
		}
		times = append(times, time.Since(start))
	}
	fmt.Printf("BENCH build first=%s second=%s third=%s (unchanged Dockerfile: layer cache)\n",
		times[0].Round(time.Millisecond), times[1].Round(time.Millisecond), times[2].Round(time.Millisecond))
}

// TestBenchConcurrentBuilds: 20 builds of 20 steps each at once on one executor (one runner):
// all complete, and nothing is left on the engine.
func TestBenchConcurrentBuilds(t *testing.T) {
	benchOnly(t)
	e := newEnv(t)
	e.pull(t, containers.ImageBusybox)
	image := e.reg.Ref(containers.ImageBusybox)
	c := e.executor(t, Options{Runner: "bench-concurrent"})
	ctx := context.Background()
	const builds, steps = 20, 20
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for b := range builds {
		wg.Go(func() {
			ws, err := c.Prepare(ctx, executor.Build{ID: fmt.Sprintf("bench-%d", b)})
			if err != nil {
				failed.Add(1)
				t.Errorf("prepare: %v", err)
				return
			}
			defer func() {
				if err := c.Cleanup(ctx, ws); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}()
			for s := range steps {
				var out bytes.Buffer
				res, err := c.Run(ctx, ws, executor.Step{Name: fmt.Sprintf("s%d", s), Image: image,
					Commands: []string{fmt.Sprintf(`echo "build %d step %d" >> log`, b, s), "cf_export LAST=" + fmt.Sprint(s)}}, &out)
				if err != nil || !res.Succeeded() {
					failed.Add(1)
					t.Errorf("build %d step %d: %+v %v %s", b, s, res, err, out.String())
					return
				}
			}
			ok.Add(1)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	running, stored, err := c.Leftovers(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("BENCH concurrent builds=%d steps=%d completed=%d failed=%d in %s (%.1f steps/s); left: containers+volumes+networks=%d %s\n",
		builds, steps, ok.Load(), failed.Load(), elapsed.Round(time.Second), float64(builds*steps)/elapsed.Seconds(), len(running)+len(stored),
		strings.Join(append(running, stored...), ", "))
	if ok.Load() != builds || len(running)+len(stored) > 0 {
		t.Errorf("completed %d of %d; left %v %v", ok.Load(), builds, running, stored)
	}
}
