package billing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// TestReserve: what a reservation counts, on both backends — a name pending or reported counts
// once, a release or an expiry frees the slot, a report settles it, and clusters count per
// runtime, the reported ones with the pending ones by name.
func TestReserve(t *testing.T) {
	cat, err := billing.ParseCatalogue("t.yaml", []byte("default: two\nplans:\n  - name: two\n    limits: {applications: 2, clusters-per-runtime: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const ttl = 300 * time.Millisecond
		svc := billing.New(billing.Deps{Store: db, Catalogue: cat, ReservationTTL: ttl})
		f := newFixture(t, db)
		rt := store.Runtime{ID: store.NewID(store.PrefixRuntime), AccountID: f.account, Name: "edge", Type: "byo", AccessMode: "tunnel",
			TokenPrefix: store.NewID("tok"), Status: "healthy", CreatedAt: time.Now()}
		if err := db.CreateRuntime(ctx, rt); err != nil {
			t.Fatal(err)
		}
		app := func(name string) (string, error) {
			return svc.Reserve(ctx, f.account, billing.Claim{Resource: billing.Applications, RuntimeID: rt.ID, Runtime: rt.Name, Name: name})
		}
		refused := func(err error, used int64) {
			t.Helper()
			var le *billing.LimitError
			if !errors.As(err, &le) || le.Used != used || le.Limit != 2 {
				t.Fatalf("got %v; want a refusal at %d of 2", err, used)
			}
		}
		a, err := app("a")
		if err != nil || a == "" {
			t.Fatalf("a: %q %v", a, err)
		}
		if _, err := app("b"); err != nil {
			t.Fatal(err)
		}
		if id, err := app("a"); err != nil || id == "" { // pending: counts once, held again
			t.Fatalf("a again: %q %v", id, err)
		}
		_, err = app("c")
		refused(err, 2)
		// A released reservation frees its slot (a's second one still holds a).
		if err := svc.Release(ctx, f.account, a); err != nil {
			t.Fatal(err)
		}
		_, err = app("c")
		refused(err, 2)
		// The runtime reports b: settled; b counts once, as reported; re-creating it adds nothing.
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.UpsertApplication(ctx, store.Application{AccountID: f.account, RuntimeID: rt.ID, Name: "b", Labels: map[string]string{}, Data: "{}"}); err != nil {
				return err
			}
			return tx.SettleApplicationReservations(ctx, f.account, rt.ID)
		}); err != nil {
			t.Fatal(err)
		}
		if pending, err := db.PendingApplications(ctx, f.account, time.Now()); err != nil || len(pending) != 1 || pending[0].Name != "a" {
			t.Fatalf("pending after b's report: %v %v", pending, err)
		}
		if id, err := app("b"); err != nil || id != "" {
			t.Fatalf("b reported, created again: %q %v", id, err)
		}
		_, err = app("c")
		refused(err, 2)
		// a is never reported: once its reservation expires, its slot is free.
		time.Sleep(ttl + 50*time.Millisecond)
		if id, err := app("c"); err != nil || id == "" {
			t.Fatalf("c after a expired: %q %v", id, err)
		}

		// Clusters: the reported (by name) with the pending, per runtime.
		reported := []string{}
		cluster := func(name string) (string, error) {
			return svc.Reserve(ctx, f.account, billing.Claim{Resource: billing.ClustersPerRuntime, RuntimeID: rt.ID, Runtime: rt.Name, Name: name,
				Reported: func(context.Context, *store.Tx) ([]string, error) { return reported, nil }})
		}
		if _, err := cluster("prod"); err != nil {
			t.Fatal(err)
		}
		_, err = cluster("stage")
		var le *billing.LimitError
		if !errors.As(err, &le) || le.Used != 1 || le.Scope != "runtime edge" || le.Error() != `plan "two" allows 1 cluster per runtime; runtime edge has 1` {
			t.Fatalf("stage: %v", err)
		}
		reported = []string{"prod"} // the heartbeat lists it: still 1, not 2
		if _, err = cluster("stage"); !errors.As(err, &le) || le.Used != 1 {
			t.Fatalf("stage with prod reported and pending: %v", err)
		}
		if id, err := cluster("prod"); err != nil || id != "" {
			t.Fatalf("prod re-added: %q %v", id, err)
		}
	})
}
