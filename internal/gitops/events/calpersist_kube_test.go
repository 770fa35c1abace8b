package events_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/gitops/events"
)

// TestCalendarCatchup: a calendar with persistence keeps its last tick in a ConfigMap (made
// for it, key "<eventSource>.<event>") as its service account. Stopped (its EventSource
// deleted) while ticks pass and started again, it publishes the ticks it missed, in order and
// each once, then goes on: the bus holds one event a second, without a gap.
func TestCalendarCatchup(t *testing.T) {
	e := newEnv(t)
	e.grant("ticks", "ticker", "get", "patch", "create")
	e.create(events.EventBusResource, "apiVersion: argoproj.io/v1alpha1\nkind: EventBus\nmetadata: {name: default}\nspec: {jetstreamExotic: {url: '"+e.natsURL+"'}}\n")
	const source = `
apiVersion: argoproj.io/v1alpha1
kind: EventSource
metadata: {name: cal}
spec:
  template: {serviceAccountName: ticker}
  calendar:
    tick:
      interval: 1s
      persistence:
        catchup: {enabled: true, maxDuration: 1m}
        configMap: {name: ticks, createIfNotExist: true}
`
	e.create(events.EventSourcesResource, source)
	kept := func() string {
		cm, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "ticks", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return cm.Data["cal.tick"]
	}
	e.waitFor("the last tick kept in ConfigMap ticks", 30*time.Second, func() (bool, string) {
		v := kept()
		return strings.Contains(v, `"eventTime"`), v
	})
	if err := e.c.Dynamic.Resource(events.EventSourcesResource).Namespace(e.ns).Delete(e.ctx, "cal", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // ticks pass with nothing running
	before := len(e.ticks(0))
	e.create(events.EventSourcesResource, source)

	var ticks []time.Time
	e.waitFor("ticks caught up and going on", 30*time.Second, func() (bool, string) {
		ticks = e.ticks(before + 4)
		return len(ticks) >= before+4, strconv.Itoa(len(ticks))
	})
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i].Sub(ticks[i-1]); d != time.Second {
			t.Fatalf("tick %d at %v, %v after the one before (want 1s: none missed, none twice): %v", i, ticks[i], d, ticks)
		}
	}
}

// ticks are the times (from their ids) of the calendar events on the bus, in the order
// published, once at least want are there or after 5s.
func (e *env) ticks(want int) []time.Time {
	e.t.Helper()
	stream := "ARGOEVENTS_" + strings.ReplaceAll(e.ns, ".", "_") + "_default"
	cons, err := e.js.OrderedConsumer(e.ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []time.Time
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		m, err := cons.Next(jetstream.FetchMaxWait(500 * time.Millisecond))
		if err != nil {
			if len(out) >= want {
				break
			}
			continue
		}
		var ev events.Event
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			e.t.Fatal(err)
		}
		ns, err := strconv.ParseInt(ev.Context.ID, 10, 64)
		if err != nil {
			e.t.Fatalf("calendar event id %q", ev.Context.ID)
		}
		out = append(out, time.Unix(0, ns))
	}
	if !slices.IsSortedFunc(out, func(a, b time.Time) int { return a.Compare(b) }) {
		e.t.Errorf("ticks out of order: %v", out)
	}
	return out
}
