package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	mobyregistry "github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// The end-to-end tests run the built ctrenv binary as make and the Go test helper do, each
// test with a state root (and, where it matters, a build cache) of its own.

var toolBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ctrenv-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	toolBinary = filepath.Join(dir, "ctrenv")
	cmd := exec.Command("go", "build", "-o", toolBinary, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build ctrenv: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need skips the test unless the packages are installed (and, for the engine, root): or
// fails it when FRESHET_TEST_CONTAINERS=1.
func need(t *testing.T, pkgs []debPkg, root bool) {
	t.Helper()
	var why string
	if m := missingPackages(pkgs); len(m) > 0 {
		why = "missing Debian packages: " + pkgNames(m) + "; " + installHint
	} else if root && os.Geteuid() != 0 {
		why = "the engine needs root"
	}
	if why == "" {
		return
	}
	if os.Getenv("FRESHET_TEST_CONTAINERS") == "1" {
		t.Fatalf("%s (FRESHET_TEST_CONTAINERS=1 forbids skipping)", why)
	}
	t.Skip("skipping: " + why)
}

// tool runs ctrenv with env added to this process's environment, stopping every instance
// of the test's state root when the test ends.
type tool struct {
	t   *testing.T
	env []string
}

func newTool(t *testing.T) *tool {
	state := t.TempDir()
	tl := &tool{t: t, env: []string{EnvState + "=" + state, EnvCache + "=" + filepath.Join(state, "cache")}}
	t.Cleanup(func() {
		for _, kind := range []string{kindEngine, kindRegistry} {
			ents, _ := os.ReadDir(filepath.Join(state, kind))
			for _, e := range ents {
				if _, _, err := tl.exec(kind, "down", "--name", e.Name(), "--purge"); err != nil {
					t.Errorf("cleanup: %s down %s: %v", kind, e.Name(), err)
				}
			}
		}
		if left := processesWith(state + "/"); len(left) > 0 {
			var d []string
			for _, p := range left {
				d = append(d, describe(p))
			}
			t.Errorf("processes left after down: %s", strings.Join(d, "; "))
		}
	})
	return tl
}

// exec returns stdout, stderr and the exit code.
func (tl *tool) exec(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolBinary, args...)
	cmd.Env = append(os.Environ(), tl.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// ok runs ctrenv and fails the test unless it exits 0; with a JSON output, it decodes it.
func (tl *tool) ok(v any, args ...string) string {
	tl.t.Helper()
	out, errOut, err := tl.exec(args...)
	if err != nil {
		tl.t.Fatalf("ctrenv %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			tl.t.Fatalf("ctrenv %s: %v: %q", strings.Join(args, " "), err, out)
		}
	}
	return out
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}

func registryClient(t *testing.T, ri RegistryInfo) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(ri.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func getV2(t *testing.T, ri RegistryInfo, user, password string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "https://"+ri.Address+"/v2/", nil)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := registryClient(t, ri).Do(req)
	if err != nil {
		t.Fatalf("GET /v2/: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRegistryLifecycle(t *testing.T) {
	need(t, registryPkgs, false)
	tl := newTool(t)
	var ri RegistryInfo
	tl.ok(&ri, "registry", "up", "--name", "e2e", "--json", "--install=false")
	if !ri.Running || !ri.TLS || !strings.HasPrefix(ri.Address, "127.0.0.1:") || ri.Username != RegistryUser || len(ri.Password) < 20 {
		t.Fatalf("registry up: %+v", ri)
	}
	if got := getV2(t, ri, ri.Username, ri.Password); got != http.StatusOK {
		t.Errorf("GET /v2/ with the credentials: %d", got)
	}
	if got := getV2(t, ri, ri.Username, "nope"); got != http.StatusUnauthorized {
		t.Errorf("GET /v2/ with a wrong password: %d", got)
	}
	if b, err := os.ReadFile(filepath.Join(ri.CertDir, caCertFile)); err != nil || !bytes.Contains(b, []byte("CERTIFICATE")) {
		t.Errorf("certs.d for %s: %v", ri.Address, err)
	}
	// The text form is what `make registry` prints.
	out := tl.ok(nil, "registry", "env", "--name", "e2e")
	if !strings.Contains(out, "export REGISTRY="+ri.Address+"\n") || !strings.Contains(out, "export REGISTRY_PASSWORD="+ri.Password) {
		t.Errorf("registry env:\n%s", out)
	}

	// up on a healthy instance changes nothing.
	var again RegistryInfo
	tl.ok(&again, "registry", "up", "--name", "e2e", "--json", "--install=false")
	if again.PID != ri.PID || again.Address != ri.Address || again.Password != ri.Password {
		t.Errorf("second up: %+v, first %+v", again, ri)
	}

	// A killed registry: status says so (exit 4); up restarts it on the same address, with
	// the same credentials and CA.
	ca, _ := os.ReadFile(ri.CAFile)
	if err := syscall.Kill(ri.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ri.PID)
	if _, _, err := tl.exec("registry", "status", "--name", "e2e"); exitCode(err) != exitNotRunning {
		t.Errorf("status of a killed registry: %v, want exit %d", err, exitNotRunning)
	}
	tl.ok(&again, "registry", "up", "--name", "e2e", "--json", "--install=false")
	ca2, _ := os.ReadFile(again.CAFile)
	if again.PID == ri.PID || again.Address != ri.Address || again.Password != ri.Password || !bytes.Equal(ca, ca2) {
		t.Errorf("up after a kill: %+v (before %+v), CA kept %v", again, ri, bytes.Equal(ca, ca2))
	}

	// Its port taken by someone else while it was down: up moves to a free one.
	tl.ok(nil, "registry", "down", "--name", "e2e")
	waitGone(t, again.PID)
	// (If something else took it already, e.g. a client's ephemeral port, so much the better.)
	if l, err := net.Listen("tcp", again.Address); err == nil {
		defer l.Close()
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("occupy %s: %v", again.Address, err)
	}
	var moved RegistryInfo
	tl.ok(&moved, "registry", "up", "--name", "e2e", "--json", "--install=false")
	if moved.Address == again.Address || getV2(t, moved, moved.Username, moved.Password) != http.StatusOK {
		t.Errorf("up with the port taken: %+v", moved)
	}
	if _, err := os.Stat(filepath.Join(moved.CertDir, caCertFile)); err != nil {
		t.Errorf("certs.d of the new address: %v", err)
	}

	tl.ok(nil, "registry", "down", "--name", "e2e", "--purge")
	waitGone(t, moved.PID)
	if _, err := os.Stat(moved.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("down --purge left %s", moved.StateDir)
	}
}

func TestRegistryPlainHTTP(t *testing.T) {
	need(t, registryPkgs, false)
	tl := newTool(t)
	var ri RegistryInfo
	tl.ok(&ri, "registry", "up", "--name", "plain", "--tls=false", "--json", "--install=false")
	if ri.TLS || ri.CAFile != "" {
		t.Fatalf("--tls=false: %+v", ri)
	}
	resp, err := http.Get("http://" + ri.Address + "/v2/")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET http://%s/v2/: %v %v, want 401", ri.Address, resp, err)
	}
	resp.Body.Close()
	if len(missingPackages(imagePkgs)) > 0 {
		return
	}
	var ti TestImagesResult
	tl.ok(&ti, "test-images", "--registry", "plain", "--json", "--install=false")
	if len(missingPackages(enginePkgs)) > 0 || os.Geteuid() != 0 {
		return
	}
	// An engine started for it marks it insecure in its own registries.conf, and pulls.
	var ei EngineInfo
	tl.ok(&ei, "engine", "up", "--name", "plain", "--registry", "plain", "--json", "--install=false")
	if len(ei.Insecure) != 1 || ei.Insecure[0] != ri.Address || len(ei.Trusted) != 0 {
		t.Errorf("engine for a plain-HTTP registry: insecure %v, trusted %v", ei.Insecure, ei.Trusted)
	}
	cli, err := client.New(client.WithHost(ei.DockerHost))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	auth, _ := authconfig.Encode(mobyregistry.AuthConfig{Username: ri.Username, Password: ri.Password, ServerAddress: ri.Address})
	pull, err := cli.ImagePull(ctx, ri.Address+"/"+testImageEcho, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		err = pull.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("pull from the plain-HTTP registry: %v", err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := readProcStat(pid)
		if err != nil || st.state == 'Z' {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

// TestWatchdog: an instance started with --down-when-exits goes away with its owner.
func TestWatchdog(t *testing.T) {
	need(t, registryPkgs, false)
	tl := newTool(t)
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	var ri RegistryInfo
	tl.ok(&ri, "registry", "up", "--name", "watched", "--json", "--install=false", "--down-when-exits", strconv.Itoa(owner.Process.Pid))
	_ = owner.Process.Kill()
	_ = owner.Wait()
	waitGone(t, ri.PID)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(ri.StateDir); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watchdog left %s", ri.StateDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The watchdog removes the state and then exits: wait for the exit too (the test's cleanup
	// fails on any process left, and once, under load, saw the watchdog between the two).
	for deadline := time.Now().Add(10 * time.Second); len(processesWith(ri.StateDir)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watchdog still runs after removing %s", ri.StateDir)
		}
	}
}

func TestTestImagesAreCachedAndReproducible(t *testing.T) {
	need(t, append(registryPkgs, imagePkgs...), false)
	tl := newTool(t)
	tl.ok(nil, "registry", "up", "--name", "a", "--install=false")
	var cold, warm TestImagesResult
	tl.ok(&cold, "test-images", "--registry", "a", "--json", "--install=false")
	tl.ok(&warm, "test-images", "--registry", "a", "--json", "--install=false")
	if !cold.Built || warm.Built || len(cold.Images) != 6 {
		t.Fatalf("cold built=%v, warm built=%v, %d images", cold.Built, warm.Built, len(cold.Images))
	}
	t.Logf("test-images: cold %.2fs, warm %.2fs", cold.Seconds, warm.Seconds)
	for i, im := range cold.Images {
		if !im.Pushed || warm.Images[i].Pushed || warm.Images[i].Digest != im.Digest {
			t.Errorf("%s: cold %+v, warm %+v (a second run must push nothing)", im.Name, im, warm.Images[i])
		}
	}
	// A build from an empty cache gives the same digests (into another registry).
	tl.env = append(tl.env, EnvCache+"="+t.TempDir())
	tl.ok(nil, "registry", "up", "--name", "b", "--install=false")
	var other TestImagesResult
	tl.ok(&other, "test-images", "--registry", "b", "--json", "--install=false")
	for i, im := range other.Images {
		if !other.Built || im.Digest != cold.Images[i].Digest {
			t.Errorf("%s: rebuilt digest %s, first %s", im.Name, im.Digest, cold.Images[i].Digest)
		}
	}
	// Without a running registry, test-images says how to start one (exit 4).
	if _, errOut, err := tl.exec("test-images", "--registry", "nothere", "--install=false"); exitCode(err) != exitNotRunning || !strings.Contains(errOut, "make registry") {
		t.Errorf("test-images without a registry: %v %s", err, errOut)
	}
}

func TestEngineLifecycle(t *testing.T) {
	need(t, slices.Concat(registryPkgs, imagePkgs, enginePkgs), true)
	tl := newTool(t)
	var ri RegistryInfo
	tl.ok(&ri, "registry", "up", "--name", "r", "--json", "--install=false")
	var ti TestImagesResult
	tl.ok(&ti, "test-images", "--registry", "r", "--json", "--install=false")
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	var ei EngineInfo
	tl.ok(&ei, "engine", "up", "--name", "e", "--registry", "r", "--json", "--install=false", "--down-when-exits", strconv.Itoa(owner.Process.Pid))
	if !ei.Running || ei.APIVersion == "" || len(ei.Trusted) != 1 || ei.Trusted[0] != ri.Address || ei.SubnetPool == "" {
		t.Fatalf("engine up: %+v", ei)
	}
	var st engineState
	if err := readJSON(filepath.Join(ei.StateDir, "state.json"), &st); err != nil {
		t.Fatal(err)
	}
	runtimeDir := filepath.Join(runtimeRoot, "engine-"+st.ID)

	cli, err := client.New(client.WithHost(ei.DockerHost))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	auth, _ := authconfig.Encode(mobyregistry.AuthConfig{Username: ri.Username, Password: ri.Password, ServerAddress: ri.Address})
	ref := ri.Address + "/" + testImageBusybox
	pull, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		err = pull.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	// A container that would outlive the service: down must remove it.
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref, Cmd: []string{"sleep", "600"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(processesWith(ei.StateDir+"/")) < 2 {
		t.Fatalf("want the service and the container's conmon to name the state directory: %v", processesWith(ei.StateDir+"/"))
	}

	// up on a running engine changes nothing.
	var again EngineInfo
	tl.ok(&again, "engine", "up", "--name", "e", "--json", "--install=false")
	if again.PID != ei.PID {
		t.Errorf("second up restarted the service: pid %d, then %d", ei.PID, again.PID)
	}

	tl.ok(nil, "engine", "down", "--name", "e")
	if left := processesWith(ei.StateDir + "/"); len(left) > 0 {
		t.Errorf("after down, still running: %v", left)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mi, []byte(ei.StateDir)) || bytes.Contains(mi, []byte(runtimeDir)) {
		t.Errorf("after down, mounts remain under %s or %s", ei.StateDir, runtimeDir)
	}
	// (Another engine may have claimed the freed slot since: only ours must be gone.)
	var claim slotClaim
	if err := readJSON(slotPath(st.Slot), &claim); err != nil || claim.StateDir == ei.StateDir {
		t.Errorf("after down, the subnet slot %d is still claimed by the engine (%v)", st.Slot, err)
	}

	// Storage survives down/up: the image is still there.
	tl.ok(&again, "engine", "up", "--name", "e", "--json", "--install=false", "--down-when-exits", strconv.Itoa(owner.Process.Pid))
	cli2, err := client.New(client.WithHost(again.DockerHost))
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	if _, err := cli2.ImageInspect(ctx, ref); err != nil {
		t.Errorf("after down and up, %s is gone: %v", ref, err)
	}
	code, out := runIn(t, ctx, cli2, &container.Config{Image: ref, Cmd: []string{"sh", "-c", "echo hi; exit 7"}})
	if code != 7 || out != "hi\n" {
		t.Errorf("container after restart: exit %d, %q", code, out)
	}
	if _, err := cli2.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref, Cmd: []string{"sleep", "600"}}}); err != nil {
		t.Fatal(err)
	}

	// The owner exits: the watchdog stops the engine and removes its state.
	_ = owner.Process.Kill()
	_ = owner.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(again.StateDir)
		if errors.Is(err, os.ErrNotExist) && len(processesWith(again.StateDir+"/")) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watchdog left %s or processes: %v", again.StateDir, processesWith(again.StateDir+"/"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(runtimeDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the watchdog left %s", runtimeDir)
	}
}

func runIn(t *testing.T, ctx context.Context, cli *client.Client, cfg *container.Config) (int64, string) {
	t.Helper()
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg})
	if err != nil {
		t.Fatalf("create %s: %v", cfg.Image, err)
	}
	defer func() {
		_, _ = cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	}()
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start %s: %v", cfg.Image, err)
	}
	var code int64
	select {
	case r := <-wait.Result:
		code = r.StatusCode
	case err := <-wait.Error:
		t.Fatalf("wait %s: %v", cfg.Image, err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, io.Discard, logs); err != nil {
		t.Fatal(err)
	}
	return code, stdout.String()
}

