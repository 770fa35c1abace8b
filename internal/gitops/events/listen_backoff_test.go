package events

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// TestNATSAndMQTTConnectionBackoff: a nats or mqtt source whose server refuses the connection
// (nothing listens on the port) is tried connectionBackoff.steps times, the backoff waited
// between them, then given up; the state says which source and why.
func TestNATSAndMQTTConnectionBackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b, _ := testBus(t)
	c := testController(t)
	bo, err := compileBackoff("f", &Backoff{Duration: json.RawMessage(`"50ms"`), Factor: json.RawMessage(`2`), Jitter: json.RawMessage(`0`), Steps: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*listener{
		{typ: "nats", event: "orders", backoff: bo, nats: &NATSSource{URL: "nats://" + addr, Subject: "orders"}},
		{typ: "mqtt", event: "orders", backoff: bo, mqtt: &MQTTSource{URL: "tcp://" + addr, Topic: "orders", ClientID: "freshet-unit"}},
	} {
		t.Run(l.typ, func(t *testing.T) {
			run := &sourceRun{listeners: []*listener{l}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			c.runListener(ctx, &emitter{c: c, bus: b, ns: "unit", name: "src", l: l})
			if ctx.Err() != nil {
				t.Fatal("did not give up")
			}
			if el := time.Since(start); el < 150*time.Millisecond { // 50 ms + 100 ms between 3 attempts
				t.Errorf("gave up after %v: the backoff was not waited", el)
			}
			cond := run.connectedCondition()
			if cond.Status != "False" || !strings.Contains(cond.Message, "spec."+l.typ+".orders: gave up after 3 attempts") ||
				!strings.Contains(cond.Message, "connect to ") {
				t.Errorf("condition %+v", cond)
			}
		})
	}
}
