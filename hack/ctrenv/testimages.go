package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The test images. internal/testenv/containers exports the same names as constants (its
// tests check that every one is pushed) and documents what each does; change both together.
const (
	testImageBusybox    = "freshet-test/busybox:v1"
	testImageEcho       = "freshet-test/echo:v1"
	testImageNonRoot    = "freshet-test/nonroot:v1"
	testImageServer     = "freshet-test/server:v1"
	testImageMultiLayer = "freshet-test/multilayer:v1"
	testImagePause      = "freshet-test/pause:v1"
)

// testImageRecipe is part of the cache key: change it whenever a recipe below changes.
const testImageRecipe = "freshet-test-images/2"

// annotationRefName names an image in an OCI layout's index.json.
const annotationRefName = "org.opencontainers.image.ref.name"

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// The unprivileged user of the test images.
const (
	testUser = "freshet"
	testUID  = 1000
)

// testImageSpec is one test image: the layers on top of the busybox base, and its config.
type testImageSpec struct {
	name   string
	extra  [][]fileEntry
	config v1.Config
}

func testImageSpecs() []testImageSpec {
	env := []string{"PATH=" + defaultPath}
	return []testImageSpec{
		{name: testImageBusybox, config: v1.Config{Env: env, Cmd: []string{"sh"}}},
		{name: testImageEcho, config: v1.Config{
			Env:        append(env, "FRESHET_TEST_IMAGE=echo"),
			Entrypoint: []string{"echo", "entrypoint:"},
			Cmd:        []string{"cmd"},
			WorkingDir: "/tmp",
		}},
		{name: testImageNonRoot, config: v1.Config{
			Env:        append(env, "HOME=/home/"+testUser),
			User:       testUser,
			WorkingDir: "/home/" + testUser,
			Cmd:        []string{"id"},
		}},
		{name: testImageServer,
			extra: [][]fileEntry{{dir("www", 0o755), file("www/index.html", 0o644, []byte("freshet test server\n"))}},
			config: v1.Config{
				Env:          env,
				Cmd:          []string{"httpd", "-f", "-v", "-p", "8080", "-h", "/www"},
				ExposedPorts: map[string]struct{}{"8080/tcp": {}},
			}},
		{name: testImageMultiLayer,
			extra: [][]fileEntry{
				{dir("opt", 0o755), file("opt/a.txt", 0o644, []byte("layer 2\n")), file("opt/b.txt", 0o644, []byte("deleted by layer 3\n"))},
				{dir("opt", 0o755), file("opt/c.txt", 0o644, []byte("layer 3\n")), whiteout("opt/b.txt")},
			},
			config: v1.Config{Env: env, Cmd: []string{"sh", "-c", "cat /opt/*.txt"}},
		},
		// The real node's sandbox ("pause") image: pid 1 sleeps until SIGTERM or SIGINT, as
		// Kubernetes' pause does (which is C, and there is no registry to pull it from here).
		{name: testImagePause, config: v1.Config{
			Env:        env,
			Entrypoint: []string{"sh", "-c", `trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done`},
		}},
	}
}

// busyboxBase is the base layer of every test image: Debian's static busybox at /bin with a
// link per applet, /tmp, and /etc/passwd with root and the unprivileged test user.
func busyboxBase(bb []byte, applets []string) []fileEntry {
	es := []fileEntry{
		dir("bin", 0o755), dir("etc", 0o755), dir("home", 0o755), dir("root", 0o700), dir("tmp", 0o1777),
		dir("usr", 0o755), dir("usr/bin", 0o755),
		{Path: "home/" + testUser, Type: tar.TypeDir, Mode: 0o755, UID: testUID, GID: testUID},
		file("bin/busybox", 0o755, bb),
		symlink("usr/bin/env", "/bin/env"),
		file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\n%s:x:%d:%d:freshet test user:/home/%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n", testUser, testUID, testUID, testUser))),
		file("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", testUser, testUID))),
	}
	for _, a := range applets {
		es = append(es, symlink("bin/"+a, "busybox"))
	}
	return es
}

// busyboxApplets lists the applets of the busybox binary at path (busybox --list).
func busyboxApplets(path string) ([]string, error) {
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	var as []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			as = append(as, a)
		}
	}
	if len(as) < 50 {
		return nil, fmt.Errorf("%s --list: only %d applets", path, len(as))
	}
	return as, nil
}

// busyboxBaseLayer builds the base layer from the installed busybox-static.
func busyboxBaseLayer() (layerSpec, v1.Platform, error) {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return layerSpec{}, v1.Platform{}, err
	}
	arch, err := elfArch(busyboxPath)
	if err != nil {
		return layerSpec{}, v1.Platform{}, err
	}
	applets, err := busyboxApplets(busyboxPath)
	if err != nil {
		return layerSpec{}, v1.Platform{}, err
	}
	l, err := newLayer(busyboxBase(bb, applets))
	if err != nil {
		return layerSpec{}, v1.Platform{}, err
	}
	return layerSpec{layer: l, createdBy: "busybox-static from Debian, an applet link each, /etc/passwd with root and " + testUser},
		v1.Platform{OS: "linux", Architecture: arch}, nil
}

// buildTestImages builds every test image.
func buildTestImages() (map[string]v1.Image, error) {
	base, platform, err := busyboxBaseLayer()
	if err != nil {
		return nil, err
	}
	imgs := map[string]v1.Image{}
	for _, s := range testImageSpecs() {
		layers := []layerSpec{base}
		for i, es := range s.extra {
			l, err := newLayer(es)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			layers = append(layers, layerSpec{layer: l, createdBy: fmt.Sprintf("%s layer %d", s.name, i+2)})
		}
		img, err := newImage(platform, layerEpoch, layers, s.config)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		imgs[s.name] = img
	}
	return imgs, nil
}

