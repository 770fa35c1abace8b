package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// The Environments view through the real server: a runtime reports a product's applications
// (by annotation and by a product's name glob) in two environments at different revisions, the
// deployments reach analytics through the outbox and the bus, reported images link the
// revisions to images, commits and issues; the view shows each environment's version and what
// promoting would change, and keeps to what a viewer's rules let them read.
func TestProductsEnvironmentsView(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := servertest.Start(t, d)
			reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"})
			if err != nil {
				t.Fatal(err)
			}
			const stagingSHA, prodSHA = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
			const stagingDigest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			const prodDigest = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
			for _, im := range []client.ReportImageRequest{
				{Image: "registry.example/acme/shop:1.1", Digest: stagingDigest, Commit: stagingSHA, Message: "add cart", Issues: []string{"SHOP-12"}},
				{Image: "registry.example/acme/shop:1.0", Digest: prodDigest, Commit: prodSHA, Message: "first", Issues: []string{"SHOP-1"}},
			} {
				if _, err := s.Admin.ReportImage(ctx, im); err != nil {
					t.Fatal(err)
				}
			}
			at := time.Unix(1700000000, 0).UTC()
			app := func(name, cluster, ns, rev, health string, ann map[string]string) runtimev1.Application {
				return runtimev1.Application{Name: name, RepoURL: "https://git.example/acme/apps.git", Path: name, DestName: cluster, DestNamespace: ns,
					Sync: "Synced", Health: health, Revision: rev, Annotations: ann, ReconciledAt: at}
			}
			sync := func(name, rev string, id int64) runtimev1.AppEvent {
				return runtimev1.AppEvent{Type: runtimev1.SyncFinished, App: name, Sync: &runtimev1.SyncRecord{ID: id, Revision: rev, Phase: "Succeeded",
					InitiatedBy: "automated", StartedAt: at, FinishedAt: at.Add(time.Duration(id) * time.Second)}}
			}
			reportApps(t, s.URL, reg.Token, runtimev1.ReportRequest{Snapshot: true, Applications: []runtimev1.Application{
				// By annotation (the Codefresh one and the alias) and by the product's glob.
				app("shop-staging", "staging", "shop", stagingSHA, "Progressing", map[string]string{"codefresh.io/product": "shop"}),
				app("shop-prod", "prod", "shop", prodSHA, "Healthy", map[string]string{"freshet.dev/product": "shop"}),
				app("shop-prod-worker", "prod", "workers", prodSHA, "Healthy", nil),
				// Another product's application, even though its name matches the glob.
				app("shop-prod-billing", "prod", "billing", prodSHA, "Healthy", map[string]string{"codefresh.io/product": "billing"}),
			}, Events: []runtimev1.AppEvent{sync("shop-staging", stagingSHA, 1), sync("shop-prod", prodSHA, 2)}})

			for _, e := range []client.EnvironmentRequest{
				{Name: "production", Kind: "prod", Order: 2, Targets: []client.EnvironmentTarget{{Runtime: "edge", Cluster: "prod"}}},
				{Name: "staging", Kind: "non-prod", Order: 1, Targets: []client.EnvironmentTarget{{Cluster: "staging", Namespace: "sh*"}}},
			} {
				if _, err := s.Admin.CreateEnvironment(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Admin.CreateProduct(ctx, client.CreateProductRequest{Name: "shop", Patterns: []string{"shop-prod-*"}}); err != nil {
				t.Fatal(err)
			}
			if envs, err := s.Admin.ListEnvironments(ctx); err != nil || len(envs.Items) != 2 || envs.Items[0].Name != "staging" {
				t.Fatalf("environments in promotion order: %+v, %v", envs, err)
			}
			ps, err := s.Admin.ListProducts(ctx)
			if err != nil || len(ps.Items) != 2 || ps.Items[0].Name != "billing" || ps.Items[0].Defined || ps.Items[1].Name != "shop" || ps.Items[1].Applications != 3 {
				t.Fatalf("products: %+v, %v", ps, err)
			}

			// The deployments reach analytics asynchronously; the view's images come from them.
			var v client.ProductView
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				v, err = s.Admin.GetProduct(ctx, "shop")
				if err != nil {
					t.Fatal(err)
				}
				if len(v.Environments) == 2 && len(v.Environments[0].Applications) == 1 && len(v.Environments[0].Applications[0].Images) == 1 &&
					len(v.Environments[1].Applications) == 2 && slices.ContainsFunc(v.Environments[1].Applications, func(a client.ProductApplication) bool { return len(a.Images) == 1 }) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("view: %+v", v)
				}
			}
			st := v.Environments[0]
			if st.Environment.Name != "staging" || st.Environment.Kind != "non-prod" {
				t.Fatalf("first environment: %+v", st.Environment)
			}
			sa := st.Applications[0]
			if sa.Name != "shop-staging" || sa.Health != "Progressing" || sa.Revision != stagingSHA || sa.Images[0].Digest != stagingDigest ||
				sa.Images[0].Repository != "registry.example/acme/shop" || sa.DeployedAt.IsZero() {
				t.Fatalf("staging's shop: %+v", sa)
			}
			var prodNames []string
			for _, a := range v.Environments[1].Applications {
				prodNames = append(prodNames, a.Name)
			}
			slices.Sort(prodNames)
			if !slices.Equal(prodNames, []string{"shop-prod", "shop-prod-worker"}) {
				t.Fatalf("production's applications: %v", prodNames)
			}
			if len(v.Promotions) != 1 {
				t.Fatalf("promotions: %+v", v.Promotions)
			}
			pr := v.Promotions[0]
			if pr.From != "staging" || pr.To != "production" || !slices.Equal(pr.FromRevisions, []string{stagingSHA}) || !slices.Equal(pr.ToRevisions, []string{prodSHA}) {
				t.Fatalf("promotion: %+v", pr)
			}
			if len(pr.Images) != 1 || pr.Images[0].From != stagingDigest || pr.Images[0].To != prodDigest {
				t.Fatalf("promotion's images: %+v", pr.Images)
			}
			if len(pr.Commits) != 1 || pr.Commits[0].SHA != stagingSHA || len(pr.Issues) != 1 || pr.Issues[0].Key != "SHOP-12" {
				t.Fatalf("promotion's commits and issues: %+v %+v", pr.Commits, pr.Issues)
			}

			// GraphQL answers the same view.
			var gq struct {
				Product struct {
					Environments []struct {
						Name         string
						Applications []struct {
							Name   string
							Images []struct{ Digest string }
						}
					}
					Promotions []struct {
						Images []struct{ From, To string }
						Issues []struct{ Key string }
					}
				}
				Missing *struct{ Name string }
			}
			if err := s.Admin.GraphQL(ctx, `{ product(name: "shop") { environments { name applications { name images { digest } } } promotions { images { from to } issues { key } } }
				missing: product(name: "nothing") { name } }`, nil, &gq); err != nil {
				t.Fatal(err)
			}
			if len(gq.Product.Environments) != 2 || gq.Product.Environments[0].Applications[0].Images[0].Digest != stagingDigest ||
				len(gq.Product.Promotions) != 1 || gq.Product.Promotions[0].Images[0].To != prodDigest || gq.Product.Promotions[0].Issues[0].Key != "SHOP-12" || gq.Missing != nil {
				t.Fatalf("GraphQL product: %+v", gq)
			}

			// A viewer whose rule lets them read only production's shop namespace sees only that.
			if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "prod@first.test", Role: "viewer", Password: "prod-password-1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{User: "prod@first.test", Action: "read", Kind: "applications", Cluster: "prod", Namespace: "shop"}); err != nil {
				t.Fatal(err)
			}
			viewer := s.Login(t, "prod@first.test", "prod-password-1")
			vv, err := viewer.GetProduct(ctx, "shop")
			if err != nil || len(vv.Environments) != 2 || len(vv.Environments[0].Applications) != 0 || len(vv.Environments[1].Applications) != 1 ||
				vv.Environments[1].Applications[0].Name != "shop-prod" || vv.Product.Applications != 1 {
				t.Fatalf("viewer's view: %+v, %v", vv, err)
			}
			if _, err := viewer.CreateEnvironment(ctx, client.EnvironmentRequest{Name: "qa", Kind: "non-prod", Targets: []client.EnvironmentTarget{{Cluster: "qa"}}}); !hasStatus(err, http.StatusForbidden) {
				t.Fatalf("a viewer created an environment: %v", err)
			}
			if _, err := viewer.GetProduct(ctx, "billing"); !hasStatus(err, http.StatusNotFound) {
				t.Fatalf("a product only an unreadable application names: %v", err)
			}

			// Bad input is refused naming the field; nothing is written.
			for _, c := range []struct {
				req   client.EnvironmentRequest
				field string
			}{
				{client.EnvironmentRequest{Name: "Bad Name", Kind: "prod", Targets: []client.EnvironmentTarget{{Cluster: "x"}}}, "name"},
				{client.EnvironmentRequest{Name: "qa", Kind: "production", Targets: []client.EnvironmentTarget{{Cluster: "x"}}}, "kind"},
				{client.EnvironmentRequest{Name: "qa", Kind: "prod", Order: -1, Targets: []client.EnvironmentTarget{{Cluster: "x"}}}, "order"},
				{client.EnvironmentRequest{Name: "qa", Kind: "prod"}, "targets"},
				{client.EnvironmentRequest{Name: "qa", Kind: "prod", Targets: []client.EnvironmentTarget{{}}}, "targets[0]"},
				{client.EnvironmentRequest{Name: "qa", Kind: "prod", Targets: []client.EnvironmentTarget{{Namespace: "[a-"}}}, "targets[0].namespace"},
			} {
				_, err := s.Admin.CreateEnvironment(ctx, c.req)
				if !invalidField(err, c.field) {
					t.Errorf("environment %+v: %v, want invalid %s", c.req, err, c.field)
				}
			}
			if _, err := s.Admin.CreateProduct(ctx, client.CreateProductRequest{Name: "web", Patterns: []string{"[web"}}); !invalidField(err, "patterns[0]") {
				t.Errorf("bad product glob: %v", err)
			}
			if _, err := s.Admin.CreateEnvironment(ctx, client.EnvironmentRequest{Name: "staging", Kind: "prod", Targets: []client.EnvironmentTarget{{Cluster: "x"}}}); !hasStatus(err, http.StatusConflict) {
				t.Errorf("a second staging: %v", err)
			}
			if envs, _ := s.Admin.ListEnvironments(ctx); len(envs.Items) != 2 {
				t.Fatalf("refused environments were written: %+v", envs)
			}

			// Update moves staging after production; delete removes it.
			if _, err := s.Admin.UpdateEnvironment(ctx, client.EnvironmentRequest{Name: "staging", Kind: "non-prod", Order: 3,
				Targets: []client.EnvironmentTarget{{Cluster: "staging"}}}); err != nil {
				t.Fatal(err)
			}
			if e, err := s.Admin.GetEnvironment(ctx, "staging"); err != nil || e.Order != 3 || e.Targets[0].Namespace != "" {
				t.Fatalf("updated staging: %+v, %v", e, err)
			}
			if err := s.Admin.DeleteEnvironment(ctx, "staging"); err != nil {
				t.Fatal(err)
			}
			// Replacing a definition's patterns: bad ones are refused naming the field; a product
			// only annotations name (billing) has no definition to replace.
			if _, err := s.Admin.UpdateProduct(ctx, client.CreateProductRequest{Name: "shop", Patterns: []string{"shop-*", "[x"}}); !invalidField(err, "patterns[1]") {
				t.Errorf("bad product glob on update: %v", err)
			}
			if p, err := s.Admin.UpdateProduct(ctx, client.CreateProductRequest{Name: "shop", Patterns: []string{"shop-prod-*", "shop-web"}}); err != nil ||
				!p.Defined || strings.Join(p.Patterns, " ") != "shop-prod-* shop-web" {
				t.Fatalf("updated shop: %+v, %v", p, err)
			}
			if ps, err := s.Admin.ListProducts(ctx); err != nil || !slices.ContainsFunc(ps.Items, func(p client.Product) bool {
				return p.Name == "shop" && strings.Join(p.Patterns, " ") == "shop-prod-* shop-web"
			}) {
				t.Fatalf("products after the update: %+v, %v", ps, err)
			}
			if _, err := s.Admin.UpdateProduct(ctx, client.CreateProductRequest{Name: "billing", Patterns: []string{"billing-*"}}); !hasStatus(err, http.StatusNotFound) {
				t.Errorf("replacing a product only an annotation names: %v", err)
			}
			if err := s.Admin.DeleteProduct(ctx, "shop"); err != nil {
				t.Fatal(err)
			}
			if err := s.Admin.DeleteEnvironment(ctx, "staging"); !hasStatus(err, http.StatusNotFound) {
				t.Fatalf("deleting staging twice: %v", err)
			}
		})
	}
}

func hasStatus(err error, code int) bool {
	var ae *client.Error
	return errors.As(err, &ae) && ae.Status == code
}

func invalidField(err error, field string) bool {
	var ae *client.Error
	return errors.As(err, &ae) && ae.Status == http.StatusBadRequest && ae.Field == field
}
