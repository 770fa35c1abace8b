package containers_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

func TestMain(m *testing.M) { containers.Main(m) }

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// TestRegistry checks what a client of the registry sees: HTTPS only with the registry's
// CA, Basic auth enforced, every test image there with the digest the helper reports.
func TestRegistry(t *testing.T) {
	reg := containers.Registry(t)
	if !strings.HasPrefix(reg.Addr, "127.0.0.1:") {
		t.Errorf("registry address %q is not on 127.0.0.1", reg.Addr)
	}
	get := func(c *http.Client, path, user, password string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx(t, 30*time.Second), http.MethodGet, "https://"+reg.Addr+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	c := reg.HTTPClient()
	for _, name := range containers.TestImages {
		im := reg.Images[name]
		repo, tag, _ := strings.Cut(name, ":")
		if im.Ref != reg.Ref(name) || !strings.HasPrefix(im.Digest, "sha256:") || im.Layers < 1 {
			t.Errorf("%s: %+v", name, im)
		}
		resp, err := get(c, "/v2/"+repo+"/manifests/"+tag, reg.Username, reg.Password)
		if err != nil {
			t.Fatalf("GET manifest of %s: %v", name, err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Content-Digest") != im.Digest {
			t.Errorf("GET manifest of %s: %s, digest %q, want 200 and %s", name, resp.Status, resp.Header.Get("Docker-Content-Digest"), im.Digest)
		}
	}
	if l := reg.Images[containers.ImageMultiLayer].Layers; l != containers.MultiLayerLayers {
		t.Errorf("%s has %d layers, want %d", containers.ImageMultiLayer, l, containers.MultiLayerLayers)
	}
	for _, tc := range []struct{ user, password string }{{"", ""}, {reg.Username, "wrong"}, {"nobody", reg.Password}} {
		resp, err := get(c, "/v2/", tc.user, tc.password)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /v2/ as %q/%q: %v %v, want 401", tc.user, tc.password, resp.Status, err)
		}
	}
	// A client that does not trust the registry's CA refuses its certificate.
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	if _, err := get(plain, "/v2/", reg.Username, reg.Password); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET without the CA: %v, want a certificate error", err)
	}
}

// run creates, starts and waits for a container, and returns its exit code and output.
func run(t *testing.T, cli *client.Client, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig) (int64, string, string) {
	t.Helper()
	c := ctx(t, 2*time.Minute)
	created, err := cli.ContainerCreate(c, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, NetworkingConfig: nc})
	if err != nil {
		t.Fatalf("create container of %s: %v", cfg.Image, err)
	}
	t.Cleanup(func() {
		if _, err := cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove container %s: %v", created.ID, err)
		}
	})
	wait := cli.ContainerWait(c, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(c, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start container of %s: %v", cfg.Image, err)
	}
	t0 := time.Now()
	defer func() { t.Logf("%s %v: %s", cfg.Image, cfg.Cmd, time.Since(t0).Round(time.Millisecond)) }()
	var code int64
	select {
	case res := <-wait.Result:
		code = res.StatusCode
	case err := <-wait.Error:
		t.Fatalf("wait for container of %s: %v", cfg.Image, err)
	}
	logs, err := cli.ContainerLogs(c, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs of %s: %v", cfg.Image, err)
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
		t.Fatalf("read logs of %s: %v", cfg.Image, err)
	}
	return code, stdout.String(), stderr.String()
}

// pull pulls a test image with the registry's credentials.
func pull(t *testing.T, cli *client.Client, reg *containers.RegistryInstance, name string) {
	t.Helper()
	t0 := time.Now()
	defer func() { t.Logf("pull %s: %s", name, time.Since(t0).Round(time.Millisecond)) }()
	resp, err := cli.ImagePull(ctx(t, 2*time.Minute), reg.Ref(name), client.ImagePullOptions{RegistryAuth: reg.RegistryAuth()})
	if err != nil {
		t.Fatalf("pull %s: %v", name, err)
	}
	if err := resp.Wait(ctx(t, 2*time.Minute)); err != nil {
		t.Fatalf("pull %s: %v", name, err)
	}
}