// testImagesCacheKey names the cache directory: the recipe version and the busybox binary.
func testImagesCacheKey() (string, error) {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(testImageRecipe + "\n"))
	h.Write(bb)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// cachedTestImages returns the test images from the cache (an OCI image layout per key),
// building and storing them first when the cache lacks them. built reports a build.
func cachedTestImages() (imgs map[string]v1.Image, dir string, built bool, err error) {
	root, err := cacheRoot()
	if err != nil {
		return nil, "", false, err
	}
	key, err := testImagesCacheKey()
	if err != nil {
		return nil, "", false, err
	}
	dir = filepath.Join(root, "test-images", key)
	if imgs, err := loadLayout(dir); err == nil {
		return imgs, dir, false, nil
	}
	imgs, err = buildTestImages()
	if err != nil {
		return nil, "", false, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, "", false, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), tmpPrefix+key+"-")
	if err != nil {
		return nil, "", false, err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return nil, "", false, err
	}
	for _, s := range testImageSpecs() {
		if err := p.AppendImage(imgs[s.name], layout.WithAnnotations(map[string]string{annotationRefName: s.name})); err != nil {
			return nil, "", false, err
		}
	}
	_ = os.RemoveAll(dir) // an incomplete one
	if err := os.Rename(tmp, dir); err != nil {
		// Another ctrenv stored the same key meanwhile: use that.
		if imgs, lerr := loadLayout(dir); lerr == nil {
			return imgs, dir, true, nil
		}
		return nil, "", false, err
	}
	// Read back from disk, so a push reads the stored blobs.
	imgs, err = loadLayout(dir)
	return imgs, dir, true, err
}

// loadLayout reads every test image from an OCI layout; it fails unless all are there.
func loadLayout(dir string) (map[string]v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	imgs := map[string]v1.Image{}
	for _, m := range im.Manifests {
		if n := m.Annotations[annotationRefName]; n != "" {
			img, err := idx.Image(m.Digest)
			if err != nil {
				return nil, err
			}
			imgs[n] = img
		}
	}
	for _, s := range testImageSpecs() {
		if imgs[s.name] == nil {
			return nil, fmt.Errorf("%s: %s missing", dir, s.name)
		}
	}
	return imgs, nil
}

// TestImage is one pushed test image, as `test-images --json` prints it.
type TestImage struct {
	Name   string `json:"name"`   // freshet-test/busybox:v1
	Ref    string `json:"ref"`    // 127.0.0.1:PORT/freshet-test/busybox:v1
	Digest string `json:"digest"` // of the manifest
	Layers int    `json:"layers"`
	Pushed bool   `json:"pushed"` // false: the registry had it already
}

// TestImagesResult is what `test-images --json` prints.
type TestImagesResult struct {
	Registry string      `json:"registry"`
	CacheDir string      `json:"cacheDir"`
	Built    bool        `json:"built"` // false: read from the cache
	Images   []TestImage `json:"images"`
	Seconds  float64     `json:"seconds"`
}

func cmdTestImages(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("test-images", flag.ContinueOnError)
	fs.SetOutput(stderr)
	regName := fs.String("registry", DefaultName, "the ctrenv registry instance to push to")
	asJSON := fs.Bool("json", false, "machine-readable JSON output")
	install := fs.Bool("install", true, "install busybox-static when missing (apt-get, as root)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkName(*regName); err != nil {
		return err
	}
	t0 := time.Now()
	if err := ensurePackages(ctx, imagePkgs, *install, func(f string, a ...any) { fmt.Fprintf(stderr, "ctrenv test-images: "+f+"\n", a...) }); err != nil {
		return err
	}
	r, err := openRegistry(*regName)
	if err != nil {
		return err
	}
	if _, ok := r.process(compRegistry); !ok {
		return exitError{code: exitNotRunning, err: fmt.Errorf("registry %q is not running; start it with `make registry` or `ctrenv registry up --name %s`", r.name, r.name)}
	}
	res, err := pushTestImages(ctx, r)
	if err != nil {
		return err
	}
	res.Seconds = time.Since(t0).Seconds()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	for _, im := range res.Images {
		state := "already there"
		if im.Pushed {
			state = "pushed"
		}
		fmt.Fprintf(stdout, "%s@%s\t%s\n", im.Ref, im.Digest, state)
	}
	how := "from the cache"
	if res.Built {
		how = "built"
	}
	fmt.Fprintf(stderr, "ctrenv test-images: %d images (%s, %s) in %.2fs\n", len(res.Images), how, res.CacheDir, res.Seconds)
	return nil
}

func pushTestImages(ctx context.Context, r *registry) (*TestImagesResult, error) {
	imgs, dir, built, err := cachedTestImages()
	if err != nil {
		return nil, fmt.Errorf("build test images: %w", err)
	}
	target, err := registryTarget(r)
	if err != nil {
		return nil, err
	}
	opts, err := target.options(ctx)
	if err != nil {
		return nil, err
	}
	res := &TestImagesResult{Registry: r.address(), CacheDir: dir, Built: built}
	for _, s := range testImageSpecs() {
		img := imgs[s.name]
		ref, err := name.ParseReference(r.address() + "/" + s.name)
		if err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		ls, err := img.Layers()
		if err != nil {
			return nil, err
		}
		pushed, err := pushIfChanged(ref, img, d, opts)
		if err != nil {
			return nil, err
		}
		res.Images = append(res.Images, TestImage{Name: s.name, Ref: ref.String(), Digest: d.String(), Layers: len(ls), Pushed: pushed})
	}
	if len(res.Images) == 0 {
		return nil, errors.New("no test images")
	}
	return res, nil
}
