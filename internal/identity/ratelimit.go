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

// failureLimiter counts recent login failures per key (an email or a source address). An
// attempt is counted before its password is checked (reserve) and taken back when the password
// turns out right (release), so parallel attempts cannot all pass the check while the slow
// hashes of the first ones are still running.
type failureLimiter struct {
	mu   sync.Mutex
	max  int
	hits map[string][]time.Time
}

func newFailureLimiter(max int) *failureLimiter {
	return &failureLimiter{max: max, hits: map[string][]time.Time{}}
}

// reserve counts an attempt for key at now, if key has failures left; otherwise it reports how
// long until it has.
func (l *failureLimiter) reserve(key string, now time.Time) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.prune(key, now)
	if len(h) >= l.max {
		return false, h[0].Add(loginWindow).Sub(now)
	}
	l.bound(now)
	l.hits[key] = append(h, now)
	return true, 0
}

// release takes back the attempt reserved for key at t: it was not a failure.
func (l *failureLimiter) release(key string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hits[key]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Equal(t) {
			h = append(h[:i], h[i+1:]...)
			break
		}
	}
	if len(h) == 0 {
		delete(l.hits, key)
	} else {
		l.hits[key] = h
	}
}

// bound keeps memory bounded under a spray of keys: at maxTrackedKeys it forgets keys without
// recent failures, and everything if that is not enough.
func (l *failureLimiter) bound(now time.Time) {
	if len(l.hits) < maxTrackedKeys {
		return
	}
	for k := range l.hits {
		if len(l.prune(k, now)) == 0 {
			delete(l.hits, k)
		}
	}
	if len(l.hits) >= maxTrackedKeys {
		l.hits = map[string][]time.Time{}
	}
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
