package install_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestRunnerOnRealNode installs a runner whose pod runs on the loopback cluster's real node
// from the project's own image (built with `ctrenv image`, as `make image` does, and pushed
// to the loopback registry) and waits until it is connected to the control plane. The pod
// uses its node's network: the test's control plane listens on the host's 127.0.0.1.
func TestRunnerOnRealNode(t *testing.T) {
	if os.Getenv(kube.EnvRealNode) != "1" {
		kube.RealNode(t, kube.NodeRegistry{}) // skips, saying why
	}
	reg := containers.Registry(t)
	c := kube.RealNode(t, kube.NodeRegistry{Addr: reg.Addr, Username: reg.Username, Password: reg.Password,
		CAFile: reg.CAFile, PauseImage: reg.Ref(containers.ImagePause)})
	image := buildFreshetImage(t, reg)

	srv := servertest.Start(t, store.SQLite)
	ns := c.Namespace(t)
	var out bytes.Buffer
	ri, err := install.NewRunner(srv.Admin, c.RESTConfig(), &out)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := kube.RealNodePlacement()
	o := install.RunnerOptions{Wait: 4 * time.Minute, RunnerOptions: manifests.RunnerOptions{
		Name: "real", Namespace: ns, Image: image, HostNetwork: true, NodeSelector: sel,
		Tolerations: []manifests.Toleration{{Key: kube.RealNodeTaint, Value: "true", Effect: "NoSchedule"}},
		ExecutorArgs: []string{
			"--kube-node-selector=" + kube.RealNodeLabel + "=true",
			"--kube-toleration=" + kube.RealNodeTaint + "=true:NoSchedule",
			"--kube-helper-image=" + reg.Ref(containers.ImageBusybox),
			"--kube-default-image=" + reg.Ref(containers.ImageBusybox),
		}}}
	if err := ri.Install(context.Background(), o); err != nil {
		pods, _ := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			logs, _ := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, nil).DoRaw(context.Background())
			t.Logf("pod %s on %s: %s %+v\n%s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses, logs)
		}
		t.Fatalf("install: %v\n%s", err, out.String())
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: manifests.InstanceLabel + "=real"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != kube.RealNodeName {
		t.Fatalf("runner pods: %+v %v", pods, err)
	}
	if err := ri.Uninstall(context.Background(), "real", ns); err != nil {
		t.Errorf("uninstall: %v\n%s", err, out.String())
	}
}

// buildFreshetImage builds the freshet image with the ctrenv tool (FRESHET_CTRENV_TOOL, or
// built here) and pushes it to reg; it returns the reference. A cold Go build cache makes this
// take minutes (the whole module, CGO_ENABLED=0).
func buildFreshetImage(t *testing.T, reg *containers.RegistryInstance) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	tool := os.Getenv(containers.EnvTool)
	if tool == "" {
		tool = filepath.Join(t.TempDir(), "ctrenv")
		cmd := exec.Command("go", "build", "-o", tool, "./hack/ctrenv")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build ctrenv: %v\n%s", err, b)
		}
	}
	const version = "v0.0.0-realnode"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, "image", "--registry", filepath.Base(reg.StateDir), "--version", version, "--dir", root)
	// The registry instance lives in the containers helper's state root.
	cmd.Env = append(os.Environ(), "FRESHET_CONTAINERS_STATE="+filepath.Dir(filepath.Dir(reg.StateDir)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ctrenv image: %v\n%s\n%s", err, b, stderr.String())
	}
	ref := reg.Ref("freshet:" + version)
	if !strings.Contains(string(b)+stderr.String(), ref) {
		t.Logf("ctrenv image output does not name %s:\n%s\n%s", ref, b, stderr.String())
	}
	return ref
}
