package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func openBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func insert(t *testing.T, db *store.DB, account, action string) store.AuditEvent {
	t.Helper()
	e := store.AuditEvent{ID: store.NewID(store.PrefixAudit), AccountID: account, Actor: "a@b.c", Action: action,
		ResourceType: "user", Result: "success", CreatedAt: time.Now()}
	if err := db.InsertAudit(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRelayPublishesEveryRecordOnceInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b := openBus(t)
		r := NewRelay(db, b, nil)
		r.batch = 3 // several batches

		var want []string
		for i := range 7 {
			acct := "acc_a"
			if i%2 == 1 {
				acct = "acc_b"
			}
			want = append(want, insert(t, db, acct, fmt.Sprintf("user.op%d", i)).ID)
		}
		got := make(chan bus.Message[Event], 100)
		sub, err := bus.Subscribe(ctx, b, "test-all", bus.SubjectRoot+".*.audit.>", func(_ context.Context, m bus.Message[Event]) error {
			got <- m
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Stop()
		for total := 0; total < 7; {
			n, err := r.Once(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("relay stalled after %d", total)
			}
			total += n
		}
		for i, id := range want {
			select {
			case m := <-got:
				if m.Key != id || m.Data.ID != id {
					t.Fatalf("event %d: key %s id %s, want %s", i, m.Key, m.Data.ID, id)
				}
				if want := Subject(m.Data.AccountID, m.Data.Action); m.Subject != want {
					t.Fatalf("subject %s, want %s", m.Subject, want)
				}
			case <-ctx.Done():
				t.Fatalf("received %d of %d events", i, len(want))
			}
		}
		// Nothing new: nothing published.
		if n, err := r.Once(ctx); n != 0 || err != nil {
			t.Fatalf("second pass published %d, %v", n, err)
		}
		// A tenant's consumer sees only its own account's events.
		onlyB := make(chan bus.Message[Event], 100)
		subB, err := bus.Subscribe(ctx, b, "test-b", Subject("acc_b", ">"), func(_ context.Context, m bus.Message[Event]) error {
			onlyB <- m
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer subB.Stop()
		for range 3 {
			select {
			case m := <-onlyB:
				if m.Data.AccountID != "acc_b" {
					t.Fatalf("account filter leaked %s", m.Data.AccountID)
				}
			case <-ctx.Done():
				t.Fatal("account b's events not delivered")
			}
		}
	})
}

// failingStore is db whose MarkAuditPublished fails while fail is set: a relay that dies
// between publishing and taking records off the queue.
type failingStore struct {
	Store
	fail func() bool
}

func (f failingStore) MarkAuditPublished(ctx context.Context, ids ...string) error {
	if f.fail() {
		return errors.New("the relay died")
	}
	return f.Store.MarkAuditPublished(ctx, ids...)
}

func TestRelayRepublishIsDeduplicated(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	b := openBus(t)
	dies := true
	r := NewRelay(failingStore{Store: db, fail: func() bool { return dies }}, b, nil)
	for range 4 {
		insert(t, db, "acc_a", "apikey.create")
	}
	// Published, but the relay dies before the records leave the queue…
	if n, err := r.Once(ctx); n != 4 || err == nil {
		t.Fatalf("Once = %d, %v; want 4 published and the failure", n, err)
	}
	// …so they go out again…
	dies = false
	if n, err := NewRelay(db, b, nil).Once(ctx); n != 4 || err != nil {
		t.Fatalf("republish = %d, %v", n, err)
	}
	if n, err := r.Once(ctx); n != 0 || err != nil {
		t.Fatalf("a third pass published %d, %v", n, err)
	}
	// …and the stream still holds each once.
	got := make(chan string, 10)
	sub, err := bus.Subscribe(ctx, b, "count", bus.SubjectRoot+".>", func(_ context.Context, m bus.Message[Event]) error {
		got <- m.Key
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	seen := map[string]int{}
	timeout := time.After(2 * time.Second)
	for done := false; !done; {
		select {
		case k := <-got:
			seen[k]++
		case <-timeout:
			done = true
		}
	}
	if len(seen) != 4 {
		t.Fatalf("%d distinct events, want 4", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("event %s delivered %d times", k, n)
		}
	}
}

// Records and outbox events are published whatever order their transactions commit in. 16
// writers take a record's ID, wait a little (the rest of the change) and commit it with an
// outbox event, through two database handles with both relays each (two replicas), the relays
// woken after every commit: every record and every event reaches the stream, once. A relay that
// published IDs after a cursor skipped the records that committed after a later ID had gone
// out.
func TestRelaysPublishWhatCommitsOutOfIDOrder(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dsn := storetest.DSN(t, d)
			b := openBus(t)
			type replica struct {
				db     *store.DB
				audit  *Relay
				outbox *OutboxRelay
			}
			var replicas []replica
			rctx, stop := context.WithCancel(ctx)
			var running sync.WaitGroup
			defer func() { stop(); running.Wait() }()
			for range 2 {
				db, err := store.Open(ctx, dsn, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				r := replica{db: db, audit: NewRelay(db, b, nil), outbox: NewOutboxRelay(db, b, nil)}
				r.audit.poll = 20 * time.Millisecond
				running.Go(func() { r.audit.Run(rctx) })
				running.Go(func() { r.outbox.Run(rctx) })
				replicas = append(replicas, r)
			}

			const writers, each = 16, 40
			var wg sync.WaitGroup
			for w := range writers {
				r := replicas[w%2]
				wg.Go(func() {
					for range each {
						e := store.AuditEvent{ID: store.NewID(store.PrefixAudit), AccountID: "acc_a", Actor: "a@b.c", Action: "project.create",
							ResourceType: "project", Result: "success", CreatedAt: time.Now()}
						time.Sleep(time.Duration(rand.N(3000)) * time.Microsecond) // the rest of the change
						err := r.db.Tx(ctx, func(tx *store.Tx) error {
							if err := tx.InsertAudit(ctx, e); err != nil {
								return err
							}
							return tx.InsertOutbox(ctx, store.OutboxMessage{AccountID: "acc_a", Subject: DomainSubject("acc_a", "test", "happened"),
								Key: "test-happened/" + e.ID, Payload: `{"n":1}`, CreatedAt: e.CreatedAt})
						})
						if err != nil {
							t.Error(err)
							return
						}
						r.audit.Kick()
						r.outbox.Kick()
					}
				})
			}
			seen := map[string]int{}
			var mu sync.Mutex
			sub, err := bus.Subscribe(ctx, b, "count", bus.SubjectRoot+".>", func(_ context.Context, m bus.Message[json.RawMessage]) error {
				mu.Lock()
				seen[m.Key]++
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Stop()
			wg.Wait()
			total := func() (distinct, delivered int) {
				mu.Lock()
				defer mu.Unlock()
				for _, n := range seen {
					distinct++
					delivered += n
				}
				return distinct, delivered
			}
			const want = 2 * writers * each
			deadline := time.Now().Add(30 * time.Second)
			for n, _ := total(); n < want && time.Now().Before(deadline); n, _ = total() {
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond) // a duplicate would arrive by now
			if distinct, delivered := total(); distinct != want || delivered != distinct {
				t.Fatalf("%d of %d records and events published, %d deliveries", distinct, want, delivered)
			}
			if left, err := replicas[0].db.UnpublishedAudit(ctx, 10); err != nil || len(left) != 0 {
				t.Fatalf("records still queued: %d, %v", len(left), err)
			}
			if left, err := replicas[0].db.OutboxBatch(ctx, 10); err != nil || len(left) != 0 {
				t.Fatalf("events still queued: %d, %v", len(left), err)
			}
		})
	}
}

func TestRunStopsWithContext(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	r := NewRelay(db, openBus(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	insert(t, db, "acc_a", "user.create")
	r.Kick()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
}
