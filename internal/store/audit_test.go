package store_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func auditIDs(evs []store.AuditEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// The event relay's queue: a record is queued by the transaction that writes it, so one whose
// transaction commits after a record with a later ID was published and taken off the queue is
// still returned; a record that rolled back never is; marking twice is harmless.
func TestUnpublishedAuditQueuesEveryCommittedRecord(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		record := func(id string) store.AuditEvent {
			return store.AuditEvent{ID: id, AccountID: "acc_a", Actor: "a@b.c", Action: "project.create", ResourceType: "project", Result: "success", CreatedAt: time.Now()}
		}
		early, late := store.NewID(store.PrefixAudit), store.NewID(store.PrefixAudit)
		if err := db.InsertAudit(ctx, record(late)); err != nil {
			t.Fatal(err)
		}
		got, err := db.UnpublishedAudit(ctx, 10)
		if err != nil || !slices.Equal(auditIDs(got), []string{late}) {
			t.Fatalf("UnpublishedAudit = %v, %v; want [%s]", auditIDs(got), err, late)
		}
		if err := db.MarkAuditPublished(ctx, late); err != nil {
			t.Fatal(err)
		}
		// The record with the earlier ID commits now.
		if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.InsertAudit(ctx, record(early)) }); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.InsertAudit(ctx, record(store.NewID(store.PrefixAudit))); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatal(err)
		}
		third := store.NewID(store.PrefixAudit)
		if err := db.InsertAudit(ctx, record(third)); err != nil {
			t.Fatal(err)
		}
		got, err = db.UnpublishedAudit(ctx, 10)
		if err != nil || !slices.Equal(auditIDs(got), []string{early, third}) {
			t.Fatalf("UnpublishedAudit = %v, %v; want [%s %s]", auditIDs(got), err, early, third)
		}
		if got[0].Action != "project.create" || got[0].AccountID != "acc_a" || got[0].CreatedAt.IsZero() {
			t.Fatalf("record read back = %+v", got[0])
		}
		if got, _ := db.UnpublishedAudit(ctx, 1); !slices.Equal(auditIDs(got), []string{early}) {
			t.Fatalf("UnpublishedAudit(limit 1) = %v", auditIDs(got))
		}
		for range 2 { // two relays
			if err := db.MarkAuditPublished(ctx, early, third); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := db.UnpublishedAudit(ctx, 10); err != nil || len(got) != 0 {
			t.Fatalf("UnpublishedAudit after marking = %v, %v", auditIDs(got), err)
		}
	})
}

// Upgrading from the relay's cursor: the records after it are queued, those before it (already
// published) are not.
func TestAuditQueueAfterMigration(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, err := store.OpenUnmigrated(ctx, storetest.DSN(t, d))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			migrateBefore(t, db, "0010")
			var ids []string
			for range 4 {
				id := store.NewID(store.PrefixAudit)
				ids = append(ids, id)
				if err := db.Exec(ctx, `INSERT INTO audit_events (id, account_id, actor_id, actor, action, resource_type, resource_id,
					request_id, source_ip, result, detail, created_at) VALUES (?, 'acc_a', '', 'a', 'user.create', 'user', '', '', '', 'success', '', 1)`, id); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Exec(ctx, `INSERT INTO relay_cursors (name, position) VALUES ('audit', ?)`, ids[1]); err != nil {
				t.Fatal(err)
			}
			if err := db.MigrateFS(ctx, os.DirFS(".")); err != nil {
				t.Fatal(err)
			}
			if got, err := db.UnpublishedAudit(ctx, 10); err != nil || !slices.Equal(auditIDs(got), ids[2:]) {
				t.Fatalf("queued after the migration: %v, %v; want %v", auditIDs(got), err, ids[2:])
			}
		})
	}
}
