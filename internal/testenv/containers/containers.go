// Package containers gives Go tests a real container environment on loopback: a CNCF
// distribution registry (htpasswd auth, TLS from its own CA) holding small busybox-based test
// images, and a Podman engine serving the Docker Engine API on a unix socket that trusts that
// registry. Both are started by the project's ctrenv tool (hack/ctrenv); nothing needs
// Docker, Docker Hub or the internet.
//
// One registry and one engine are shared by every test of a test binary and started on
// first use (≈ 1 s each on a warm machine). Use Main in TestMain so that they stop when the
// test binary exits:
//
//	func TestMain(m *testing.M) { containers.Main(m) }
//
//	func TestStep(t *testing.T) {
//		reg := containers.Registry(t)     // address, credentials, CA, the test images
//		eng := containers.Engine(t)       // DOCKER_HOST of a Podman service trusting reg
//		cli := eng.Client(t)              // a github.com/moby/moby/client for eng
//		pull, err := cli.ImagePull(ctx, reg.Ref(containers.ImageEcho),
//			client.ImagePullOptions{RegistryAuth: reg.RegistryAuth()})
//		…
//	}
//
// The engine's Podman-specific settings (runc, cgroupfs, default ulimits, netavark, file
// locks, trust of the registry's CA) are in its own configuration files, so code under test
// speaks the plain Docker Engine API to Engine().Host. The engine has no credentials of its
// own: a pull from the registry needs RegistryAuth, as with any private registry.
//
// Environment:
//
//   - FRESHET_TEST_CONTAINERS=1: missing Debian packages, or not running as root, fail the
//     test instead of skipping it (CI sets it, so CI never silently skips).
//   - FRESHET_CTRENV_TOOL: a prebuilt ctrenv binary; otherwise it is built from hack/ctrenv
//     with the go command (a few seconds, then cached by Go).
//   - FRESHET_CONTAINERS_CACHE: where ctrenv caches the built test images (default
//     ~/.cache/freshet/containers).
//
// Without the packages (podman, runc, docker-registry, busybox-static…) the tests skip with
// a message saying how to install them: `make containers-deps`. Should the test binary die
// without running Main's teardown, watchdog processes started by ctrenv stop the registry and
// the engine (and remove every container) within a second.
package containers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// The test images in Registry().Images, by name (a repository and tag under the registry's
// address; Registry().Ref makes the full reference). Each is busybox-based and small.
const (
	// ImageBusybox: Debian's static busybox at /bin with a link per applet (so /bin/sh), /tmp,
	// /etc/passwd with root and NonRootUser; CMD ["sh"].
	ImageBusybox = "freshet-test/busybox:v1"
	// ImageEcho: ENTRYPOINT ["echo", "entrypoint:"], CMD ["cmd"] — run as is it prints
	// EchoOutput; WORKDIR /tmp; ENV FRESHET_TEST_IMAGE=echo.
	ImageEcho = "freshet-test/echo:v1"
	// ImageNonRoot: USER NonRootUser (NonRootUID:NonRootUID), WORKDIR /home/freshet,
	// CMD ["id"].
	ImageNonRoot = "freshet-test/nonroot:v1"
	// ImageServer: busybox httpd in the foreground on ServerPort (EXPOSE 8080/tcp), serving
	// ServerBody at "/": a service container for readiness tests.
	ImageServer = "freshet-test/server:v1"
	// ImageMultiLayer: MultiLayerLayers layers; layer 3 deletes a file of layer 2 (a
	// whiteout); CMD cat /opt/*.txt prints MultiLayerOutput.
	ImageMultiLayer = "freshet-test/multilayer:v1"
	// ImagePause: pid 1 sleeps until SIGTERM or SIGINT; the real node's sandbox image.
	ImagePause = "freshet-test/pause:v1"
)

// What the test images do.
const (
	EchoOutput       = "entrypoint: cmd\n"
	NonRootUser      = "freshet"
	NonRootUID       = 1000
	ServerPort       = 8080
	ServerBody       = "freshet test server\n"
	MultiLayerOutput = "layer 2\nlayer 3\n"
	MultiLayerLayers = 3
)

