package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/distribution/reference"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzRegistryURL feeds arbitrary registry addresses (a registry context's url, an image a
// runner reports) and CA data to checkRegistryURL and checkCA: nothing panics, refusals name the
// field, and an accepted address is one image references read the same way: an image under it
// parses with the address as its registry and path (not, say, as a Docker Hub path), so the
// runner finds the context's credentials for the images pushed there.
func FuzzRegistryURL(f *testing.F) {
	for _, s := range []string{"ghcr.io/acme", "127.0.0.1:5000", "[::1]:5000/x", "localhost:5000", "localhost", "registry", "registry:5000",
		"GHCR.io/Acme", "ghcr.io/acme/", "ghcr.io//a", "https://ghcr.io", "h:0", "h:65536", "[::1", "[1.2.3.4]", "a..b/c", "a_b.io/x", "ghcr.io/a__b/c-d"} {
		f.Add(s, false, "")
		f.Add(s, true, "")
	}
	f.Add("ghcr.io/acme", false, "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n")
	f.Add("ghcr.io/acme", false, "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n")
	f.Fuzz(func(t *testing.T, v string, needPath bool, ca string) {
		if ca != "" {
			if err := checkCA("registry.ca", ca); err != nil && (!errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "registry.ca") {
				t.Fatalf("CA refusal %v does not name registry.ca", err)
			}
		}
		err := checkRegistryURL("registry.url", v, needPath)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "registry.url" {
				t.Fatalf("checkRegistryURL(%q): %v does not name registry.url", v, err)
			}
			return
		}
		image := v + "/app"
		named, err := reference.ParseNormalizedNamed(image + ":1")
		if err != nil {
			t.Fatalf("accepted registry %q, but image %q does not parse: %v", v, image, err)
		}
		if got := reference.Domain(named) + "/" + reference.Path(named); got != image {
			t.Fatalf("accepted registry %q, but image %q reads as %q", v, image, got)
		}
		if strings.Contains(v, "://") {
			t.Fatalf("accepted %q with a scheme", v)
		}
	})
}
