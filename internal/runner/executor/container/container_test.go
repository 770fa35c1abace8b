package container

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/executortest"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

func TestMain(m *testing.M) { containers.Main(m) }

// testGrace is the kill grace of the executors under test.
const testGrace = time.Second

// env is the shared engine and registry with the test images pulled.
type env struct {
	reg *containers.RegistryInstance
	eng *containers.EngineInstance
	cli *client.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{reg: containers.Registry(t), eng: containers.Engine(t)}
	e.cli = e.eng.Client(t)
	return e
}

// pull pulls test images so that steps with the default pull policy find them.
func (e *env) pull(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		resp, err := e.cli.ImagePull(ctx, e.reg.Ref(n), client.ImagePullOptions{RegistryAuth: e.reg.RegistryAuth()})
		if err == nil {
			err = resp.Wait(ctx)
		}
		cancel()
		if err != nil {
			t.Fatalf("pull %s: %v", n, err)
		}
	}
}

// registry is the test registry as a job carries it.
func (e *env) registry() executor.Registry {
	return executor.Registry{Name: "loopback", URL: e.reg.Addr, Username: e.reg.Username, Password: e.reg.Password, CA: string(e.reg.CACert)}
}

func (e *env) executor(t *testing.T, opts Options) *Container {
	t.Helper()
	if opts.Host == "" {
		opts.Host = e.eng.Host
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = testGrace
	}
	if opts.Runner == "" {
		opts.Runner = "test-" + t.Name()
	}
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// leftovers is the contract suite's hook: what the engine still has with the workspace's
// label, asked through a client of its own.
func (e *env) leftovers(t *testing.T, ws executor.Workspace) (running, stored []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := client.Filters{}.Add("label", LabelWorkspace+"="+ws.Handle)
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		if c.State == "running" || c.State == "created" || c.State == "paused" {
			running = append(running, c.Names[0]+" "+string(c.State))
		} else {
			stored = append(stored, c.Names[0]+" "+string(c.State))
		}
	}
	vs, err := e.cli.VolumeList(ctx, client.VolumeListOptions{Filters: client.Filters{}.Add("name", ws.Handle)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Items {
		if v.Name == ws.Handle {
			stored = append(stored, "volume "+v.Name)
		}
	}
	ns, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		stored = append(stored, "network "+n.Name)
	}
	return running, stored
}

// TestContract runs every case of the executor contract on a real engine (Podman's Docker API
// here), with steps in the busybox test image.
func TestContract(t *testing.T) {
	e := newEnv(t)
	e.pull(t, containers.ImageBusybox)
	executortest.Run(t, func(t *testing.T) executor.Executor { return e.executor(t, Options{}) }, executortest.Options{
		Image:     e.reg.Ref(containers.ImageBusybox),
		KillGrace: testGrace,
		Slack:     5 * time.Second,
		Leftovers: e.leftovers,
	})
}

// TestPullPolicyAndCredentials: an image is pulled with the credentials of the registry its
// host names; without them the step fails with one line naming the image; Never does not pull.
func TestPullPolicyAndCredentials(t *testing.T) {
	e := newEnv(t)
	c := e.executor(t, Options{})
	ctx := context.Background()
	ws, err := c.Prepare(ctx, executor.Build{ID: "pull"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Cleanup(ctx, ws)
	image := e.reg.Ref(containers.ImageNonRoot)
	_, _ = e.cli.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true})
	run := func(st executor.Step) (executor.Result, string) {
		var out executortest.Buffer
		res, err := c.Run(ctx, ws, st, &out)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res, out.String()
	}
	res, out := run(executor.Step{Name: "never", Image: image, PullPolicy: executor.PullNever})
	if res.ExitCode == 0 || !strings.Contains(res.Message, image) || !strings.Contains(res.Message, "Never") {
		t.Errorf("Never with the image absent: %+v\n%s", res, out)
	}
	res, out = run(executor.Step{Name: "anonymous", Image: image})
	if res.ExitCode == 0 || !strings.Contains(res.Message, image) || !strings.Contains(res.Message, "could not be pulled") || strings.Contains(res.Message, "\n") {
		t.Errorf("without credentials: %+v\n%s", res, out)
	}
	res, out = run(executor.Step{Name: "with-credentials", Image: image, Registries: []executor.Registry{e.registry()}})
	if !res.Succeeded() || !strings.Contains(out, "uid=1000(freshet)") || !strings.Contains(out, "registry loopback") {
		t.Errorf("with credentials: %+v\n%s", res, out)
	}
}

// TestSweep: a new executor with the runner's name removes what an earlier one left (a running
// step container, a service network, the workspace volume), and nothing of another runner's.
func TestSweep(t *testing.T) {
	e := newEnv(t)
	e.pull(t, containers.ImageBusybox)
	image := e.reg.Ref(containers.ImageBusybox)
	ctx := context.Background()
	left := e.executor(t, Options{Runner: "sweep-me"})
	other := e.executor(t, Options{Runner: "sweep-other"})
	ws, err := left.Prepare(ctx, executor.Build{ID: "crashed"})
	if err != nil {
		t.Fatal(err)
	}
	keep, err := other.Prepare(ctx, executor.Build{ID: "alive"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Cleanup(ctx, keep)
	network, msg, err := left.StartServices(ctx, ws, executor.ServiceSet{Name: "svc", Services: []executor.Service{{Name: "web", Image: e.reg.Ref(containers.ImageServer)}}}, nil)
	if err != nil || msg != "" {
		e.pull(t, containers.ImageServer)
		network, msg, err = left.StartServices(ctx, ws, executor.ServiceSet{Name: "svc", Services: []executor.Service{{Name: "web", Image: e.reg.Ref(containers.ImageServer)}}}, nil)
		if err != nil || msg != "" {
			t.Fatalf("start services: %q %v", msg, err)
		}
	}
	// A step still running when its runner died.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var out executortest.Buffer
	go func() {
		defer close(done)
		_, _ = left.Run(runCtx, ws, executor.Step{Name: "sleeper", Image: image, Commands: []string{"echo up", "sleep 60"}, Networks: []string{network}}, &out)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "up") {
		if time.Now().After(deadline) {
			t.Fatalf("the step did not start: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if running, stored := e.leftovers(t, ws); len(running) < 2 || len(stored) < 2 {
		t.Fatalf("before the sweep: running %v, stored %v; want the step and the service running, the volume and network stored", running, stored)
	}
	swept, err := e.executor(t, Options{Runner: "sweep-me"}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 1 || swept[0] != ws.Handle {
		t.Errorf("swept %v, want [%s]", swept, ws.Handle)
	}
	if running, stored := e.leftovers(t, ws); len(running)+len(stored) > 0 {
		t.Errorf("after the sweep: running %v, stored %v", running, stored)
	}
	if _, stored := e.leftovers(t, keep); len(stored) == 0 {
		t.Error("the sweep removed another runner's workspace")
	}
	stop()
	<-done
}
