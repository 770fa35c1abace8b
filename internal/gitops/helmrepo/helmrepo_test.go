package helmrepo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
)

func newCache(t *testing.T) *helmrepo.Cache {
	t.Helper()
	c, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestResolveVersions(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.0", "1.2.3", "2.0.0", "2.1.0-rc.1")
	c := newCache(t)
	ctx := context.Background()
	for _, tc := range []struct{ constraint, want string }{
		{"1.2.0", "1.2.0"}, {"1.2.*", "1.2.3"}, {">=1.0 <2", "1.2.3"}, {"", "2.0.0"}, {"*", "2.0.0"},
		{"2.1.0-rc.1", "2.1.0-rc.1"}, {"~1.0", "1.0.0"},
	} {
		got, err := c.Resolve(ctx, repo.URL, "demo", tc.constraint, helmrepo.Credentials{})
		if err != nil {
			t.Fatalf("%q: %v", tc.constraint, err)
		}
		if got.Version != tc.want {
			t.Errorf("%q: got %s, want %s", tc.constraint, got.Version, tc.want)
		}
		data, err := os.ReadFile(filepath.Join(got.Dir, "demo", "Chart.yaml"))
		if err != nil || !strings.Contains(string(data), "version: "+tc.want) {
			t.Errorf("%q: unpacked Chart.yaml: %s %v", tc.constraint, data, err)
		}
		if _, err := os.Stat(filepath.Join(got.Dir, "demo", "values-prod.yaml")); err != nil {
			t.Errorf("%q: the chart's other files are unpacked too: %v", tc.constraint, err)
		}
	}
}

func TestMissingVersionNamesRepoChartAndVersions(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.0")
	c := newCache(t)
	_, err := c.Resolve(context.Background(), repo.URL, "demo", "3.0.0", helmrepo.Credentials{})
	if !errors.Is(err, helmrepo.ErrVersionNotFound) {
		t.Fatalf("err = %v, want ErrVersionNotFound", err)
	}
	for _, want := range []string{repo.URL, "demo", `"3.0.0"`, "1.2.0, 1.0.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	_, err = c.Resolve(context.Background(), repo.URL, "other", "1.0.0", helmrepo.Credentials{})
	if !errors.Is(err, helmrepo.ErrVersionNotFound) || !strings.Contains(err.Error(), `no chart "other"`) || !strings.Contains(err.Error(), "demo") {
		t.Fatalf("missing chart: %v", err)
	}
	_, err = c.Resolve(context.Background(), repo.URL, "demo", "not a range!", helmrepo.Credentials{})
	if !errors.Is(err, helmrepo.ErrInvalid) || !strings.Contains(err.Error(), "spec.source.targetRevision") {
		t.Fatalf("bad range: %v", err)
	}
	if n := c.Stats().Downloads; n != 0 {
		t.Errorf("downloads = %d, want 0", n)
	}
}

func TestNewVersionPublishedIsFoundWithoutWaitingForTTL(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	c := newCache(t)
	if _, err := c.Resolve(context.Background(), repo.URL, "demo", "1.0.0", helmrepo.Credentials{}); err != nil {
		t.Fatal(err)
	}
	repo.Add(t, "demo", "1.1.0")
	got, err := c.Resolve(context.Background(), repo.URL, "demo", "1.1.0", helmrepo.Credentials{})
	if err != nil || got.Version != "1.1.0" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestInvalidateRereadsTheIndex(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	c := newCache(t)
	ctx := context.Background()
	if got, err := c.Resolve(ctx, repo.URL, "demo", "1.*", helmrepo.Credentials{}); err != nil || got.Version != "1.0.0" {
		t.Fatalf("%v %v", got, err)
	}
	repo.Add(t, "demo", "1.0.1")
	if got, _ := c.Resolve(ctx, repo.URL, "demo", "1.*", helmrepo.Credentials{}); got.Version != "1.0.0" {
		t.Errorf("within the TTL a range kept the index it read: got %s", got.Version)
	}
	c.Invalidate(repo.URL)
	if got, err := c.Resolve(ctx, repo.URL, "demo", "1.*", helmrepo.Credentials{}); err != nil || got.Version != "1.0.1" {
		t.Errorf("after Invalidate: %v %v", got, err)
	}
	if n := repo.Hits("/index.yaml"); n != 2 {
		t.Errorf("index read %d times, want 2", n)
	}
}

func TestCredentials(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	repo.SetAuth("alice", "s3cret")
	c := newCache(t)
	ctx := context.Background()
	_, err := c.Resolve(ctx, repo.URL, "demo", "1.0.0", helmrepo.Credentials{Username: "alice", Password: "wrong"})
	if !errors.Is(err, helmrepo.ErrAuth) || !strings.Contains(err.Error(), repo.URL) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong password: %v", err)
	}
	_, err = c.Resolve(ctx, repo.URL, "demo", "1.0.0", helmrepo.Credentials{})
	if !errors.Is(err, helmrepo.ErrAuth) || !strings.Contains(err.Error(), "no credentials were sent") {
		t.Fatalf("anonymous: %v", err)
	}
	got, err := c.Resolve(ctx, repo.URL, "demo", "1.0.0", helmrepo.Credentials{Username: "alice", Password: "s3cret"})
	if err != nil || got.Version != "1.0.0" {
		t.Fatalf("right password: %v %v", got, err)
	}
}

func TestCustomCA(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	tlsSrv := httptest.NewTLSServer(repo.Config.Handler)
	defer tlsSrv.Close()
	c := newCache(t)
	ctx := context.Background()
	if _, err := c.Resolve(ctx, tlsSrv.URL, "demo", "1.0.0", helmrepo.Credentials{}); err == nil {
		t.Fatal("a self-signed repository was trusted without its CA")
	}
	ca := pemOf(tlsSrv.Certificate().Raw)
	got, err := c.Resolve(ctx, tlsSrv.URL, "demo", "1.0.0", helmrepo.Credentials{CABundle: ca})
	if err != nil || got.Version != "1.0.0" {
		t.Fatalf("with the CA: %v %v", got, err)
	}
}

func TestDigestMismatch(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	repo.BadDigest(true)
	c := newCache(t)
	_, err := c.Resolve(context.Background(), repo.URL, "demo", "1.0.0", helmrepo.Credentials{})
	if !errors.Is(err, helmrepo.ErrDigest) || !strings.Contains(err.Error(), "demo 1.0.0") {
		t.Fatalf("err = %v, want ErrDigest naming the chart", err)
	}
	repo.BadDigest(false)
	if _, err := c.Resolve(context.Background(), repo.URL, "demo", "1.0.0", helmrepo.Credentials{}); err != nil {
		t.Fatalf("nothing bad was cached: %v", err)
	}
}

func TestOneDownloadForManyApps(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.3")
	dir := t.TempDir()
	c, err := helmrepo.New(helmrepo.Options{Dir: dir, Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	dirs := make(chan string, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cons := "1.2.3"
			if i%2 == 0 {
				cons = "1.2.*"
			}
			got, err := c.Resolve(context.Background(), repo.URL, "demo", cons, helmrepo.Credentials{})
			if err != nil {
				errs <- err
				return
			}
			dirs <- got.Dir
		}()
	}
	wg.Wait()
	close(errs)
	close(dirs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for d := range dirs {
		seen[d] = true
	}
	if len(seen) != 1 {
		t.Errorf("100 apps got %d chart directories, want 1", len(seen))
	}
	tgz := "/charts/demo-1.2.3.tgz"
	if n := repo.Hits(tgz); n != 1 {
		t.Errorf("the chart was downloaded %d times, want 1", n)
	}
	if n := repo.Hits("/index.yaml"); n != 1 {
		t.Errorf("the index was read %d times, want 1", n)
	}
	if s := c.Stats(); s.Downloads != 1 || s.IndexFetches != 1 {
		t.Errorf("stats = %+v", s)
	}
	// A new cache on the same directory (a restart) downloads nothing.
	c2, err := helmrepo.New(helmrepo.Options{Dir: dir, Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Resolve(context.Background(), repo.URL, "demo", "1.2.3", helmrepo.Credentials{}); err != nil {
		t.Fatal(err)
	}
	if n := repo.Hits(tgz); n != 1 {
		t.Errorf("after a restart the chart was downloaded again (%d)", n)
	}
}

func TestNetworkPolicyRefusesLoopback(t *testing.T) {
	repo := chartrepo.New(t, "demo", "1.0.0")
	pol, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	c, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resolve(context.Background(), repo.URL, "demo", "1.0.0", helmrepo.Credentials{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("err = %v, want the policy's refusal", err)
	}
	if repo.Hits("/index.yaml") != 0 {
		t.Error("the refused repository was reached")
	}
	for _, bad := range []string{"ftp://x/charts", "https://user:pw@example.com/charts", "oci://user:pw@example.com/charts", "user:pw@example.com/charts"} {
		if _, err := c.Resolve(context.Background(), bad, "demo", "1.0.0", helmrepo.Credentials{}); !errors.Is(err, helmrepo.ErrInvalid) || strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func pemOf(der []byte) []byte {
	return []byte(fmt.Sprintf("-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n", b64(der)))
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// FuzzParseIndex: index.yaml comes from a tenant's repository.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nentries:\n  demo:\n  - name: demo\n    version: 1.0.0\n    urls: [demo-1.0.0.tgz]\n    digest: abc\n  - null\n"))
	f.Add([]byte(`{"apiVersion":"v1","entries":{"x":[{"version":"not-semver"},{"version":"2.0.0"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := helmrepo.ParseIndex(data)
		if err != nil {
			return
		}
		for _, vs := range idx.Entries {
			for _, v := range vs {
				if v == nil || v.Version == "" {
					t.Fatal("an empty entry was kept")
				}
			}
		}
	})
}
