package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binary names in the bin directory.
const (
	binEtcd      = "etcd"
	binAPIServer = "kube-apiserver"
	binKCM       = "kube-controller-manager"
	binScheduler = "kube-scheduler"
	binKwok      = "kwok"
	binKubelet   = "kubelet"
)

var kubeBinaries = []string{binAPIServer, binKCM, binScheduler}

// allBinaries is every binary an instance needs, in start order.
var allBinaries = []string{binEtcd, binAPIServer, binKCM, binScheduler, binKwok}

const (
	kubeModule     = "k8s.io/kubernetes"
	kwokModule     = "sigs.k8s.io/kwok"
	kwokPkg        = "sigs.k8s.io/kwok/cmd/kwok"
	wrapperModule  = "freshet.dev/devcluster-build"
	debianEtcd     = "/usr/bin/etcd"
	debianEtcdPkg  = "etcd-server"
	tmpPrefix      = ".tmp-"
	buildLockFile  = "build.lock"
	buildHintShort = "make devcluster-build (or: cd hack/devcluster && go run . build)"
)

// errNoBinaries means the cache lacks a binary; "devcluster build" fixes it.
var errNoBinaries = errors.New("devcluster binaries are not built")

func cmdBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "rebuild every binary even if a valid one is cached")
	realNode := fs.Bool("real-node", false, "also build the kubelet and install containerd, runc and the CNI plugins (Debian) for a real node")
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	if fs.NArg() > 0 {
		return exitError{code: exitUsage, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	b, err := newBuilder(stderr)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.build(ctx, *force, *realNode); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "devcluster: binaries ready in %s (%s)\n", b.bin, time.Since(t0).Round(time.Millisecond))
	fmt.Fprintln(stdout, b.bin)
	return nil
}

type builder struct {
	vdir, bin, src string
	goCmd          string
	log            io.Writer
}

func newBuilder(log io.Writer) (*builder, error) {
	vdir, err := versionDir()
	if err != nil {
		return nil, err
	}
	goCmd, err := findGo()
	if err != nil {
		return nil, err
	}
	return &builder{vdir: vdir, bin: filepath.Join(vdir, "bin"), src: filepath.Join(vdir, "src"), goCmd: goCmd, log: log}, nil
}

func findGo() (string, error) {
	if g := os.Getenv(EnvGo); g != "" {
		return g, nil
	}
	if g, err := exec.LookPath("go"); err == nil {
		return g, nil
	}
	if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		return "/usr/local/go/bin/go", nil
	}
	return "", fmt.Errorf("no go command found: put go on PATH or set %s", EnvGo)
}

func (b *builder) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "devcluster %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (b *builder) build(ctx context.Context, force, realNode bool) error {
	if err := os.MkdirAll(b.bin, 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, filepath.Join(b.vdir, buildLockFile))
	if err != nil {
		return err
	}
	defer unlock()
	// Leftovers of an interrupted build: finished binaries were never renamed into place, so
	// the temp dirs can go; the Go build cache keeps the compiled packages for the retry.
	if olds, _ := filepath.Glob(filepath.Join(b.bin, tmpPrefix+"*")); len(olds) > 0 {
		b.logf("removing %d leftover temp dir(s) of an interrupted build", len(olds))
		for _, o := range olds {
			_ = os.RemoveAll(o)
		}
	}

	if err := b.ensureEtcd(ctx); err != nil {
		return err
	}
	if realNode {
		if err := aptInstall(ctx, b.logf, realNodePackages...); err != nil {
			return err
		}
	}
	var kube []string
	wanted := kubeBinaries
	if realNode {
		wanted = append(append([]string(nil), kubeBinaries...), binKubelet)
	}
	for _, n := range wanted {
		if err := checkBinary(filepath.Join(b.bin, n), n); force || err != nil {
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				b.logf("%s: rebuilding: %v", n, err)
			}
			kube = append(kube, n)
		} else {
			b.logf("%s %s present", n, KubernetesVersion)
		}
	}
	if len(kube) > 0 {
		if err := b.buildKube(ctx, kube); err != nil {
			return err
		}
	}
	if err := checkBinary(filepath.Join(b.bin, binKwok), binKwok); force || err != nil {
		if err := b.buildKwok(ctx); err != nil {
			return err
		}
	} else {
		b.logf("kwok %s present", KwokVersion)
	}
	return nil
}

// goEnv is the environment of every go command build runs. CGO_ENABLED=0 gives static
// binaries (as upstream releases are) and stable build-cache keys.
func (b *builder) goEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
}

func (b *builder) goRun(ctx context.Context, dir string, extraEnv []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, b.goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(b.goEnv(), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(&errb, filterWriter{b.log})
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(errb.String(), 2000))
	}
	return out.Bytes(), nil
}

// filterWriter drops the noisy "go: downloading" lines of a cold module cache.
type filterWriter struct{ w io.Writer }

func (f filterWriter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "go: downloading ") || strings.HasPrefix(l, "go: upgraded ") || strings.HasPrefix(l, "go: added ") {
			continue
		}
		fmt.Fprintln(f.w, l)
	}
	return len(p), nil
}

