package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/executortest"
)

// testGrace is the kill grace period in these tests: short, but long enough to tell "waited for
// the grace period" from "did not".
const testGrace = 300 * time.Millisecond

// loadSlack is how much longer than ideal a step may take on a busy machine under -race. Every
// bound below separates the behaviour it checks from its failure by more than this: a process
// that was not killed sleeps 30 s or more, a wait for the grace period lasts 30 s.
const loadSlack = 10 * time.Second

// testBound bounds every single wait in these tests.
const testBound = 10 * time.Second

func TestMain(m *testing.M) {
	if root := os.Getenv(envFakeRunner); root != "" {
		fakeRunner(root)
		return
	}
	code := m.Run()
	if code == 0 {
		if err := checkGoroutines(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkGoroutines fails when a goroutine of this package outlives the tests.
func checkGoroutines() error {
	var stacks string
	for range 100 {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		leaked := false
		for g := range strings.SplitSeq(stacks, "\n\n") {
			if strings.Contains(g, "executor/local.") && !strings.Contains(g, "local.TestMain") && !strings.Contains(g, "local.checkGoroutines") {
				leaked = true
			}
		}
		if !leaked {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("goroutines of the local executor outlived the tests:\n%s", stacks)
}

func newLocal(t *testing.T, opts Options) *Local {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = testGrace
	}
	l, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func TestContract(t *testing.T) {
	executortest.Run(t, func(t *testing.T) executor.Executor { return newLocal(t, Options{}) }, executortest.Options{
		KillGrace: testGrace,
		Leftovers: leftovers,
	})
}

// leftovers is the contract suite's hook. It is independent of the executor's own process
// tracking: it finds the step processes of ws by the CF_VOLUME_PATH in their environment.
func leftovers(t *testing.T, ws executor.Workspace) (running, stored []string) {
	t.Helper()
	want := []byte(executor.VolumePathEnv + "=" + ws.Path)
	running = liveProcesses(t, func(_, _ int, environ []byte) bool {
		return slices.ContainsFunc(bytes.Split(environ, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, want) })
	})
	if _, err := os.Lstat(ws.Handle); err == nil {
		stored = append(stored, ws.Handle)
	}
	return running, stored
}

// liveProcesses scans /proc for processes that are not zombies and that match accepts.
func liveProcesses(t *testing.T, match func(pid, pgid int, environ []byte) bool) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		pgid, _ := strconv.Atoi(fields[2])
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if match(pid, pgid, environ) {
			found = append(found, fmt.Sprintf("%d %s", pid, stat[bytes.IndexByte(stat, '('):end+1]))
		}
	}
	return found
}

// alive reports whether pid is a live process: kill -0 succeeds and it is not a zombie (orphans
// are reaped by init, which may take a while or, in some containers, never happen).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func prepare(t *testing.T, l *Local) executor.Workspace {
	t.Helper()
	ws, err := l.Prepare(context.Background(), executor.Build{ID: "build-" + strings.ReplaceAll(t.Name(), "/", "-")})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Cleanup(context.Background(), ws); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	return ws
}

// run runs a step with a bounded context and returns the result, the output and the time taken.
func run(t *testing.T, l *Local, ws executor.Workspace, st executor.Step) (executor.Result, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	var out executortest.Buffer
	start := time.Now()
	res, err := l.Run(ctx, ws, st, &out)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Run(%s): %v\n%s", st.Name, err, out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("Run(%s) took longer than %s", st.Name, testBound)
	}
	return res, out.String(), elapsed
}

// readPID reads a pid a step wrote to file name in the workspace.
func readPID(t *testing.T, ws executor.Workspace, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws.Path, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("%s holds %q, want a pid", name, b)
	}
	return pid
}

// treeStep starts a process tree whose members are recorded in pid files: a background child, a
// shell with a child of its own, and a process in a new session (outside the process group).
const treeStep = `sleep 30 & echo $! > bg.pid
sh -c 'sleep 30; :' & echo $! > sh.pid
setsid sleep 30 & echo $! > setsid.pid
echo $$ > leader.pid`

