package helmchart

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

func TestMain(m *testing.M) { containers.Main(m) }

// TestPushAndPullBack packages every chart as `make chart` does, pushes it to the loopback
// registry (TLS from its own CA, basic auth) and pulls it back through the GitOps engine's
// OCI chart code (helmrepo), which unpacks the very chart: same version, same templates, and
// it renders.
func TestPushAndPullBack(t *testing.T) {
	reg := containers.Registry(t)
	base := reg.Addr + "/charts/" + strings.ToLower(t.Name())
	dir := t.TempDir()
	cache, err := helmrepo.New(helmrepo.Options{Dir: filepath.Join(dir, "cache"), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	cred := helmrepo.Credentials{Username: reg.Username, Password: reg.Password, CABundle: reg.CACert}
	for _, name := range Names {
		ch, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		archive, err := Package(ch, filepath.Join(dir, "dist"), "v1.2.3-rc.1", "v1.2.3-rc.1")
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(archive) != name+"-1.2.3-rc.1.tgz" {
			t.Errorf("archive %s", archive)
		}
		ref, digest, err := Push(archive, "oci://"+base, PushOptions{HTTPClient: reg.HTTPClient(), Username: reg.Username, Password: reg.Password})
		if err != nil {
			t.Fatal(err)
		}
		if ref != base+"/"+name+":1.2.3-rc.1" || !strings.HasPrefix(digest, "sha256:") {
			t.Errorf("pushed %s %s", ref, digest)
		}
		got, err := cache.Resolve(context.Background(), "oci://"+base, name, "1.2.3-rc.1", cred)
		if err != nil {
			t.Fatalf("pull %s back: %v", name, err)
		}
		pulled, err := LoadFS(os.DirFS(got.Dir), name)
		if err != nil {
			t.Fatal(err)
		}
		if pulled.Metadata.Version != "1.2.3-rc.1" || pulled.Metadata.AppVersion != "v1.2.3-rc.1" || len(pulled.Templates) != len(ch.Templates) || pulled.Schema == nil {
			t.Errorf("%s pulled back: version %s appVersion %s, %d templates (want %d), schema %v",
				name, pulled.Metadata.Version, pulled.Metadata.AppVersion, len(pulled.Templates), len(ch.Templates), pulled.Schema != nil)
		}
		// The pulled chart renders like the embedded one: the golden case's values work.
		files, _ := filepath.Glob("testdata/" + name + "__*.values.yaml")
		if _, err := Render(pulled, releases[name], readValues(t, files[0])); err != nil {
			t.Errorf("%s pulled back does not render: %v", name, err)
		}
	}
}
