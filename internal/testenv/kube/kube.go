// Package kube gives Go tests a real Kubernetes control plane on loopback: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok (a fake node, so Pods
// become Running and Job pods complete), started by the project's devcluster tool
// (hack/devcluster).
//
// One cluster is shared by every test of a test binary and started on first use; each test
// gets a fresh namespace. New starts a dedicated second cluster for two-cluster tests. Use Main
// in TestMain so the shared cluster stops when the test binary exits:
//
//	func TestMain(m *testing.M) { kube.Main(m) }
//
//	func TestSync(t *testing.T) {
//		c := kube.Shared(t)
//		ns := c.Namespace(t)
//		_, err := c.Client.CoreV1().ConfigMaps(ns).Create(...)
//	}
//
// Environment:
//
//   - FRESHET_TEST_KUBECONFIG: use the cluster of this kubeconfig as the shared cluster
//     instead of starting one (it is never stopped).
//   - FRESHET_TEST_KUBE=1: a missing devcluster build fails the test instead of skipping it
//     (CI sets it, so CI never silently skips).
//   - FRESHET_DEVCLUSTER_TOOL: a prebuilt devcluster binary; otherwise it is built from
//     hack/devcluster with the go command.
//   - FRESHET_DEVCLUSTER_CACHE: where the devcluster binaries are cached (see docs/testing.md).
//   - FRESHET_TEST_REAL_NODE=1: RealNode starts a cluster with a real node (kubelet,
//     containerd, runc); without it, tests that need one skip.
//
// Without built binaries the tests skip with a message saying how to build them:
// `make devcluster-build`. Should the test binary die without running Main's teardown, a
// watchdog process started by devcluster stops its clusters within a second.
package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment variables the helper reads.
const (
	EnvKubeconfig = "FRESHET_TEST_KUBECONFIG"
	EnvRequire    = "FRESHET_TEST_KUBE"
	EnvTool       = "FRESHET_DEVCLUSTER_TOOL"
	envState      = "FRESHET_DEVCLUSTER_STATE"
	EnvRealNode   = "FRESHET_TEST_REAL_NODE"
)

// The real node (RealNode): its name, and the label and taint that keep ordinary pods off it.
// A pod runs there when it selects RealNodeLabel=true and tolerates RealNodeTaint.
const (
	RealNodeName  = "real-node-0"
	RealNodeLabel = "freshet.dev/real-node"
	RealNodeTaint = "freshet.dev/real-node"
)

