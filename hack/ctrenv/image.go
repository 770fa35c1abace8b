package main

import (
	"archive/tar"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The freshet image: what it holds and how it runs.
const (
	imageRepository = "freshet"
	imageBinaryPath = "usr/bin/freshet"
	imageUser       = "freshet"
	imageUID        = 65532 // the "nonroot" id of distroless images; numeric, so runAsNonRoot can check it
	versionVar      = "github.com/freshet-dev/freshet/internal/version.Version"
	caBundle        = "/etc/ssl/certs/ca-certificates.crt" // Debian's ca-certificates; Go's first choice on Linux
	baseScratch     = "scratch"
	baseBusybox     = "busybox"
)

// imageOptions are the flags of `ctrenv image`.
type imageOptions struct {
	image     string
	registry  string
	ociLayout string
	push      bool
	platforms string
	base      string
	version   string
	pkg       string
	dir       string
	caFile    string
	json      bool
}

func (o *imageOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.image, "image", "", "where to push: REGISTRY/REPOSITORY[:TAG] (default: the ctrenv registry --registry, freshet:VERSION)")
	fs.StringVar(&o.registry, "registry", DefaultName, "ctrenv registry instance: the default destination, and its credentials and CA are used for pushes to its address")
	fs.StringVar(&o.ociLayout, "oci-layout", "", "also write the image as an OCI image layout tarball to this file (podman load -i FILE, skopeo copy oci-archive:FILE …)")
	fs.BoolVar(&o.push, "push", true, "push to --image (false: only --oci-layout)")
	fs.StringVar(&o.platforms, "platform", "linux/"+runtime.GOARCH, "comma-separated OS/ARCH[/VARIANT] to build for; more than one makes an image index")
	fs.StringVar(&o.base, "base", baseScratch, "base: scratch (CA certificates, /tmp, passwd; nothing else) or busybox (adds a shell and tools; the build machine's platform only)")
	fs.StringVar(&o.version, "version", "dev", "version stamped into the binary and the image's labels, and the default tag")
	fs.StringVar(&o.pkg, "package", "./cmd/freshet", "the Go main package to build (tests use a small one)")
	fs.StringVar(&o.dir, "dir", ".", "the Go module directory to build in")
	fs.StringVar(&o.caFile, "ca-file", "", "PEM CA to trust for the destination registry (besides the system's roots)")
	fs.BoolVar(&o.json, "json", false, "machine-readable JSON output")
}

func (o *imageOptions) validate() ([]v1.Platform, error) {
	if !o.push && o.ociLayout == "" {
		return nil, usageError("--push=false needs --oci-layout FILE: the image must go somewhere")
	}
	if o.base != baseScratch && o.base != baseBusybox {
		return nil, usageError("--base %q: want %s or %s", o.base, baseScratch, baseBusybox)
	}
	if !validTag(o.version) {
		return nil, usageError("--version %q: it is the default tag: want letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-'", o.version)
	}
	var ps []v1.Platform
	for _, s := range strings.Split(o.platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil || p.OS != "linux" || p.Architecture == "" {
			return nil, usageError("--platform %q: want linux/ARCH[/VARIANT], e.g. linux/amd64 or linux/arm/v7", s)
		}
		ps = append(ps, *p)
	}
	if o.base == baseBusybox && (len(ps) != 1 || ps[0].Architecture != runtime.GOARCH) {
		return nil, usageError("--base busybox builds for linux/%s only (the build machine's busybox); --platform %q", runtime.GOARCH, o.platforms)
	}
	return ps, nil
}

func validTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	return strings.IndexFunc(t, func(r rune) bool {
		return !(r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0
}

// ImageResult is what `image --json` prints.
type ImageResult struct {
	Ref       string   `json:"ref,omitempty"` // where it was pushed
	Digest    string   `json:"digest"`        // of the manifest (or of the index, for several platforms)
	Pushed    bool     `json:"pushed"`
	OCILayout string   `json:"ociLayout,omitempty"`
	Platforms []string `json:"platforms"`
	Seconds   float64  `json:"seconds"`
}

func cmdImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("image", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var o imageOptions
	o.bind(fset)
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	platforms, err := o.validate()
	if err != nil {
		return err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "ctrenv image: "+f+"\n", a...) }
	t0 := time.Now()
	res, err := buildFreshetImage(ctx, o, platforms, logf)
	if err != nil {
		return err
	}
	res.Seconds = time.Since(t0).Seconds()
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if res.Ref != "" {
		fmt.Fprintf(stdout, "IMAGE=%s@%s\n", res.Ref, res.Digest)
	}
	if res.OCILayout != "" {
		fmt.Fprintf(stdout, "OCI_LAYOUT=%s\n", res.OCILayout)
	}
	logf("%s for %s in %.1fs", res.Digest, strings.Join(res.Platforms, ", "), res.Seconds)
	return nil
}

func buildFreshetImage(ctx context.Context, o imageOptions, platforms []v1.Platform, logf func(string, ...any)) (*ImageResult, error) {
	dest, target, err := o.destination()
	if err != nil {
		return nil, err
	}
	created, revision := gitCommit(ctx, o.dir)
	tmp, err := os.MkdirTemp("", "ctrenv-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	res := &ImageResult{}
	var imgs []v1.Image
	for _, p := range platforms {
		bin := filepath.Join(tmp, "freshet-"+strings.ReplaceAll(p.String(), "/", "-"))
		if err := goBuild(ctx, o, p, bin, logf); err != nil {
			return nil, err
		}
		img, err := freshetImage(o, p, bin, created, revision)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
		res.Platforms = append(res.Platforms, p.String())
	}
	var out remote.Taggable = imgs[0]
	digest, err := imgs[0].Digest()
	if err != nil {
		return nil, err
	}
	if len(imgs) > 1 {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for i, img := range imgs {
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platforms[i]}})
		}
		if digest, err = idx.Digest(); err != nil {
			return nil, err
		}
		out = idx
	}
	res.Digest = digest.String()
	if o.ociLayout != "" {
		if err := writeOCIArchive(o.ociLayout, out, dest, tmp); err != nil {
			return nil, fmt.Errorf("--oci-layout %s: %w", o.ociLayout, err)
		}
		res.OCILayout = o.ociLayout
	}
	if o.push {
		opts, err := target.options(ctx)
		if err != nil {
			return nil, err
		}
		if res.Pushed, err = pushIfChanged(dest, out, digest, opts); err != nil {
			return nil, err
		}
		res.Ref = dest.String()
	}
	return res, nil
}

// destination is the reference to push to and how: --image, or freshet:VERSION in the
// ctrenv registry. A destination on that registry's address uses its credentials and CA.
func (o *imageOptions) destination() (name.Reference, pushTarget, error) {
	var (
		r       *registry
		regErr  error
		target  pushTarget
		refText = o.image
	)
	if checkName(o.registry) == nil {
		r, regErr = openRegistry(o.registry)
	}
	if refText == "" {
		if r == nil || r.st.Port == 0 {
			if !o.push {
				refText = imageRepository + ":" + o.version // only names the image in the layout
			} else {
				return nil, target, usageError("no --image and no ctrenv registry %q to push to (start it with `make registry`) %v", o.registry, regErr)
			}
		} else {
			refText = r.address() + "/" + imageRepository + ":" + o.version
		}
	}
	ref, err := name.ParseReference(refText)
	if err != nil {
		return nil, target, usageError("--image %q: %v", o.image, err)
	}
	if r != nil && r.st.Port != 0 && ref.Context().RegistryStr() == r.address() {
		if _, ok := r.process(compRegistry); !ok && o.push {
			return nil, target, exitError{code: exitNotRunning, err: fmt.Errorf("registry %q (%s) is not running; start it with `make registry`", r.name, r.address())}
		}
		if target, err = registryTarget(r); err != nil {
			return nil, target, err
		}
	}
	if o.caFile != "" {
		ca, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, target, usageError("--ca-file %q: %v", o.caFile, err)
		}
		target.ca = append(target.ca, ca...)
	}
	return ref, target, nil
}

// goBuild compiles the package as a static binary for p (CGO_ENABLED=0), as `make build`
// does: -trimpath, stripped, the version stamped in.
func goBuild(ctx context.Context, o imageOptions, p v1.Platform, out string, logf func(string, ...any)) error {
	goCmd := "go"
	if _, err := exec.LookPath(goCmd); err != nil {
		goCmd = "/usr/local/go/bin/go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", "-s -w -X "+versionVar+"="+o.version, "-o", out, o.pkg)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=-buildvcs=false")
	if p.Architecture == "arm" && p.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	t0 := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", o.pkg, p, err, tail(string(b), 3000))
	}
	if !isStatic(out) {
		return fmt.Errorf("go build %s for %s: the binary is not static", o.pkg, p)
	}
	logf("built %s for %s in %.1fs", o.pkg, p, time.Since(t0).Seconds())
	return nil
}

