package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

type testEvent struct {
	N int `json:"n"`
}

func queue(t *testing.T, db *store.DB, m store.OutboxMessage) {
	t.Helper()
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	if err := db.InsertOutbox(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func TestOutboxRelayPublishesOnceInOrderAndDeletes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b := openBus(t)
		r := NewOutboxRelay(db, b, nil)
		r.batch = 2
		for i := range 5 {
			if i == 2 { // a bug's event: dropped, not blocking the others
				queue(t, db, store.OutboxMessage{AccountID: "acc_a", Subject: "freshet.acc_a.gitops.bad event", Key: "bad", Payload: `{}`})
			}
			queue(t, db, store.OutboxMessage{AccountID: "acc_a", Subject: DomainSubject("acc_a", "gitops", "sync-finished"),
				Key: fmt.Sprint("gitops-sync-finished/", i), Payload: fmt.Sprintf(`{"n":%d}`, i)})
		}
		got := make(chan bus.Message[testEvent], 100)
		sub, err := bus.Subscribe(ctx, b, "test-outbox", DomainSubject("*", "gitops", ">"), func(_ context.Context, m bus.Message[testEvent]) error {
			got <- m
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Stop()
		total := 0
		for range 10 {
			n, err := r.Once(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			total += n
		}
		if total != 6 {
			t.Fatalf("relayed %d, want 6 (5 events and the dropped one)", total)
		}
		if left, _ := db.OutboxBatch(ctx, 10); len(left) != 0 {
			t.Fatalf("outbox keeps %d published events", len(left))
		}
		for i := range 5 {
			select {
			case m := <-got:
				if m.Data.N != i || m.Key != fmt.Sprint("gitops-sync-finished/", i) || m.Subject != "freshet.acc_a.gitops.sync-finished" {
					t.Fatalf("event %d = %+v", i, m)
				}
			case <-ctx.Done():
				t.Fatalf("received %d of 5 events", i)
			}
		}
		// Queued again (a crash before the delete): the bus stores each once.
		queue(t, db, store.OutboxMessage{AccountID: "acc_a", Subject: DomainSubject("acc_a", "gitops", "sync-finished"), Key: "gitops-sync-finished/0", Payload: `{"n":0}`})
		if n, err := r.Once(ctx); n != 1 || err != nil {
			t.Fatalf("republish: %d, %v", n, err)
		}
		select {
		case m := <-got:
			t.Fatalf("a duplicate was delivered: %+v", m)
		case <-time.After(time.Second):
		}
	})
}

func TestOutboxRelayKeepsEventsWhileTheBusIsDown(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	b := openBus(t)
	r := NewOutboxRelay(db, b, nil)
	queue(t, db, store.OutboxMessage{AccountID: "acc_a", Subject: DomainSubject("acc_a", "gitops", "sync-finished"), Key: "k", Payload: `{}`})
	b.Close()
	if n, err := r.Once(context.Background()); err == nil || n != 0 {
		t.Fatalf("with the bus closed: %d, %v", n, err)
	}
	if left, _ := db.OutboxBatch(context.Background(), 10); len(left) != 1 {
		t.Fatalf("an unpublished event was deleted: %d left", len(left))
	}
}