// checkTreeGone asserts that every process treeStep started is gone, by pid and by process group.
func checkTreeGone(t *testing.T, ws executor.Workspace) {
	t.Helper()
	leader := readPID(t, ws, "leader.pid")
	for _, f := range []string{"leader.pid", "bg.pid", "sh.pid", "setsid.pid"} {
		if pid := readPID(t, ws, f); alive(pid) {
			t.Errorf("process %d (%s) is still alive after Run returned", pid, f)
		}
	}
	if left := liveProcesses(t, func(_, pgid int, _ []byte) bool { return pgid == leader }); len(left) > 0 {
		t.Errorf("processes of the step's group %d still alive: %v", leader, left)
	}
}

func TestCancelKillsProcessTree(t *testing.T) {
	const grace = 30 * time.Second
	l := newLocal(t, Options{KillGrace: grace})
	ws := prepare(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out executortest.Buffer
	done := make(chan error, 1)
	var res executor.Result
	go func() {
		var err error
		res, err = l.Run(ctx, ws, executor.Step{Name: "tree", Commands: []string{treeStep, "echo started", "sleep 30"}}, &out)
		done <- err
	}()
	deadline := time.Now().Add(testBound)
	for !strings.Contains(out.String(), "started") {
		if time.Now().After(deadline) {
			t.Fatalf("the step did not start; output %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, f := range []string{"bg.pid", "sh.pid", "setsid.pid", "leader.pid"} {
		if pid := readPID(t, ws, f); !alive(pid) {
			t.Fatalf("before the cancel, %s (%d) is not alive: the test would prove nothing", f, pid)
		}
	}
	cancel()
	start := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// sleep and sh die on SIGTERM: no need to wait for the grace period.
	if elapsed := time.Since(start); elapsed >= loadSlack {
		t.Errorf("Run returned %s after the cancel; processes that honour SIGTERM should not wait for the grace period (%s)", elapsed, grace)
	}
	if !res.Canceled || res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("result %+v, want Canceled with exit code %d (SIGTERM)", res, 128+int(syscall.SIGTERM))
	}
	checkTreeGone(t, ws)
}

func TestTimeoutEscalatesToSIGKILL(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	const timeout = 200 * time.Millisecond
	res, _, elapsed := run(t, l, ws, executor.Step{Name: "stubborn", Timeout: timeout,
		Commands: []string{`trap '' TERM`, treeStep, "sleep 30"}})
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("result %+v, want TimedOut with exit code %d (SIGKILL)", res, 128+int(syscall.SIGKILL))
	}
	if elapsed < timeout+testGrace || elapsed > timeout+testGrace+loadSlack {
		t.Errorf("Run took %s, want about timeout + grace = %s", elapsed, timeout+testGrace)
	}
	checkTreeGone(t, ws)
}

func TestGracefulTermRunsTrap(t *testing.T) {
	l := newLocal(t, Options{KillGrace: 30 * time.Second})
	ws := prepare(t, l)
	res, out, elapsed := run(t, l, ws, executor.Step{Name: "graceful", Timeout: 200 * time.Millisecond, Commands: []string{
		`trap 'echo caught TERM; sleep 0.2; echo cleaned up; exit 0' TERM`,
		`echo started`,
		`while :; do sleep 0.05; done`,
	}})
	if !strings.Contains(out, "caught TERM\ncleaned up\n") {
		t.Errorf("output %q: want the step's TERM trap to run to its end", out)
	}
	if !res.TimedOut || res.ExitCode != 0 || res.Succeeded() {
		t.Errorf("result %+v, want TimedOut, exit code 0 and not Succeeded", res)
	}
	if elapsed > loadSlack {
		t.Errorf("Run took %s: it waited for the grace period although the step had exited", elapsed)
	}
}

// TestBackgroundProcessesEndWithStep: a step that exits while its background processes still
// hold the output pipe returns at once, and they are killed.
func TestBackgroundProcessesEndWithStep(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	res, out, elapsed := run(t, l, ws, executor.Step{Name: "leaves", Commands: []string{treeStep, "echo done"}})
	if !res.Succeeded() || res.TimedOut || res.Canceled || out != "done\n" {
		t.Errorf("result %+v, output %q; want success and %q", res, out, "done\n")
	}
	if elapsed > loadSlack {
		t.Errorf("Run took %s: it waited for background processes", elapsed)
	}
	checkTreeGone(t, ws)
}

// TestEscapedProcessHoldingOutput: a process that left both the process group and the tag but
// keeps the output pipe open cannot hold Run for long, and the output says what happened.
func TestEscapedProcessHoldingOutput(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	res, out, elapsed := run(t, l, ws, executor.Step{Name: "escape", Commands: []string{
		`env -u ` + ProcessTagEnv + ` -u ` + executor.VolumePathEnv + ` setsid sleep 60 & echo $! > escaped.pid`,
		`sleep 0.3`, // until it has left the process group
		`echo done`,
	}})
	pid := readPID(t, ws, "escaped.pid")
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatal("the escaped process is not alive: the test proves nothing")
	}
	if !res.Succeeded() || !strings.HasPrefix(out, "done\n") {
		t.Errorf("result %+v, output %q", res, out)
	}
	if !strings.Contains(out, executor.NoticePrefix+"output cut short") {
		t.Errorf("output %q: want a notice that the output was cut short", out)
	}
	if elapsed < outputDrainIdle || elapsed > outputDrainIdle+loadSlack {
		t.Errorf("Run took %s, want about the drain idle time %s", elapsed, outputDrainIdle)
	}
}

