package store_test

import (
	"context"
	"errors"
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
