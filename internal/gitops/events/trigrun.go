package events

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Argo's defaults (pkg/shared/util/retry.go): a backoff without a field takes these.
const (
	defaultBackoffDuration = time.Second
	defaultBackoffFactor   = 1.0
	defaultBackoffJitter   = 1.0
	defaultBackoffSteps    = 5
	// maxBackoffWait caps one wait, so a large factor cannot overflow (Argo has no cap).
	maxBackoffWait = time.Hour
)

// backoff is a parsed Argo Backoff: steps attempts, waiting duration, then duration*factor, …
// between them, each wait lengthened by up to jitter times itself.
type backoff struct {
	duration       time.Duration
	factor, jitter float64
	steps          int
}

// once is the retry strategy of a trigger without one: a single attempt.
var once = backoff{steps: 1}

// delay is the wait after the i-th (0-based) attempt.
func (b backoff) delay(i int) time.Duration {
	d := float64(b.duration)
	if b.factor != 0 {
		d *= math.Pow(b.factor, float64(i))
	}
	if b.jitter > 0 {
		d += rand.Float64() * b.jitter * d
	}
	if d > float64(maxBackoffWait) || math.IsNaN(d) {
		return maxBackoffWait
	}
	return time.Duration(d)
}

// labelPolicy is a trigger's policy.k8s: the labels its resource must get.
type labelPolicy struct {
	labels       map[string]string
	backoff      backoff
	errOnTimeout bool
}

func (p *labelPolicy) matches(l map[string]string) bool {
	for k, v := range p.labels {
		if got, ok := l[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (p *labelPolicy) String() string {
	keys := sortedKeys(p.labels)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p.labels[k]
	}
	return strings.Join(parts, ",")
}

// triggerRun is how a trigger is run: its retries, its rate and its policy.
type triggerRun struct {
	retry  backoff
	limit  *rate.Limiter // nil: no rateLimit
	policy *labelPolicy  // nil: no policy.k8s labels
	// allow are policy.status.allow: the response codes an http trigger succeeds with (nil:
	// any response).
	allow []int
}

// waitFunc waits d or until ctx ends (its error).
type waitFunc func(ctx context.Context, d time.Duration) error

// sleep is a waitFunc on the clock.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do runs fire up to retry.steps times, waiting the backoff between attempts and, before each
// attempt, for the rate limit (as Argo, every attempt counts against it). It returns the last
// attempt's result; an error says how many attempts were made when there were several.
func (tr *triggerRun) do(ctx context.Context, wait waitFunc, fire func() (string, error), onFail func(attempt int, err error)) (string, error) {
	var err error
	for i := range tr.retry.steps {
		if i > 0 {
			if werr := wait(ctx, tr.retry.delay(i-1)); werr != nil {
				return "", fmt.Errorf("after %d attempts (%v): %w", i, werr, err)
			}
		}
		if tr.limit != nil {
			r := tr.limit.Reserve()
			if werr := wait(ctx, r.Delay()); werr != nil {
				r.Cancel()
				if err == nil {
					return "", werr
				}
				return "", fmt.Errorf("after %d attempts (%v): %w", i, werr, err)
			}
		}
		var what string
		what, err = fire()
		if err == nil {
			return what, nil
		}
		if onFail != nil && i+1 < tr.retry.steps {
			onFail(i+1, err)
		}
	}
	if tr.retry.steps > 1 {
		return "", fmt.Errorf("after %d attempts: %w", tr.retry.steps, err)
	}
	return "", err
}

// compileTriggerRun reads a trigger's retryStrategy, rateLimit and policy; f names the trigger
// (spec.triggers[i]) in errors.
func compileTriggerRun(f string, t *Trigger) (*triggerRun, error) {
	tr := &triggerRun{retry: once}
	if len(t.RetryStrategy) > 0 && string(t.RetryStrategy) != "null" {
		b, err := parseBackoff(f+".retryStrategy", t.RetryStrategy)
		if err != nil {
			return nil, err
		}
		tr.retry = b
	}
	if len(t.RateLimit) > 0 && string(t.RateLimit) != "null" {
		l, err := parseRateLimit(f+".rateLimit", t.RateLimit)
		if err != nil {
			return nil, err
		}
		tr.limit = l
	}
	if len(t.Policy) > 0 && string(t.Policy) != "null" {
		p, allow, err := parsePolicy(f+".policy", t.Policy)
		if err != nil {
			return nil, err
		}
		tr.policy, tr.allow = p, allow
	}
	return tr, nil
}

// fields decodes an object and refuses keys other than known, naming them.
func fields(f string, raw json.RawMessage, what string, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errdefs.Invalid(f, string(raw), "is not "+what+": an object with "+strings.Join(known, ", "))
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) {
			return nil, errdefs.Invalid(f+"."+k, "", "is not a field of "+what+" (fields: "+strings.Join(known, ", ")+")")
		}
	}
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
		}
	}
	return m, nil
}

// number reads a JSON number, or a string holding one (Argo's Amount).
func number(f string, raw json.RawMessage) (float64, error) {
	s := string(raw)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, errdefs.Invalid(f, string(raw), "is not a number of 0 or more")
	}
	return v, nil
}

