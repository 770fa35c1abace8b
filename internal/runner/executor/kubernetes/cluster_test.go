package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// Helpers for the tests on the loopback cluster (internal/testenv/kube): a real apiserver,
// controller-manager and scheduler, and a kwok node on which pods become Running but run no
// container and serve no log. A pod annotated kube.AnnotationExitCode terminates with that code
// (after kube.AnnotationRunDuration), which is how a step "ends" there.

// TestMain stops the clusters, then the registry the real node pulls from.
func TestMain(m *testing.M) {
	code := kube.Run(m)
	if err := containers.Teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "containers teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// envExecutes=1 says that the shared test cluster (FRESHET_TEST_KUBECONFIG) has nodes that run
// containers and a storage provisioner: the contract suite then runs whole, and the tests that
// rely on the kwok node's annotations are skipped. The loopback cluster does not.
const envExecutes = "FRESHET_TEST_KUBE_EXECUTES"

// executes reports whether the test cluster runs containers (envExecutes, or the real node).
func executes() bool { return os.Getenv(envExecutes) == "1" || realNode() }

// realNode reports whether the tests run on the loopback cluster's real node
// (FRESHET_TEST_REAL_NODE=1): a kubelet on containerd and runc, pulling the test images from
// the loopback registry. The test volumes are then hostPath directories it really mounts.
func realNode() bool { return os.Getenv(kube.EnvRealNode) == "1" }

// kwokOnly skips a test that relies on the kwok node's annotations on a cluster that runs
// containers.
func kwokOnly(t *testing.T) {
	t.Helper()
	if executes() {
		t.Skipf("%s=1: this test drives pods through the kwok node's annotations", envExecutes)
	}
}

// testBound bounds every single wait of these tests.
const testBound = 30 * time.Second

// testGrace is the kill grace period of the executors under test (Kubernetes counts whole
// seconds).
const testGrace = time.Second

// testEnv is a namespace on the shared loopback cluster with a volume provisioner.
type testEnv struct {
	c   *kube.Cluster
	ns  string
	reg *containers.RegistryInstance // the registry the real node pulls from (real node only)
}

// newTestEnv returns a fresh namespace whose default service account exists and whose volume
// claims get bound (the loopback cluster has no storage provisioner).
func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	var c *kube.Cluster
	e := &testEnv{}
	if realNode() {
		e.reg = containers.Registry(t)
		c = kube.RealNode(t, kube.NodeRegistry{Addr: e.reg.Addr, Username: e.reg.Username, Password: e.reg.Password,
			CAFile: e.reg.CAFile, PauseImage: e.reg.Ref(containers.ImagePause)})
	} else {
		c = kube.Shared(t)
	}
	e.c, e.ns = c, c.Namespace(t)
	e.waitFor(t, "the namespace's default service account", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if !executes() || realNode() {
		e.provisionVolumes(t)
	}
	return e
}

// image is the image the contract suite's steps run in: the busybox test image on the real
// node, the suite's default elsewhere.
func (e *testEnv) image() string {
	if e.reg != nil {
		return e.reg.Ref(containers.ImageBusybox)
	}
	return ""
}

// executor returns an executor for the namespace: opts with the cluster, the namespace, the test
// grace period and, unless opts sets annotations, pods that "exit 0" at once on the kwok node.
func (e *testEnv) executor(t *testing.T, opts Options) *Kubernetes {
	t.Helper()
	opts.RestConfig = e.c.RESTConfig()
	opts.Namespace = e.ns
	if opts.KillGrace == 0 {
		opts.KillGrace = testGrace
	}
	if opts.Annotations == nil && !executes() {
		opts.Annotations = exitAfter("0", "")
	}
	if realNode() && opts.NodeSelector == nil {
		opts.NodeSelector, opts.Tolerations = kube.RealNodePlacement()
	}
	if realNode() {
		// Only the loopback registry's images exist here.
		if opts.HelperImage == "" {
			opts.HelperImage = e.image()
		}
		if opts.DefaultImage == "" {
			opts.DefaultImage = e.image()
		}
	}
	k, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return k
}

// exitAfter returns the pod annotations that make the kwok node end a pod with exit code code
// after run (a Go duration; "" for at once).
func exitAfter(code, run string) map[string]string {
	a := map[string]string{kube.AnnotationExitCode: code}
	if run != "" {
		a[kube.AnnotationRunDuration] = run
	}
	return a
}

// waitFor polls cond every 50 ms until it holds, failing the test after testBound.
func (e *testEnv) waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", testBound, what, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pods lists the pods of build id, by the executor's labels.
func (e *testEnv) pods(t *testing.T, id string) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	list, err := e.c.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: BuildSelector(id)})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// runningPod waits until build id has exactly one pod and it is Running, and returns it.
func (e *testEnv) runningPod(t *testing.T, id string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	e.waitFor(t, "the step's pod to run", func(ctx context.Context) (bool, error) {
		pods := e.pods(t, id)
		if len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning {
			pod = pods[0]
			return true, nil
		}
		return false, e.describe(ctx, pods)
	})
	return pod
}

