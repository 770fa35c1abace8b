package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// The state of the sources that connect out, in the EventSource's status, and Argo's
// connectionBackoff.

// CondSourcesConnected is Freshet's condition of an EventSource whose events connect out
// (resource, nats, minio, redis, redisStream, mqtt, amqp): True once each is connected; False
// with a message naming each source not connected and why; Unknown while the first
// connections are made.
const CondSourcesConnected = "SourcesConnected"

// Reasons of SourcesConnected.
const (
	ReasonConnecting   = "Connecting"
	ReasonNotConnected = "NotConnected"
)

// Bounds of a connectionBackoff: beyond them a typo would make a source wait for days.
const (
	maxBackoffDelay  = time.Hour
	maxBackoffFactor = 100
	maxBackoffJitter = 100
	maxBackoffSteps  = 100000
	// argoBackoffSteps is Argo's steps of a connectionBackoff that gives none.
	argoBackoffSteps = 5
	// maxStateMessage bounds one source's error in the status.
	maxStateMessage = 300
)

// Backoff is Argo's Backoff: the delay before the first retry (duration: nanoseconds, or a Go
// duration such as "2s"), multiplied by factor after each, plus up to jitter times the delay
// at random, for at most steps attempts.
type Backoff struct {
	Duration json.RawMessage `json:"duration,omitempty"`
	Factor   json.RawMessage `json:"factor,omitempty"`
	Jitter   json.RawMessage `json:"jitter,omitempty"`
	Steps    int32           `json:"steps,omitempty"`
}

// connBackoff is a compiled connectionBackoff.
type connBackoff struct {
	duration       time.Duration
	factor, jitter float64
	steps          int
}

// compileBackoff reads a connectionBackoff (nil: none) as Argo does: duration 1s, factor 1,
// jitter 1 and 5 steps where not given.
func compileBackoff(f string, b *Backoff) (*connBackoff, error) {
	if b == nil {
		return nil, nil
	}
	out := &connBackoff{duration: time.Second, factor: 1, jitter: 1, steps: argoBackoffSteps}
	if d := bytes.TrimSpace(b.Duration); len(d) > 0 && string(d) != "null" {
		var s string
		if json.Unmarshal(d, &s) == nil {
			v, err := time.ParseDuration(s)
			if err != nil {
				return nil, errdefs.Invalid(f+".duration", s, "is not a duration: a Go duration such as 500ms, 2s or 1m, or nanoseconds as a number")
			}
			out.duration = v
		} else {
			n, err := strconv.ParseInt(string(d), 10, 64)
			if err != nil {
				return nil, errdefs.Invalid(f+".duration", string(d), "is not a duration: a Go duration such as 500ms, 2s or 1m, or nanoseconds as a number")
			}
			out.duration = time.Duration(n)
		}
		if out.duration <= 0 || out.duration > maxBackoffDelay {
			return nil, errdefs.Invalid(f+".duration", out.duration.String(), "must be more than 0 and at most 1h")
		}
	}
	var err error
	if out.factor, err = amount(f+".factor", b.Factor, out.factor, maxBackoffFactor); err != nil {
		return nil, err
	}
	if out.jitter, err = amount(f+".jitter", b.Jitter, out.jitter, maxBackoffJitter); err != nil {
		return nil, err
	}
	switch {
	case b.Steps < 0 || b.Steps > maxBackoffSteps:
		return nil, errdefs.Invalid(f+".steps", strconv.Itoa(int(b.Steps)), fmt.Sprintf("must be between 1 and %d (0 or none: Argo's 5)", maxBackoffSteps))
	case b.Steps > 0:
		out.steps = int(b.Steps)
	}
	return out, nil
}

// amount reads an Argo Amount: a number (or a string holding one) between 0 and upTo.
func amount(f string, raw json.RawMessage, def, upTo float64) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	text := string(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text = s
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > upTo {
		return 0, errdefs.Invalid(f, text, fmt.Sprintf("is not a number between 0 and %g", upTo))
	}
	return v, nil
}

// delay is the wait after failed attempt n (1, 2, …): duration × factor^(n-1), plus up to
// jitter × that at random, at most maxBackoffDelay.
func (b *connBackoff) delay(n int) time.Duration {
	d := float64(b.duration) * math.Pow(b.factor, float64(n-1))
	if b.jitter > 0 {
		d += rand.Float64() * b.jitter * d
	}
	if math.IsNaN(d) || d > float64(maxBackoffDelay) {
		return maxBackoffDelay
	}
	return time.Duration(d)
}

// connState is a listener's connection as the status shows it.
type connState struct {
	mu        sync.Mutex
	connected bool
	tried     bool   // an attempt has ended (or the client said how it went)
	err       string // why it is not connected
	attempts  int    // failed attempts in a row
	gaveUp    bool
}

