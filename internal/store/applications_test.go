package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func seedRuntime(t *testing.T, db *store.DB, accountID, name string) store.Runtime {
	t.Helper()
	r := store.Runtime{ID: store.NewID(store.PrefixRuntime), AccountID: accountID, Name: name, Type: "hybrid", AccessMode: "tunnel",
		TokenPrefix: store.NewID("p"), TokenHash: "h", Status: "healthy", Info: "{}", CreatedAt: time.Now()}
	if err := db.CreateRuntime(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func testApp(rt store.Runtime, name string) store.Application {
	return store.Application{AccountID: rt.AccountID, RuntimeID: rt.ID, Name: name, Project: "default",
		RepoURL: "https://git.example/acme/deploy.git", Path: "apps/" + name, TargetRevision: "main",
		DestServer: "https://kubernetes.default.svc", DestName: "in-cluster", DestNamespace: name,
		Sync: "Synced", Health: "Healthy", Revision: "abc", Data: `{"name":"` + name + `"}`, UpdatedAt: time.Now()}
}

func appNames(apps []store.Application) []string {
	out := []string{}
	for _, a := range apps {
		out = append(out, a.Name)
	}
	return out
}

func TestApplicationsUpsertListDelete(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		rt := seedRuntime(t, db, a.ID, "edge")
		rt2 := seedRuntime(t, db, a.ID, "hub")

		web := testApp(rt, "web")
		web.Labels = map[string]string{"team": "shop", "tier": "front"}
		if ch, err := db.UpsertApplication(ctx, web); err != nil || !ch {
			t.Fatalf("new application: changed %v, %v", ch, err)
		}
		got, err := db.GetApplication(ctx, a.ID, "edge", "web")
		if err != nil || got.Runtime != "edge" || got.RuntimeID != rt.ID || got.Labels["team"] != "shop" || got.Data != web.Data || got.ID == "" {
			t.Fatalf("GetApplication = %+v, %v", got, err)
		}
		if byID, err := db.GetApplication(ctx, a.ID, rt.ID, "web"); err != nil || byID.ID != got.ID {
			t.Fatalf("by runtime ID: %+v, %v", byID, err)
		}
		// The same state again changes nothing, not even the time; a new one keeps the ID.
		again := web
		again.UpdatedAt = time.Now().Add(time.Hour)
		if ch, err := db.UpsertApplication(ctx, again); err != nil || ch {
			t.Fatalf("same state: changed %v, %v", ch, err)
		}
		if g, _ := db.GetApplication(ctx, a.ID, "edge", "web"); !g.UpdatedAt.Equal(got.UpdatedAt) {
			t.Fatalf("UpdatedAt moved on a no-op: %v → %v", got.UpdatedAt, g.UpdatedAt)
		}
		web.Health, web.Data, web.Labels = "Degraded", `{"name":"web","health":"Degraded"}`, map[string]string{"team": "shop"}
		if ch, err := db.UpsertApplication(ctx, web); err != nil || !ch {
			t.Fatalf("changed state: %v, %v", ch, err)
		}
		if g, _ := db.GetApplication(ctx, a.ID, "edge", "web"); g.ID != got.ID || g.Health != "Degraded" || len(g.Labels) != 1 {
			t.Fatalf("after change: %+v", g)
		}
		if _, err := db.GetApplication(ctx, a.ID, "edge", "nope"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("missing application: %v", err)
		}
		// The same name on another runtime is another application.
		other := testApp(rt2, "web")
		other.DestName, other.DestServer, other.Health, other.Sync, other.Project = "prod", "https://prod.example:6443", "Progressing", "OutOfSync", "shop"
		other.RepoURL, other.Path, other.DestNamespace = "https://git.example/Acme/Web_100%.git", "deploy", "payments"
		other.Labels = map[string]string{"team": "shop", "env": "prod"}
		if _, err := db.UpsertApplication(ctx, other); err != nil {
			t.Fatal(err)
		}
		api := testApp(rt, "api")
		api.Labels = map[string]string{"env": "prod"}
		if _, err := db.UpsertApplication(ctx, api); err != nil {
			t.Fatal(err)
		}

		for _, c := range []struct {
			name string
			f    store.AppFilter
			want string
		}{
			{"all", store.AppFilter{}, "[web web api]"},
			{"runtime by name", store.AppFilter{Runtime: "hub"}, "[web]"},
			{"runtime by ID", store.AppFilter{Runtime: rt.ID}, "[web api]"},
			{"cluster by name", store.AppFilter{Cluster: "prod"}, "[web]"},
			{"cluster by server", store.AppFilter{Cluster: "https://kubernetes.default.svc"}, "[web api]"},
			{"health", store.AppFilter{Health: "Degraded"}, "[web]"},
			{"sync", store.AppFilter{Sync: "OutOfSync"}, "[web]"},
			{"project", store.AppFilter{Project: "default"}, "[web api]"},
			{"one label", store.AppFilter{Labels: map[string]string{"env": "prod"}}, "[web api]"},
			{"two labels", store.AppFilter{Labels: map[string]string{"env": "prod", "team": "shop"}}, "[web]"},
			{"label value differs", store.AppFilter{Labels: map[string]string{"team": "front"}}, "[]"},
			{"search name", store.AppFilter{Search: "API"}, "[api]"},
			{"search repo, case-insensitive", store.AppFilter{Search: "acme/web"}, "[web]"},
			{"search is literal", store.AppFilter{Search: "_100%"}, "[web]"},
			{"search wildcard chars match nothing", store.AppFilter{Search: "%_"}, "[]"},
			{"search namespace", store.AppFilter{Search: "paymen"}, "[web]"},
			{"search path", store.AppFilter{Search: "apps/api"}, "[api]"},
			{"combined", store.AppFilter{Runtime: "edge", Labels: map[string]string{"env": "prod"}, Health: "Healthy"}, "[api]"},
		} {
			apps, err := db.ListApplications(ctx, a.ID, c.f, paging.Page{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := fmt.Sprint(appNames(apps)); got != c.want {
				t.Errorf("%s: %s, want %s", c.name, got, c.want)
			}
			// The counts agree with the list, under every filter.
			n, err := db.CountApplications(ctx, a.ID, c.f)
			if err != nil {
				t.Fatalf("%s: count: %v", c.name, err)
			}
			health, sync := map[string]int{}, map[string]int{}
			for _, ap := range apps {
				health[ap.Health]++
				sync[ap.Sync]++
			}
			if n.Total != len(apps) || fmt.Sprint(n.Health) != fmt.Sprint(health) || fmt.Sprint(n.Sync) != fmt.Sprint(sync) {
				t.Errorf("%s: counts %+v, want %d, %v, %v", c.name, n, len(apps), health, sync)
			}
		}
		// Another account counts none of them.
		if n, err := db.CountApplications(ctx, "acc_other", store.AppFilter{}); err != nil || n.Total != 0 {
			t.Errorf("another account's counts: %+v, %v", n, err)
		}

		// Deleting is idempotent.
		if gone, err := db.DeleteApplication(ctx, a.ID, rt.ID, "api"); err != nil || !gone {
			t.Fatalf("delete: %v, %v", gone, err)
		}
		if gone, err := db.DeleteApplication(ctx, a.ID, rt.ID, "api"); err != nil || gone {
			t.Fatalf("delete again: %v, %v", gone, err)
		}
		// Deregistering a runtime forgets its applications and syncs.
		if _, err := db.RecordSync(ctx, store.ApplicationSync{AccountID: a.ID, RuntimeID: rt2.ID, App: "web", SyncID: 1, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteRuntime(ctx, a.ID, rt2.ID); err != nil {
			t.Fatal(err)
		}
		if apps, _ := db.ListApplications(ctx, a.ID, store.AppFilter{}, paging.Page{}); fmt.Sprint(appNames(apps)) != "[web]" || apps[0].RuntimeID != rt.ID {
			t.Fatalf("after deregistering hub: %v", appNames(apps))
		}
		if ss, err := db.ListSyncs(ctx, a.ID, rt2.ID, "web", paging.Page{}); err != nil || len(ss) != 0 {
			t.Fatalf("syncs of a deregistered runtime: %v, %v", ss, err)
		}
	})
}

func TestApplicationsPagination(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		rt := seedRuntime(t, db, a.ID, "edge")
		for i := range 25 {
			app := testApp(rt, fmt.Sprintf("app-%02d", i))
			if i%2 == 0 {
				app.Labels = map[string]string{"even": "yes"}
			}
			if _, err := db.UpsertApplication(ctx, app); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			f    store.AppFilter
			want int
		}{{store.AppFilter{}, 25}, {store.AppFilter{Labels: map[string]string{"even": "yes"}}, 13}} {
			var all []string
			p := paging.Page{Limit: 4}
			for range 20 {
				page, err := db.ListApplications(ctx, a.ID, c.f, p)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, appNames(page)...)
				if len(page) < p.Limit {
					break
				}
				p.After = page[len(page)-1].ID
			}
			if len(all) != c.want || all[0] != "app-00" {
				t.Fatalf("paged %v: %d applications %v, want %d", c.f, len(all), all, c.want)
			}
			seen := map[string]bool{}
			for _, n := range all {
				if seen[n] {
					t.Fatalf("%s listed twice", n)
				}
				seen[n] = true
			}
		}
	})
}

func TestReplaceApplications(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		rt := seedRuntime(t, db, a.ID, "edge")
		rt2 := seedRuntime(t, db, a.ID, "hub")
		for _, n := range []string{"one", "two", "three"} {
			if _, err := db.UpsertApplication(ctx, testApp(rt, n)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.UpsertApplication(ctx, testApp(rt2, "two")); err != nil {
			t.Fatal(err)
		}
		for _, s := range []store.ApplicationSync{{App: "three", SyncID: 1}, {App: "two", SyncID: 1}, {App: "ghost", SyncID: 4}} {
			s.AccountID, s.RuntimeID, s.StartedAt = a.ID, rt.ID, time.Now()
			if _, err := db.RecordSync(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		two := testApp(rt, "two")
		two.Health = "Degraded"
		two.Data = `{"name":"two","health":"Degraded"}`
		var n int
		err := db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			n, err = tx.ReplaceApplications(ctx, a.ID, rt.ID, []store.Application{testApp(rt, "one"), two, testApp(rt, "four")})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 { // two changed, four new, three gone; one unchanged
			t.Errorf("ReplaceApplications changed %d, want 3", n)
		}
		apps, _ := db.ListApplications(ctx, a.ID, store.AppFilter{Runtime: "edge"}, paging.Page{})
		if got := fmt.Sprint(appNames(apps)); got != "[one two four]" {
			t.Fatalf("after the snapshot: %s", got)
		}
		if apps[1].Health != "Degraded" {
			t.Errorf("two not updated: %+v", apps[1])
		}
		if other, _ := db.ListApplications(ctx, a.ID, store.AppFilter{Runtime: "hub"}, paging.Page{}); len(other) != 1 {
			t.Errorf("another runtime's applications changed: %v", appNames(other))
		}
		for app, want := range map[string]int{"three": 0, "ghost": 0, "two": 1} {
			if ss, _ := db.ListSyncs(ctx, a.ID, rt.ID, app, paging.Page{}); len(ss) != want {
				t.Errorf("syncs of %s: %d, want %d", app, len(ss), want)
			}
		}
		// An empty snapshot empties the runtime.
		if n, err := db.ReplaceApplications(ctx, a.ID, rt.ID, nil); err != nil || n != 3 {
			t.Fatalf("empty snapshot: %d, %v", n, err)
		}
	})
}

func TestApplicationSyncs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		rt := seedRuntime(t, db, a.ID, "edge")
		base := time.Now().Truncate(time.Microsecond)
		rec := func(id int64, started time.Time, phase string) bool {
			t.Helper()
			ok, err := db.RecordSync(ctx, store.ApplicationSync{AccountID: a.ID, RuntimeID: rt.ID, App: "web", SyncID: id, Revision: fmt.Sprint("rev", id),
				Phase: phase, InitiatedBy: "automated", CommitAuthor: "Ann", CommitMessage: "msg", CommitTime: base,
				StartedAt: started, FinishedAt: started.Add(time.Second), Detail: `{}`})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for i := int64(1); i <= 9; i++ {
			if !rec(i, base.Add(time.Duration(i)*time.Minute), "Succeeded") {
				t.Fatalf("sync %d not new", i)
			}
		}
		// The same sync again: nothing new. The same ID started at another time: a new history.
		if rec(3, base.Add(3*time.Minute), "Failed") {
			t.Fatal("a sync recorded twice")
		}
		if !rec(2, base.Add(time.Hour), "Failed") {
			t.Fatal("a restarted history's sync 2 was not recorded")
		}
		var ids []int64
		p := paging.Page{Limit: 4}
		for range 10 {
			page, err := db.ListSyncs(ctx, a.ID, rt.ID, "web", p)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page {
				ids = append(ids, s.SyncID)
				if s.SyncID == 3 && s.Phase != "Succeeded" {
					t.Errorf("sync 3 changed by a resend: %+v", s)
				}
				if s.SyncID == 2 && (s.Phase != "Failed" || !s.StartedAt.Equal(base.Add(time.Hour))) {
					t.Errorf("sync 2 not replaced: %+v", s)
				}
				if s.SyncID == 1 && (s.CommitAuthor != "Ann" || !s.CommitTime.Equal(base) || s.Revision != "rev1") {
					t.Errorf("sync 1 = %+v", s)
				}
			}
			if len(page) < p.Limit {
				break
			}
			p.After = fmt.Sprint(page[len(page)-1].SyncID)
		}
		if fmt.Sprint(ids) != "[9 8 7 6 5 4 3 2 1]" {
			t.Fatalf("syncs newest first = %v", ids)
		}
		if _, err := db.ListSyncs(ctx, a.ID, rt.ID, "web", paging.Page{After: "x"}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Fatalf("bad cursor: %v", err)
		}
	})
}

// InsertSyncs loads syncs in bulk (more than one statement's worth), skips one recorded
// already (the same runtime, application and sync ID) and stores every column as RecordSync
// does: the rebuild reads them back.
func TestInsertSyncs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		rt := seedRuntime(t, db, a.ID, "edge")
		base := time.Now().Truncate(time.Microsecond)
		if _, err := db.RecordSync(ctx, store.ApplicationSync{AccountID: a.ID, RuntimeID: rt.ID, App: "web", SyncID: 7, Revision: "first",
			Phase: "Failed", StartedAt: base, FinishedAt: base, Detail: `{}`}); err != nil {
			t.Fatal(err)
		}
		var ss []store.ApplicationSync
		for i := int64(1); i <= 1200; i++ {
			ss = append(ss, store.ApplicationSync{AccountID: a.ID, RuntimeID: rt.ID, App: "web", SyncID: i, Revision: fmt.Sprint("rev", i),
				Phase: "Succeeded", InitiatedBy: "automated", CommitAuthor: "Ann", CommitMessage: "msg", CommitTime: base,
				StartedAt: base.Add(time.Duration(i) * time.Second), FinishedAt: base.Add(time.Duration(i)*time.Second + time.Millisecond), Detail: `{"id":1}`})
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return tx.InsertSyncs(ctx, ss) }); err != nil {
			t.Fatal(err)
		}
		n, after := 0, ""
		for {
			page, err := db.AnalyticsSyncs(ctx, a.ID, after, 500)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page {
				n++
				switch {
				case s.SyncID == 7 && s.Revision != "first":
					t.Errorf("a recorded sync was overwritten: %+v", s)
				case s.SyncID == 1200 && (s.Revision != "rev1200" || s.CommitAuthor != "Ann" || !s.CommitTime.Equal(base) ||
					!s.FinishedAt.Equal(base.Add(1200*time.Second+time.Millisecond)) || s.Detail != `{"id":1}` || s.Runtime != "edge"):
					t.Errorf("sync 1200 = %+v", s)
				}
			}
			if len(page) < 500 {
				break
			}
			after = page[len(page)-1].ID
		}
		if n != 1200 {
			t.Fatalf("%d syncs stored, want 1200", n)
		}
		// A page is read from its start by the primary key, not by sorting every sync of the
		// account's runtimes (SQLite's own choice: a rebuild's 1,000 pages each read them all).
		if db.Dialect() == store.SQLite {
			plan, err := db.Plan(ctx, store.AnalyticsSyncsQuery, a.ID, "", 500)
			if err != nil {
				t.Fatal(err)
			}
			if text := strings.Join(plan, "\n"); !strings.Contains(plan[0], "SEARCH s USING INDEX sqlite_autoindex_application_syncs_1 (id>?)") ||
				strings.Contains(text, "TEMP B-TREE") {
				t.Errorf("AnalyticsSyncs plan:\n%s", text)
			}
		}
	})
}

