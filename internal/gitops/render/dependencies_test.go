package render_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/gitops/render"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
)

// cacheFetcher fetches dependencies through a real chart cache from real repositories; names
// maps "@name" repositories to URLs as repository credentials do in the engine.
type cacheFetcher struct {
	c     *helmrepo.Cache
	names map[string]string
}

func (f cacheFetcher) FetchDependency(ctx context.Context, repository, name, version string) (string, error) {
	if alias, ok := strings.CutPrefix(repository, "@"); ok {
		repository = f.names[alias]
	}
	ch, err := f.c.Resolve(ctx, repository, name, version, helmrepo.Credentials{})
	if err != nil {
		return "", err
	}
	return filepath.Join(ch.Dir, name), nil
}

// A chart whose Chart.yaml depends on charts in a chart repository (by URL, and by a
// repository's name written @name, with an alias) renders them, fetched once per version.
func TestRemoteDependencies(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.0", "1.2.7")
	repo.Add(t, "other", "0.3.0")
	root := t.TempDir()
	dir := filepath.Join(root, "parent")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	chartYAML := `apiVersion: v2
name: parent
version: 0.1.0
dependencies:
  - name: demo
    version: "~1.2.0"
    repository: ` + repo.URL + `
  - name: other
    version: 0.3.0
    repository: "@myrepo"
    alias: second
`
	os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chartYAML), 0o644)
	os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("demo:\n  message: from-parent\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\n"), 0o644)

	cache, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	f := cacheFetcher{c: cache, names: map[string]string{"myrepo": repo.URL}}
	r := newRenderer(t, render.Options{})
	for range 3 {
		res := renderOK(t, r, render.Request{Root: root, AppName: "rel", Source: src("parent"), Charts: f})
		got := map[string]map[string]any{}
		for _, o := range res.Objects {
			data, _ := o.Object.Object["data"].(map[string]any)
			if data == nil {
				data = map[string]any{}
			}
			got[o.Object.GetName()] = data
		}
		if len(got) != 3 || got["rel-demo-cm"]["version"] != "1.2.7" || got["rel-demo-cm"]["message"] != "from-parent" ||
			got["rel-second-cm"]["version"] != "0.3.0" || got["rel-second-cm"]["message"] != "hello" || got["rel-demo-cm"]["replicas"] != "1" || got["parent"] == nil {
			t.Fatalf("rendered %v", got)
		}
	}
	if n := repo.Hits("/charts/demo-1.2.7.tgz"); n != 1 {
		t.Errorf("demo 1.2.7 downloaded %d times for 3 renders", n)
	}

	// A version that does not exist names the dependency, its repository and what exists.
	os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(strings.Replace(chartYAML, `"~1.2.0"`, `"9.9.9"`, 1)), 0o644)
	re := renderErr(t, r, render.Request{Root: root, AppName: "rel", Source: src("parent"), Charts: f})
	if !errors.Is(re, render.ErrRemoteDependency) || re.At.File != "parent/Chart.yaml" ||
		!strings.Contains(re.Error(), "dependency demo 9.9.9 from "+repo.URL) || !strings.Contains(re.Error(), "1.2.7, 1.2.0, 1.0.0") {
		t.Errorf("missing version: %v", re)
	}
	// Without a fetcher (no chart cache), remote dependencies are refused as before.
	re = renderErr(t, r, render.Request{Root: root, AppName: "rel", Source: src("parent")})
	if !errors.Is(re, render.ErrRemoteDependency) || !strings.Contains(re.Error(), "is not in charts/") {
		t.Errorf("no fetcher: %v", re)
	}
}
