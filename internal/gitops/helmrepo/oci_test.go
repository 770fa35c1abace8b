package helmrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

func TestMain(m *testing.M) { containers.Main(m) }

// ociRepo pushes chart demo at versions to the loopback registry (TLS from its own CA, basic
// auth) under a path of its own, and returns its repoURL and the credentials that reach it.
func ociRepo(t *testing.T, versions ...string) (string, helmrepo.Credentials) {
	t.Helper()
	reg := containers.Registry(t)
	path := "charts/" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	url := chartrepo.PushOCI(t, reg, path, "demo", versions...)
	return url, helmrepo.Credentials{Username: reg.Username, Password: reg.Password, CABundle: reg.CACert}
}

func TestOCIResolveVersions(t *testing.T) {
	url, cred := ociRepo(t, "1.0.0", "1.2.0", "1.2.3", "2.0.0", "2.1.0-rc.1", "2.1.0+build.7")
	c := newCache(t)
	ctx := context.Background()
	bare := strings.TrimPrefix(url, "oci://") // Argo CD's form: no scheme
	for _, tc := range []struct{ repo, constraint, want string }{
		{url, "1.2.0", "1.2.0"}, {url, "1.2.*", "1.2.3"}, {url, ">=1.0 <2", "1.2.3"}, {url, "", "2.1.0+build.7"},
		{url, "2.1.0-rc.1", "2.1.0-rc.1"}, {bare, "~1.0", "1.0.0"}, {bare + "/", "2.0.0", "2.0.0"},
	} {
		got, err := c.Resolve(ctx, tc.repo, "demo", tc.constraint, cred)
		if err != nil {
			t.Fatalf("%s %q: %v", tc.repo, tc.constraint, err)
		}
		if got.Version != tc.want || len(got.Digest) != 64 {
			t.Errorf("%q: got %s (digest %q), want %s", tc.constraint, got.Version, got.Digest, tc.want)
		}
		data, err := os.ReadFile(filepath.Join(got.Dir, "demo", "Chart.yaml"))
		if err != nil || !strings.Contains(string(data), "version: "+tc.want) {
			t.Errorf("%q: unpacked Chart.yaml: %s %v", tc.constraint, data, err)
		}
		if _, err := os.Stat(filepath.Join(got.Dir, "demo", "values-prod.yaml")); err != nil {
			t.Errorf("%q: the chart's other files are unpacked too: %v", tc.constraint, err)
		}
	}
	// 7 resolutions of 6 distinct versions: "1.2.*" and ">=1.0 <2" are both 1.2.3.
	if st := c.Stats(); st.Downloads != 6 || st.IndexFetches != 1 {
		t.Errorf("stats %+v: want 6 pulls (one per version) and 1 tag list", st)
	}
}

