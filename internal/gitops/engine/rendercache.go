package engine

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

// renderCache keeps render results by (repository, commit, source options, and — for Helm and
// Kustomize env substitution — the app name and namespace), so applications that render the
// same thing share one render, and an unchanged commit is never rendered twice. Concurrent
// misses for one key share one render. Entries are dropped after ttl (Argo CD caches manifests
// 24 h) or when the cache exceeds max entries (least recently used first). Results are
// read-only: the engine copies objects before changing them.
type renderCache struct {
	max int
	ttl time.Duration

	mu      sync.Mutex
	entries map[string]*renderEntry
	flight  singleflight.Group
	renders int64 // renders performed (for tests and benchmarks)
}

type renderEntry struct {
	res     *render.Result
	commit  git.CommitInfo
	created time.Time
	used    time.Time
}

func newRenderCache(max int, ttl time.Duration) *renderCache {
	return &renderCache{max: max, ttl: ttl, entries: map[string]*renderEntry{}}
}

func (c *renderCache) get(ctx context.Context, key string, fn func(context.Context) (*renderEntry, error)) (*renderEntry, error) {
	now := time.Now()
	c.mu.Lock()
	if e := c.entries[key]; e != nil && now.Sub(e.created) < c.ttl {
		e.used = now
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	ch := c.flight.DoChan(key, func() (any, error) {
		e, err := fn(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		e.created, e.used = time.Now(), time.Now()
		c.mu.Lock()
		c.renders++
		c.entries[key] = e
		c.evictLocked()
		c.mu.Unlock()
		return e, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*renderEntry), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *renderCache) evictLocked() {
	for len(c.entries) > c.max {
		var oldestKey string
		var oldest time.Time
		for k, e := range c.entries {
			if oldestKey == "" || e.used.Before(oldest) {
				oldestKey, oldest = k, e.used
			}
		}
		delete(c.entries, oldestKey)
	}
}

// drop forgets entries whose key has the prefix (a hard refresh of a repository).
func (c *renderCache) drop(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(c.entries, k)
		}
	}
}

func (c *renderCache) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renders
}
