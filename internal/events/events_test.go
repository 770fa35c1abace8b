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

func TestRelayRepublishIsDeduplicated(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	b := openBus(t)
	r := NewRelay(db, b, nil)
	for range 4 {
		insert(t, db, "acc_a", "apikey.create")
	}
	if n, err := r.Once(ctx); n != 4 || err != nil {
		t.Fatalf("Once = %d, %v", n, err)
	}
	// A crash after publishing but before the cursor moved: the records go out again…
	r2 := NewRelay(db, b, nil)
	resetCursor(t, db)
	if n, err := r2.Once(ctx); n != 4 || err != nil {
		t.Fatalf("republish = %d, %v", n, err)
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

func TestRelayCursorNeverMovesBack(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	if err := db.AdvanceRelayCursor(ctx, "x", "aud_2"); err != nil {
		t.Fatal(err)
	}
	if err := db.AdvanceRelayCursor(ctx, "x", "aud_1"); err != nil {
		t.Fatal(err)
	}
	if pos, _ := db.RelayCursor(ctx, "x"); pos != "aud_2" {
		t.Fatalf("cursor = %s, want aud_2", pos)
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

func resetCursor(t *testing.T, db *store.DB) {
	t.Helper()
	if err := db.ResetRelayCursor(context.Background(), RelayName); err != nil {
		t.Fatal(err)
	}
}