// TestEngineRunsAContainer proves the engine through the Docker Engine API the way the
// container executor uses it: pull from the loopback registry with credentials, create,
// start, wait, read the logs, remove.
func TestEngineRunsAContainer(t *testing.T) {
	reg := containers.Registry(t)
	eng := containers.Engine(t)
	if !strings.HasPrefix(eng.Host, "unix:///") || eng.APIVersion == "" {
		t.Fatalf("engine %+v", eng)
	}
	cli := eng.Client(t)
	ping, err := cli.Ping(ctx(t, 30*time.Second), client.PingOptions{})
	if err != nil {
		t.Fatalf("ping %s: %v", eng.Host, err)
	}
	t.Logf("engine API version %s, negotiated %s", ping.APIVersion, cli.ClientVersion())

	// The engine holds no credentials: without them the registry refuses the pull.
	resp, err := cli.ImagePull(ctx(t, time.Minute), reg.Ref(containers.ImageEcho), client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(ctx(t, time.Minute))
	}
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("pull without credentials: %v, want unauthorized", err)
	}
	wrong := containers.RegistryInstance{Addr: reg.Addr, Username: reg.Username, Password: "wrong"}
	resp, err = cli.ImagePull(ctx(t, time.Minute), reg.Ref(containers.ImageEcho), client.ImagePullOptions{RegistryAuth: wrong.RegistryAuth()})
	if err == nil {
		err = resp.Wait(ctx(t, time.Minute))
	}
	if err == nil {
		t.Fatal("pull with a wrong password succeeded")
	}

	pull(t, cli, reg, containers.ImageEcho)
	inspect, err := cli.ImageInspect(ctx(t, time.Minute), reg.Ref(containers.ImageEcho))
	if err != nil {
		t.Fatal(err)
	}
	if want := reg.Pinned(containers.ImageEcho); !contains(inspect.RepoDigests, want) {
		t.Errorf("image %s: repo digests %v, want %s", containers.ImageEcho, inspect.RepoDigests, want)
	}

	code, out, errOut := run(t, cli, &container.Config{Image: reg.Ref(containers.ImageEcho)}, nil, nil)
	if code != 0 || out != containers.EchoOutput {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and %q", containers.ImageEcho, code, out, errOut, containers.EchoOutput)
	}
	code, out, _ = run(t, cli, &container.Config{Image: reg.Ref(containers.ImageEcho), Cmd: []string{"hello"}}, nil, nil)
	if code != 0 || out != "entrypoint: hello\n" {
		t.Errorf("%s with cmd: exit %d, stdout %q", containers.ImageEcho, code, out)
	}
	// Exit codes, stderr, environment and the working directory come through.
	code, out, errOut = run(t, cli, &container.Config{Image: reg.Ref(containers.ImageEcho), Entrypoint: []string{"sh", "-c"},
		Cmd: []string{`pwd; echo "$FRESHET_TEST_IMAGE"; echo oops >&2; exit 3`}}, nil, nil)
	if code != 3 || out != "/tmp\necho\n" || errOut != "oops\n" {
		t.Errorf("sh -c in %s: exit %d, stdout %q, stderr %q", containers.ImageEcho, code, out, errOut)
	}
}

