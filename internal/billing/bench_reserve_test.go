package billing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// BenchmarkAppCreates100 admits 100 application creates of one account (billing.Reserve, as a
// create through a runtime's app-proxy is admitted before it is forwarded) at an applications
// limit of 3, on each backend: "sequential" makes them one after another (the same work
// without contention: the baseline), "parallel" from 100 goroutines at once. It reports the
// admissions' p50 and p99 latency, how many were admitted, and how many reservations passed
// the limit (must be 0).
func BenchmarkAppCreates100(b *testing.B) {
	cat, err := billing.ParseCatalogue("bench.yaml", []byte("default: apps3\nplans:\n  - name: apps3\n    limits: {applications: 3}\n"))
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range storetest.Backends() {
		for _, mode := range []string{"sequential", "parallel"} {
			b.Run(string(d)+"/"+mode, func(b *testing.B) {
				db := storetest.Open(b, d)
				svc := billing.New(billing.Deps{Store: db, Catalogue: cat})
				ctx := context.Background()
				var lat []time.Duration
				admitted, over := 0, 0
				for b.Loop() {
					b.StopTimer()
					f := newFixture(b, db)
					rt := store.Runtime{ID: store.NewID(store.PrefixRuntime), AccountID: f.account, Name: "edge", Type: "byo", AccessMode: "tunnel",
						TokenPrefix: store.NewID("tok"), Status: "healthy", CreatedAt: time.Now()}
					if err := db.CreateRuntime(ctx, rt); err != nil {
						b.Fatal(err)
					}
					var mu sync.Mutex
					one := func(i int) {
						t0 := time.Now()
						id, err := svc.Reserve(ctx, f.account, billing.Claim{Resource: billing.Applications, RuntimeID: rt.ID, Runtime: rt.Name, Name: fmt.Sprintf("app-%d", i)})
						el := time.Since(t0)
						var le *billing.LimitError
						if err != nil && !errors.As(err, &le) {
							b.Error(err)
						}
						mu.Lock()
						lat = append(lat, el)
						if id != "" {
							admitted++
						}
						mu.Unlock()
					}
					b.StartTimer()
					if mode == "sequential" {
						for i := range 100 {
							one(i)
						}
					} else {
						var wg sync.WaitGroup
						start := make(chan struct{})
						for i := range 100 {
							wg.Go(func() { <-start; one(i) })
						}
						close(start)
						wg.Wait()
					}
					b.StopTimer()
					pending, err := db.PendingApplications(ctx, f.account, time.Now())
					if err != nil {
						b.Fatal(err)
					}
					if len(pending) > 3 {
						over += len(pending) - 3
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
