package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// The builder image: Debian's buildah with the shared libraries it links, on the busybox test
// base, for builder pods (a `build` step on Kubernetes). There is no registry to pull an
// upstream buildah image from, so it is made from the installed package, as the test images are
// made from busybox-static. It is not reproducible across package updates (the binary and the
// libraries are copied as installed).
const (
	builderImage = "freshet-test/buildah:v1"
	buildahPath  = "/usr/bin/buildah"
)

var builderPkgs = []debPkg{{"buildah", buildahPath}}

// lddPaths lists the absolute paths of the shared libraries bin links (and the loader).
func lddPaths(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	re := regexp.MustCompile(`(/[^\s]+)`)
	seen := map[string]bool{}
	var ps []string
	for _, l := range strings.Split(string(out), "\n") {
		if m := re.FindString(l); m != "" && !seen[m] {
			seen[m] = true
			ps = append(ps, m)
		}
	}
	sort.Strings(ps)
	if len(ps) == 0 {
		return nil, fmt.Errorf("ldd %s: no libraries", bin)
	}
	return ps, nil
}

// builderLayer is buildah, its libraries (at their paths, resolved), and the containers
// configuration a pod needs: the vfs storage driver (no overlay inside a container), a policy
// that accepts any image, no unqualified search, and /var/tmp.
func builderLayer() ([]fileEntry, error) {
	bin, err := os.ReadFile(buildahPath)
	if err != nil {
		return nil, err
	}
	libs, err := lddPaths(buildahPath)
	if err != nil {
		return nil, err
	}
	es := []fileEntry{dir("etc/containers", 0o755), dir("var", 0o755), dir("var/tmp", 0o1777), file("usr/bin/buildah", 0o755, bin),
		file("etc/containers/policy.json", 0o644, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`+"\n")),
		file("etc/containers/registries.conf", 0o644, []byte("unqualified-search-registries = []\n")),
		file("etc/containers/storage.conf", 0o644, []byte("[storage]\ndriver = \"vfs\"\nrunroot = \"/var/run/containers/storage\"\ngraphroot = \"/var/lib/containers/storage\"\n")),
	}
	dirs := map[string]bool{}
	for _, l := range libs {
		b, err := os.ReadFile(l) // follows symlinks: the library's content at its linked path
		if err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(l, "/")
		for d := filepath.Dir(rel); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		es = append(es, file(rel, 0o755, b))
	}
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	for _, d := range ds {
		es = append(es, dir(d, 0o755))
	}
	return es, nil
}

func cmdBuilderImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("builder-image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	regName := fs.String("registry", DefaultName, "the ctrenv registry instance to push to")
	install := fs.Bool("install", true, "install buildah and busybox-static when missing (apt-get, as root)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkName(*regName); err != nil {
		return err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "ctrenv builder-image: "+f+"\n", a...) }
	if err := ensurePackages(ctx, append(append([]debPkg(nil), imagePkgs...), builderPkgs...), *install, logf); err != nil {
		return err
	}
	r, err := openRegistry(*regName)
	if err != nil {
		return err
	}
	if _, ok := r.process(compRegistry); !ok {
		return exitError{code: exitNotRunning, err: fmt.Errorf("registry %q is not running; start it with `make registry`", r.name)}
	}
	base, platform, err := busyboxBaseLayer()
	if err != nil {
		return err
	}
	es, err := builderLayer()
	if err != nil {
		return err
	}
	l, err := newLayer(es)
	if err != nil {
		return err
	}
	img, err := newImage(platform, layerEpoch, []layerSpec{base, {layer: l, createdBy: "buildah from Debian, its libraries, vfs storage"}},
		testImageSpecs()[0].config)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(r.address() + "/" + builderImage)
	if err != nil {
		return err
	}
	target, err := registryTarget(r)
	if err != nil {
		return err
	}
	opts, err := target.options(ctx)
	if err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	if _, err := pushIfChanged(ref, img, d, opts); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s@%s\n", ref, d)
	return err
}