// TestImageCommand builds an image the way `make image` builds freshet's (a small program stands
// in for freshet, so the test does not link the whole binary), pushes it, writes the OCI
// layout tarball, and, where an engine can run, runs it.
func TestImageCommand(t *testing.T) {
	need(t, registryPkgs, false)
	tl := newTool(t)
	var ri RegistryInfo
	tl.ok(&ri, "registry", "up", "--name", "img", "--json", "--install=false")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	build := func() ImageResult {
		var res ImageResult
		tl.ok(&res, "image", "--registry", "img", "--dir", root, "--package", "./hack/ctrenv/testdata/hello", "--version", "v9.9.9",
			"--oci-layout", tarPath, "--json")
		return res
	}
	first := build()
	if !first.Pushed || first.Ref != ri.Address+"/freshet:v9.9.9" || len(first.Platforms) != 1 {
		t.Fatalf("image: %+v", first)
	}
	// Reproducible: the same sources give the same digest, so nothing is pushed again.
	if second := build(); second.Digest != first.Digest || second.Pushed {
		t.Errorf("second build: %+v, first %+v", second, first)
	}

	ca, _ := os.ReadFile(ri.CAFile)
	target := pushTarget{auth: &authn.Basic{Username: ri.Username, Password: ri.Password}, ca: ca}
	opts, err := target.options(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(first.Ref)
	img, err := remote.Image(ref, opts...)
	if err != nil {
		t.Fatalf("read back %s: %v", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/usr/bin/freshet" || c.WorkingDir != "/home/freshet" ||
		c.Labels["org.opencontainers.image.version"] != "v9.9.9" || c.Labels["org.opencontainers.image.revision"] == "" || cf.OS != "linux" {
		t.Errorf("config: %+v (os %s)", c, cf.OS)
	}
	files := imageFiles(t, img)
	for path, mode := range map[string]int64{"usr/bin/freshet": 0o755, "tmp/": 0o1777, "etc/ssl/certs/ca-certificates.crt": 0o644, "etc/passwd": 0o644, "home/freshet/": 0o755} {
		if got, ok := files[path]; !ok || got != mode {
			t.Errorf("%s: mode %o (present %v), want %o", path, got, ok, mode)
		}
	}
	if _, ok := files["bin/sh"]; ok {
		t.Error("the scratch base has a shell")
	}

	// The OCI layout tarball names the image and holds the same manifest.
	dir := t.TempDir()
	untar(t, tarPath, dir)
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != first.Digest ||
		im.Manifests[0].Annotations[annotationRefName] != "v9.9.9" || im.Manifests[0].Annotations["io.containerd.image.name"] != first.Ref {
		t.Errorf("OCI layout index: %+v %v", im, err)
	}

	// Several platforms make an index (written to the layout only).
	var multi ImageResult
	tl.ok(&multi, "image", "--registry", "img", "--dir", root, "--package", "./hack/ctrenv/testdata/hello", "--version", "v9.9.9",
		"--platform", "linux/amd64,linux/arm64", "--push=false", "--oci-layout", tarPath, "--json")
	dir2 := t.TempDir()
	untar(t, tarPath, dir2)
	p2, _ := layout.FromPath(dir2)
	top, _ := p2.ImageIndex()
	tm, _ := top.IndexManifest()
	if multi.Pushed || len(tm.Manifests) != 1 {
		t.Fatalf("multi-platform: %+v, layout %+v", multi, tm)
	}
	inner, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	innerM, _ := inner.IndexManifest()
	var platforms []string
	for _, m := range innerM.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("index platforms %v", platforms)
	}

	// Run it where an engine can: what the hello program prints is the image's contract.
	if len(missingPackages(enginePkgs)) > 0 || os.Geteuid() != 0 {
		t.Log("no engine here: the image is not run")
		return
	}
	var ei EngineInfo
	tl.ok(&ei, "engine", "up", "--name", "img", "--registry", "img", "--json", "--install=false")
	cli, err := client.New(client.WithHost(ei.DockerHost))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	auth, _ := authconfig.Encode(mobyregistry.AuthConfig{Username: ri.Username, Password: ri.Password, ServerAddress: ri.Address})
	pull, err := cli.ImagePull(ctx, first.Ref, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		err = pull.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	code, out := runIn(t, ctx, cli, &container.Config{Image: first.Ref, Cmd: []string{"runner", "--help"}})
	want := `hello version=v9.9.9 uid=65532 gid=65532 wd=/home/freshet home=/home/freshet ca=true tmp=true args=["runner" "--help"]` + "\n"
	if code != 0 || out != want {
		t.Errorf("running the image: exit %d\n got %q\nwant %q", code, out, want)
	}
}

// imageFiles maps each path in the image's layers to its mode.
func imageFiles(t *testing.T, img v1.Image) map[string]int64 {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	for _, l := range ls {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = h.Mode
		}
		rc.Close()
	}
	return files
}

func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
