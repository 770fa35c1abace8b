package runtimes

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func helmChanged(cluster, ns, name string, revs ...string) runtimev1.AppEvent {
	at := time.Unix(1700000000, 0).UTC()
	rec := &runtimev1.HelmReleaseRecord{Cluster: cluster, Namespace: ns, Name: name, Chart: "tiny", ChartVersion: revs[0], AppVersion: "v" + revs[0],
		Status: "deployed", Revision: len(revs), Updated: at.Add(time.Duration(len(revs)) * time.Minute), Description: "Upgrade complete"}
	for i, v := range revs {
		st := "superseded"
		if i == 0 {
			st = "deployed"
		}
		rec.History = append(rec.History, runtimev1.HelmRevision{Revision: len(revs) - i, Status: st, Chart: "tiny", ChartVersion: v,
			Updated: at.Add(time.Duration(len(revs)-i) * time.Minute)})
	}
	return runtimev1.AppEvent{Type: runtimev1.HelmReleaseChanged, At: at, HelmRelease: rec}
}

// Helm releases a runtime reports are kept per runtime, cluster, namespace and name: replaced
// by each report, listed by cluster and namespace, read with their history, forgotten when
// uninstalled or missing from a list of the cluster's releases; bad records change nothing and
// name the field.
func TestHelmReleases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newTestService(db)
		rt, _ := seedRuntime(t, s, "acme", "edge")
		other, _ := seedRuntime(t, s, "acme", "lab")
		outsider, _ := seedRuntime(t, s, "globex", "edge")
		report := func(rt Runtime, evs ...runtimev1.AppEvent) error {
			_, err := s.Report(ctx, rt, runtimev1.ReportRequest{Events: evs})
			return err
		}
		if err := report(rt, helmChanged("in-cluster", "shop", "web", "0.1.0"), helmChanged("in-cluster", "db", "pg", "15.0.0")); err != nil {
			t.Fatal(err)
		}
		// An upgrade replaces the release; sent twice it changes nothing more.
		for range 2 {
			if err := report(rt, helmChanged("in-cluster", "shop", "web", "0.2.0", "0.1.0")); err != nil {
				t.Fatal(err)
			}
		}
		if err := report(other, helmChanged("in-cluster", "shop", "web", "9.0.0")); err != nil {
			t.Fatal(err)
		}
		if err := report(outsider, helmChanged("in-cluster", "shop", "secret", "1.0.0")); err != nil {
			t.Fatal(err)
		}
		vw := viewer(rt.AccountID)
		all, err := s.ListHelmReleases(ctx, vw, HelmReleaseFilter{})
		if err != nil || len(all) != 3 {
			t.Fatalf("the account's releases: %+v, %v", all, err)
		}
		shop, err := s.ListHelmReleases(ctx, vw, HelmReleaseFilter{Runtime: "edge", Cluster: "in-cluster", Namespace: "shop"})
		if err != nil || len(shop) != 1 {
			t.Fatalf("edge's shop: %+v, %v", shop, err)
		}
		w := shop[0]
		if w.Name != "web" || w.Runtime != "edge" || w.Revision != 2 || w.ChartVersion != "0.2.0" || w.AppVersion != "v0.2.0" || w.Status != "deployed" ||
			w.Description != "Upgrade complete" || w.History != nil || w.ReportedAt.IsZero() {
			t.Fatalf("listed: %+v", w)
		}
		got, err := s.GetHelmRelease(ctx, vw, "shop", "web", HelmReleaseFilter{Runtime: "edge"})
		if err != nil || got.ID != w.ID || len(got.History) != 2 || got.History[1].Revision != 1 || got.History[1].Status != "superseded" {
			t.Fatalf("get: %+v, %v", got, err)
		}
		// In two runtimes: the runtime must be given.
		if _, err := s.GetHelmRelease(ctx, vw, "shop", "web", HelmReleaseFilter{}); !errors.As(err, new(*errdefs.FieldError)) {
			t.Fatalf("ambiguous: %v", err)
		}
		// Another account's release is not found.
		if _, err := s.GetHelmRelease(ctx, vw, "shop", "secret", HelmReleaseFilter{}); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("another account's: %v", err)
		}

		// Bad records: the field named, nothing written.
		bad := helmChanged("in-cluster", "Shop!", "web", "1.0.0")
		if err := report(rt, helmChanged("in-cluster", "shop", "x", "1.0.0"), bad); !errors.As(err, new(*errdefs.FieldError)) {
			t.Fatalf("bad namespace: %v", err)
		}
		noRev := helmChanged("in-cluster", "shop", "y", "1.0.0")
		noRev.HelmRelease.History[0].Revision = 0
		var fe *errdefs.FieldError
		if err := report(rt, noRev); !errors.As(err, &fe) || fe.Field != "events[0].helmRelease.history[0].revision" {
			t.Fatalf("revision 0: %v", err)
		}
		withApp := helmChanged("in-cluster", "shop", "z", "1.0.0")
		withApp.App = "web"
		if err := report(rt, withApp); !errors.As(err, new(*errdefs.FieldError)) {
			t.Fatalf("with app: %v", err)
		}
		if l, _ := s.ListHelmReleases(ctx, vw, HelmReleaseFilter{Runtime: "edge"}); len(l) != 2 {
			t.Fatalf("a refused report wrote: %+v", l)
		}

		// Uninstalled: forgotten. A list of the cluster's releases forgets the others.
		if err := report(rt, runtimev1.AppEvent{Type: runtimev1.HelmReleaseDeleted, At: time.Now(),
			HelmRelease: &runtimev1.HelmReleaseRecord{Cluster: "in-cluster", Namespace: "shop", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		l, _ := s.ListHelmReleases(ctx, vw, HelmReleaseFilter{Runtime: "edge"})
		if len(l) != 1 || l[0].Name != "pg" {
			t.Fatalf("after uninstall: %+v", l)
		}
		if err := report(rt, runtimev1.AppEvent{Type: runtimev1.HelmReleasesListed, At: time.Now(),
			HelmRelease: &runtimev1.HelmReleaseRecord{Cluster: "in-cluster"}, HelmReleases: []string{"other/thing"}}); err != nil {
			t.Fatal(err)
		}
		if l, _ := s.ListHelmReleases(ctx, vw, HelmReleaseFilter{Runtime: "edge"}); len(l) != 0 {
			t.Fatalf("after the list: %+v", l)
		}
		if l, _ := s.ListHelmReleases(ctx, vw, HelmReleaseFilter{Runtime: "lab"}); len(l) != 1 || !slices.ContainsFunc(l, func(h HelmRelease) bool { return h.ChartVersion == "9.0.0" }) {
			t.Fatalf("lab's release is its own: %+v", l)
		}
	})
}
