package events

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// compiledWithDLQ is a Sensor's first trigger as the Sensor's run compiles it, its
// dlqTrigger included, holding the event of event().
func compiledWithDLQ(t *testing.T, trigger string) (*compiledSensor, *compiledTrigger) {
	t.Helper()
	cs, ct := compiledOne(t, trigger)
	var err error
	if ct.dlq, err = compileDLQ("spec.triggers[0].dlqTrigger", ct); err != nil {
		t.Fatal(err)
	}
	return cs, ct
}

func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// failingHTTP is a trigger posting to url that fails (policy.status allows only 200) after
// two attempts, with atLeastOnce and the dlqTrigger dlq (YAML at the trigger's indentation).
func failingHTTP(url string, atLeastOnce bool, dlq string) string {
	return fmt.Sprintf(`  - template:
      name: main
      http:
        url: %s/main
        payload: [{src: {dependencyName: d, dataKey: body.msg}, dest: message}]
    policy: {status: {allow: [200]}}
    retryStrategy: {steps: 2, duration: 1ms}
    atLeastOnce: %t
    dlqTrigger:
%s`, url, atLeastOnce, dlq)
}

// TestDLQTrigger: a trigger failing after its retryStrategy, with atLeastOnce, runs its
// dlqTrigger (http, nats or log) with the original event; the failure is then final, saying
// what the dlqTrigger did. Without atLeastOnce the dlqTrigger does not run (as Argo). A
// dlqTrigger failing for a while leaves the event to be delivered again, even when the
// trigger's own failure was final.
func TestDLQTrigger(t *testing.T) {
	code := http.StatusBadRequest
	srv, requests := loopback(t, &code)
	c := newTestController(t, nil)
	var logs strings.Builder
	c.log = slogTo(&logs)
	ctx := context.Background()
	var perm permanentError

	t.Run("http", func(t *testing.T) {
		n := len(requests())
		cs, ct := compiledWithDLQ(t, failingHTTP(srv.URL, true, `      template:
        name: dlq
        http:
          url: `+srv.URL+`/dead-letters
          payload: [{src: {dependencyName: d, dataKey: body, useRawData: true}, dest: original}]
`))
		code = http.StatusBadRequest
		_, err := c.execute(ctx, cs, ct, noWait)
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "dlqTrigger dlq ran: POST") {
			t.Fatalf("err = %v, want a final failure saying the dlqTrigger ran", err)
		}
		got := requests()[n:]
		if len(got) != 3 || got[0].path != "/main" || got[1].path != "/main" || got[2].path != "/dead-letters" {
			t.Fatalf("requests %+v, want main twice then dead-letters", got)
		}
		if want := `{"original":{"msg":"hi","path":"deploy","code":"201"}}`; string(got[2].body) != want {
			t.Errorf("dead letter %s, want %s", got[2].body, want)
		}
	})

	t.Run("nats", func(t *testing.T) {
		url := natsURL(t)
		nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		subject := fmt.Sprintf("freshet.test.dlq.%d", time.Now().UnixNano())
		sub, _ := nc.SubscribeSync(subject)
		_ = nc.Flush()
		cs, ct := compiledWithDLQ(t, failingHTTP(srv.URL, true, `      template:
        name: dlq
        nats:
          url: `+url+`
          subject: `+subject+`
          payload: [{src: {dependencyName: d, dataKey: body.msg}, dest: message}]
`))
		defer cs.nats.close()
		code = http.StatusServiceUnavailable // temporary: the dlqTrigger runs all the same
		if _, err := c.execute(ctx, cs, ct, noWait); !errors.As(err, &perm) || !strings.Contains(err.Error(), "dlqTrigger dlq ran: published") {
			t.Fatalf("err = %v", err)
		}
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil || string(m.Data) != `{"message":"hi"}` {
			t.Fatalf("dead letter on NATS: %v (%v)", m, err)
		}
	})

	t.Run("log", func(t *testing.T) {
		cs, ct := compiledWithDLQ(t, failingHTTP(srv.URL, true, "      template: {name: dlq, log: {}}\n"))
		code = http.StatusBadRequest
		if _, err := c.execute(ctx, cs, ct, noWait); !errors.As(err, &perm) || !strings.Contains(err.Error(), "dlqTrigger dlq ran: logged 1 event(s)") {
			t.Fatalf("err = %v", err)
		}
		if !strings.Contains(logs.String(), "trigger=dlq") || !strings.Contains(logs.String(), `data="{\"body\":{\"msg\":\"hi\"`) {
			t.Errorf("log:\n%s", logs.String())
		}
	})

	t.Run("without atLeastOnce", func(t *testing.T) {
		n := len(requests())
		cs, ct := compiledWithDLQ(t, failingHTTP(srv.URL, false, "      template: {name: dlq, http: {url: '"+srv.URL+"/dead-letters'}}\n"))
		if ct.dlq != nil {
			t.Fatal("a dlqTrigger was compiled without atLeastOnce")
		}
		code = http.StatusBadRequest
		if _, err := c.execute(ctx, cs, ct, noWait); !errors.As(err, &perm) || strings.Contains(err.Error(), "dlqTrigger") {
			t.Errorf("err = %v", err)
		}
		for _, r := range requests()[n:] {
			if r.path == "/dead-letters" {
				t.Error("the dlqTrigger ran without atLeastOnce")
			}
		}
	})

	t.Run("dlq fails", func(t *testing.T) {
		// The dlqTrigger's server refuses for a while (503, retried) or for good (400).
		cs, ct := compiledWithDLQ(t, failingHTTP(srv.URL, true, `      template: {name: dlq, http: {url: '`+srv.URL+`/dead-letters'}}
      policy: {status: {allow: [200]}}
`))
		code = http.StatusServiceUnavailable
		_, err := c.execute(ctx, cs, ct, noWait)
		if err == nil || errors.As(err, &perm) || !strings.Contains(err.Error(), "dlqTrigger dlq failed too") {
			t.Errorf("503: err = %v, want a temporary error naming the dlqTrigger", err)
		}
		code = http.StatusBadRequest
		_, err = c.execute(ctx, cs, ct, noWait)
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), "dlqTrigger dlq failed too") {
			t.Errorf("400: err = %v, want a final error naming the dlqTrigger", err)
		}
	})
}

