package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func createPipeline(t *testing.T, db *store.DB, accountID, projectID, name string) store.Pipeline {
	t.Helper()
	now := time.Now()
	p := store.Pipeline{ID: store.NewID(store.PrefixPipeline), AccountID: accountID, ProjectID: projectID, Name: name,
		SpecYAML: "version: '1.0'\n", Config: `{"concurrency":1}`, CreatedAt: now, UpdatedAt: now}
	if err := db.CreatePipeline(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func createProject(t *testing.T, db *store.DB, accountID, name string) store.Project {
	t.Helper()
	pr := store.Project{ID: store.NewID(store.PrefixProject), AccountID: accountID, Name: name, CreatedAt: time.Now()}
	if err := db.CreateProject(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	return pr
}

// Every read of a pipeline carries its project's name, joined in the same query, so a listing
// needs no lookup per pipeline; PipelineNames names many pipelines in one query, within one
// account.
func TestPipelinesAreReadWithTheirProjectsName(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		web, api := createProject(t, db, a.ID, "web"), createProject(t, db, a.ID, "api")
		webCI := createPipeline(t, db, a.ID, web.ID, "ci")
		apiCI := createPipeline(t, db, a.ID, api.ID, "ci")
		apiDeploy := createPipeline(t, db, a.ID, api.ID, "deploy")
		other := createPipeline(t, db, b.ID, createProject(t, db, b.ID, "web").ID, "ci")

		got, err := db.GetPipeline(ctx, a.ID, apiDeploy.ID)
		if err != nil || got.ProjectName != "api" || got.Name != "deploy" || got.ProjectID != api.ID || got.Config != `{"concurrency":1}` {
			t.Fatalf("GetPipeline = %+v, %v", got, err)
		}
		if got, err := db.GetPipelineByName(ctx, a.ID, web.ID, "ci"); err != nil || got.ID != webCI.ID || got.ProjectName != "web" {
			t.Fatalf("GetPipelineByName = %+v, %v", got, err)
		}
		if _, err := db.GetPipeline(ctx, a.ID, other.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("another account's pipeline: err = %v, want ErrNotFound", err)
		}

		all, err := db.ListPipelines(ctx, a.ID, "", paging.Page{})
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, p := range all {
			names[p.ID] = p.ProjectName + "/" + p.Name
		}
		want := map[string]string{webCI.ID: "web/ci", apiCI.ID: "api/ci", apiDeploy.ID: "api/deploy"}
		if !maps.Equal(names, want) {
			t.Fatalf("ListPipelines names = %v, want %v", names, want)
		}
		// One project, paged.
		page1, err := db.ListPipelines(ctx, a.ID, api.ID, paging.Page{Limit: 1})
		if err != nil || len(page1) != 1 || page1[0].ProjectName != "api" {
			t.Fatalf("ListPipelines(api, limit 1) = %+v, %v", page1, err)
		}
		page2, err := db.ListPipelines(ctx, a.ID, api.ID, paging.Page{After: page1[0].ID, Limit: 1})
		if err != nil || len(page2) != 1 || page2[0].ID == page1[0].ID || page2[0].ProjectName != "api" {
			t.Fatalf("ListPipelines(api, after %s) = %+v, %v", page1[0].ID, page2, err)
		}
		rotation, err := db.AllPipelines(ctx)
		if err != nil || len(rotation) != 4 {
			t.Fatalf("AllPipelines = %d pipelines, %v", len(rotation), err)
		}
		for _, p := range rotation {
			if p.ProjectName != "web" && p.ProjectName != "api" {
				t.Errorf("AllPipelines: %s has project name %q", p.ID, p.ProjectName)
			}
		}

		// Batch names: duplicates are fine, other accounts' and unknown IDs are left out.
		got2, err := db.PipelineNames(ctx, a.ID, []string{webCI.ID, apiDeploy.ID, webCI.ID, other.ID, "pip_missing"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{webCI.ID: "web/ci", apiDeploy.ID: "api/deploy"}; !maps.Equal(got2, want) {
			t.Fatalf("PipelineNames = %v, want %v", got2, want)
		}
		if got, err := db.PipelineNames(ctx, a.ID, nil); err != nil || len(got) != 0 {
			t.Fatalf("PipelineNames(none) = %v, %v", got, err)
		}
		// Deleting a project deletes its pipelines: their names are gone too.
		if err := db.DeleteProject(ctx, a.ID, api.ID); err != nil {
			t.Fatal(err)
		}
		if got, err := db.PipelineNames(ctx, a.ID, []string{apiCI.ID, webCI.ID}); err != nil || !maps.Equal(got, map[string]string{webCI.ID: "web/ci"}) {
			t.Fatalf("PipelineNames after deleting project api = %v, %v", got, err)
		}
	})
}

// A webhook delivery is recorded once per trigger by its delivery ID and once by its payload
// digest; a repeat by either answers the first build and ErrConflict, inside a transaction too
// (on PostgreSQL a failed insert would poison it); cron keys have no digest and never collide by
// it; sweeping forgets old webhook deliveries but keeps cron fires.
func TestWebhookDeliveriesAreOnceByIDAndByPayload(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		t0 := time.Now().Add(-time.Hour)
		first := store.Delivery{TriggerID: "trg_1", DeliveryID: "d-1", PayloadDigest: "digest-1", BuildID: "bld_1", CreatedAt: t0}
		if prev, err := db.RecordDelivery(ctx, first); err != nil || prev != "" {
			t.Fatalf("first delivery: %q, %v", prev, err)
		}
		for name, d := range map[string]store.Delivery{
			"same delivery id":        {TriggerID: "trg_1", DeliveryID: "d-1", PayloadDigest: "digest-2", BuildID: "bld_2", CreatedAt: t0},
			"same payload, new id":    {TriggerID: "trg_1", DeliveryID: "d-2", PayloadDigest: "digest-1", BuildID: "bld_2", CreatedAt: t0},
			"same payload, digest id": {TriggerID: "trg_1", DeliveryID: "sha256:digest-1", PayloadDigest: "digest-1", BuildID: "bld_2", CreatedAt: t0},
		} {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				prev, err := tx.RecordDelivery(ctx, d)
				if !errors.Is(err, errdefs.ErrConflict) || prev != "bld_1" {
					t.Errorf("%s: %q, %v; want bld_1 and ErrConflict", name, prev, err)
				}
				// The transaction is still usable after the refused insert.
				_, err = tx.FindDelivery(ctx, "trg_1", "d-1", "")
				return err
			})
			if err != nil {
				t.Fatalf("%s: the transaction failed after the refused insert: %v", name, err)
			}
		}
		if prev, err := db.FindDelivery(ctx, "trg_1", "another-id", "digest-1"); err != nil || prev != "bld_1" {
			t.Fatalf("FindDelivery by digest = %q, %v", prev, err)
		}
		if _, err := db.FindDelivery(ctx, "trg_1", "another-id", "another-digest"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("FindDelivery of nothing: %v", err)
		}
		// The same payload to another trigger is another delivery.
		if _, err := db.RecordDelivery(ctx, store.Delivery{TriggerID: "trg_2", DeliveryID: "d-1", PayloadDigest: "digest-1", BuildID: "bld_3", CreatedAt: t0}); err != nil {
			t.Fatalf("same payload to another trigger: %v", err)
		}
		// Cron fires: no digest, distinct keys, same trigger.
		for i, key := range []string{"cron:trg_c:2024-01-01T00:00:00Z", "cron:trg_c:2024-01-01T01:00:00Z"} {
			if _, err := db.RecordDelivery(ctx, store.Delivery{TriggerID: "trg_c", DeliveryID: key, BuildID: fmt.Sprint("bld_c", i), CreatedAt: t0}); err != nil {
				t.Fatalf("cron key %s: %v", key, err)
			}
		}
		if prev, err := db.RecordDelivery(ctx, store.Delivery{TriggerID: "trg_c", DeliveryID: "cron:trg_c:2024-01-01T00:00:00Z", BuildID: "bld_x", CreatedAt: t0}); !errors.Is(err, errdefs.ErrConflict) || prev != "bld_c0" {
			t.Fatalf("a cron key again: %q, %v", prev, err)
		}
		// A newer delivery survives the sweep; older webhook deliveries go, cron fires stay.
		if _, err := db.RecordDelivery(ctx, store.Delivery{TriggerID: "trg_1", DeliveryID: "d-new", PayloadDigest: "digest-new", BuildID: "bld_4", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		n, err := db.DeleteDeliveriesBefore(ctx, t0.Add(time.Minute))
		if err != nil || n != 2 {
			t.Fatalf("DeleteDeliveriesBefore = %d, %v; want the 2 old webhook deliveries", n, err)
		}
		if _, err := db.FindDelivery(ctx, "trg_1", "d-1", "digest-1"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("a swept delivery is still found: %v", err)
		}
		if prev, err := db.FindDelivery(ctx, "trg_1", "d-new", ""); err != nil || prev != "bld_4" {
			t.Fatalf("the new delivery: %q, %v", prev, err)
		}
		if prev, err := db.FindDelivery(ctx, "trg_c", "cron:trg_c:2024-01-01T01:00:00Z", ""); err != nil || prev != "bld_c1" {
			t.Fatalf("a cron fire was swept: %q, %v", prev, err)
		}
		// After the sweep the payload can be recorded again (the window has passed).
		if _, err := db.RecordDelivery(ctx, first); err != nil {
			t.Fatalf("the swept delivery again: %v", err)
		}
	})
}
