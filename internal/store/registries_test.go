package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func createContext(t *testing.T, db *store.DB, accountID, name, typ string) store.ConfigContext {
	t.Helper()
	now := time.Now()
	c := store.ConfigContext{ID: store.NewID(store.PrefixContext), AccountID: accountID, Name: name, Type: typ, Data: `{"url":"r.example"}`,
		CreatedAt: now, UpdatedAt: now}
	if err := db.PutContext(context.Background(), c, true); err != nil {
		t.Fatal(err)
	}
	return c
}

// defaults returns the names of account's contexts that read as its default registry, by every
// read: the listing, each context, and DefaultContext.
func defaults(t *testing.T, db *store.DB, accountID string) []string {
	t.Helper()
	ctx := context.Background()
	cs, err := db.ListContexts(ctx, accountID)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, c := range cs {
		if c.Default {
			listed = append(listed, c.Name)
		}
		if got, err := db.GetContext(ctx, accountID, c.Name); err != nil || got.Default != c.Default {
			t.Fatalf("GetContext(%s) = %+v, %v; the listing says default=%v", c.Name, got, err, c.Default)
		}
	}
	d, err := db.DefaultContext(ctx, accountID)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		if len(listed) != 0 {
			t.Fatalf("DefaultContext: not found, but the listing has %v", listed)
		}
	case err != nil:
		t.Fatal(err)
	case !d.Default || len(listed) != 1 || listed[0] != d.Name:
		t.Fatalf("DefaultContext = %s (default=%v), the listing has %v", d.Name, d.Default, listed)
	}
	return listed
}

// An account has at most one default registry: setting another replaces it in one statement,
// even when many switch at once; it is scoped to the account, survives its context's updates and
// goes with its context.
func TestDefaultRegistryIsOnePerAccount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		r1, r2 := createContext(t, db, a.ID, "r1", "registry"), createContext(t, db, a.ID, "r2", "registry")
		other := createContext(t, db, b.ID, "r1", "registry")
		if got := defaults(t, db, a.ID); len(got) != 0 {
			t.Fatalf("a new account has default %v", got)
		}
		if err := db.SetDefaultContext(ctx, a.ID, r1.ID); err != nil {
			t.Fatal(err)
		}
		if got := defaults(t, db, a.ID); !slices.Equal(got, []string{"r1"}) {
			t.Fatalf("defaults = %v, want [r1]", got)
		}
		if err := db.SetDefaultContext(ctx, a.ID, r2.ID); err != nil {
			t.Fatal(err)
		}
		if got := defaults(t, db, a.ID); !slices.Equal(got, []string{"r2"}) {
			t.Fatalf("after switching: defaults = %v, want [r2]", got)
		}
		// Another account's context is not found, and changes nothing of either account.
		if err := db.SetDefaultContext(ctx, a.ID, other.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("SetDefaultContext(another account's context) = %v, want ErrNotFound", err)
		}
		if err := db.UnsetDefaultContext(ctx, b.ID, r2.ID); err != nil {
			t.Fatal(err)
		}
		if got := defaults(t, db, a.ID); !slices.Equal(got, []string{"r2"}) {
			t.Fatalf("after B's attempts: defaults = %v, want [r2]", got)
		}
		if got := defaults(t, db, b.ID); len(got) != 0 {
			t.Fatalf("B has default %v", got)
		}
		// An update of the context's data keeps it the default; unsetting another changes nothing.
		r2.Data, r2.UpdatedAt = `{"url":"r2.example"}`, time.Now()
		if err := db.PutContext(ctx, r2, false); err != nil {
			t.Fatal(err)
		}
		if err := db.UnsetDefaultContext(ctx, a.ID, r1.ID); err != nil {
			t.Fatal(err)
		}
		if got := defaults(t, db, a.ID); !slices.Equal(got, []string{"r2"}) {
			t.Fatalf("after an update: defaults = %v, want [r2]", got)
		}

		// Many switches at once: each succeeds, and one default remains.
		names := []string{"r1", "r2"}
		ids := []string{r1.ID, r2.ID}
		for i := range 6 {
			c := createContext(t, db, a.ID, fmt.Sprintf("c%d", i), "registry")
			names, ids = append(names, c.Name), append(ids, c.ID)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(ids))
		for range 4 {
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- db.Tx(ctx, func(tx *store.Tx) error { return tx.SetDefaultContext(ctx, a.ID, id) })
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("concurrent switch: %v", err)
			}
		}
		if got := defaults(t, db, a.ID); len(got) != 1 || !slices.Contains(names, got[0]) {
			t.Fatalf("after concurrent switches: defaults = %v, want one of %v", got, names)
		}

		// Deleting the default leaves the account without one.
		d, _ := db.DefaultContext(ctx, a.ID)
		if err := db.DeleteContext(ctx, a.ID, d.Name); err != nil {
			t.Fatal(err)
		}
		if got := defaults(t, db, a.ID); len(got) != 0 {
			t.Fatalf("after deleting the default: defaults = %v", got)
		}
		if err := db.SetDefaultContext(ctx, a.ID, d.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("SetDefaultContext(deleted) = %v, want ErrNotFound", err)
		}
	})
}