// TestDLQTriggerDecode: a dlqTrigger is checked as a trigger, its field named; kinds that do
// not run here are refused by name, custom saying why.
func TestDLQTriggerDecode(t *testing.T) {
	for _, tc := range []struct{ name, trig, field, msg string }{
		{"kafka", "  - template: {name: t, log: {}}\n    atLeastOnce: true\n    dlqTrigger: {template: {name: dlq, kafka: {url: k:9092, topic: x}}}\n",
			"spec.triggers[0].dlqTrigger.template.kafka", "triggers of type kafka are not built"},
		{"no name", "  - template: {name: t, log: {}}\n    dlqTrigger: {template: {log: {}}}\n", "spec.triggers[0].dlqTrigger.template.name", "is required"},
		{"nested", "  - template: {name: t, log: {}}\n    dlqTrigger: {template: {name: d, log: {}}, dlqTrigger: {template: {name: e, log: {}}}}\n",
			"spec.triggers[0].dlqTrigger.dlqTrigger", "has no dlqTrigger of its own"},
		{"retry", "  - template: {name: t, log: {}}\n    dlqTrigger: {template: {name: d, log: {}}, retryStrategy: {steps: -1}}\n",
			"spec.triggers[0].dlqTrigger.retryStrategy.steps", "number of attempts"},
		{"http", "  - template: {name: t, log: {}}\n    dlqTrigger: {template: {name: d, http: {url: 'ftp://x'}}}\n",
			"spec.triggers[0].dlqTrigger.template.http.url", "http or https"},
		{"custom", "  - template: {name: t, custom: {serverURL: 'x:9000'}}\n", "spec.triggers[0].template.custom", "gRPC trigger server"},
		{"awsLambda", "  - template: {name: t, awsLambda: {functionName: f}}\n", "spec.triggers[0].template.awsLambda", "triggers of type awsLambda are not built"},
		{"unknown", "  - template: {name: t, log: {}, lgo: {}}\n", "spec.triggers[0].template.lgo", "is not a field of a trigger template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSensor(toJSON(t, snHead+okDeps+"  triggers:\n"+tc.trig))
			if f := errdefs.Field(err); f != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v (field %q), want %s: …%s", err, f, tc.field, tc.msg)
			}
		})
	}
	s, err := DecodeSensor(toJSON(t, snHead+okDeps+`  triggers:
  - template: {name: t, http: {url: 'https://example.com/x'}}
    atLeastOnce: true
    dlqTrigger:
      template: {name: dlq, slack: {slackToken: {name: s, key: k}, channel: ops, message: lost an event}}
      retryStrategy: {steps: 3}
`))
	if err != nil || s.Spec.Triggers[0].DlqTrigger.Template.Slack.Channel != "ops" {
		t.Errorf("a slack dlqTrigger: %v", err)
	}
}

// TestNATSTriggerKeepsConnection: a Sensor's nats trigger publishes every execution on one
// kept connection to a real NATS, connects again once it closed, and leaves no connection
// or goroutine behind when the Sensor's run closes its connections.
func TestNATSTriggerKeepsConnection(t *testing.T) {
	url := natsURL(t)
	sc, err := nats.Connect(url, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	subject := fmt.Sprintf("freshet.test.keep.%d", time.Now().UnixNano())
	sub, _ := sc.SubscribeSync(subject)
	_ = sc.Flush()
	before := runtime.NumGoroutine()

	c := newTestController(t, nil)
	cs, ct := compiledOne(t, `  - template:
      name: pub
      nats:
        url: `+url+`
        subject: `+subject+`
        payload: [{src: {dependencyName: d, dataKey: body.msg}, dest: message}]
`)
	kept := func() *nats.Conn {
		cs.nats.mu.Lock()
		defer cs.nats.mu.Unlock()
		for _, nc := range cs.nats.conns {
			return nc
		}
		return nil
	}
	fire := func() {
		t.Helper()
		if _, err := c.fireNATS(context.Background(), cs, ct, ct.t.Template.NATS); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.NextMsg(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	fire()
	first := kept()
	for range 3 {
		fire()
	}
	if cs.nats.size() != 1 || kept() != first || first.Stats().OutMsgs != 4 {
		t.Fatalf("%d connections kept, the first published %d messages; want one connection for all 4", cs.nats.size(), first.Stats().OutMsgs)
	}
	first.Close() // as when the server goes away: the next execution connects again
	fire()
	if second := kept(); second == nil || second == first || second.IsClosed() || cs.nats.size() != 1 {
		t.Fatalf("after the connection closed: %d kept", cs.nats.size())
	}
	second := kept()
	cs.nats.close() // the Sensor's run stops
	if !second.IsClosed() || cs.nats.size() != 0 {
		t.Errorf("a connection is left open after close")
	}
	fire() // a late execution connects for itself and closes after
	if cs.nats.size() != 0 {
		t.Errorf("a connection was kept after close")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines, %d before: the connections' goroutines leak", n, before)
	}
}
