package spec

import (
	"math"
	"time"
)

// Retry bounds and defaults, as Codefresh documents them.
const (
	MinRetryAttempts         = 1
	MaxRetryAttempts         = 10
	DefaultRetryAttempts     = 1
	DefaultRetryDelay        = 5 * time.Second
	MaxRetryDelaySetting     = 60 * time.Second // the largest `delay` a pipeline may write
	MinExponentialFactor     = 1.0
	MaxExponentialFactor     = 5.0
	DefaultExponentialFactor = 1.0
	// MaxRetryDelay caps each computed wait: 60 s × 5^9 would be years.
	MaxRetryDelay = time.Hour
)

// Retry says how often a failed step runs again. The zero value means no retry.
type Retry struct {
	// MaxAttempts is how many times the step runs again after a failed run (1..10), so a
	// step runs at most MaxAttempts+1 times. Zero: no retry.
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// Delay is the wait before the first retry.
	Delay Duration `json:"delay,omitzero"`
	// ExponentialFactor multiplies the wait after each retry (1..5).
	ExponentialFactor float64 `json:"exponentialFactor,omitempty"`
}

// IsZero reports whether r asks for no retry.
func (r Retry) IsZero() bool { return r.MaxAttempts == 0 }

// Runs is the largest number of times the step runs: 1 + MaxAttempts.
func (r Retry) Runs() int { return 1 + max(r.MaxAttempts, 0) }

// Delays returns the wait before each retry: Delays()[n] = Delay × ExponentialFactor^n,
// capped at MaxRetryDelay. It has MaxAttempts entries (none for the zero Retry). Values out of
// bounds (from a hand-built Retry) are clamped to the documented bounds.
func (r Retry) Delays() []time.Duration {
	n := min(r.MaxAttempts, MaxRetryAttempts)
	if n <= 0 {
		return nil
	}
	delay := max(r.Delay.Duration, 0)
	factor := r.ExponentialFactor
	if factor == 0 {
		factor = DefaultExponentialFactor
	}
	factor = min(max(factor, MinExponentialFactor), MaxExponentialFactor)
	out := make([]time.Duration, n)
	for i := range out {
		d := float64(delay) * math.Pow(factor, float64(i))
		if d >= float64(MaxRetryDelay) {
			out[i] = MaxRetryDelay
			continue
		}
		out[i] = time.Duration(d).Round(time.Millisecond)
	}
	return out
}