// RealNodePlacement returns the node selector and toleration that put a pod on the real node.
func RealNodePlacement() (map[string]string, []corev1.Toleration) {
	return map[string]string{RealNodeLabel: "true"},
		[]corev1.Toleration{{Key: RealNodeTaint, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
}

// NodeRegistry is the registry a real node pulls from: its address (HOST:PORT), the
// credentials the node uses, the CA certificate file it trusts, and the pause image.
type NodeRegistry struct {
	Addr, Username, Password, CAFile string
	PauseImage                       string // a reference the node can pull
}

// BuildHint says how to get the binaries; it is part of every skip message.
const BuildHint = "build them with `make devcluster-build` (once per machine; several minutes cold, then cached), or point " + EnvKubeconfig + " at a cluster"

// Bounds.
const (
	upTimeout   = 4 * time.Minute
	downTimeout = 1 * time.Minute
)

// Annotations understood by devcluster's kwok stages (hack/devcluster/kwok-stages.yaml).
const (
	// AnnotationExitCode on a Pod (or a Job's pod template) makes the Pod terminate with
	// that exit code: "0" succeeds, anything else fails.
	AnnotationExitCode = "devcluster.freshet.dev/exit-code"
	// AnnotationRunDuration (a Go duration, e.g. "5s") keeps a terminating Pod Running that
	// long first.
	AnnotationRunDuration = "devcluster.freshet.dev/run-duration"
)

// ErrNoBinaries means the devcluster binaries are not built on this machine.
var ErrNoBinaries = errors.New("devcluster binaries are not built")

// Cluster is a running control plane and clients for it, authenticated as a cluster admin.
type Cluster struct {
	Name       string // devcluster instance name ("" for an external FRESHET_TEST_KUBECONFIG cluster)
	Kubeconfig string // admin kubeconfig path
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	config     *rest.Config
}

// RESTConfig returns a copy of the admin REST config, to change freely (impersonation,
// timeouts, a bearer token).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// Host is the apiserver URL.
func (c *Cluster) Host() string { return c.config.Host }

var shared, realNode struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// RealNode returns this test binary's cluster with a real node (RealNodeName: a kubelet on
// containerd and runc, pulling from reg) beside the kwok node, starting it on first use (the
// first call's reg is used). It skips the test unless FRESHET_TEST_REAL_NODE=1, and fails it
// when the cluster does not start.
func RealNode(t testing.TB, reg NodeRegistry) *Cluster {
	t.Helper()
	if os.Getenv(EnvRealNode) != "1" {
		t.Skipf("skipping: needs a real Kubernetes node; set %s=1 (root; `make devcluster-build REAL_NODE=1` builds the kubelet, see docs/testing.md)", EnvRealNode)
	}
	realNode.once.Do(func() {
		e, err := getEnv()
		if err != nil {
			realNode.err = err
			return
		}
		realNode.cluster, realNode.err = e.up("real", []string{envRegistryPassword + "=" + reg.Password}, "--real-node", "--timeout", "5m",
			"--registry", reg.Addr, "--registry-user", reg.Username, "--registry-password-env", envRegistryPassword,
			"--registry-ca", reg.CAFile, "--pause-image", reg.PauseImage)
	})
	if realNode.err != nil {
		t.Fatalf("kubernetes test cluster with a real node: %v", realNode.err)
	}
	return realNode.cluster
}

// envRegistryPassword hands the registry password to devcluster (not on its command line).
const envRegistryPassword = "FRESHET_DEVCLUSTER_REGISTRY_PASSWORD"

// env is the devcluster tool and state root of this test binary's instances.
type env struct {
	mu        sync.Mutex
	tool      string
	tmp       string // holds the tool binary and the state root
	stateRoot string
	instances []string // started and not yet stopped
	n         int
}

var current struct {
	sync.Mutex
	e *env
}

// Main runs the tests, then stops every cluster this test binary started and checks that
// none of their processes is left. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that has more to do after the tests: it returns the exit code
// instead of exiting.
func Run(m *testing.M) int {
	code := m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "kube.Main: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func teardown() error {
	current.Lock()
	e := current.e
	current.e = nil
	current.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	names := append([]string(nil), e.instances...)
	e.instances = nil
	e.mu.Unlock()
	var errs []error
	for _, n := range names {
		if err := e.down(n); err != nil {
			errs = append(errs, err)
		}
	}
	if left := processesUnder(e.stateRoot); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes left behind after down: %v", left))
	}
	errs = append(errs, os.RemoveAll(e.tmp))
	return errors.Join(errs...)
}

// Shared returns the cluster shared by every test of this test binary, starting it on first
// use. It skips the test when the devcluster binaries are not built (fails if
// FRESHET_TEST_KUBE=1).
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		if kc := os.Getenv(EnvKubeconfig); kc != "" {
			shared.cluster, shared.err = connect("", kc)
			return
		}
		e, err := getEnv()
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster, shared.err = e.up("shared", nil)
	})
	if shared.err != nil {
		unavailable(t, shared.err)
	}
	return shared.cluster
}

