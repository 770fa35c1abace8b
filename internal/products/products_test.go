package products

import (
	"slices"
	"testing"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

func TestBelongs(t *testing.T) {
	shop := Product{Name: "shop", Patterns: []string{"shop-*"}}
	app := func(name string, ann map[string]string) runtimes.Application {
		return runtimes.Application{Application: runtimev1.Application{Name: name, Annotations: ann}}
	}
	for _, c := range []struct {
		a    runtimes.Application
		want bool
	}{
		{app("shop-web", nil), true},
		{app("cart", map[string]string{AnnotationProduct: "shop"}), true},
		{app("cart", map[string]string{AnnotationProductAlias: "shop"}), true},
		// The annotation decides, over the glob; the Codefresh annotation over the alias.
		{app("shop-billing", map[string]string{AnnotationProduct: "billing"}), false},
		{app("shop-web", map[string]string{AnnotationProduct: "billing", AnnotationProductAlias: "shop"}), false},
		{app("web", nil), false},
	} {
		if got := belongs(c.a, shop); got != c.want {
			t.Errorf("%s %v: belongs %v, want %v", c.a.Name, c.a.Annotations, got, c.want)
		}
	}
}

func TestPromotion(t *testing.T) {
	env := func(name string, apps ...AppVersion) EnvironmentView {
		return EnvironmentView{Environment: Environment{Name: name}, Applications: apps}
	}
	c1, c2, c0 := images.Commit{SHA: "c1"}, images.Commit{SHA: "c2"}, images.Commit{SHA: "c0"}
	from := env("staging",
		AppVersion{Revision: "r2", Images: []Image{{Repository: "shop", Digest: "sha256:2", Commits: []images.Commit{c2, c1}, Issues: []images.Issue{{Key: "S-2"}, {Key: "S-1"}}},
			{Repository: "db", Digest: "sha256:d"}}},
		AppVersion{Revision: "r2", Images: []Image{{Repository: "new", Digest: "sha256:n"}}})
	to := env("prod",
		AppVersion{Revision: "r1", Images: []Image{{Repository: "shop", Digest: "sha256:1", Commits: []images.Commit{c1, c0}, Issues: []images.Issue{{Key: "S-1"}}},
			{Repository: "db", Digest: "sha256:d"}, {Repository: "gone", Digest: "sha256:g"}}})
	p := promotion(from, to)
	if p.From != "staging" || p.To != "prod" || !slices.Equal(p.FromRevisions, []string{"r2"}) || !slices.Equal(p.ToRevisions, []string{"r1"}) {
		t.Fatalf("promotion: %+v", p)
	}
	var got []string
	for _, im := range p.Images {
		got = append(got, im.Repository+":"+im.From+">"+im.To)
	}
	if want := []string{"gone:>sha256:g", "new:sha256:n>", "shop:sha256:2>sha256:1"}; !slices.Equal(got, want) {
		t.Errorf("image changes %v, want %v", got, want)
	}
	if len(p.Commits) != 1 || p.Commits[0].SHA != "c2" || len(p.Issues) != 1 || p.Issues[0].Key != "S-2" {
		t.Errorf("commits %+v issues %+v: want only what prod's images lack", p.Commits, p.Issues)
	}
	if same := promotion(to, to); len(same.Images) != 0 || len(same.Commits) != 0 {
		t.Errorf("promoting an environment into its twin: %+v", same)
	}
}

func TestTargetMatches(t *testing.T) {
	tg := Target{Cluster: "prod", Namespace: "shop-*"}
	if !tg.matches("any", "prod", "shop-web") || tg.matches("any", "prod", "web") || tg.matches("any", "staging", "shop-web") {
		t.Error("cluster and namespace globs")
	}
	if !(Target{Runtime: "edge-?"}).matches("edge-1", "", "") {
		t.Error("runtime glob")
	}
}
