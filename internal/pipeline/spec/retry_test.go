package spec

import (
	"slices"
	"testing"
	"time"
)

func TestRetryDelays(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		retry Retry
		want  []time.Duration
		runs  int
	}{
		{"zero: no retry", Retry{}, nil, 1},
		{"constant", Retry{MaxAttempts: 3, Delay: Duration{5 * s}, ExponentialFactor: 1}, []time.Duration{5 * s, 5 * s, 5 * s}, 4},
		{"doubling", Retry{MaxAttempts: 4, Delay: Duration{5 * s}, ExponentialFactor: 2}, []time.Duration{5 * s, 10 * s, 20 * s, 40 * s}, 5},
		{"fractional factor", Retry{MaxAttempts: 3, Delay: Duration{2 * s}, ExponentialFactor: 1.5}, []time.Duration{2 * s, 3 * s, 4500 * time.Millisecond}, 4},
		{"no delay", Retry{MaxAttempts: 2, ExponentialFactor: 5}, []time.Duration{0, 0}, 3},
		{"factor unset means 1", Retry{MaxAttempts: 2, Delay: Duration{s}}, []time.Duration{s, s}, 3},
		{"capped at MaxRetryDelay", Retry{MaxAttempts: 10, Delay: Duration{60 * s}, ExponentialFactor: 5},
			[]time.Duration{60 * s, 300 * s, 1500 * s, MaxRetryDelay, MaxRetryDelay, MaxRetryDelay, MaxRetryDelay, MaxRetryDelay, MaxRetryDelay, MaxRetryDelay}, 11},
		{"attempts clamped", Retry{MaxAttempts: 50, Delay: Duration{s}, ExponentialFactor: 1}, slices.Repeat([]time.Duration{s}, MaxRetryAttempts), 51},
		{"factor clamped", Retry{MaxAttempts: 2, Delay: Duration{s}, ExponentialFactor: 100}, []time.Duration{s, 5 * s}, 3},
		{"negative", Retry{MaxAttempts: -1}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.retry.Delays(); !slices.Equal(got, tt.want) {
				t.Errorf("Delays() = %v, want %v", got, tt.want)
			}
			if got := tt.retry.Runs(); got != tt.runs {
				t.Errorf("Runs() = %d, want %d", got, tt.runs)
			}
		})
	}
}

func TestRetryParsed(t *testing.T) {
	p, err := Parse([]byte(`version: '1.0'
steps:
  a:
    image: alpine
    commands: [x]
    retry: {}
  b:
    image: alpine
    commands: [x]
    retry:
      maxAttempts: 3
      delay: 2
      exponentialFactor: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Step("a").Retry.Delays(), []time.Duration{DefaultRetryDelay}; !slices.Equal(got, want) {
		t.Errorf("defaults: Delays() = %v, want %v", got, want)
	}
	if got, want := p.Step("b").Retry.Delays(), []time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("Delays() = %v, want %v", got, want)
	}
}