func TestTimeoutWithoutTrapDoesNotWaitForGrace(t *testing.T) {
	l := newLocal(t, Options{KillGrace: 30 * time.Second})
	ws := prepare(t, l)
	res, _, elapsed := run(t, l, ws, executor.Step{Name: "sleep", Timeout: 200 * time.Millisecond, Commands: []string{"sleep 60"}})
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("result %+v, want TimedOut by SIGTERM", res)
	}
	if elapsed > loadSlack {
		t.Errorf("Run took %s, want well under the grace period of 30s", elapsed)
	}
}

func TestEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("FRESHET_TEST_PASSED", "passed value")
	t.Setenv("FRESHET_TEST_TOKEN", "secret")
	t.Setenv("LANG", "en_GB.UTF-8")
	l := newLocal(t, Options{PassEnv: []string{"FRESHET_TEST_PASSED", "FRESHET_TEST_NOT_SET"}, Path: "/usr/bin:/bin"})
	ws := prepare(t, l)
	res, out, _ := run(t, l, ws, executor.Step{Name: "env", Commands: []string{"env"},
		Env: []executor.EnvVar{{Name: "STEP_VAR", Value: "x"}}})
	if !res.Succeeded() {
		t.Fatalf("result %+v\n%s", res, out)
	}
	vars := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		name, value, _ := strings.Cut(line, "=")
		vars[name] = value
	}
	allowed := []string{"PATH", "HOME", "TMPDIR", "LANG", "PWD", "OLDPWD", "SHLVL", "_",
		executor.VolumePathEnv, ProcessTagEnv, "FRESHET_TEST_PASSED", "STEP_VAR"}
	for name := range vars {
		if !slices.Contains(allowed, name) {
			t.Errorf("the step sees %s=%q, which is not among %v", name, vars[name], allowed)
		}
	}
	want := map[string]string{
		"PATH":                 filepath.Join(ws.Handle, binDir) + ":/usr/bin:/bin",
		"HOME":                 filepath.Join(ws.Handle, homeDir),
		"TMPDIR":               filepath.Join(ws.Handle, tmpDir),
		"LANG":                 "en_GB.UTF-8",
		executor.VolumePathEnv: ws.Path,
		"FRESHET_TEST_PASSED":  "passed value",
		"STEP_VAR":             "x",
	}
	for name, v := range want {
		if vars[name] != v {
			t.Errorf("%s = %q, want %q", name, vars[name], v)
		}
	}
	if !strings.HasPrefix(vars[ProcessTagEnv], filepath.Base(ws.Handle)+"/") {
		t.Errorf("%s = %q, want it to start with the build directory's name", ProcessTagEnv, vars[ProcessTagEnv])
	}
}

