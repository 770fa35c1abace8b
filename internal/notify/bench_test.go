package notify_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/notify"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// TestBenchEventToDelivered (make bench-notify, FRESHET_NOTIFY_BENCH=N events, default 300):
// the time from an event stored on the bus to its webhook post received by a real HTTP server
// on loopback, one event at a time, through the consumer, the queue and the sender as the
// server runs them. It prints BENCH lines and asserts nothing about time.
func TestBenchEventToDelivered(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FRESHET_NOTIFY_BENCH"))
	if n <= 0 {
		t.Skip("FRESHET_NOTIFY_BENCH is not set")
	}
	eachBackend(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		e := newEnv(t, d, nil)
		rc := newReceiver(t, 0, 0)
		e.channel(t, notify.ChannelSpec{Name: "hook", Kind: notify.KindWebhook, URL: rc.srv.URL, Secret: "bench"})
		e.subscribe(t, notify.SubscriptionSpec{Channel: "hook", Events: []string{notify.EventDeployment}})
		b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); e.svc.Run(rctx, b) }()
		t.Cleanup(func() { cancel(); <-done })
		e.runSender(t)
		var lat []time.Duration
		for i := range n {
			app := "app-" + strconv.Itoa(i)
			start := time.Now()
			if err := bus.Publish(ctx, b, "freshet."+e.account+".gitops.sync-finished", "gitops-sync-finished/rt/"+app+"/1",
				runtimes.SyncFinished{AccountID: e.account, RuntimeID: "rt_1", Runtime: "prod", Application: app, SyncID: 1, Phase: "Succeeded", FinishedAt: start}); err != nil {
				t.Fatal(err)
			}
			for len(rc.got()) < i+1 {
				if time.Since(start) > 30*time.Second {
					t.Fatalf("event %d not delivered", i)
				}
				time.Sleep(200 * time.Microsecond)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
		fmt.Printf("BENCH notify event→delivered backend=%s events=%d p50=%v p99=%v max=%v\n", d, n,
			q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	})
}
