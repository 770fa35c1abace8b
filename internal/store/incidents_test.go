package store_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// incidentsOf derives one application's incidents from its transitions as the definition reads
// (docs/analytics.md): each transition to Degraded belongs to the incident that the next later
// transition to Healthy ends (none: open), which starts at the first of them.
func incidentsOf(hs []store.HealthEvent) []store.Incident {
	starts := map[time.Time]store.Incident{} // by restored
	for _, d := range hs {
		if d.Health != "Degraded" {
			continue
		}
		var restored time.Time
		for _, h := range hs {
			if h.Health == "Healthy" && h.At.After(d.At) && (restored.IsZero() || h.At.Before(restored)) {
				restored = h.At
			}
		}
		if x, ok := starts[restored]; !ok || d.At.Before(x.Start) {
			starts[restored] = store.Incident{RuntimeID: d.RuntimeID, App: d.App, Start: d.At, RestoredAt: restored}
		}
	}
	var out []store.Incident
	for _, x := range starts {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// The incidents a DORA report reads (app_incidents, kept as transitions are stored) are the
// ones the transitions define, however the transitions arrive: in order, shuffled, each one
// several times; another application's and account's are their own.
func TestIncidentsKeptAsTransitionsArrive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		states := []string{"Healthy", "Degraded", "Progressing", "Degraded", "Healthy", "Missing"}
		for round := range 12 {
			r := rand.New(rand.NewPCG(uint64(round), 7))
			acc := a.ID
			var all []store.HealthEvent
			for _, app := range []string{"web", "api"} {
				at := base.AddDate(0, 0, round*3)
				for i := range 8 + r.IntN(10) {
					at = at.Add(time.Duration(1+r.IntN(90)) * time.Minute)
					if i > 0 && r.IntN(8) == 0 { // now and then two transitions at one instant
						at = at.Add(-time.Duration(1+r.IntN(90)) * time.Minute).Add(time.Duration(r.IntN(2)) * time.Minute)
						if prev := all[len(all)-1].At; at.Before(prev) {
							at = prev
						}
					}
					all = append(all, store.HealthEvent{AccountID: acc, RuntimeID: "rt_1", Runtime: "edge", App: app, Cluster: "prod",
						At: at, Health: states[r.IntN(len(states))]})
				}
			}
			want := map[string][]store.Incident{}
			for _, app := range []string{"web", "api"} {
				var hs []store.HealthEvent
				for _, h := range all {
					if h.App == app {
						hs = append(hs, h)
					}
				}
				want[app] = incidentsOf(hs)
			}
			// Shuffled, with duplicates; the other account's transitions of the same names too.
			arrive := slices.Clone(all)
			arrive = append(arrive, all[r.IntN(len(all))], all[r.IntN(len(all))])
			if round%3 != 0 {
				r.Shuffle(len(arrive), func(i, j int) { arrive[i], arrive[j] = arrive[j], arrive[i] })
			}
			for _, h := range arrive {
				if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := tx.PutHealthEvent(ctx, h); return err }); err != nil {
					t.Fatal(err)
				}
				o := h
				o.AccountID, o.Health = b.ID, "Degraded"
				if err := db.Tx(ctx, func(tx *store.Tx) error { _, err := tx.PutHealthEvent(ctx, o); return err }); err != nil {
					t.Fatal(err)
				}
			}
			since, until := base.AddDate(0, 0, round*3), base.AddDate(0, 0, round*3+3)
			for _, app := range []string{"web", "api"} {
				got, err := db.Incidents(ctx, acc, store.DeploymentFilter{App: app, Since: since, Until: until})
				if err != nil {
					t.Fatal(err)
				}
				w := want[app]
				if !slices.Equal(got, w) {
					t.Fatalf("round %d, %s: incidents\n got  %+v\n want %+v\n transitions %+v", round, app, got, w, all)
				}
			}
			// The other account's: its own (every transition Degraded: one open incident per app).
			other, err := db.Incidents(ctx, b.ID, store.DeploymentFilter{Since: since, Until: until})
			if err != nil || len(other) != 2 || !other[0].RestoredAt.IsZero() {
				t.Fatalf("round %d: the other account's incidents: %+v, %v", round, other, err)
			}
			if err := db.Exec(ctx, `DELETE FROM app_incidents`); err != nil {
				t.Fatal(err)
			}
			if err := db.Exec(ctx, `DELETE FROM app_health_events`); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A runtime name's IDs over time (a name registered again is another runtime), each once, in
// ID order; another account's and another name's left out.
func TestRuntimeIDsOfAName(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		var ds []store.Deployment
		for i, x := range []struct{ acc, rt, name string }{{a.ID, "rt_3", "edge"}, {a.ID, "rt_1", "edge"}, {a.ID, "rt_3", "edge"}, {a.ID, "rt_2", "edge"},
			{a.ID, "rt_4", "lab"}, {b.ID, "rt_9", "edge"}, {a.ID, "rt_1", "edge"}} {
			ds = append(ds, store.Deployment{ID: store.NewID("dep"), AccountID: x.acc, EventKey: x.rt + "/" + string(rune('a'+i)), RuntimeID: x.rt,
				Runtime: x.name, App: "web", Result: "succeeded", Images: "[]", FinishedAt: time.Unix(1700000000+int64(i), 0), LeadTime: -1})
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.InsertDeployments(ctx, ds) }); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]string{"edge": {"rt_1", "rt_2", "rt_3"}, "lab": {"rt_4"}, "gone": {}} {
			if got, err := db.RuntimeIDs(ctx, a.ID, name); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s: %v, %v; want %v", name, got, err, want)
			}
		}
	})
}