func TestImageNotice(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	res, out, _ := run(t, l, ws, executor.Step{Name: "img", Image: "golang:1.26", Commands: []string{"echo hi"}})
	if !res.ImageIgnored {
		t.Error("ImageIgnored = false for a step with an image")
	}
	if want := executor.NoticePrefix + `image "golang:1.26" is not used by the local executor: the step runs on the runner's host` + "\nhi\n"; out != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	res, out, _ = run(t, l, ws, executor.Step{Name: "noimg", Commands: []string{"echo hi"}})
	if res.ImageIgnored || out != "hi\n" {
		t.Errorf("without an image: ImageIgnored = %v, output %q", res.ImageIgnored, out)
	}
}

func TestShellAndEntryPoint(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	for _, tc := range []struct {
		name string
		step executor.Step
		code int
		want string // output without notices
		note string // a notice that must be present
	}{
		{"default shell is sh with set -e", executor.Step{Commands: []string{"echo $0 | grep -c /scripts/step-", "false", "echo no"}}, 1, "1\n", ""},
		{"bash", executor.Step{Shell: "bash", Commands: []string{`test -n "$BASH_VERSION" && echo bash`}}, 0, "bash\n", ""},
		{"absolute shell", executor.Step{Shell: "/bin/sh", Commands: []string{"echo abs"}}, 0, "abs\n", ""},
		{"missing shell", executor.Step{Shell: "no-such-shell-xyz", Commands: []string{"echo hi"}}, 127, "", "no-such-shell-xyz: not found"},
		{"entry point alone", executor.Step{EntryPoint: []string{"printf", "%s|%s\n", "a b", "c"}}, 0, "a b|c\n", ""},
		{"entry point as interpreter", executor.Step{EntryPoint: []string{"sh", "-x"}, Commands: []string{"echo traced"}}, 0, "+ set -e\n+ echo traced\ntraced\n", ""},
		{"entry point with a relative path", executor.Step{EntryPoint: []string{"./tool.sh"}, WorkingDir: "tools"}, 0, "tool ran\n", ""},
		{"not executable", executor.Step{EntryPoint: []string{"./plain.txt"}, WorkingDir: "tools"}, 126, "", "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(ws.Path, "tools"), 0o700); err != nil {
				t.Fatal(err)
			}
			_ = os.WriteFile(filepath.Join(ws.Path, "tools", "tool.sh"), []byte("#!/bin/sh\necho tool ran\n"), 0o700)
			_ = os.WriteFile(filepath.Join(ws.Path, "tools", "plain.txt"), []byte("x"), 0o600)
			tc.step.Name = "shell"
			res, out, _ := run(t, l, ws, tc.step)
			if res.ExitCode != tc.code {
				t.Errorf("exit code %d, want %d; output %q", res.ExitCode, tc.code, out)
			}
			if got := executortest.StripNotices(out); got != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
			if tc.note != "" && !strings.Contains(strings.Join(executortest.Notices(out), "\n"), tc.note) {
				t.Errorf("notices %q, want one containing %q", executortest.Notices(out), tc.note)
			}
		})
	}
	_, err := l.Run(context.Background(), ws, executor.Step{Name: "nothing", Image: "alpine"}, io.Discard)
	if !errors.Is(err, executor.ErrInvalidStep) {
		t.Errorf("a step without commands and entry point: %v, want ErrInvalidStep", err)
	}
}

