package ctrlloop

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

var errPermanent = errors.New("permanent")

// TestWork: a failing key is retried with backoff until it succeeds, a permanent failure is
// not retried, a requested requeue comes back, and Work returns once ctx ends.
func TestWork(t *testing.T) {
	q := NewQueue(time.Millisecond, 10*time.Millisecond)
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	reconcile := func(_ context.Context, key string) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch key {
		case "flaky":
			if calls[key] < 3 {
				return 0, errors.New("not yet")
			}
		case "bad":
			return 0, errPermanent
		case "timer":
			if calls[key] == 2 {
				close(done)
			}
			if calls[key] < 2 {
				return 5 * time.Millisecond, nil
			}
		}
		return 0, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		Work(ctx, q, Workers{N: 2, Reconcile: reconcile, Permanent: func(err error) bool { return errors.Is(err, errPermanent) },
			Log: slog.New(slog.DiscardHandler), LogKey: "key"})
		close(returned)
	}()
	for _, k := range []string{"flaky", "bad", "timer"} {
		q.Add(k)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the requeued key never came back")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := calls["flaky"]
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond) // longer than the backoff: a retry of "bad" would show
	cancel()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Work did not return after ctx ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["flaky"] != 3 || calls["bad"] != 1 || calls["timer"] != 2 {
		t.Errorf("calls = %v, want flaky 3 (two retries), bad 1 (permanent), timer 2 (one requeue)", calls)
	}
	if !q.ShuttingDown() {
		t.Error("the queue is not shut down")
	}
}

// TestOn: adds, updates and deletes reach enqueue, a missed delete as the object it wraps.
func TestOn(t *testing.T) {
	var got []any
	h := On(func(o any) { got = append(got, o) })
	h.OnAdd("a", false)
	h.OnUpdate("old", "b")
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: "c"})
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Errorf("enqueued %v, want [a b c]", got)
	}
}
