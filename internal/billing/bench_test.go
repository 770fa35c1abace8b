package billing_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// BenchmarkClaims100 starts 100 builds at once, each claim in its own transaction as the
// pipeline service makes it, on each backend: "baseline" claims without a limit check (what a
// claim cost before billing), "unlimited" admits on a plan without a concurrent-build limit
// (the lock and plan read), "limit-3" admits on a plan of 3. It reports the claims' p50 and p99
// latency, how many were admitted, and how many ran over the limit (must be 0).
func BenchmarkClaims100(b *testing.B) {
	for _, d := range storetest.Backends() {
		for _, mode := range []string{"baseline", "unlimited", "limit-3"} {
			b.Run(string(d)+"/"+mode, func(b *testing.B) {
				db := storetest.Open(b, d)
				var lat []time.Duration
				admitted, over := 0, 0
				for b.Loop() {
					b.StopTimer()
					f := newFixture(b, db)
					plan := "big"
					if mode == "limit-3" {
						plan = "tiny"
					}
					f.setPlan(b, plan)
					ids := f.queue(b, 100)
					ctx := context.Background()
					var mu sync.Mutex
					var wg sync.WaitGroup
					start := make(chan struct{})
					b.StartTimer()
					for _, id := range ids {
						wg.Go(func() {
							<-start
							t0 := time.Now()
							var ok bool
							var err error
							if mode == "baseline" {
								err = db.Tx(ctx, func(tx *store.Tx) error {
									now := time.Now()
									ok, err = tx.ClaimBuild(ctx, f.account, id, "rnr_x", store.NewID("lea"), now.Add(time.Minute), now)
									return err
								})
							} else {
								ok, err = f.claim(ctx, id)
							}
							el := time.Since(t0)
							var le *billing.LimitError
							if err != nil && !errors.As(err, &le) {
								b.Error(err)
							}
							mu.Lock()
							lat = append(lat, el)
							if ok {
								admitted++
							}
							mu.Unlock()
						})
					}
					close(start)
					wg.Wait()
					b.StopTimer()
					running, err := db.CountUse(ctx, f.account, store.UseActiveBuilds, time.Time{}, time.Now())
					if err != nil {
						b.Fatal(err)
					}
					if mode == "limit-3" && running > 3 {
						over += int(running) - 3
					}
					b.StartTimer()
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(admitted)/float64(b.N), "admitted/100")
				b.ReportMetric(float64(over), "over-limit")
			})
		}
	}
}
