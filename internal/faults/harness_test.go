package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	testproc "github.com/freshet-dev/freshet/internal/testenv/proc"
)

// binary is the freshet binary TestMain built.
var binary string

func TestMain(m *testing.M) {
	bin, cleanup, err := testproc.BuildFreshet()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// row logs one measurement of the suite's table: item of the reliability issue, what was
// measured, and its value (a count, or seconds with one decimal).
func row(t *testing.T, item, what string, value any) {
	t.Helper()
	if d, ok := value.(time.Duration); ok {
		value = fmt.Sprintf("%.1f", d.Seconds())
	}
	t.Logf("FAULT|%s|%s|%v", item, what, value)
}

// backend names the database the control plane runs on in this run.
func backend() string {
	if os.Getenv(storetest.EnvPostgres) != "" {
		return "postgres"
	}
	return "sqlite"
}

// proc is a running freshet process.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testproc.Buffer
	done chan struct{}
	err  error // the exit status, once done is closed
}

// start runs the freshet binary with args; the process is killed when the test ends.
func start(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(binary, args...), out: &testproc.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s output:\n%s", p.name, p.out)
		}
	})
	return p
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to limit for the process to end and reports how long it took (or false).
func (p *proc) waitExit(limit time.Duration) (time.Duration, bool) {
	began := time.Now()
	select {
	case <-p.done:
		return time.Since(began), true
	case <-time.After(limit):
		return time.Since(began), false
	}
}

// waitFor polls cond every 20 ms until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const adminPassword = "faults-password-1"

// controlPlane is a `freshet server` (or `freshet up`) that a test can kill and start again on
// the same database and port.
type controlPlane struct {
	t     *testing.T
	url   string
	args  []string
	env   []string
	proc  *proc
	admin *client.Client
	runs  int
}

// newControlPlane starts `freshet <mode>` (server or up) on a fresh database: PostgreSQL when
// FRESHET_TEST_POSTGRES is set, SQLite in its data dir otherwise. extra are more flags.
func newControlPlane(t *testing.T, mode string, extra ...string) *controlPlane {
	t.Helper()
	cp := prepareControlPlane(t, mode, extra...)
	cp.begin()
	return cp
}

// prepareControlPlane is newControlPlane without starting it: a test may change its flags and
// environment (cp.args, cp.env), then call begin.
func prepareControlPlane(t *testing.T, mode string, extra ...string) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	port := testproc.FreePort(t)
	cp := &controlPlane{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", port),
		env: []string{"FRESHET_ADMIN_PASSWORD=" + adminPassword, "FRESHET_SERVER=", "FRESHET_TOKEN="}}
	cp.args = []string{mode, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", filepath.Join(dir, "data"), "--log-level", "debug"}
	if backend() == "postgres" {
		keys := filepath.Join(dir, "master.key")
		if out, err := exec.Command(binary, "master-key", "generate", keys).CombinedOutput(); err != nil {
			t.Fatalf("master-key generate: %v\n%s", err, out)
		}
		cp.args = append(cp.args, "--db", storetest.DSN(t, store.Postgres), "--master-key-file", keys)
	}
	cp.args = append(cp.args, extra...)
	return cp
}

// begin starts a prepared control plane and logs in as its admin.
func (cp *controlPlane) begin() {
	cp.t.Helper()
	cp.start()
	login, err := client.New(cp.url).Login(context.Background(), client.LoginRequest{Email: "admin@freshet.local", Password: adminPassword})
	if err != nil {
		cp.t.Fatal(err)
	}
	cp.admin = client.New(cp.url, client.WithToken(login.Token))
}

// start starts the control plane and waits until it is ready.
func (cp *controlPlane) start() {
	cp.t.Helper()
	cp.runs++
	cp.proc = start(cp.t, fmt.Sprintf("control plane (start %d)", cp.runs), cp.env, cp.args...)
	waitFor(cp.t, 30*time.Second, "control plane ready", func() bool {
		if cp.proc.exited() {
			cp.t.Fatalf("the control plane exited: %v\n%s", cp.proc.err, cp.proc.out)
		}
		resp, err := http.Get(cp.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kill SIGKILLs the control plane.
func (cp *controlPlane) kill() { cp.proc.kill() }

// runner registers a runner and starts `freshet runner` for it with the local executor in
// workDir (a new temp dir when empty). It returns the process and the token, to start it again.
func (cp *controlPlane) runner(name, workDir string, extra ...string) (*proc, []string) {
	cp.t.Helper()
	reg, err := cp.admin.RegisterRunner(context.Background(), client.RegisterRunnerRequest{Name: name})
	if err != nil {
		cp.t.Fatal(err)
	}
	if workDir == "" {
		workDir = cp.t.TempDir()
	}
	args := append([]string{"runner", "--server", cp.url, "--executor", "local", "--work-dir", workDir, "--log-level", "debug"}, extra...)
	env := []string{"FRESHET_RUNNER_TOKEN=" + reg.Token}
	return start(cp.t, "runner "+name, env, args...), append(env, args...)
}

// pipeline creates project p (once) and pipeline p/name with spec.
func (cp *controlPlane) pipeline(name, spec string) string {
	cp.t.Helper()
	ctx := context.Background()
	if _, err := cp.admin.GetProject(ctx, "p"); err != nil {
		if _, err := cp.admin.CreateProject(ctx, "p"); err != nil {
			cp.t.Fatal(err)
		}
	}
	if _, err := cp.admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: name, Spec: spec}); err != nil {
		cp.t.Fatal(err)
	}
	return "p/" + name
}

// run queues a build of pipeline ref.
func (cp *controlPlane) run(ref string, vars map[string]string) client.Build {
	cp.t.Helper()
	b, err := cp.admin.RunPipeline(context.Background(), ref, client.RunRequest{Variables: vars})
	if err != nil {
		cp.t.Fatal(err)
	}
	return b
}

// build returns build id's current state (the zero Build while the control plane is away).
func (cp *controlPlane) build(id string) client.Build {
	b, _ := cp.admin.GetBuild(context.Background(), id)
	return b
}

// finished reports whether a build reached a final status.
func finished(b client.Build) bool {
	switch b.Status {
	case "success", "failed", "terminated", "error":
		return true
	}
	return false
}

// waitFinished waits until every build in ids has ended and returns their final states.
func (cp *controlPlane) waitFinished(limit time.Duration, ids ...string) []client.Build {
	cp.t.Helper()
	out := make([]client.Build, len(ids))
	waitFor(cp.t, limit, "builds finished", func() bool {
		for i, id := range ids {
			if !finished(out[i]) {
				out[i] = cp.build(id)
			}
			if !finished(out[i]) {
				return false
			}
		}
		return true
	})
	return out
}

// log returns a build's whole stored log.
func (cp *controlPlane) log(id string) string {
	b, _ := cp.admin.BuildLog(context.Background(), id, 0)
	return string(b)
}

func runnerRequest(name string) client.RegisterRunnerRequest {
	return client.RegisterRunnerRequest{Name: name}
}