// TestImages lists every test image name.
var TestImages = []string{ImageBusybox, ImageEcho, ImageNonRoot, ImageServer, ImageMultiLayer, ImagePause}

// Environment variables the helper reads.
const (
	EnvRequire = "FRESHET_TEST_CONTAINERS"
	EnvTool    = "FRESHET_CTRENV_TOOL"
	envState   = "FRESHET_CONTAINERS_STATE"
)

// InstallHint says how to get what the tests need; every skip message says it.
const InstallHint = "install the Debian packages with `make containers-deps` (apt-get as root: podman runc conmon netavark aardvark-dns iptables catatonit docker-registry busybox-static buildah)"

// ErrUnavailable means this machine cannot run the container environment: packages are
// missing, or the engine would need root.
var ErrUnavailable = errors.New("the container test environment is unavailable here")

// Bounds.
const (
	upTimeout   = 3 * time.Minute
	downTimeout = 2 * time.Minute
)

// Image is a test image in the registry.
type Image struct {
	Name   string // e.g. ImageEcho
	Ref    string // 127.0.0.1:PORT/freshet-test/echo:v1
	Digest string // sha256:… of its manifest
	Layers int
}

// RegistryInstance is a running loopback registry: HTTPS with a certificate from its own
// CA, Basic auth for one user.
type RegistryInstance struct {
	Addr     string // 127.0.0.1:PORT
	Username string
	Password string
	CAFile   string // PEM of the CA that signed the registry's certificate
	CACert   []byte // the same PEM
	// CertDir is a containers-certs.d(5) directory for Addr (podman login --cert-dir).
	CertDir  string
	StateDir string
	Images   map[string]Image // every TestImages name
}

// Ref is the full reference of repository[:tag] name in this registry, e.g.
// Ref(ImageEcho) or Ref("my/pushed-image:tag").
func (r *RegistryInstance) Ref(name string) string { return r.Addr + "/" + name }

// Pinned is the test image's reference by digest (…@sha256:…).
func (r *RegistryInstance) Pinned(name string) string {
	im, ok := r.Images[name]
	if !ok {
		panic(fmt.Sprintf("containers: %q is not a test image (want one of %v)", name, TestImages))
	}
	return r.Addr + "/" + strings.SplitN(name, ":", 2)[0] + "@" + im.Digest
}

// TLSConfig trusts the registry's CA (and nothing else).
func (r *RegistryInstance) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(r.CACert)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// HTTPClient talks to the registry (its CA trusted); it sends no credentials by itself.
func (r *RegistryInstance) HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = r.TLSConfig()
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// RegistryAuth is the X-Registry-Auth value for the Docker Engine API carrying this
// registry's credentials (ImagePullOptions.RegistryAuth, ImagePushOptions.RegistryAuth).
func (r *RegistryInstance) RegistryAuth() string {
	s, err := authconfig.Encode(registry.AuthConfig{Username: r.Username, Password: r.Password, ServerAddress: r.Addr})
	if err != nil {
		panic(err) // encoding a struct of strings does not fail
	}
	return s
}

// EngineInstance is a running Podman service with the Docker Engine API on a unix socket.
type EngineInstance struct {
	Host       string // the DOCKER_HOST value: unix:///…/podman.sock
	Socket     string
	APIVersion string // what the engine announces (Podman 4.3: 1.41)
	StateDir   string // its configuration (conf/), storage, logs
	SubnetPool string // networks it creates take /24s from this /16
	// PodmanEnv is the service's environment (its configuration files, HOME, …): run the
	// podman command with it to work on the engine's storage directly, without the API —
	// e.g. to compare with plain `podman run` in a benchmark.
	PodmanEnv []string
	name      string
	e         *env
}