func TestWorkingDirOutsideWorkspace(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	elsewhere := t.TempDir()
	res, out, _ := run(t, l, ws, executor.Step{Name: "abs", WorkingDir: elsewhere, Commands: []string{"pwd"}})
	if !res.Succeeded() || out != elsewhere+"\n" {
		t.Errorf("result %+v, output %q; want %q", res, out, elsewhere)
	}
	_, err := l.Run(context.Background(), ws, executor.Step{Name: "missing", WorkingDir: filepath.Join(elsewhere, "missing"), Commands: []string{"pwd"}}, io.Discard)
	if !errors.Is(err, executor.ErrInvalidStep) {
		t.Errorf("a missing working directory outside the workspace: %v, want ErrInvalidStep", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "missing")); err == nil {
		t.Error("the executor created a directory outside the workspace")
	}
}

func TestBadExportLinesNoticedOnce(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	res, out, _ := run(t, l, ws, executor.Step{Name: "bad", Commands: []string{
		`echo 'not an assignment' >> "$CF_VOLUME_PATH/env_vars_to_export"`, `cf_export GOOD=1`}})
	if !slices.Equal(res.Exports, []executor.EnvVar{{Name: "GOOD", Value: "1"}}) {
		t.Errorf("Exports = %v", res.Exports)
	}
	if n := executortest.Notices(out); len(n) != 1 || !strings.Contains(n[0], "line 1") {
		t.Errorf("notices %q, want one about line 1", n)
	}
	_, out, _ = run(t, l, ws, executor.Step{Name: "later", Commands: []string{"true"}})
	if n := executortest.Notices(out); len(n) != 0 {
		t.Errorf("a later step that did not touch the file repeats notices: %q", n)
	}
}

