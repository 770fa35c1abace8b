package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/client"
)

// Item 4: a burst of run requests for one pipeline — a script, a burst of pushes, cron and
// webhooks at once — each queues a build, numbered 1…n with no number twice and none skipped.
// 200 requests at concurrency 16.
func TestFaultConcurrentRunsOfOnePipeline(t *testing.T) {
	const runs, writers = 200, 16
	cp := newControlPlane(t, "server")
	ref := cp.pipeline("burst", "version: '1.0'\nsteps:\n  hello:\n    commands: ['echo hello']\n")

	work := make(chan int, runs)
	for i := range runs {
		work <- i
	}
	close(work)
	var mu sync.Mutex
	var numbers []int64
	var errs []error
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range work {
				b, err := cp.admin.RunPipeline(context.Background(), ref, client.RunRequest{})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					numbers = append(numbers, b.Number)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	row(t, "4", fmt.Sprintf("run requests of one pipeline that failed, %d at concurrency %d (%s)", runs, writers, backend()), len(errs))
	slices.Sort(numbers)
	repeated := len(numbers) - len(slices.Compact(slices.Clone(numbers)))
	if len(errs) > 0 {
		t.Errorf("%d of %d run requests failed; first: %v", len(errs), runs, errs[0])
	}
	if repeated > 0 {
		t.Errorf("%d build numbers given twice", repeated)
	}
	for i, n := range slices.Compact(numbers) {
		if n != int64(i+1) {
			t.Fatalf("build numbers are not 1…%d: %d at position %d", len(numbers), n, i)
		}
	}
}