// Account B can neither read nor change account A's applications, even knowing A's runtime ID.
func TestApplicationsTenantIsolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		rtA := seedRuntime(t, db, a.ID, "edge")
		rtB := seedRuntime(t, db, b.ID, "edge")
		web := testApp(rtA, "web")
		web.Labels = map[string]string{"team": "shop"}
		if _, err := db.UpsertApplication(ctx, web); err != nil {
			t.Fatal(err)
		}
		if _, err := db.RecordSync(ctx, store.ApplicationSync{AccountID: a.ID, RuntimeID: rtA.ID, App: "web", SyncID: 1, Phase: "Succeeded", StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}

		// Writes naming A's runtime with B's account.
		forged := testApp(rtA, "web")
		forged.AccountID, forged.Health, forged.Data = b.ID, "Missing", `{"forged":true}`
		if _, err := db.UpsertApplication(ctx, forged); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("B upserts into A's runtime: %v", err)
		}
		forged.Name = "new"
		if _, err := db.UpsertApplication(ctx, forged); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("B adds to A's runtime: %v", err)
		}
		if _, err := db.DeleteApplication(ctx, b.ID, rtA.ID, "web"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("B deletes A's application: %v", err)
		}
		if _, err := db.ReplaceApplications(ctx, b.ID, rtA.ID, nil); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("B replaces A's applications: %v", err)
		}
		if _, err := db.RecordSync(ctx, store.ApplicationSync{AccountID: b.ID, RuntimeID: rtA.ID, App: "web", SyncID: 1, Phase: "Failed", StartedAt: time.Now().Add(time.Hour)}); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("B records a sync of A's application: %v", err)
		}
		// B's own runtime of the same name and an application of the same name are B's alone.
		mine := testApp(rtB, "web")
		if _, err := db.UpsertApplication(ctx, mine); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ReplaceApplications(ctx, b.ID, rtB.ID, nil); err != nil {
			t.Fatal(err)
		}

		// Reads with B's account.
		for _, f := range []store.AppFilter{{}, {Runtime: rtA.ID}, {Runtime: "edge"}, {Labels: map[string]string{"team": "shop"}}, {Search: "web"}} {
			if apps, err := db.ListApplications(ctx, b.ID, f, paging.Page{}); err != nil || len(apps) != 0 {
				t.Errorf("B lists %v with %+v: %v", appNames(apps), f, err)
			}
		}
		for _, ref := range []string{rtA.ID, "edge"} {
			if _, err := db.GetApplication(ctx, b.ID, ref, "web"); !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("B reads A's application via %s: %v", ref, err)
			}
		}
		if ss, err := db.ListSyncs(ctx, b.ID, rtA.ID, "web", paging.Page{}); err != nil || len(ss) != 0 {
			t.Errorf("B reads A's syncs: %v, %v", ss, err)
		}

		// A's application and sync are as they were.
		got, err := db.GetApplication(ctx, a.ID, "edge", "web")
		if err != nil || got.Health != "Healthy" || got.Data != web.Data || got.Labels["team"] != "shop" {
			t.Fatalf("A's application changed: %+v, %v", got, err)
		}
		if ss, _ := db.ListSyncs(ctx, a.ID, rtA.ID, "web", paging.Page{}); len(ss) != 1 || ss[0].Phase != "Succeeded" {
			t.Fatalf("A's syncs changed: %+v", ss)
		}
	})
}

