// Package ctrlloop is the loop the runtime's Kubernetes controllers (workflows, rollouts,
// events) share: a rate-limited work queue of object keys fed by informers, and workers that
// reconcile one key at a time, retrying failures with a jittered exponential backoff.
//
//	q := ctrlloop.NewQueue(100*time.Millisecond, time.Minute)
//	inf.AddEventHandler(ctrlloop.On(func(o any) { q.Add(key(o)) }))
//	ctrlloop.Work(ctx, q, ctrlloop.Workers{N: 4, Reconcile: c.reconcile, Log: log, LogKey: "rollout"})
package ctrlloop

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Queue is a controller's work queue of namespace/name keys (or keys the controller prefixes).
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a work queue whose failed keys come back after an exponential backoff from
// base to max, spread ±20 % so that many failures do not retry in step.
func NewQueue(base, max time.Duration) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig[string](
		&jittered{workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max)},
		workqueue.TypedRateLimitingQueueConfig[string]{})
}

type jittered struct {
	workqueue.TypedRateLimiter[string]
}

func (j *jittered) When(key string) time.Duration {
	d := j.TypedRateLimiter.When(key)
	return d - d/5 + rand.N(d*2/5+1)
}

// On returns informer handlers that call enqueue with the object of every add, update and
// delete; a delete the informer missed arrives as the object's last known state.
func On(enqueue func(obj any)) cache.ResourceEventHandlerFuncs {
	unwrap := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		enqueue(obj)
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: unwrap, UpdateFunc: func(_, o any) { unwrap(o) }, DeleteFunc: unwrap}
}

// Workers says how Work reconciles keys.
type Workers struct {
	// N workers run at once (at least one).
	N int
	// Reconcile brings key's object one step closer to its spec. A positive duration asks for
	// the key again after it; an error retries it with backoff, unless Permanent says the error
	// will not go away by retrying (the object's status says why, and a change brings a new event).
	Reconcile func(ctx context.Context, key string) (time.Duration, error)
	Permanent func(error) bool
	// Log and LogKey: failures are logged with the key under LogKey.
	Log    *slog.Logger
	LogKey string
}

// Work runs w.N workers on q until ctx ends, then shuts q down and returns once every worker
// has finished its key.
func Work(ctx context.Context, q Queue, w Workers) {
	var wg sync.WaitGroup
	for range max(w.N, 1) {
		wg.Go(func() {
			for next(ctx, q, w) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func next(ctx context.Context, q Queue, w Workers) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	after, err := w.Reconcile(ctx, key)
	if ctx.Err() != nil {
		return true // shutting down: the key is read again at the next start
	}
	switch {
	case err == nil:
		q.Forget(key)
		if after > 0 {
			q.AddAfter(key, after)
		}
	case w.Permanent != nil && w.Permanent(err):
		q.Forget(key)
		w.Log.Info("reconcile refused", w.LogKey, key, "err", err)
	default:
		w.Log.Warn("reconcile failed; retrying", w.LogKey, key, "err", err)
		q.AddRateLimited(key)
	}
	return true
}
