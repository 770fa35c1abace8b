package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// testRegistry is a real OCI registry (go-containerregistry's) on loopback that asks for
// Basic credentials user:pass when auth is set.
func testRegistry(t *testing.T, auth bool) string {
	t.Helper()
	h := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); auth && (!ok || u != "user" || p != "pass") {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"secret body text"}]}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pushImage pushes an image whose config has entrypoint and cmd, and returns its reference.
func pushImage(t *testing.T, ref string, entrypoint, cmd []string) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Entrypoint: entrypoint, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: "user", Password: "pass"})); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestFetchImageCommand reads ENTRYPOINT and CMD from a real registry: a plain image, the
// platform's image of an index, with credentials; the network policy is applied, and errors
// never carry the registry's body.
func TestFetchImageCommand(t *testing.T) {
	ctx := context.Background()
	addr := testRegistry(t, true)
	pushImage(t, addr+"/tool:1", []string{"/bin/tool"}, []string{"--help"})

	// An index: this platform's image and another's.
	mine := pushImage(t, addr+"/scratch:mine", []string{"/mine"}, nil)
	other := pushImage(t, addr+"/scratch:other", []string{"/other"}, nil)
	otherArch := "s390x"
	if runtime.GOARCH == otherArch {
		otherArch = "arm64"
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	iref, _ := name.ParseReference(addr + "/multi:1")
	if err := remote.WriteIndex(iref, idx, remote.WithAuth(&authn.Basic{Username: "user", Password: "pass"})); err != nil {
		t.Fatal(err)
	}
	creds := authn.FromConfig(authn.AuthConfig{Username: "user", Password: "pass"})
	all := netpolicy.Unrestricted()
	for ref, want := range map[string]ImageCommand{
		addr + "/tool:1":  {Entrypoint: []string{"/bin/tool"}, Cmd: []string{"--help"}},
		addr + "/multi:1": {Entrypoint: []string{"/mine"}},
	} {
		r, _ := name.ParseReference(ref)
		got, err := fetchImageCommand(ctx, r, creds, all)
		if err != nil || !slices.Equal(got.Entrypoint, want.Entrypoint) || !slices.Equal(got.Cmd, want.Cmd) {
			t.Errorf("%s: %+v %v, want %+v", ref, got, err, want)
		}
	}

	r, _ := name.ParseReference(addr + "/tool:1")
	_, err := fetchImageCommand(ctx, r, authn.Anonymous, all)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401 (UNAUTHORIZED)") || strings.Contains(err.Error(), "secret body") {
		t.Errorf("anonymous: %v", err)
	}
	r, _ = name.ParseReference(addr + "/nothing:1")
	if _, err := fetchImageCommand(ctx, r, creds, all); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("missing image: %v", err)
	}
	// An answer beyond the bound is not read to its end.
	pushImage(t, addr+"/huge:1", nil, []string{strings.Repeat("x", maxRegistryBody)})
	r, _ = name.ParseReference(addr + "/huge:1")
	if _, err := fetchImageCommand(ctx, r, creds, all); err == nil || !strings.Contains(err.Error(), "larger than 8 MiB") {
		t.Errorf("huge config: %v", err)
	}
	// A runtime whose policy refuses loopback does not reach the registry.
	strict, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	r, _ = name.ParseReference(addr + "/tool:1")
	if _, err := fetchImageCommand(ctx, r, creds, strict); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("refused address: %v", err)
	}
}