// describe says where pods and the claims are, for a failure message.
func (e *testEnv) describe(ctx context.Context, pods []corev1.Pod) error {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "pod %s: phase %s, conditions %v; ", p.Name, p.Status.Phase, p.Status.Conditions)
	}
	if list, err := e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range list.Items {
			fmt.Fprintf(&b, "claim %s: %s volume %q; ", c.Name, c.Status.Phase, c.Spec.VolumeName)
		}
	}
	return errors.New(b.String())
}

// leftovers is the contract suite's hook: the build's pods and claim, found by label with the
// admin client, independently of the executor.
func (e *testEnv) leftovers(t *testing.T, ws executor.Workspace) (running, stored []string) {
	t.Helper()
	for _, p := range e.pods(t, ws.BuildID) {
		running = append(running, "pod "+p.Name+" ("+string(p.Status.Phase)+")")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	list, err := e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, metav1.ListOptions{LabelSelector: BuildSelector(ws.BuildID)})
	if err != nil {
		t.Fatalf("list claims: %v", err)
	}
	for _, c := range list.Items {
		stored = append(stored, "claim "+c.Name)
	}
	return running, stored
}

// provisionVolumes binds the namespace's claims to volumes (kube.Cluster.ProvisionVolumes): on
// the real node, directories under the test's temp dir that the kubelet really mounts.
func (e *testEnv) provisionVolumes(t *testing.T) {
	dir := ""
	if realNode() {
		dir = t.TempDir()
	}
	e.c.ProvisionVolumes(t, e.ns, dir)
}

// waitBound waits until ws's claim is bound (when the test provisioner runs). A pod created
// while its claim is still unbound is unschedulable until the scheduler retries it after the
// binding, and on the busy loopback cluster that retry was seen to be missed now and then, the
// pod then waiting for the scheduler's periodic flush (minutes); the tests are about the
// executor, not about that.
func (e *testEnv) waitBound(t *testing.T, ws executor.Workspace) {
	t.Helper()
	if executes() && !realNode() {
		return
	}
	e.waitFor(t, "claim "+ws.Handle+" to be bound", func(ctx context.Context) (bool, error) {
		c, err := e.c.Client.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, ws.Handle, metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound, err
	})
}

// boundClaims is the executor under test whose Prepare returns once the claim is bound (see
// waitBound), for the contract suite.
type boundClaims struct {
	*Kubernetes
	t *testing.T
	e *testEnv
}

func (b boundClaims) Prepare(ctx context.Context, build executor.Build) (executor.Workspace, error) {
	ws, err := b.Kubernetes.Prepare(ctx, build)
	if err == nil {
		b.e.waitBound(b.t, ws)
	}
	return ws, err
}

// checkNoGoroutines fails the test if a goroutine of the executor is still running: Run and
// Cleanup must return with nothing of theirs left.
func checkNoGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second) // goroutines that returned may still be unwinding
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var left []string
		for g := range strings.SplitSeq(stacks, "\n\n") {
			if strings.Contains(g, "kubernetes.(*Kubernetes).watchPod") || strings.Contains(g, "kubernetes.(*logFollower).run") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the executor are still running:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