// stateChanged has the EventSource reconciled, which writes its SourcesConnected condition.
func (e *emitter) stateChanged() {
	if q := e.c.queue; q != nil {
		q.Add(kindSource + "/" + e.ns + "/" + e.name)
	}
}

// connected says the listener's connection is up.
func (e *emitter) connected() {
	s := &e.l.state
	s.mu.Lock()
	changed := !s.connected || !s.tried
	s.connected, s.tried, s.err, s.attempts, s.gaveUp = true, true, "", 0, false
	s.mu.Unlock()
	if changed {
		e.c.log.Info("event source connected", logKey, e.key())
		e.stateChanged()
	}
}

// disconnected says the listener's connection is down (the client connects again by itself).
func (e *emitter) disconnected(err error) {
	s := &e.l.state
	s.mu.Lock()
	msg := stateMessage(err)
	changed := s.connected || s.err != msg
	s.connected, s.tried, s.err = false, true, msg
	s.mu.Unlock()
	if changed {
		e.stateChanged()
	}
}

// failed records a failed attempt; it returns how many failed in a row.
func (e *emitter) failed(err error, gaveUp bool) int {
	s := &e.l.state
	s.mu.Lock()
	s.attempts++
	n := s.attempts
	s.connected, s.tried, s.err, s.gaveUp = false, true, stateMessage(err), gaveUp
	s.mu.Unlock()
	e.stateChanged()
	return n
}

// wasConnected reports whether the connection is (or was, in the attempt that just ended) up.
func (l *listener) wasConnected() bool {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	return l.state.connected
}

func stateMessage(err error) string {
	if err == nil {
		return "the connection ended"
	}
	m := strings.Join(strings.Fields(err.Error()), " ")
	if len(m) > maxStateMessage {
		m = m[:maxStateMessage] + "…"
	}
	return m
}

// field is the spec field of a listener's event, e.g. spec.amqp.orders.
func (l *listener) field() string { return "spec." + l.typ + "." + l.event }

// connectedCondition is the SourcesConnected condition of a running source, nil when none of
// its events connects out.
func (r *sourceRun) connectedCondition() *Condition {
	if len(r.listeners) == 0 {
		return nil
	}
	var down, waiting []string
	for _, l := range r.listeners {
		l.state.mu.Lock()
		s := struct {
			connected, tried, gaveUp bool
			attempts                 int
			err                      string
		}{l.state.connected, l.state.tried, l.state.gaveUp, l.state.attempts, l.state.err}
		l.state.mu.Unlock()
		switch {
		case s.connected:
		case !s.tried:
			waiting = append(waiting, l.field())
		case s.gaveUp:
			down = append(down, fmt.Sprintf("%s: gave up after %d attempts (connectionBackoff.steps; change the EventSource to try again): %s", l.field(), s.attempts, s.err))
		case s.attempts > 0:
			down = append(down, fmt.Sprintf("%s: not connected (%d failed attempts, trying again): %s", l.field(), s.attempts, s.err))
		default:
			down = append(down, fmt.Sprintf("%s: disconnected, connecting again: %s", l.field(), s.err))
		}
	}
	slices.Sort(down)
	slices.Sort(waiting)
	switch {
	case len(down) > 0:
		return &Condition{Type: CondSourcesConnected, Status: "False", Reason: ReasonNotConnected, Message: strings.Join(down, "; ")}
	case len(waiting) > 0:
		return &Condition{Type: CondSourcesConnected, Status: "Unknown", Reason: ReasonConnecting, Message: "connecting: " + strings.Join(waiting, ", ")}
	}
	return &Condition{Type: CondSourcesConnected, Status: "True", Message: fmt.Sprintf("%d event(s) connected", len(r.listeners))}
}

// connConditions are the SourcesConnected condition to write with a source's others: run's
// (nil: nothing runs, for reason), or — a source that had one and has no event connecting out
// now — one that says so.
func connConditions(u *unstructured.Unstructured, run *sourceRun, reason string, conds ...Condition) []Condition {
	if run != nil {
		if c := run.connectedCondition(); c != nil {
			return append(conds, *c)
		}
	}
	had, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range had {
		if m, _ := c.(map[string]any); m != nil && m["type"] == CondSourcesConnected {
			if run != nil {
				return append(conds, Condition{Type: CondSourcesConnected, Status: "True", Message: "no event of this EventSource connects out"})
			}
			return append(conds, Condition{Type: CondSourcesConnected, Status: "False", Reason: reason, Message: "nothing runs: see the other conditions"})
		}
	}
	return conds
}