// A build's lease is held only by its runner with the lease's ID while the build is not final;
// images recorded under it are stored once per step, repository and digest, with later tags
// merged, and are read within their account only.
func TestBuildImagesAreStoredOnceUnderTheLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		b, _ := seed(t, db, "globex")
		pl := createPipeline(t, db, a.ID, createProject(t, db, a.ID, "web").ID, "ci")
		bl := &store.Build{ID: store.NewID(store.PrefixBuild), AccountID: a.ID, PipelineID: pl.ID, Status: "queued", Branch: "main",
			SHA: "0123456789abcdef0123456789abcdef01234567", Variables: "{}", Labels: "{}", CreatedAt: time.Now()}
		if err := db.CreateBuild(ctx, bl); err != nil {
			t.Fatal(err)
		}
		if held, err := db.HoldLease(ctx, a.ID, bl.ID, "run_1", ""); err != nil || held {
			t.Fatalf("HoldLease of a queued build = %v, %v", held, err)
		}
		now := time.Now()
		if ok, err := db.ClaimBuild(ctx, a.ID, bl.ID, "run_1", "lse_1", now.Add(time.Minute), now); err != nil || !ok {
			t.Fatalf("ClaimBuild = %v, %v", ok, err)
		}
		for _, c := range []struct {
			what                   string
			account, runner, lease string
			want                   bool
		}{
			{"the holder", a.ID, "run_1", "lse_1", true},
			{"another lease", a.ID, "run_1", "lse_2", false},
			{"another runner", a.ID, "run_2", "lse_1", false},
			{"another account", b.ID, "run_1", "lse_1", false},
		} {
			if held, err := db.HoldLease(ctx, c.account, bl.ID, c.runner, c.lease); err != nil || held != c.want {
				t.Errorf("HoldLease by %s = %v, %v; want %v", c.what, held, err, c.want)
			}
		}

		im := store.BuildImage{ID: store.NewID(store.PrefixImage), AccountID: a.ID, BuildID: bl.ID, Step: "build", Registry: "ghcr",
			Repository: "ghcr.io/acme/app", Tags: []string{"1.0", "latest"}, Digest: "sha256:" + fmt.Sprintf("%064x", 1), Size: 1234,
			SHA: bl.SHA, Branch: "main", CreatedAt: time.Now()}
		put := func(what string, im store.BuildImage, want bool) {
			t.Helper()
			err := db.Tx(ctx, func(tx *store.Tx) error {
				changed, err := tx.PutBuildImage(ctx, im)
				if err == nil && changed != want {
					t.Errorf("%s: changed = %v, want %v", what, changed, want)
				}
				return err
			})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		put("first report", im, true)
		retry := im
		retry.ID = store.NewID(store.PrefixImage)
		put("retried report", retry, false)
		more := retry
		more.ID, more.Tags = store.NewID(store.PrefixImage), []string{"latest", "main"}
		put("more tags", more, true)
		push := im
		push.ID, push.Step, push.Tags = store.NewID(store.PrefixImage), "push", nil
		put("another step", push, true)

		got, err := db.ListBuildImages(ctx, a.ID, bl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("ListBuildImages = %+v, want 2 images", got)
		}
		first := got[0]
		if first.ID != im.ID || first.Step != "build" || first.Registry != "ghcr" || first.Repository != im.Repository || first.Digest != im.Digest ||
			first.Size != 1234 || first.SHA != bl.SHA || first.Branch != "main" || !slices.Equal(first.Tags, []string{"1.0", "latest", "main"}) ||
			first.CreatedAt.IsZero() {
			t.Errorf("first image = %+v", first)
		}
		if got[1].Step != "push" || got[1].Tags == nil || len(got[1].Tags) != 0 {
			t.Errorf("second image = %+v, want step push with no tags (an empty list)", got[1])
		}
		if other, err := db.ListBuildImages(ctx, b.ID, bl.ID); err != nil || len(other) != 0 {
			t.Errorf("another account reads %+v, %v", other, err)
		}

		// A final build is held by no lease.
		if _, err := db.SetBuildStatus(ctx, a.ID, bl.ID, "lse_1", nil, "success", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		if held, err := db.HoldLease(ctx, a.ID, bl.ID, "run_1", "lse_1"); err != nil || held {
			t.Errorf("HoldLease of a finished build = %v, %v", held, err)
		}
	})
}