func TestOutbox(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var ids []string
		for i := range 5 {
			m := store.OutboxMessage{AccountID: "acc_x", Subject: "freshet.acc_x.gitops.sync-finished", Key: fmt.Sprint("k", i), Payload: "{}", CreatedAt: time.Now()}
			m.ID = store.NewID(store.PrefixOutbox)
			if err := db.InsertOutbox(ctx, m); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		got, err := db.OutboxBatch(ctx, 3)
		if err != nil || len(got) != 3 || got[0].ID != ids[0] || got[2].Key != "k2" {
			t.Fatalf("OutboxBatch = %+v, %v", got, err)
		}
		if err := db.DeleteOutbox(ctx, ids[0], ids[1], ids[2]); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteOutbox(ctx, ids[0]); err != nil { // twice: another relay got there first
			t.Fatal(err)
		}
		if got, _ := db.OutboxBatch(ctx, 10); len(got) != 2 || got[0].ID != ids[3] {
			t.Fatalf("after delete: %+v", got)
		}
	})
}

func TestGitOpsWebhookSecret(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		if _, err := db.GetGitOpsWebhook(ctx, a.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("before set: %v", err)
		}
		for _, s := range []string{"enc-1", "enc-2"} {
			if err := db.SetGitOpsWebhook(ctx, store.GitOpsWebhook{AccountID: a.ID, SecretEnc: s, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if w, err := db.GetGitOpsWebhook(ctx, a.ID); err != nil || w.SecretEnc != "enc-2" {
			t.Fatalf("GetGitOpsWebhook = %+v, %v", w, err)
		}
		if _, err := db.GetGitOpsWebhook(ctx, b.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("B sees A's webhook: %v", err)
		}
		if all, err := db.AllGitOpsWebhooks(ctx); err != nil || len(all) != 1 {
			t.Fatalf("AllGitOpsWebhooks = %+v, %v", all, err)
		}
	})
}