// New starts a dedicated cluster, stopped when the test ends: the second cluster of a
// two-cluster test. It skips or fails like Shared.
func New(t testing.TB) *Cluster {
	t.Helper()
	e, err := getEnv()
	if err != nil {
		unavailable(t, err)
	}
	e.mu.Lock()
	e.n++
	name := fmt.Sprintf("extra-%d", e.n)
	e.mu.Unlock()
	c, err := e.up(name, nil)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := e.down(name); err != nil {
			t.Errorf("stop cluster %s: %v", name, err)
		}
	})
	return c
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	switch {
	case errors.Is(err, ErrNoBinaries) && os.Getenv(EnvRequire) == "1":
		t.Fatalf("%v (%s=1 forbids skipping): %s", err, EnvRequire, BuildHint)
	case errors.Is(err, ErrNoBinaries):
		t.Skipf("skipping: real Kubernetes tests need them: %v; %s", err, BuildHint)
	default:
		t.Fatalf("kubernetes test cluster: %v", err)
	}
}

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
		e.tool = filepath.Join(tmp, "devcluster")
		if err := buildTool(e.tool); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	current.e = e
	return e, nil
}

const tmpDirPrefix = "freshet-kube-test-"

// removeAbandonedTempDirs removes the temp dirs of test binaries that died without teardown
// (their watchdogs already stopped the clusters): the dir names the owner's pid.
func removeAbandonedTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpDirPrefix+"*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), tmpDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", pidStr)); err == nil {
			continue // owner alive (or pid reused: leave it, it is small)
		}
		if len(processesUnder(d)) == 0 {
			_ = os.RemoveAll(d)
		}
	}
}

// buildTool compiles hack/devcluster (stdlib only: about a second with a warm build cache).
func buildTool(out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(root, "hack", "devcluster")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build devcluster tool in %s: %w\n%s", cmd.Dir, err, b)
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

// Exit codes of the devcluster tool that the helper tells apart.
const toolExitNoBinaries = 3

func (e *env) run(ctx context.Context, args ...string) ([]byte, error) {
	return e.runEnv(ctx, nil, args...)
}

// runEnv runs the tool with extraEnv added to its environment.
func (e *env) runEnv(ctx context.Context, extraEnv []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.tool, args...)
	cmd.Env = append(append(os.Environ(), envState+"="+e.stateRoot), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == toolExitNoBinaries {
		// The tool says "devcluster up: devcluster binaries are not built: X missing ...; build them with: ...".
		detail := strings.TrimSpace(stderr.String())
		if _, after, ok := strings.Cut(detail, "not built: "); ok {
			detail, _, _ = strings.Cut(after, ";")
		}
		return nil, fmt.Errorf("%w (%s)", ErrNoBinaries, detail)
	}
	if err != nil {
		return nil, fmt.Errorf("devcluster %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (e *env) up(name string, extraEnv []string, extra ...string) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout+2*time.Minute)
	defer cancel()
	e.mu.Lock()
	e.instances = append(e.instances, name) // recorded first: a failed up still gets a down
	e.mu.Unlock()
	out, err := e.runEnv(ctx, extraEnv, append([]string{"up", "--name", name, "--json", "--down-when-exits", strconv.Itoa(os.Getpid())}, extra...)...)
	if err != nil {
		return nil, err
	}
	var res struct{ Kubeconfig string }
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("devcluster up --json: %w: %q", err, out)
	}
	return connect(name, res.Kubeconfig)
}

func (e *env) down(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
	defer cancel()
	_, err := e.run(ctx, "down", "--name", name, "--purge")
	e.mu.Lock()
	for i, n := range e.instances {
		if n == name {
			e.instances = append(e.instances[:i], e.instances[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	return err
}

func connect(name, kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200 // tests poll; the client-side default limiter would slow them
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Name: name, Kubeconfig: kubeconfig, Client: cs, Dynamic: dyn, config: cfg}, nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for this test, deleted when the test ends. Its name is
// derived from the test's name plus a random suffix.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	base := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 48 {
		base = strings.TrimRight(base[:48], "-")
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := base + "-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"freshet.dev/test": "true"}}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := c.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// processesUnder lists live processes whose command line mentions dir.
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // a zombie holds no resources
			}
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}
