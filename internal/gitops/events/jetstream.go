package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Settings of the JetStream streams and consumers, as internal/bus's (docs/bus.md).
const (
	// SubjectRoot roots every event's subject: argo-events.<namespace>.<bus>.<source>.<event>.
	SubjectRoot = "argo-events"
	// StreamMaxAge is how long a bus keeps an event (Argo's JetStream bus default).
	StreamMaxAge      = 72 * time.Hour
	duplicateWindow   = 2 * time.Minute
	consumerAckWait   = 30 * time.Second
	consumerMaxDelivr = 8
	nakMin            = time.Second
	nakMax            = 2 * time.Minute
	publishTimeout    = 10 * time.Second
)

// busConn is one EventBus's JetStream: its connection and stream.
type busConn struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	root   string // argo-events.<namespace>.<bus>
	own    bool   // the connection is this bus's, closed with it
	desc   string // where, for status messages (no credentials)
	hash   string // the spec it was made from
}

func streamName(ns, bus string) string {
	return "ARGOEVENTS_" + subjectToken(ns) + "_" + subjectToken(bus)
}

func busRoot(ns, bus string) string {
	return SubjectRoot + "." + subjectToken(ns) + "." + subjectToken(bus)
}

// openBus makes sure the bus's stream exists on nc.
func openBus(ctx context.Context, nc *nats.Conn, own bool, ns, bus, desc string) (*busConn, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b := &busConn{nc: nc, js: js, stream: streamName(ns, bus), root: busRoot(ns, bus), own: own, desc: desc}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        b.stream,
		Description: "Argo Events bus " + ns + "/" + bus + " (Freshet runtime)",
		Subjects:    []string{b.root + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      StreamMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    1,
		Duplicates:  duplicateWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("create or update stream %s: %w", b.stream, err)
	}
	return b, nil
}

func (b *busConn) close() {
	if b.own {
		b.nc.Close()
	}
}

func (b *busConn) subject(source, event string) string {
	return b.root + "." + subjectToken(source) + "." + subjectToken(event)
}

// publish stores ev and returns once the stream has it. Its id, scoped by source and event,
// is the Nats-Msg-Id: a retried publish within the duplicate window is stored once.
func (b *busConn) publish(ctx context.Context, ev *Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	msg := nats.NewMsg(b.subject(ev.Context.Source, ev.Context.Subject))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, ev.Context.Source+"/"+ev.Context.Subject+"/"+ev.Context.ID)
	if _, err := b.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish to %s: %w", msg.Subject, err)
	}
	return nil
}

// nakDelay is the redelivery delay after the n-th delivery failed: 1 s doubling up to 2 min.
func nakDelay(n uint64) time.Duration {
	d := nakMin
	for i := uint64(1); i < n && d < nakMax; i++ {
		d *= 2
	}
	return min(d, nakMax)
}
