package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/proc"

	"github.com/freshet-dev/freshet/client"
)

// startProc starts the freshet binary with args and env, logging to a buffer.
func startProc(t *testing.T, env []string, args ...string) (*exec.Cmd, *proc.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &proc.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, out
}

func waitReady(t *testing.T, url string, log *proc.Buffer) {
	t.Helper()
	c := client.New(url)
	deadline := time.Now().Add(20 * time.Second)
	for c.Health(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("server at %s not ready:\n%s", url, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The control plane is killed (SIGKILL) in the middle of a build and started again: the
// runner keeps its lease, resends what was not acknowledged, and the build finishes with every
// log line exactly once.
func TestControlPlaneRestartMidBuild(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	port := proc.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	serverArgs := []string{"server", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn"}
	env := []string{"FRESHET_ADMIN_PASSWORD=restart-password-1"}
	srv, srvLog := startProc(t, env, serverArgs...)
	waitReady(t, url, srvLog)

	login, err := client.New(url).Login(ctx, client.LoginRequest{Email: "admin@freshet.local", Password: "restart-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	admin := client.New(url, client.WithToken(login.Token))
	reg, err := admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	_, runLog := startProc(t, []string{"FRESHET_RUNNER_TOKEN=" + reg.Token}, "runner", "--server", url, "--executor", "local", "--work-dir", t.TempDir(), "--log-level", "debug")
	admin.CreateProject(ctx, "p")
	const lines = 80
	spec := fmt.Sprintf("version: '1.0'\nsteps:\n  count:\n    commands:\n      - 'for i in $(seq 1 %d); do echo \"line $i\"; sleep 0.05; done'\n", lines)
	if _, err := admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "count", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	b, err := admin.RunPipeline(ctx, "p/count", client.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the build is well under way, then kill the control plane.
	deadline := time.Now().Add(20 * time.Second)
	for {
		log, _ := admin.BuildLog(ctx, b.ID, 0)
		if bytes.Contains(log, []byte("line 15\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("build did not start:\nserver:\n%s\nrunner:\n%s", srvLog, runLog)
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Process.Signal(syscall.SIGKILL)
	srv.Wait()
	time.Sleep(1500 * time.Millisecond) // the runner keeps running the step and buffering its log
	_, srvLog2 := startProc(t, env, serverArgs...)
	waitReady(t, url, srvLog2)

	var final client.Build
	deadline = time.Now().Add(60 * time.Second)
	for {
		final, err = admin.GetBuild(ctx, b.ID)
		if err == nil && final.Status != "running" && final.Status != "queued" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("build did not finish after the restart: %+v\nrunner:\n%s", final, runLog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := admin.BuildLog(ctx, b.ID, 0)
	if final.Status != "success" || final.Attempt != 1 {
		t.Fatalf("build %s attempt %d (%s)\n%s\nrunner:\n%s", final.Status, final.Attempt, final.Reason, log, runLog)
	}
	var got []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, "line ") {
			got = append(got, l)
		}
	}
	if len(got) != lines {
		t.Fatalf("%d count lines in the log, want %d:\n%s", len(got), lines, log)
	}
	for i, l := range got {
		if l != fmt.Sprintf("line %d", i+1) {
			t.Fatalf("line %d is %q: lost, doubled or out of order\n%s", i+1, l, log)
		}
	}
}

func TestMasterKeyRotation(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	data := filepath.Join(home, "data")
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "c.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN="}
	in := startUp(t, data, proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=rotate-password-1")
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "rotate-password-1")
	mustCLI(t, env, "context", "create", "vault", "--type", "secret", "--kv", "API_KEY=k-123456789", "--kv", "OTHER=o-987654321")
	mustCLI(t, env, "project", "create", "p")
	spec := filepath.Join(home, "p.yml")
	os.WriteFile(spec, []byte("version: '1.0'\nsteps:\n  a:\n    commands: ['echo $API_KEY $PASSWORD']\n"), 0o600)
	mustCLI(t, env, "pipeline", "create", "p/x", "-f", spec, "--context", "vault", "--secret-var", "PASSWORD=pw-55555555",
		"--trigger", "type=git;provider=github;repo=a/b;events=push.heads")
	in.stop(t)
	before, _ := os.ReadFile(filepath.Join(data, "master.key"))

	out := mustCLI(t, nil, "master-key", "rotate", "--data-dir", data, "--retire-old")
	if !strings.Contains(out, "re-encrypted 4 secret values") || !strings.Contains(out, "Retired key") {
		t.Fatalf("rotate: %s", out)
	}
	after, _ := os.ReadFile(filepath.Join(data, "master.key"))
	keyLines := 0
	for _, l := range strings.Split(string(after), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			keyLines++
		}
	}
	if bytes.Equal(before, after) || keyLines != 1 {
		t.Fatalf("key file not rotated to one new key:\n%s", after)
	}
	in2 := startUp(t, data, proc.FreePort(t))
	env2 := append(env[:len(env):len(env)], "FRESHET_SERVER="+in2.url)
	if out := mustCLI(t, env2, "context", "get", "vault", "--decrypt", "-o", "json"); !strings.Contains(out, "k-123456789") || !strings.Contains(out, "o-987654321") {
		t.Fatalf("secret unreadable after rotation: %s", out)
	}
	// The build still gets (and masks) both secrets: the pipeline variable was re-encrypted too.
	runOut, err := cli(t, env2, "", "pipeline", "run", "p/x", "--follow")
	if err != nil || !strings.Contains(runOut, "**** ****") || strings.Contains(runOut, "pw-55555555") {
		t.Fatalf("build after rotation: %v\n%s", err, runOut)
	}
	_ = ctx
	in2.stop(t)
}