// wrapperGoMod renders the go.mod of the wrapper module that builds the Kubernetes commands:
// it requires k8s.io/kubernetes and pins every ./staging replace of that release's go.mod to the
// published k8s.io/<name> v0.MINOR.PATCH module.
func wrapperGoMod(kubeGoMod []byte, version string) ([]byte, error) {
	stagingVersion := "v0." + strings.TrimPrefix(version, "v1.")
	stagingRe := regexp.MustCompile(`^\s*(k8s\.io/[a-z0-9-]+)\s+=>\s+\./staging/`)
	var goLines, replaces []string
	sc := bufio.NewScanner(bytes.NewReader(kubeGoMod))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "go ") || strings.HasPrefix(l, "godebug ") {
			goLines = append(goLines, l)
		}
		if m := stagingRe.FindStringSubmatch(l); m != nil {
			replaces = append(replaces, fmt.Sprintf("\t%s => %s %s", m[1], m[1], stagingVersion))
		}
	}
	if len(replaces) == 0 {
		return nil, fmt.Errorf("no ./staging replaces found in k8s.io/kubernetes %s go.mod", version)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// Generated by hack/devcluster: builds Kubernetes %s commands from the module proxy.\n", version)
	fmt.Fprintf(&buf, "module %s\n\n%s\n\nrequire %s %s\n\nreplace (\n%s\n)\n",
		wrapperModule, strings.Join(goLines, "\n"), kubeModule, version, strings.Join(replaces, "\n"))
	return buf.Bytes(), nil
}

// kubeLDFlags sets the version variables, or the server reports v0.0.0-master and clients
// (kubectl, client-go discovery) fail to parse it.
func kubeLDFlags(version string) string {
	minor := strings.Split(strings.TrimPrefix(version, "v"), ".")[1]
	parts := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		parts = append(parts,
			"-X", p+".gitVersion="+version,
			"-X", p+".gitMajor=1",
			"-X", p+".gitMinor="+minor,
			"-X", p+".gitTreeState=clean",
			"-X", p+".buildDate=1970-01-01T00:00:00Z")
	}
	return strings.Join(parts, " ")
}

