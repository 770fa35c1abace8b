package events

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// compileRun reads the retryStrategy, rateLimit and policy of a Sensor's one trigger.
func compileRun(t *testing.T, extra string) *triggerRun {
	t.Helper()
	s, err := DecodeSensor(toJSON(t, snHead+okDeps+"  triggers: [{template: {name: t, k8s: {source: {resource: {"+wfRes+"}}}}"+extra+"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := compileTriggerRun("spec.triggers[0]", &s.Spec.Triggers[0])
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestRetryStrategy: a failing trigger is tried steps times, waiting duration, duration*factor,
// … between the attempts (no jitter here), and the last error is reported, kind kept.
func TestRetryStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := compileRun(t, ", retryStrategy: {steps: 4, duration: 1s, factor: 2, jitter: 0}")
		start := time.Now()
		var at []time.Duration
		_, err := tr.do(t.Context(), sleep, func() (string, error) {
			at = append(at, time.Since(start))
			return "", permanentError{errors.New("create configmap/x: forbidden")}
		}, nil)
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}
		if len(at) != len(want) {
			t.Fatalf("attempts at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Errorf("attempt %d at %v, want %v", i+1, at[i], want[i])
			}
		}
		var perm permanentError
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), "after 4 attempts: create configmap/x: forbidden") {
			t.Errorf("err = %v, want the last (permanent) error after 4 attempts", err)
		}

		// It stops at the first success.
		n := 0
		what, err := tr.do(t.Context(), sleep, func() (string, error) {
			if n++; n < 2 {
				return "", errors.New("connection refused")
			}
			return "created", nil
		}, nil)
		if err != nil || what != "created" || n != 2 {
			t.Errorf("do = %q, %v after %d attempts; want created after 2", what, err, n)
		}
	})
}

// TestRetryDefaults: without retryStrategy a trigger runs once; with an empty one Argo's
// defaults hold: 5 attempts, 1 s apart, lengthened by up to 100 % jitter.
func TestRetryDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			extra string
			want  int
		}{{"", 1}, {", retryStrategy: {}", 5}, {", retryStrategy: {steps: 0, duration: 2s}", 5}} {
			tr := compileRun(t, tc.extra)
			n := 0
			start := time.Now()
			var last time.Time
			_, _ = tr.do(t.Context(), sleep, func() (string, error) {
				if n > 0 {
					gap := time.Since(last)
					if gap < tr.retry.duration || gap > 2*tr.retry.duration {
						t.Errorf("%q: %v between attempts, want %v to %v", tc.extra, gap, tr.retry.duration, 2*tr.retry.duration)
					}
				}
				n++
				last = time.Now()
				return "", errors.New("boom")
			}, nil)
			if n != tc.want {
				t.Errorf("%q: %d attempts, want %d (took %v)", tc.extra, n, tc.want, time.Since(start))
			}
		}
	})
}

// TestRateLimit: executions over requestsPerUnit per unit wait (none is dropped), spaced
// unit/requestsPerUnit apart; retries count against the limit too.
func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := compileRun(t, ", rateLimit: {unit: Minute, requestsPerUnit: 3}")
		start := time.Now()
		var at []time.Duration
		for range 7 {
			if _, err := tr.do(t.Context(), sleep, func() (string, error) {
				at = append(at, time.Since(start))
				return "ok", nil
			}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i, d := range at {
			if want := time.Duration(i) * 20 * time.Second; d != want {
				t.Errorf("execution %d at %v, want %v", i+1, d, want)
			}
		}
		// In any minute, at most 3 (a window [t, t+1m)).
		for i := range at {
			n := 0
			for _, d := range at[i:] {
				if d < at[i]+time.Minute {
					n++
				}
			}
			if n > 3 {
				t.Errorf("%d executions in the minute from %v", n, at[i])
			}
		}

		// A Sensor stopping while a trigger waits for its turn ends the wait.
		tr = compileRun(t, ", rateLimit: {unit: Hour, requestsPerUnit: 1}")
		fired := 0
		fire := func() (string, error) { fired++; return "ok", nil }
		if _, err := tr.do(t.Context(), sleep, fire, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := tr.do(ctx, sleep, fire, nil); !errors.Is(err, context.DeadlineExceeded) || fired != 1 {
			t.Errorf("second execution within the hour: err %v, fired %d times; want it waiting", err, fired)
		}
	})
}

func TestLabelPolicyParse(t *testing.T) {
	tr := compileRun(t, ", policy: {k8s: {labels: {done: 'yes'}, backoff: {duration: 100ms, steps: 3, jitter: 0}, errorOnBackoffTimeout: true}, status: {allow: [200]}}")
	p := tr.policy
	if p == nil || !p.errOnTimeout || p.backoff.steps != 3 || p.backoff.duration != 100*time.Millisecond || p.String() != "done=yes" {
		t.Fatalf("policy %+v", p)
	}
	if p.matches(map[string]string{"done": "no"}) || p.matches(nil) || !p.matches(map[string]string{"done": "yes", "x": "y"}) {
		t.Error("labels match wrongly")
	}
	if tr := compileRun(t, ", policy: {k8s: {backoff: {steps: 2}}}"); tr.policy != nil {
		t.Error("a policy without labels checks something (Argo checks nothing)")
	}
}
