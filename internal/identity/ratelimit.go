package identity

import (
	"sync"
	"time"
)

// Login rate limits: failures allowed per key within the window before further attempts are
// refused until the window has passed.
const (
	loginWindow         = 5 * time.Minute
	maxFailuresPerEmail = 10
	maxFailuresPerIP    = 50
	maxTrackedKeys      = 100_000
)

// failureLimiter counts recent login failures per key (an email or a source address).
type failureLimiter struct {
	mu   sync.Mutex
	max  int
	hits map[string][]time.Time
}

func newFailureLimiter(max int) *failureLimiter {
	return &failureLimiter{max: max, hits: map[string][]time.Time{}}
}

// blocked reports whether key has used up its failures and, if so, when it may try again.
func (l *failureLimiter) blocked(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.prune(key, now)
	if len(h) < l.max {
		return false, 0
	}
	return true, h[0].Add(loginWindow).Sub(now)
}

func (l *failureLimiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.hits) >= maxTrackedKeys { // bounded memory under a spray of keys: forget the old
		for k := range l.hits {
			if len(l.prune(k, now)) == 0 {
				delete(l.hits, k)
			}
		}
		if len(l.hits) >= maxTrackedKeys {
			l.hits = map[string][]time.Time{}
		}
	}
	l.hits[key] = append(l.prune(key, now), now)
}

func (l *failureLimiter) reset(key string) {
	l.mu.Lock()
	delete(l.hits, key)
	l.mu.Unlock()
}

func (l *failureLimiter) prune(key string, now time.Time) []time.Time {
	h := l.hits[key]
	i := 0
	for i < len(h) && now.Sub(h[i]) >= loginWindow {
		i++
	}
	h = h[i:]
	if len(h) == 0 {
		delete(l.hits, key)
		return nil
	}
	l.hits[key] = h
	return h
}
