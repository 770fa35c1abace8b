package install_test

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/client"
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
// uses its node's network: the test's control plane listens on the host's 127.0.0.1. Then a
// pipeline runs on it with only the installed Role: a step writes a Dockerfile into the
// workspace claim, a build step builds it in a builder pod and pushes it to the account's
// default registry, and a step runs the built image; the push is recorded on the build.
func TestRunnerOnRealNode(t *testing.T) {
	c, reg := containers.RealNode(t)
	image := buildFreshetImage(t, reg)

	srv := servertest.Start(t, store.SQLite)
	ns := c.Namespace(t)
	c.ProvisionVolumes(t, ns, t.TempDir()) // the builds' workspace claims
	var out bytes.Buffer
	ri, err := install.NewRunner(srv.Admin, c.RESTConfig(), &out)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := kube.RealNodePlacement()
	api, err := url.Parse(c.RESTConfig().Host)
	if err != nil {
		t.Fatal(err)
	}
	apiHost, apiPort := api.Hostname(), api.Port()
	o := install.RunnerOptions{Wait: 4 * time.Minute, RunnerOptions: manifests.RunnerOptions{
		Name: "real", Namespace: ns, Image: image, HostNetwork: true, NodeSelector: sel,
		// No kube-proxy here: the kubernetes Service's IP does not route, so the runner reaches
		// the apiserver where it listens, on the host's loopback (its certificate names it).
		Env:         map[string]string{"KUBERNETES_SERVICE_HOST": apiHost, "KUBERNETES_SERVICE_PORT": apiPort},
		Tolerations: []manifests.Toleration{{Key: kube.RealNodeTaint, Value: "true", Effect: "NoSchedule"}},
		ExecutorArgs: []string{
			"--kube-node-selector=" + kube.RealNodeLabel + "=true",
			"--kube-toleration=" + kube.RealNodeTaint + "=true:NoSchedule",
			"--kube-helper-image=" + reg.Ref(containers.ImageBusybox),
			"--kube-default-image=" + reg.Ref(containers.ImageBusybox),
			"--kube-builder-image=" + reg.BuilderImage(t),
			"--kube-builder-host-network=true",
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
	buildOnRealNode(t, srv.Admin, reg)
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

// buildOnRealNode runs a pipeline with a build step on the installed runner and checks the
// image it pushed.
func buildOnRealNode(t *testing.T, admin *client.Client, reg *containers.RegistryInstance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	busybox := reg.Ref(containers.ImageBusybox)
	yml := `version: '1.0'
steps:
  write:
    image: ` + busybox + `
    commands:
      - printf 'FROM ` + busybox + `\nRUN echo built-on-the-real-node > /msg\nCMD ["cat", "/msg"]\n' > Dockerfile
  image:
    type: build
    image_name: freshet-e2e/real-node
    tag: e2e
  run_it:
    image: ${{image}}
`
	if _, err := admin.CreateProject(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateContext(ctx, client.ContextRequest{Name: "loopback", Type: "registry", Registry: &client.RegistryContext{
		URL: reg.Addr, Username: reg.Username, Password: reg.Password, CA: string(reg.CACert), Default: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: "k8s", Spec: yml}); err != nil {
		t.Fatal(err)
	}
	b, err := admin.RunPipeline(ctx, "app/k8s", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for b.Status != "success" && b.Status != "failed" && b.Status != "terminated" {
		if ctx.Err() != nil {
			t.Fatalf("build %s still %s", b.ID, b.Status)
		}
		time.Sleep(500 * time.Millisecond)
		if b, err = admin.GetBuild(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	logBytes, _ := admin.BuildLog(ctx, b.ID, 0)
	log := string(logBytes)
	if b.Status != "success" || !strings.Contains(log, "built-on-the-real-node") {
		t.Fatalf("build %s (%s); log:\n%s", b.Status, b.Reason, log)
	}
	repo := reg.Ref("freshet-e2e/real-node")
	if len(b.Images) != 1 || b.Images[0].Repository != repo || !strings.HasPrefix(b.Images[0].Digest, "sha256:") || b.Images[0].Size <= 0 {
		t.Fatalf("images on the build = %+v, want one push of %s:e2e", b.Images, repo)
	}
	if strings.Contains(log, reg.Password) {
		t.Error("the registry password is in the build log")
	}
	t.Logf("build with a builder pod on the real node: %s", b.FinishedAt.Sub(b.CreatedAt))
}