// Client returns a Docker Engine API client for the engine, closed when the test ends.
func (e *EngineInstance) Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.WithHost(e.Host))
	if err != nil {
		t.Fatalf("docker client for %s: %v", e.Host, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Trust makes the engine trust caPEM for the registry at addr (host:port), e.g. for a
// second registry a test starts itself. It takes effect for the next pull or push.
func (e *EngineInstance) Trust(t testing.TB, addr string, caPEM []byte) {
	t.Helper()
	f := filepath.Join(e.e.tmp, "trust-"+strings.ReplaceAll(addr, ":", "_")+".pem")
	if err := os.WriteFile(f, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.e.run(ctx, "engine", "trust", "--name", e.name, "--address", addr, "--ca-file", f); err != nil {
		t.Fatalf("engine trust %s: %v", addr, err)
	}
}

var shared struct {
	regOnce sync.Once
	reg     *RegistryInstance
	regErr  error
	engOnce sync.Once
	eng     *EngineInstance
	engErr  error

	builderOnce sync.Once
	builder     string
	builderErr  error

	freshet, emissary built
}

const sharedName = "shared"

// Registry returns the registry shared by every test of this test binary, with the test
// images pushed, starting it on first use. It skips the test when this machine lacks the
// packages (fails if FRESHET_TEST_CONTAINERS=1).
func Registry(t testing.TB) *RegistryInstance {
	t.Helper()
	shared.regOnce.Do(func() { shared.reg, shared.regErr = startRegistry() })
	if shared.regErr != nil {
		unavailable(t, shared.regErr)
	}
	return shared.reg
}

// BuilderImage returns the reference of the builder image (`ctrenv builder-image`: Debian's
// buildah on the busybox test base) in the shared registry, making and pushing it on first use.
// Builder pods run it: `build` steps on Kubernetes.
func (r *RegistryInstance) BuilderImage(t testing.TB) string {
	t.Helper()
	shared.builderOnce.Do(func() {
		e, err := getEnv()
		if err != nil {
			shared.builderErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
		defer cancel()
		out, err := e.run(ctx, "builder-image", "--registry", sharedName, "--install=false")
		if err != nil {
			shared.builderErr = err
			return
		}
		shared.builder, _, _ = strings.Cut(strings.TrimSpace(string(out)), "@")
	})
	if shared.builderErr != nil {
		unavailable(t, shared.builderErr)
	}
	return shared.builder
}

// FreshetImageVersion is the version FreshetImage stamps into the binary and tags the image with.
const FreshetImageVersion = "v0.0.0-realnode"

// built is an image `ctrenv image` built and pushed to the shared registry once per test binary.
type built struct {
	once sync.Once
	ref  string
	err  error
}

// FreshetImage returns the reference of the project's own image (`ctrenv image`, as `make image`
// builds it: ./cmd/freshet on scratch, version FreshetImageVersion) in the shared registry,
// building and pushing it on first use. A cold Go build cache makes that take minutes (the whole
// module, CGO_ENABLED=0).
func (r *RegistryInstance) FreshetImage(t testing.TB) string {
	t.Helper()
	return r.image(t, &shared.freshet, 30*time.Minute, "--version", FreshetImageVersion)
}

// EmissaryImageVersion tags the image EmissaryImage builds.
const EmissaryImageVersion = "v0.0.0-emissary"

// EmissaryImage returns the reference of a small image whose /usr/bin/freshet runs only the
// workflow emissary (./internal/gitops/workflows/testdata/emissary, on busybox) — the executor
// image of workflow tests on the real node — building and pushing it on first use.
func (r *RegistryInstance) EmissaryImage(t testing.TB) string {
	t.Helper()
	return r.image(t, &shared.emissary, 10*time.Minute, "--version", EmissaryImageVersion,
		"--package", "./internal/gitops/workflows/testdata/emissary", "--base", "busybox")
}

// image runs `ctrenv image` with args once per test binary, into the shared registry, and
// returns the reference it printed (IMAGE=REF@DIGEST).
func (r *RegistryInstance) image(t testing.TB, b *built, timeout time.Duration, args ...string) string {
	t.Helper()
	b.once.Do(func() {
		e, err := getEnv()
		if err != nil {
			b.err = err
			return
		}
		root, err := repoRoot()
		if err != nil {
			b.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := e.run(ctx, append([]string{"image", "--registry", sharedName, "--dir", root}, args...)...)
		if err != nil {
			b.err = err
			return
		}
		_, after, ok := strings.Cut(string(out), "IMAGE=")
		ref, _, _ := strings.Cut(strings.TrimSpace(after), "@")
		if !ok || !strings.HasPrefix(ref, r.Addr+"/") {
			b.err = fmt.Errorf("ctrenv image printed %q, not IMAGE=%s/…", out, r.Addr)
			return
		}
		b.ref = ref
	})
	if b.err != nil {
		unavailable(t, b.err)
	}
	return b.ref
}

// RealNode returns this test binary's loopback cluster with a real node pulling from the
// shared Registry (kube.RealNode), and that registry, starting both on first use. It skips the
// test, saying why, unless kube.EnvRealNode is 1 — before starting anything.
func RealNode(t testing.TB) (*kube.Cluster, *RegistryInstance) {
	t.Helper()
	if os.Getenv(kube.EnvRealNode) != "1" {
		kube.RealNode(t, kube.NodeRegistry{}) // skips, saying why
	}
	reg := Registry(t)
	c := kube.RealNode(t, kube.NodeRegistry{Addr: reg.Addr, Username: reg.Username, Password: reg.Password,
		CAFile: reg.CAFile, PauseImage: reg.Ref(ImagePause)})
	return c, reg
}

// Engine returns the engine shared by every test of this test binary, starting it (and the
// shared Registry, whose CA it trusts) on first use. It skips the test when this machine
// lacks the packages or the test does not run as root (fails if FRESHET_TEST_CONTAINERS=1).
func Engine(t testing.TB) *EngineInstance {
	t.Helper()
	Registry(t)
	shared.engOnce.Do(func() { shared.eng, shared.engErr = startEngine() })
	if shared.engErr != nil {
		unavailable(t, shared.engErr)
	}
	return shared.eng
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	msg := err.Error()
	if !strings.Contains(msg, "make containers-deps") {
		msg += "; " + InstallHint
	}
	switch {
	case errors.Is(err, ErrUnavailable) && os.Getenv(EnvRequire) == "1":
		t.Fatalf("%s (%s=1 forbids skipping)", msg, EnvRequire)
	case errors.Is(err, ErrUnavailable):
		t.Skipf("skipping real container tests: %s", msg)
	default:
		t.Fatalf("container test environment: %v", err)
	}
}

func startRegistry() (*RegistryInstance, error) {
	e, err := getEnv()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	e.track("registry", sharedName)
	out, err := e.run(ctx, "registry", "up", "--name", sharedName, "--json", "--install=false",
		"--down-when-exits", strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, err
	}
	var ri struct {
		Address, Username, Password, CAFile, CertDir, StateDir string
		TLS                                                    bool
	}
	if err := json.Unmarshal(out, &ri); err != nil {
		return nil, fmt.Errorf("ctrenv registry up --json: %w: %q", err, out)
	}
	if !ri.TLS {
		return nil, fmt.Errorf("ctrenv registry up: the registry serves plain HTTP; the helper expects TLS")
	}
	ca, err := os.ReadFile(ri.CAFile)
	if err != nil {
		return nil, err
	}
	out, err = e.run(ctx, "test-images", "--registry", sharedName, "--json", "--install=false")
	if err != nil {
		return nil, err
	}
	var ti struct {
		Images []struct {
			Name, Ref, Digest string
			Layers            int
		}
	}
	if err := json.Unmarshal(out, &ti); err != nil {
		return nil, fmt.Errorf("ctrenv test-images --json: %w: %q", err, out)
	}
	r := &RegistryInstance{Addr: ri.Address, Username: ri.Username, Password: ri.Password, CAFile: ri.CAFile, CACert: ca,
		CertDir: ri.CertDir, StateDir: ri.StateDir, Images: map[string]Image{}}
	for _, im := range ti.Images {
		r.Images[im.Name] = Image(im)
	}
	for _, n := range TestImages {
		if _, ok := r.Images[n]; !ok {
			return nil, fmt.Errorf("ctrenv test-images did not push %s (it pushed %v)", n, ti.Images)
		}
	}
	return r, nil
}

func startEngine() (*EngineInstance, error) {
	e, err := getEnv()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	e.track("engine", sharedName)
	out, err := e.run(ctx, "engine", "up", "--name", sharedName, "--registry", sharedName, "--json", "--install=false",
		"--down-when-exits", strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, err
	}
	var ei struct {
		DockerHost, Socket, APIVersion, StateDir, SubnetPool string
		PodmanEnv                                            []string
	}
	if err := json.Unmarshal(out, &ei); err != nil {
		return nil, fmt.Errorf("ctrenv engine up --json: %w: %q", err, out)
	}
	return &EngineInstance{Host: ei.DockerHost, Socket: ei.Socket, APIVersion: ei.APIVersion, StateDir: ei.StateDir,
		SubnetPool: ei.SubnetPool, PodmanEnv: ei.PodmanEnv, name: sharedName, e: e}, nil
}

// env is the ctrenv tool and the state root of this test binary's instances.
type env struct {
	tool      string
	tmp       string // holds the tool binary and the state root
	stateRoot string
	mu        sync.Mutex
	started   [][2]string // kind, name: started and not yet stopped
}

var current struct {
	sync.Mutex
	e *env
}

func (e *env) track(kind, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.started = append(e.started, [2]string{kind, name})
}

// Main runs the tests, then stops the registry and engine this test binary started and
// checks that none of their processes is left. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that has more to do after the tests (another helper's teardown):
// it returns the exit code instead of exiting.
func Run(m *testing.M) int {
	code := m.Run()
	if err := Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers.Main: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Teardown stops the engine (removing its containers) and the registry, and removes their
// state. Main calls it; call it yourself only from a TestMain that cannot use Main or Run.
func Teardown() error {
	current.Lock()
	e := current.e
	current.e = nil
	current.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	started := e.started
	e.started = nil
	e.mu.Unlock()
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
	defer cancel()
	for i := len(started) - 1; i >= 0; i-- { // the engine before the registry it pulls from
		// ErrUnavailable: this machine could not start it in the first place.
		if _, err := e.run(ctx, started[i][0], "down", "--name", started[i][1], "--purge"); err != nil && !errors.Is(err, ErrUnavailable) {
			errs = append(errs, err)
		}
	}
	if left := processesUnder(e.tmp); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes left behind after down: %v", left))
	}
	errs = append(errs, os.RemoveAll(e.tmp))
	return errors.Join(errs...)
}

const tmpDirPrefix = "freshet-ctr-test-"

func getEnv() (*env, error) {
	current.Lock()
	defer current.Unlock()
	if current.e != nil {
		return current.e, nil
	}
	removeAbandonedTempDirs()
	tmp, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", tmpDirPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	e := &env{tmp: tmp, stateRoot: filepath.Join(tmp, "state")}
	if e.tool = os.Getenv(EnvTool); e.tool == "" {
		e.tool = filepath.Join(tmp, "ctrenv")
		if err := buildTool(e.tool); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	current.e = e
	return e, nil
}

// removeAbandonedTempDirs removes the temp dirs of test binaries that died without teardown
// (their watchdogs already stopped everything): the dir names the owner's pid.
func removeAbandonedTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpDirPrefix+"*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), tmpDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", pidStr)); err == nil {
			continue // owner alive (or pid reused: leave it)
		}
		if len(processesUnder(d)) == 0 && !hasMounts(d) {
			_ = os.RemoveAll(d)
		}
	}
}

// buildTool compiles hack/ctrenv.
func buildTool(out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./hack/ctrenv")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build ctrenv in %s: %w\n%s", root, err, b)
	}
	return nil
}

// repoRoot finds the freshet module root above the working directory (go test runs in the
// package directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/freshet-dev/freshet\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no github.com/freshet-dev/freshet go.mod above the working directory; set %s", EnvTool)
		}
		dir = parent
	}
}

// Exit codes of ctrenv that mean "cannot run here".
const (
	toolExitMissingTools = 3
	toolExitNotPermitted = 5
)

func (e *env) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.tool, args...)
	cmd.Env = append(os.Environ(), envState+"="+e.stateRoot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && (ee.ExitCode() == toolExitMissingTools || ee.ExitCode() == toolExitNotPermitted) {
		detail := strings.TrimSpace(stderr.String())
		if _, after, ok := strings.Cut(detail, ": "); ok {
			detail = after
		}
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, detail)
	}
	if err != nil {
		return nil, fmt.Errorf("ctrenv %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// processesUnder lists live processes whose command line mentions dir.
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // a zombie holds no resources
			}
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// hasMounts tells whether anything is mounted at or below dir.
func hasMounts(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	return err == nil && bytes.Contains(b, []byte(" "+dir))
}