func (b *builder) buildKube(ctx context.Context, names []string) error {
	if err := os.MkdirAll(b.src, 0o755); err != nil {
		return err
	}
	b.logf("resolving %s %s", kubeModule, KubernetesVersion)
	out, err := b.goRun(ctx, b.vdir, nil, "mod", "download", "-json", kubeModule+"@"+KubernetesVersion)
	if err != nil {
		return err
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil || info.GoMod == "" {
		return fmt.Errorf("go mod download %s: no go.mod path in %q", kubeModule, tail(string(out), 300))
	}
	kgm, err := os.ReadFile(info.GoMod)
	if err != nil {
		return err
	}
	gm, err := wrapperGoMod(kgm, KubernetesVersion)
	if err != nil {
		return err
	}
	if old, _ := os.ReadFile(filepath.Join(b.src, "go.mod")); !bytes.Equal(old, gm) {
		// A changed template invalidates go.sum's requirement set; go get rebuilds both.
		_ = os.Remove(filepath.Join(b.src, "go.sum"))
		if err := writeFileAtomic(filepath.Join(b.src, "go.mod"), gm, 0o644); err != nil {
			return err
		}
	}
	var pkgs, getArgs []string
	for _, n := range names {
		pkgs = append(pkgs, kubeModule+"/cmd/"+n)
		getArgs = append(getArgs, kubeModule+"/cmd/"+n+"@"+KubernetesVersion)
	}
	if _, err := b.goRun(ctx, b.src, nil, append([]string{"get"}, getArgs...)...); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(b.bin, tmpPrefix+"kube-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.logf("building %s %s (cold Go build cache: 6-25 min on 2 cores, depending on load; warm: seconds)", strings.Join(names, ", "), KubernetesVersion)
	t0 := time.Now()
	args := append([]string{"build", "-mod=mod", "-trimpath", "-ldflags=" + kubeLDFlags(KubernetesVersion), "-o", tmp + "/"}, pkgs...)
	if _, err := b.goRun(ctx, b.src, nil, args...); err != nil {
		return err
	}
	b.logf("built %s in %s", strings.Join(names, ", "), time.Since(t0).Round(time.Second))
	return b.install(tmp, names)
}

func (b *builder) buildKwok(ctx context.Context) error {
	tmp, err := os.MkdirTemp(b.bin, tmpPrefix+"kwok-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.logf("building kwok %s", KwokVersion)
	t0 := time.Now()
	if _, err := b.goRun(ctx, b.vdir, []string{"GOBIN=" + tmp}, "install", "-trimpath", "-ldflags=-s -w", kwokPkg+"@"+KwokVersion); err != nil {
		return err
	}
	b.logf("built kwok in %s", time.Since(t0).Round(time.Second))
	return b.install(tmp, []string{binKwok})
}

// install checks each freshly built binary, then renames it into the bin directory: a binary
// at its final path is always complete, so an interrupted build never leaves a broken one.
func (b *builder) install(tmp string, names []string) error {
	for _, n := range names {
		p := filepath.Join(tmp, n)
		if err := checkBinary(p, n); err != nil {
			return fmt.Errorf("freshly built %s is not valid: %w", n, err)
		}
		if err := os.Rename(p, filepath.Join(b.bin, n)); err != nil {
			return err
		}
	}
	return nil
}

// ensureEtcd links bin/etcd to an etcd binary: $FRESHET_DEVCLUSTER_ETCD, or Debian's
// etcd-server (installed with apt-get when missing and running as root).
func (b *builder) ensureEtcd(ctx context.Context) error {
	src := os.Getenv(EnvEtcd)
	if src == "" {
		src = debianEtcd
		if _, err := os.Stat(src); err != nil {
			if err := b.aptInstallEtcd(ctx); err != nil {
				return err
			}
		}
	}
	out, err := exec.CommandContext(ctx, src, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("etcd %s --version: %w: %s", src, err, tail(string(out), 300))
	}
	dst := filepath.Join(b.bin, binEtcd)
	if cur, err := os.Readlink(dst); err == nil && cur == src {
		b.logf("etcd present (%s)", firstLine(string(out)))
		return nil
	}
	tmp := filepath.Join(b.bin, tmpPrefix+"etcd-link")
	_ = os.Remove(tmp)
	if err := os.Symlink(src, tmp); err != nil {
		return err
	}
	b.logf("etcd linked to %s (%s)", src, firstLine(string(out)))
	return os.Rename(tmp, dst)
}

func (b *builder) aptInstallEtcd(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is missing: run `sudo apt-get install %s` or set %s to an etcd binary", debianEtcd, debianEtcdPkg, EnvEtcd)
	}
	return aptInstall(ctx, b.logf, debianEtcdPkg)
}

// realNodePackages are the Debian packages a real node needs besides the kubelet: the
// container runtime (containerd and runc) and the CNI plugins (bridge, host-local, loopback).
var realNodePackages = []string{"containerd", "runc", "containernetworking-plugins", "iptables", "conntrack"}

// missingPackages lists the packages of pkgs that dpkg does not report installed.
func missingPackages(pkgs ...string) []string {
	var missing []string
	for _, p := range pkgs {
		out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Status}", p).Output()
		if err != nil || strings.TrimSpace(string(out)) != "installed" {
			missing = append(missing, p)
		}
	}
	return missing
}

// aptInstall installs whichever of pkgs is missing with a non-interactive apt-get (as root).
func aptInstall(ctx context.Context, logf func(string, ...any), pkgs ...string) error {
	missing := missingPackages(pkgs...)
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("the Debian packages %s are missing: run `sudo apt-get install %s`", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 1000))
		}
		return nil
	}
	install := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	logf("installing Debian %s with apt-get", strings.Join(missing, ", "))
	if err := apt(install...); err != nil {
		// Package lists may be missing or old: refresh once and retry.
		if err := apt("update", "-q"); err != nil {
			return err
		}
		return apt(install...)
	}
	return nil
}

// checkBinary tells whether path is a complete binary of the wanted name and version, using
// the build info the Go linker embeds (a truncated or foreign file has none).
func checkBinary(path, name string) error {
	if name == binEtcd {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", path)
		}
		return nil
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return err
		}
		return fmt.Errorf("%s: no Go build info (incomplete or foreign file): %w", path, err)
	}
	switch name {
	case binKwok:
		if bi.Path != kwokPkg || bi.Main.Path != kwokModule || bi.Main.Version != KwokVersion {
			return fmt.Errorf("%s is %s %s, want %s %s", path, bi.Path, bi.Main.Version, kwokPkg, KwokVersion)
		}
	default:
		if bi.Path != kubeModule+"/cmd/"+name {
			return fmt.Errorf("%s is %s, want %s/cmd/%s", path, bi.Path, kubeModule, name)
		}
		if bi.Main.Path != kubeModule || bi.Main.Version != KubernetesVersion {
			return fmt.Errorf("%s is built from %s %s, want %s %s", path, bi.Main.Path, bi.Main.Version, kubeModule, KubernetesVersion)
		}
		// -trimpath keeps -ldflags out of the build info: ask the binary. Without the version
		// ldflags it would say v0.0.0-master+$Format:%H$.
		out, err := exec.Command(path, "--version").Output()
		if want := "Kubernetes " + KubernetesVersion; err != nil || strings.TrimSpace(string(out)) != want {
			return fmt.Errorf("%s --version = %q (err %v), want %q", path, strings.TrimSpace(string(out)), err, want)
		}
	}
	return nil
}

// missingBinaries lists the binaries an instance needs that are absent or invalid.
func missingBinaries(bin string) []string {
	var missing []string
	for _, n := range allBinaries {
		if err := checkBinary(filepath.Join(bin, n), n); err != nil {
			missing = append(missing, n)
		}
	}
	return missing
}

// lockFile takes an exclusive flock on path, waiting until ctx is done.
func lockFile(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			var once sync.Once
			return func() { once.Do(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }) }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeFileAtomic writes data to a temp file beside path and renames it into place.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
