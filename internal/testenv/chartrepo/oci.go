package chartrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/registry"

	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// PushOCI packages chart name at each version with the Helm SDK and pushes it with the Helm
// SDK's registry client (as `helm push chart.tgz oci://ADDR/path` does) to the loopback
// registry reg (TLS from its own CA, basic auth), under path. It returns the repoURL of the
// charts: oci://ADDR/path.
func PushOCI(t testing.TB, reg *containers.RegistryInstance, path, name string, versions ...string) string {
	t.Helper()
	dir := t.TempDir()
	creds := filepath.Join(dir, "registry.json") // not the user's ~/.config/helm
	if err := os.WriteFile(creds, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := registry.NewClient(registry.ClientOptHTTPClient(reg.HTTPClient()),
		registry.ClientOptBasicAuth(reg.Username, reg.Password), registry.ClientOptCredentialsFile(creds))
	if err != nil {
		t.Fatal(err)
	}
	base := reg.Addr + "/" + strings.Trim(path, "/")
	for _, v := range versions {
		data, err := os.ReadFile(Package(t, dir, name, v))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Push(data, base+"/"+name+":"+v); err != nil { // the SDK writes + as _ in the tag
			t.Fatalf("pushing %s %s to %s: %v", name, v, base, err)
		}
	}
	return "oci://" + base
}
