package agent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestEventsNATSEmbedded: with no --events-nats-url the runtime's jetstream EventBuses use a
// NATS embedded in the runtime: started on first use, JetStream enabled, shared, stopped by
// close.
func TestEventsNATSEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := &eventsNATS{dir: t.TempDir(), log: slog.New(slog.DiscardHandler)}
	nc, err := e.conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := e.conn(ctx); again != nc {
		t.Error("a second connection was made")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "ARGOEVENTS_ns_default", Subjects: []string{"argo-events.ns.default.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "argo-events.ns.default.src.ev", []byte(`{}`)); err != nil {
		t.Fatalf("publish on the embedded JetStream: %v", err)
	}
	e.close()
	if !nc.IsClosed() {
		t.Error("the connection is open after close")
	}
}