func TestPrepareLayout(t *testing.T) {
	root := t.TempDir()
	l := newLocal(t, Options{Root: root})
	ws, err := l.Prepare(context.Background(), executor.Build{ID: "../a/b c"})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if filepath.Dir(ws.Handle) != root || !strings.HasPrefix(filepath.Base(ws.Handle), "freshet-.._a_b_c-") {
		t.Errorf("build directory %q, want freshet-.._a_b_c-* directly under %s", ws.Handle, root)
	}
	if ws.BuildID != "../a/b c" || ws.Path != filepath.Join(ws.Handle, workspaceDir) {
		t.Errorf("workspace %+v", ws)
	}
	for _, d := range []string{ws.Handle, ws.Path, filepath.Join(ws.Handle, homeDir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
			t.Errorf("%s: %v, %v; want a directory with mode 0700", d, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws.Handle, binDir, executor.CFExportCommand)); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("cf_export: %v, %v; want an executable file", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws.Path, executor.ExportFile)); err != nil || len(b) != 0 {
		t.Errorf("%s: %q, %v; want an empty file", executor.ExportFile, b, err)
	}
	if err := l.Cleanup(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prepare(context.Background(), executor.Build{}); err == nil {
		t.Error("Prepare without a build ID succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Prepare(ctx, executor.Build{ID: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare with a canceled context: %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("root holds %d entries after cleanup and failed prepares, want none", len(entries))
	}
}

func TestCleanupRefusesForeignWorkspace(t *testing.T) {
	root := t.TempDir()
	l := newLocal(t, Options{Root: root})
	precious := filepath.Join(root, "precious")
	if err := os.MkdirAll(filepath.Join(precious, workspaceDir), 0o700); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, ws := range []executor.Workspace{
		{Handle: precious, Path: filepath.Join(precious, workspaceDir)},
		{Handle: filepath.Join(other, "freshet-x"), Path: filepath.Join(other, "freshet-x", workspaceDir)},
		{Handle: root, Path: filepath.Join(root, workspaceDir)},
		{},
	} {
		if err := l.Cleanup(context.Background(), ws); !errors.Is(err, executor.ErrNoWorkspace) {
			t.Errorf("Cleanup(%+v) = %v, want ErrNoWorkspace", ws, err)
		}
		if _, err := l.Run(context.Background(), ws, executor.Step{Commands: []string{"true"}}, io.Discard); !errors.Is(err, executor.ErrNoWorkspace) {
			t.Errorf("Run(%+v) = %v, want ErrNoWorkspace", ws, err)
		}
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("a directory the executor did not make was touched: %v", err)
	}
}

// TestCleanupKillsOrphans: processes of a build that outlived their runner (here: started by
// hand with the build's tag) are killed by Cleanup.
func TestCleanupKillsOrphans(t *testing.T) {
	l := newLocal(t, Options{})
	ws, err := l.Prepare(context.Background(), executor.Build{ID: "orphans"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{ProcessTagEnv + "=" + filepath.Base(ws.Handle) + "/999"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// A process of another build must survive.
	other := exec.Command("sleep", "30")
	other.Env = []string{ProcessTagEnv + "=" + filepath.Base(ws.Handle) + "x/1"}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	if err := l.Cleanup(context.Background(), ws); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	select {
	case err := <-waited:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("orphan ended with %v, want SIGKILL", err)
		}
	case <-time.After(testBound):
		t.Fatal("the orphan survived Cleanup")
	}
	if !alive(other.Process.Pid) {
		t.Error("Cleanup killed a process of another build")
	}
	if _, err := os.Stat(ws.Handle); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("build directory after Cleanup: %v", err)
	}
}

// failingWriter fails every write after the first.
type failingWriter struct{ writes int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.writes++; w.writes > 1 {
		return 0, errors.New("log upload failed")
	}
	return len(p), nil
}

func TestOutputWriteErrorDoesNotBlockStep(t *testing.T) {
	l := newLocal(t, Options{})
	ws := prepare(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	res, err := l.Run(ctx, ws, executor.Step{Name: "chatty", Commands: []string{"seq 1 100000", "echo ok > finished"}}, &failingWriter{})
	if err == nil || !strings.Contains(err.Error(), "log upload failed") {
		t.Errorf("Run error %v, want the writer's error", err)
	}
	if !res.Succeeded() {
		t.Errorf("result %+v: the step should have run to completion", res)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "finished")); err != nil {
		t.Errorf("the step did not finish: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		field string // "" when valid
	}{
		{"zero", Options{}, ""},
		{"full", Options{Root: "/tmp", KillGrace: time.Second, Path: "/bin", PassEnv: []string{"HTTPS_PROXY"}}, ""},
		{"relative root", Options{Root: "tmp"}, "Root"},
		{"negative grace", Options{KillGrace: -time.Second}, "KillGrace"},
		{"empty pass name", Options{PassEnv: []string{""}}, "PassEnv[0]"},
		{"reserved pass name", Options{PassEnv: []string{"HTTPS_PROXY", "PATH"}}, "PassEnv[1]"},
		{"pass name with =", Options{PassEnv: []string{"A=B"}}, "PassEnv[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.field != "" && (!errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field+" = ")):
				t.Errorf("Validate() = %v, want ErrInvalidOptions naming %s", err, tc.field)
			}
		})
	}
	if _, err := New(Options{Root: filepath.Join(t.TempDir(), "missing")}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New with a missing root: %v", err)
	}
}

func TestParseStat(t *testing.T) {
	st, ok := parseStat([]byte("1234 (a (weird) name) S 1 777 777 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10"))
	if want := (procStat{comm: "a (weird) name", state: 'S', pgrp: 777, start: 98765}); !ok || st != want {
		t.Errorf("parseStat = %+v, %v; want %+v", st, ok, want)
	}
	if _, ok := parseStat([]byte("garbage")); ok {
		t.Error("parseStat accepted garbage")
	}
}

// envFakeRunner makes the test binary a runner that runs one step and waits to be killed: the
// value is the executor's Root.
const envFakeRunner = "FRESHET_LOCAL_TEST_FAKE_RUNNER"

// fakeRunner runs a step that starts a child in its process group and a daemon that leaves it
// (setsid); both write their PID to the workspace, then loop.
func fakeRunner(root string) {
	l, err := New(Options{Root: root})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ws, err := l.Prepare(context.Background(), executor.Build{ID: "fake"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	_, err = l.Run(context.Background(), ws, executor.Step{Name: "s", Commands: []string{
		`setsid sh -c 'echo $$ > daemon.pid; while :; do sleep 0.05; done' > /dev/null 2>&1 &`,
		`sh -c 'echo $$ > child.pid; while :; do sleep 0.05; done'`,
	}}, io.Discard)
	fmt.Fprintln(os.Stderr, "the step ended:", err)
	os.Exit(2)
}

// TestStepsDieWithTheirRunner: when the runner process is SIGKILLed, its step's processes die
// too — the child in the step's group and the daemon that left it — instead of running on as
// orphans.
func TestStepsDieWithTheirRunner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signals are Linux's")
	}
	root := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runner := exec.Command(self)
	runner.Env = append(os.Environ(), envFakeRunner+"="+root)
	var stderr bytes.Buffer
	runner.Stderr = &stderr
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(testBound)
	for len(pids) < 2 {
		if time.Now().After(deadline) {
			runner.Process.Kill()
			runner.Wait()
			t.Fatalf("the step did not start its processes: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
		pids = pids[:0]
		for _, name := range []string{"child.pid", "daemon.pid"} {
			matches, _ := filepath.Glob(filepath.Join(root, "freshet-*", workspaceDir, name))
			if len(matches) == 1 {
				if b, err := os.ReadFile(matches[0]); err == nil {
					if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
						pids = append(pids, pid)
					}
				}
			}
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	runner.Process.Kill()
	runner.Wait()
	deadline = time.Now().Add(testBound)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step processes %v outlived their runner by %s", left, testBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSweepCleansUpDeadRunnersBuilds: Sweep removes the build directories of runners that are
// gone, with the processes still tagged with them, and leaves a live runner's alone.
func TestSweepCleansUpDeadRunnersBuilds(t *testing.T) {
	l := newLocal(t, Options{})
	dead, err := l.Prepare(context.Background(), executor.Build{ID: "dead"})
	if err != nil {
		t.Fatal(err)
	}
	// A runner that is gone: no process has this PID and start time.
	if err := os.WriteFile(filepath.Join(dead.Handle, ownerFile), []byte("999999999 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", "30")
	orphan.Env = []string{ProcessTagEnv + "=" + filepath.Base(dead.Handle) + "/1"}
	orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { orphan.Wait(); close(waited) }()
	t.Cleanup(func() { orphan.Process.Kill(); <-waited })
	live, err := l.Prepare(context.Background(), executor.Build{ID: "live"}) // this process's
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(l.opts.Root, dirPrefix+"old-123") // made before owner files existed
	if err := os.MkdirAll(filepath.Join(old, workspaceDir), 0o700); err != nil {
		t.Fatal(err)
	}

	swept, err := l.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(swept)
	if want := []string{filepath.Base(dead.Handle), filepath.Base(old)}; !slices.Equal(swept, want) {
		t.Errorf("swept %v, want %v", swept, want)
	}
	select {
	case <-waited:
	case <-time.After(testBound):
		t.Error("the dead runner's step process survived the sweep")
	}
	for _, d := range []string{dead.Handle, old} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the sweep: %v", d, err)
		}
	}
	if _, err := os.Stat(live.Path); err != nil {
		t.Errorf("the live runner's workspace was swept: %v", err)
	}
	if err := l.Cleanup(context.Background(), live); err != nil {
		t.Fatal(err)
	}
}