// TestEngineTestImages runs each test image and checks it does what the package says.
func TestEngineTestImages(t *testing.T) {
	reg := containers.Registry(t)
	cli := containers.Engine(t).Client(t)
	for _, name := range []string{containers.ImageBusybox, containers.ImageNonRoot, containers.ImageMultiLayer} {
		pull(t, cli, reg, name)
	}
	_, out, _ := run(t, cli, &container.Config{Image: reg.Ref(containers.ImageNonRoot)}, nil, nil)
	if want := fmt.Sprintf("uid=%d(%s) gid=%d(%s)", containers.NonRootUID, containers.NonRootUser, containers.NonRootUID, containers.NonRootUser); !strings.HasPrefix(out, want) {
		t.Errorf("%s: %q, want it to start with %q", containers.ImageNonRoot, out, want)
	}
	_, out, _ = run(t, cli, &container.Config{Image: reg.Ref(containers.ImageMultiLayer)}, nil, nil)
	if out != containers.MultiLayerOutput {
		t.Errorf("%s: %q, want %q", containers.ImageMultiLayer, out, containers.MultiLayerOutput)
	}
	// The base: /bin/sh, /tmp writable by anyone with the sticky bit, the users, the limits
	// the engine's configuration sets.
	code, out, errOut := run(t, cli, &container.Config{Image: reg.Ref(containers.ImageBusybox), Cmd: []string{"sh", "-c",
		`stat -c '%a' /tmp; cut -d: -f1 /etc/passwd | tr '\n' ' '; echo; ulimit -n; ulimit -u`}}, nil, nil)
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) < 4 || lines[0] != "1777" || lines[1] != "root freshet nobody " || lines[2] == "" || lines[3] == "" {
		t.Errorf("%s: exit %d, stdout %q, stderr %q", containers.ImageBusybox, code, out, errOut)
	}
	// HostConfig.Init puts an init process (the engine's catatonit) at PID 1, so the command
	// is not PID 1.
	for _, init := range []bool{false, true} {
		code, out, _ = run(t, cli, &container.Config{Image: reg.Ref(containers.ImageBusybox), Cmd: []string{"sh", "-c", "echo $$"}},
			&container.HostConfig{Init: ptr(init)}, nil)
		if pid1 := out == "1\n"; code != 0 || pid1 == init {
			t.Errorf("Init %v: exit %d, the command's pid is %q", init, code, out)
		}
	}
}