func TestOCIOnePullForManyApps(t *testing.T) {
	url, cred := ociRepo(t, "1.0.0", "1.1.0")
	c := newCache(t)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cons := "1.1.0"
			if i%2 == 0 {
				cons = "1.*"
			}
			got, err := c.Resolve(context.Background(), url, "demo", cons, cred)
			if err == nil && got.Version != "1.1.0" {
				err = fmt.Errorf("got %s", got.Version)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.Downloads != 1 || st.IndexFetches != 1 {
		t.Errorf("40 apps at once: stats %+v, want 1 pull and 1 tag list", st)
	}
	// A new cache on the same directory finds the chart on disk: the registry's manifest is
	// resolved, nothing pulled.
	c2, err := helmrepo.New(helmrepo.Options{Dir: filepath.Dir(mustResolve(t, c, url, cred).Dir), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	mustResolve(t, c2, url, cred)
	if st := c2.Stats(); st.Downloads != 0 {
		t.Errorf("a restarted cache pulled again: %+v", st)
	}
}

func mustResolve(t *testing.T, c *helmrepo.Cache, url string, cred helmrepo.Credentials) *helmrepo.Chart {
	t.Helper()
	got, err := c.Resolve(context.Background(), url, "demo", "1.1.0", cred)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestOCIMissingVersionNamesRepoChartAndVersions(t *testing.T) {
	url, cred := ociRepo(t, "1.0.0", "1.2.0")
	c := newCache(t)
	_, err := c.Resolve(context.Background(), url, "demo", "3.0.0", cred)
	if !errors.Is(err, helmrepo.ErrVersionNotFound) {
		t.Fatalf("err = %v, want ErrVersionNotFound", err)
	}
	for _, want := range []string{url, "demo", `"3.0.0"`, "1.2.0, 1.0.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	_, err = c.Resolve(context.Background(), url, "nosuchchart", "1.0.0", cred)
	if !errors.Is(err, helmrepo.ErrVersionNotFound) || !strings.Contains(err.Error(), `"nosuchchart"`) {
		t.Fatalf("missing chart: %v", err)
	}
	if st := c.Stats(); st.Downloads != 0 {
		t.Errorf("pulled %d charts for versions that do not exist", st.Downloads)
	}
}

func TestOCICredentialsAndCA(t *testing.T) {
	url, cred := ociRepo(t, "1.0.0")
	c := newCache(t)
	ctx := context.Background()
	wrong := cred
	wrong.Password = "not-the-password"
	_, err := c.Resolve(ctx, url, "demo", "1.0.0", wrong)
	if !errors.Is(err, helmrepo.ErrAuth) || !strings.Contains(err.Error(), url) || strings.Contains(err.Error(), wrong.Password) ||
		!strings.Contains(err.Error(), "check the repository credentials") {
		t.Fatalf("wrong password: %v", err)
	}
	anon := helmrepo.Credentials{CABundle: cred.CABundle}
	_, err = c.Resolve(ctx, url, "demo", "1.0.0", anon)
	if !errors.Is(err, helmrepo.ErrAuth) || !strings.Contains(err.Error(), "no credentials were sent") {
		t.Fatalf("anonymous: %v", err)
	}
	noCA := cred
	noCA.CABundle = nil
	if _, err := c.Resolve(ctx, url, "demo", "1.0.0", noCA); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("the registry was trusted without its CA: %v", err)
	}
	if got, err := c.Resolve(ctx, url, "demo", "1.0.0", cred); err != nil || got.Version != "1.0.0" {
		t.Fatalf("right credentials and CA: %v %v", got, err)
	}
	if st := c.Stats(); st.Downloads != 1 {
		t.Errorf("pulls %d, want 1", st.Downloads)
	}
}

func TestOCINetworkPolicy(t *testing.T) {
	url, cred := ociRepo(t, "1.0.0")
	pol, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	c, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(context.Background(), url, "demo", "1.0.0", cred)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1") || errors.Is(err, helmrepo.ErrVersionNotFound) {
		t.Fatalf("err = %v, want the policy's refusal", err)
	}
	for _, bad := range []string{"oci://Example.com/UPPER", "oci://example.com/charts:1.0", "oci://"} {
		if _, err := c.Resolve(context.Background(), bad, "demo", "1.0.0", cred); !errors.Is(err, helmrepo.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzChartLayer: a registry's manifest never panics the parser, and a layer it returns is a
// chart layer within the limit with a valid digest.
func FuzzChartLayer(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"sha256:8f3b3b2c8f4e2e1f0a9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f","size":123},"layers":[{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":3012}]}`))
	f.Add([]byte(`{"layers":[{"mediaType":"application/tar+gzip","digest":"sha256:zz","size":-1}]}`))
	f.Add([]byte(`{"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := helmrepo.ChartLayer(data, 1<<20)
		if err != nil {
			return
		}
		if l.Size < 0 || l.Size > 1<<20 || l.Digest.Validate() != nil ||
			(l.MediaType != helmrepo.ChartLayerMediaType && l.MediaType != "application/tar+gzip") {
			t.Fatalf("accepted %+v", l)
		}
	})
}