func parseBackoff(f string, raw json.RawMessage) (backoff, error) {
	m, err := fields(f, raw, "a backoff", "duration", "factor", "jitter", "steps")
	if err != nil {
		return backoff{}, err
	}
	b := backoff{duration: defaultBackoffDuration, factor: defaultBackoffFactor, jitter: defaultBackoffJitter, steps: defaultBackoffSteps}
	if v, ok := m["duration"]; ok {
		var s string
		if json.Unmarshal(v, &s) == nil {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return backoff{}, errdefs.Invalid(f+".duration", s, "is not a duration: nanoseconds or a string like 1s, 500ms, 2m")
			}
			b.duration = d
		} else {
			var n int64
			if err := json.Unmarshal(v, &n); err != nil || n < 0 {
				return backoff{}, errdefs.Invalid(f+".duration", string(v), "is not a duration: nanoseconds or a string like 1s, 500ms, 2m")
			}
			b.duration = time.Duration(n)
		}
	}
	if v, ok := m["factor"]; ok {
		if b.factor, err = number(f+".factor", v); err != nil {
			return backoff{}, err
		}
	}
	if v, ok := m["jitter"]; ok {
		if b.jitter, err = number(f+".jitter", v); err != nil {
			return backoff{}, err
		}
	}
	if v, ok := m["steps"]; ok {
		var n int32
		if err := json.Unmarshal(v, &n); err != nil || n < 0 {
			return backoff{}, errdefs.Invalid(f+".steps", string(v), "is not a number of attempts: 1 or more (0 or none: 5)")
		}
		if n > 0 {
			b.steps = int(n)
		}
	}
	return b, nil
}

// rateUnits are Argo's RateLimit units.
var rateUnits = map[string]time.Duration{"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}

// parseRateLimit makes the trigger's limiter: requestsPerUnit executions per unit, spaced
// evenly (Argo's go.uber.org/ratelimit spaces them too); an execution over the rate waits.
func parseRateLimit(f string, raw json.RawMessage) (*rate.Limiter, error) {
	m, err := fields(f, raw, "a rate limit", "unit", "requestsPerUnit")
	if err != nil {
		return nil, err
	}
	unit := time.Second
	if v, ok := m["unit"]; ok {
		var s string
		_ = json.Unmarshal(v, &s)
		u, ok := rateUnits[s]
		if !ok {
			if s == "" {
				s = string(v)
			}
			return nil, errdefs.Invalid(f+".unit", s, "is not a unit: Second, Minute or Hour")
		}
		unit = u
	}
	var n int32
	v, ok := m["requestsPerUnit"]
	if ok {
		if err := json.Unmarshal(v, &n); err != nil {
			n = -1
		}
	}
	if n <= 0 {
		return nil, errdefs.Invalid(f+".requestsPerUnit", string(v), "is required: the number of executions per unit, 1 or more")
	}
	return rate.NewLimiter(rate.Every(unit/time.Duration(n)), 1), nil
}

// parsePolicy reads policy.k8s (nil when it checks nothing) and policy.status.allow.
func parsePolicy(f string, raw json.RawMessage) (*labelPolicy, []int, error) {
	m, err := fields(f, raw, "a trigger policy", "k8s", "status")
	if err != nil {
		return nil, nil, err
	}
	// status is the policy of http triggers; Argo ignores it for the other kinds here.
	var allow []int
	if v, ok := m["status"]; ok {
		st, err := fields(f+".status", v, "a status policy", "allow")
		if err != nil {
			return nil, nil, err
		}
		if a, ok := st["allow"]; ok {
			if err := json.Unmarshal(a, &allow); err != nil {
				return nil, nil, errdefs.Invalid(f+".status.allow", string(a), "is not a list of HTTP response codes (e.g. [200, 201])")
			}
			for i, c := range allow {
				if c < 100 || c > 599 {
					return nil, nil, errdefs.Invalid(fmt.Sprintf("%s.status.allow[%d]", f, i), strconv.Itoa(c), "is not an HTTP response code: 100 to 599")
				}
			}
			if len(allow) == 0 {
				allow = nil // as Argo: an empty list checks nothing
			}
		}
	}
	v, ok := m["k8s"]
	if !ok {
		return nil, allow, nil
	}
	f += ".k8s"
	k, err := fields(f, v, "a k8s resource policy", "labels", "backoff", "errorOnBackoffTimeout")
	if err != nil {
		return nil, nil, err
	}
	p := &labelPolicy{backoff: backoff{duration: defaultBackoffDuration, factor: defaultBackoffFactor, jitter: defaultBackoffJitter, steps: defaultBackoffSteps}}
	if v, ok := k["labels"]; ok {
		if err := json.Unmarshal(v, &p.labels); err != nil {
			return nil, nil, errdefs.Invalid(f+".labels", string(v), "is not a map of label names to values")
		}
		for _, l := range sortedKeys(p.labels) {
			if l == "" {
				return nil, nil, errdefs.Invalid(f+".labels", "", "has an empty label name")
			}
		}
	}
	if v, ok := k["backoff"]; ok {
		if p.backoff, err = parseBackoff(f+".backoff", v); err != nil {
			return nil, nil, err
		}
	}
	if v, ok := k["errorOnBackoffTimeout"]; ok {
		if err := json.Unmarshal(v, &p.errOnTimeout); err != nil {
			return nil, nil, errdefs.Invalid(f+".errorOnBackoffTimeout", string(v), "is not true or false")
		}
	}
	if len(p.labels) == 0 {
		return nil, allow, nil // as Argo: a policy without labels checks nothing
	}
	return p, allow, nil
}