// TestEngineServiceContainer is the shape of a Codefresh service container: a server and a
// client on a network of their own, the client reaching the server by its alias once it is
// ready.
func TestEngineServiceContainer(t *testing.T) {
	reg := containers.Registry(t)
	eng := containers.Engine(t)
	cli := eng.Client(t)
	pull(t, cli, reg, containers.ImageServer)
	pull(t, cli, reg, containers.ImageBusybox)
	c := ctx(t, 2*time.Minute)
	netName := fmt.Sprintf("freshet-test-%d", time.Now().UnixNano())
	nw, err := cli.NetworkCreate(c, netName, client.NetworkCreateOptions{Driver: "bridge"})
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	t.Cleanup(func() {
		if _, err := cli.NetworkRemove(context.Background(), nw.ID, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("remove network: %v", err)
		}
	})
	ni, err := cli.NetworkInspect(c, nw.ID, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := netip.MustParsePrefix(eng.SubnetPool)
	if len(ni.Network.IPAM.Config) == 0 || !pool.Contains(ni.Network.IPAM.Config[0].Subnet.Addr()) {
		t.Errorf("network %s: IPAM %+v, want a subnet in the engine's pool %s", netName, ni.Network.IPAM.Config, eng.SubnetPool)
	}
	srv, err := cli.ContainerCreate(c, client.ContainerCreateOptions{
		Config:           &container.Config{Image: reg.Ref(containers.ImageServer)},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{netName: {Aliases: []string{"web"}}}},
	})
	if err != nil {
		t.Fatalf("create server: %v", err)
	}
	t.Cleanup(func() {
		if _, err := cli.ContainerRemove(context.Background(), srv.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove server: %v", err)
		}
	})
	if _, err := cli.ContainerStart(c, srv.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start server: %v", err)
	}
	script := fmt.Sprintf(`for i in $(seq 50); do wget -q -O- http://web:%d/ && exit 0; sleep 0.1; done; exit 1`, containers.ServerPort)
	code, out, errOut := run(t, cli, &container.Config{Image: reg.Ref(containers.ImageBusybox), Cmd: []string{"sh", "-c", script}},
		&container.HostConfig{NetworkMode: container.NetworkMode(netName)}, nil)
	if code != 0 || out != containers.ServerBody {
		t.Errorf("client: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, containers.ServerBody)
	}
}

// TestEngineBuild builds a Dockerfile through the engine's build API from a test image:
// what `build` steps will do.
func TestEngineBuild(t *testing.T) {
	reg := containers.Registry(t)
	cli := containers.Engine(t).Client(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := fmt.Sprintf("FROM %s\nRUN echo built > /built.txt\nCMD [\"cat\", \"/built.txt\"]\n", reg.Ref(containers.ImageBusybox))
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(dockerfile)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tag := reg.Ref("freshet-test/built:" + fmt.Sprint(time.Now().UnixNano()))
	res, err := cli.ImageBuild(ctx(t, 3*time.Minute), &buf, client.ImageBuildOptions{
		Tags: []string{tag}, Remove: true,
		AuthConfigs: map[string]registry.AuthConfig{reg.Addr: {Username: reg.Username, Password: reg.Password, ServerAddress: reg.Addr}},
	})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	out, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || bytes.Contains(out, []byte(`"error"`)) {
		t.Fatalf("build: %v\n%s", err, out)
	}
	code, stdout, _ := run(t, cli, &container.Config{Image: tag}, nil, nil)
	if code != 0 || stdout != "built\n" {
		t.Errorf("built image: exit %d, stdout %q\nbuild output: %s", code, stdout, out)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// TestStartOverhead measures what a container step costs on this engine, with the image
// present: through the Docker Engine API (pull — a manifest check against the registry —,
// create, start, wait, logs; then remove) against plain `podman run --rm` of the same image
// on the same storage, and `podman --remote run --rm` through the same service. Runs
// interleave, so machine load hits every column alike. It only runs with
// FRESHET_CONTAINERS_BENCH=1 (N=… runs, default 20) and prints BENCH lines.
func TestStartOverhead(t *testing.T) {
	if os.Getenv("FRESHET_CONTAINERS_BENCH") != "1" {
		t.Skip("set FRESHET_CONTAINERS_BENCH=1 to measure")
	}
	n := 20
	if v, err := strconv.Atoi(os.Getenv("N")); err == nil && v > 0 {
		n = v
	}
	reg := containers.Registry(t)
	eng := containers.Engine(t)
	cli := eng.Client(t)
	ref := reg.Ref(containers.ImageEcho)
	pull(t, cli, reg, containers.ImageEcho)
	c := ctx(t, 30*time.Minute)

	api := func() (pulled, ran, removed time.Duration) {
		t0 := time.Now()
		resp, err := cli.ImagePull(c, ref, client.ImagePullOptions{RegistryAuth: reg.RegistryAuth()})
		if err == nil {
			err = resp.Wait(c)
		}
		if err != nil {
			t.Fatal(err)
		}
		pulled = time.Since(t0)
		created, err := cli.ContainerCreate(c, client.ContainerCreateOptions{Config: &container.Config{Image: ref}})
		if err != nil {
			t.Fatal(err)
		}
		wait := cli.ContainerWait(c, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
		if _, err := cli.ContainerStart(c, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wait.Result:
		case err := <-wait.Error:
			t.Fatal(err)
		}
		logs, err := cli.ContainerLogs(c, created.ID, client.ContainerLogsOptions{ShowStdout: true})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, err = stdcopy.StdCopy(&out, io.Discard, logs)
		logs.Close()
		if err != nil || out.String() != containers.EchoOutput {
			t.Fatalf("logs %q, %v", out.String(), err)
		}
		ran = time.Since(t0)
		if _, err := cli.ContainerRemove(c, created.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		return pulled, ran, time.Since(t0)
	}
	podman := func(args ...string) time.Duration {
		t0 := time.Now()
		cmd := exec.CommandContext(c, "podman", append(args, "run", "--rm", ref)...)
		cmd.Env = eng.PodmanEnv
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != containers.EchoOutput {
			t.Fatalf("podman %v run: %q, %v\n%s", args, out, err, stderr.String())
		}
		return time.Since(t0)
	}
	var apiPull, apiRun, apiRemove, plain, remote []time.Duration
	for range n {
		p, a, r := api()
		apiPull, apiRun, apiRemove = append(apiPull, p), append(apiRun, a), append(apiRemove, r)
		plain = append(plain, podman())
		remote = append(remote, podman("--remote", "--url", eng.Host))
	}
	for _, row := range []struct {
		name string
		ds   []time.Duration
	}{
		{"API pull (image present: a manifest check)", apiPull},
		{"API pull+create+start+wait+logs", apiRun},
		{"API … + remove", apiRemove},
		{"podman run --rm (CLI on the same storage)", plain},
		{"podman --remote run --rm (same service)", remote},
	} {
		fmt.Printf("BENCH|%s|n=%d|p50=%s|p90=%s|max=%s\n", row.name, len(row.ds), pct(row.ds, 50), pct(row.ds, 90), pct(row.ds, 100))
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(i, 0)].Round(time.Millisecond)
}