// freshetBaseEntries is the minimal filesystem the binary needs: CA certificates for TLS,
// /tmp, a home, and passwd/group naming the unprivileged user it runs as.
func freshetBaseEntries() ([]fileEntry, error) {
	ca, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w (install Debian's ca-certificates)", err)
	}
	home := "home/" + imageUser
	return []fileEntry{
		dir("etc", 0o755), dir("etc/ssl", 0o755), dir("etc/ssl/certs", 0o755), dir("home", 0o755), dir("tmp", 0o1777),
		{Path: home, Type: tar.TypeDir, Mode: 0o755, UID: imageUID, GID: imageUID},
		file("etc/ssl/certs/ca-certificates.crt", 0o644, ca),
		file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:freshet:/%s:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n", imageUser, imageUID, imageUID, home))),
		file("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", imageUser, imageUID))),
		file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
	}, nil
}

// freshetImage assembles the image of one platform around the built binary.
func freshetImage(o imageOptions, p v1.Platform, bin string, created time.Time, revision string) (v1.Image, error) {
	var layers []layerSpec
	if o.base == baseBusybox {
		bb, _, err := busyboxBaseLayer()
		if err != nil {
			return nil, err
		}
		layers = append(layers, bb)
	}
	entries, err := freshetBaseEntries()
	if err != nil {
		return nil, err
	}
	base, err := newLayer(entries)
	if err != nil {
		return nil, err
	}
	layers = append(layers, layerSpec{layer: base, createdBy: "CA certificates, /tmp, /etc/passwd with " + imageUser + " (" + strconv.Itoa(imageUID) + ")"})
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	binLayer, err := newLayer([]fileEntry{dir("usr", 0o755), dir("usr/bin", 0o755), file(imageBinaryPath, 0o755, b)})
	if err != nil {
		return nil, err
	}
	layers = append(layers, layerSpec{layer: binLayer, createdBy: "go build " + o.pkg + " (CGO_ENABLED=0, " + p.String() + ")"})
	labels := map[string]string{
		"org.opencontainers.image.title":   "freshet",
		"org.opencontainers.image.version": o.version,
		"org.opencontainers.image.created": created.UTC().Format(time.RFC3339),
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	uid := strconv.Itoa(imageUID)
	return newImage(p, created, layers, v1.Config{
		Entrypoint: []string{"/" + imageBinaryPath},
		Env:        []string{"PATH=" + defaultPath, "HOME=/home/" + imageUser},
		User:       uid + ":" + uid,
		WorkingDir: "/home/" + imageUser,
		Labels:     labels,
	})
}

// gitCommit is the time and hash of the checked-out commit, which make the image's dates
// reproducible; outside a git checkout, the Unix epoch and "".
func gitCommit(ctx context.Context, dir string) (time.Time, string) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "log", "-1", "--format=%ct %H").Output()
	if err != nil {
		return time.Unix(0, 0).UTC(), ""
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return time.Unix(0, 0).UTC(), ""
	}
	sec, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return time.Unix(0, 0).UTC(), ""
	}
	return time.Unix(sec, 0).UTC(), f[1]
}

// writeOCIArchive writes img (an image or an index) as a tar of an OCI image layout, its
// index naming it by tag (org.opencontainers.image.ref.name, which podman and skopeo read)
// and by full reference (io.containerd.image.name, which containerd and Docker read).
func writeOCIArchive(out string, img remote.Taggable, ref name.Reference, tmp string) error {
	dir := filepath.Join(tmp, "oci-layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ann := map[string]string{annotationRefName: ref.Identifier(), "io.containerd.image.name": ref.Name()}
	switch x := img.(type) {
	case v1.ImageIndex:
		err = p.AppendIndex(x, layout.WithAnnotations(ann))
	case v1.Image:
		err = p.AppendImage(x, layout.WithAnnotations(ann))
	}
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	f, err := os.CreateTemp(filepath.Dir(out), tmpPrefix+filepath.Base(out)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: layerEpoch, Mode: 0o644, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		st, err := src.Stat()
		if err != nil {
			return err
		}
		h.Size = st.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}
