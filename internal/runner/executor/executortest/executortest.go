// Package executortest is the contract suite every executor.Executor must pass: call Run from the
// implementation's tests with a constructor and Options. The suite asserts what a pipeline author
// would observe — output, exit codes, environment, working directory, the shared workspace,
// cf_export, timeouts, cancellation and cleanup — using only POSIX sh and tools that busybox and
// coreutils both have (echo, printf, cat, env, pwd, seq, sleep, wc, touch, mkdir, chmod, test).
//
// The suite sets an environment variable in the test process (t.Setenv), so neither it nor its
// caller may run in parallel with other tests.
package executortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// DefaultImage is the image the suite's steps name when Options.Image is empty.
const DefaultImage = "busybox:1.37"

// DefaultSlack is Options.Slack when it is zero: generous, because the suite runs on busy
// machines under -race, and still far below the 30 s a step that was not stopped would take.
const DefaultSlack = 10 * time.Second

// runnerSecretEnv is set in the test process; no step may see it.
const runnerSecretEnv = "FRESHET_CONTRACT_RUNNER_SECRET"

// Options adapt the suite to the executor under test.
type Options struct {
	// Image is the image the suite's steps run in (default DefaultImage). It needs a POSIX sh
	// and the tools listed in the package comment.
	Image string
	// KillGrace is the grace period between SIGTERM and SIGKILL the executor under test was
	// configured with (required; keep it short, at most a second or two).
	KillGrace time.Duration
	// Slack is how much longer than ideal the executor may take to start a step, stop it, and
	// report it (default DefaultSlack). An executor that starts pods needs more than one that
	// starts processes.
	Slack time.Duration
	// Leftovers reports what the executor still holds for ws, each item described for a failure
	// message: running lists the step processes (or pods) that are still alive; stored lists the
	// storage (directories, volumes) that still exists. Required. The suite checks that the hook
	// sees a running step and a prepared workspace, so a hook that never finds anything fails.
	Leftovers func(t *testing.T, ws executor.Workspace) (running, stored []string)
	// NoExecution, when set, says why the executor under test cannot run a step's commands
	// here (for example a cluster whose fake node runs no containers and serves no logs): the
	// subtests that observe what commands do are skipped with that reason, and only Name,
	// InvalidStep and Cleanup run. The executor's steps must still end, and succeed.
	NoExecution string
	// UnorderedStreams, when set, says why the executor under test cannot keep the order
	// between a step's stdout and stderr (a container runtime that logs them as two streams
	// and copies each separately): ChattyStep then checks that no line is lost or duplicated
	// and that each stream keeps its own order, not how the two interleave.
	UnorderedStreams string
}

// Run runs the contract suite against the executors newExecutor returns (one per subtest).
func Run(t *testing.T, newExecutor func(t *testing.T) executor.Executor, opts Options) {
	if opts.Leftovers == nil {
		t.Fatal("executortest.Options.Leftovers is required")
	}
	if opts.KillGrace <= 0 {
		t.Fatal("executortest.Options.KillGrace is required: the executor's grace period between SIGTERM and SIGKILL")
	}
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	if opts.Slack == 0 {
		opts.Slack = DefaultSlack
	}
	// Set before any executor exists, so that one reading its environment at construction
	// would see it too.
	t.Setenv(runnerSecretEnv, "runner-token-must-not-leak")
	s := &suite{opts: opts, newExecutor: newExecutor}

	// executes marks the subtests that need step commands to run.
	executes := func(test func(*testing.T)) func(*testing.T) {
		return func(t *testing.T) {
			if opts.NoExecution != "" {
				t.Skipf("needs step commands to run, and this executor cannot run them here: %s", opts.NoExecution)
			}
			test(t)
		}
	}
	t.Run("Name", s.testName)
	t.Run("Output", executes(s.testOutput))
	t.Run("Streaming", executes(s.testStreaming))
	t.Run("ExitCodes", executes(s.testExitCodes))
	t.Run("Environment", executes(s.testEnvironment))
	t.Run("WorkingDir", executes(s.testWorkingDir))
	t.Run("SharedWorkspace", executes(s.testSharedWorkspace))
	t.Run("SeparateWorkspaces", executes(s.testSeparateWorkspaces))
	t.Run("CFExport", executes(s.testCFExport))
	t.Run("InvalidStep", s.testInvalidStep)
	t.Run("Timeout", executes(s.testTimeout))
	t.Run("Cancel", executes(s.testCancel))
	t.Run("CanceledBeforeStart", executes(s.testCanceledBeforeStart))
	t.Run("ParallelSteps", executes(s.testParallel))
	t.Run("ChattyStep", executes(s.testChatty))
	t.Run("Cleanup", s.testCleanup)
}

type suite struct {
	opts        Options
	newExecutor func(t *testing.T) executor.Executor
}

// env is an executor and one prepared workspace, cleaned up when the test ends.
type env struct {
	t  *testing.T
	s  *suite
	ex executor.Executor
	ws executor.Workspace
}

// setup creates an executor and prepares a workspace for a build named after the test.
func (s *suite) setup(t *testing.T) *env {
	t.Helper()
	ex := s.newExecutor(t)
	ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(0))
	defer cancel()
	id := fmt.Sprintf("contract-%s-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), time.Now().UnixNano()%1e6)
	ws, err := ex.Prepare(ctx, executor.Build{ID: id, Labels: map[string]string{"freshet.dev/test": "contract"}})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if ws.Path == "" || !path.IsAbs(ws.Path) {
		t.Fatalf("Prepare: Workspace.Path = %q, want an absolute path", ws.Path)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(0))
		defer cancel()
		if err := ex.Cleanup(ctx, ws); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	})
	return &env{t: t, s: s, ex: ex, ws: ws}
}

// with returns a copy of e that reports to t (a subtest's).
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// stepBound is how long a step that should take d may take at most.
func (s *suite) stepBound(d time.Duration) time.Duration {
	return d + s.opts.KillGrace + 5*s.opts.Slack
}

// step returns a step running commands in the suite's image.
func (s *suite) step(name string, commands ...string) executor.Step {
	return executor.Step{Name: name, Image: s.opts.Image, Commands: commands}
}

// run runs st to completion (bounded in time) and returns its result and output without
// executor notices.
func (e *env) run(st executor.Step) (executor.Result, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.s.stepBound(st.Timeout))
	defer cancel()
	var out Buffer
	res, err := e.ex.Run(ctx, e.ws, st, &out)
	if err != nil {
		e.t.Fatalf("Run(%s): %v\noutput:\n%s", st.Name, err, out.String())
	}
	if ctx.Err() != nil {
		e.t.Fatalf("Run(%s) did not end within %s; output:\n%s", st.Name, e.s.stepBound(st.Timeout), out.String())
	}
	return res, StripNotices(out.String())
}

// mustSucceed runs st and fails the test unless it succeeded.
func (e *env) mustSucceed(st executor.Step) (executor.Result, string) {
	e.t.Helper()
	res, out := e.run(st)
	if !res.Succeeded() {
		e.t.Fatalf("step %s: %+v, want success; output:\n%s", st.Name, res, out)
	}
	return res, out
}

// running returns the executor's running leftovers for the workspace.
func (e *env) running() []string {
	running, _ := e.s.opts.Leftovers(e.t, e.ws)
	return running
}

// waitFor polls cond every 20 ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *suite) testName(t *testing.T) {
	if name := s.newExecutor(t).Name(); name == "" || strings.TrimSpace(name) != name {
		t.Fatalf("Name() = %q, want a non-empty name without spaces around it", name)
	}
}

// testOutput: stdout and stderr merged in the order written, bytes as written (a final line
// without newline included), and an ignored image reported in a notice.
func (s *suite) testOutput(t *testing.T) {
	e := s.setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(0))
	defer cancel()
	var out Buffer
	// The pauses let an executor that reads stdout and stderr separately (container logs)
	// keep their order; writes to one stream need none.
	st := s.step("output",
		`echo out1`, `echo out2`, `sleep 0.2`, `echo err1 >&2`, `sleep 0.2`,
		`echo out3`, `printf 'tab\there, no newline'`)
	res, err := e.ex.Run(ctx, e.ws, st, &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Succeeded() {
		t.Fatalf("result %+v, want success; output:\n%s", res, out.String())
	}
	got := strings.TrimSuffix(StripNotices(out.String()), "\n")
	if want := "out1\nout2\nerr1\nout3\ntab\there, no newline"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if res.ImageIgnored {
		if !strings.Contains(strings.Join(Notices(out.String()), "\n"), s.opts.Image) {
			t.Errorf("Result.ImageIgnored but no notice names the image %q; output:\n%s", s.opts.Image, out.String())
		}
	} else if n := Notices(out.String()); len(n) > 0 && strings.Contains(strings.Join(n, "\n"), "not used") {
		t.Errorf("a notice says the image is not used but Result.ImageIgnored is false: %q", n)
	}
	if res.Duration <= 0 || res.Duration > s.stepBound(400*time.Millisecond) {
		t.Errorf("Duration = %s, want between 0 and %s", res.Duration, s.stepBound(400*time.Millisecond))
	}
}

// testStreaming: output reaches out while the step runs; a second step runs in the same
// workspace at the same time and releases the first.
func (s *suite) testStreaming(t *testing.T) {
	e := s.setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(5*time.Second))
	defer cancel()
	var out Buffer
	type ran struct {
		res executor.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := e.ex.Run(ctx, e.ws, s.step("waiter",
			`printf 'waiting for go\n'`,
			`i=0; while [ ! -e "$CF_VOLUME_PATH/go" ]; do i=$((i+1)); [ $i -lt 200 ] || exit 9; sleep 0.05; done`,
			`echo released`), &out)
		done <- ran{res, err}
	}()
	waitFor(t, s.stepBound(0), "the first line of a running step to reach out", func() bool {
		return strings.Contains(out.String(), "waiting for go\n")
	})
	if strings.Contains(out.String(), "released") {
		t.Fatal("the step went on before it was released")
	}
	e.mustSucceed(s.step("releaser", `touch "$CF_VOLUME_PATH/go"`))
	r := <-done
	if r.err != nil {
		t.Fatalf("Run(waiter): %v", r.err)
	}
	if !r.res.Succeeded() {
		t.Fatalf("waiter: %+v, want success; output:\n%s", r.res, out.String())
	}
	if got := StripNotices(out.String()); got != "waiting for go\nreleased\n" {
		t.Errorf("waiter output = %q", got)
	}
}

func (s *suite) testExitCodes(t *testing.T) {
	e := s.setup(t)
	for _, tc := range []struct {
		name     string
		commands []string
		code     int
		output   string
	}{
		{"zero", []string{"echo ok"}, 0, "ok\n"},
		{"one", []string{"false"}, 1, ""},
		{"fortytwo", []string{"echo before", "exit 42", "echo after"}, 42, "before\n"},
		{"set-e", []string{"echo first", "sh -c 'exit 3'", "echo not reached"}, 3, "first\n"},
		{"condition-is-not-failure", []string{"if false; then echo no; fi", "false || echo handled"}, 0, "handled\n"},
		{"multi-line-command", []string{"for w in a b; do\n  echo $w\ndone"}, 0, "a\nb\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			res, out := e.run(s.step(tc.name, tc.commands...))
			if res.ExitCode != tc.code || res.TimedOut || res.Canceled {
				t.Errorf("result %+v, want exit code %d", res, tc.code)
			}
			if res.Succeeded() != (tc.code == 0) {
				t.Errorf("Succeeded() = %v with exit code %d", res.Succeeded(), res.ExitCode)
			}
			if out != tc.output {
				t.Errorf("output = %q, want %q", out, tc.output)
			}
		})
	}
}

// testEnvironment: the step's variables in order (later wins), CF_VOLUME_PATH fixed, HOME
// writable, and nothing of the runner's environment.
func (s *suite) testEnvironment(t *testing.T) {
	e := s.setup(t)
	st := s.step("env",
		`printf '%s|%s|%s|%s|%s\n' "$GREETING" "${EMPTY-unset}" "$DUP" "$QUOTED" "$CF_VOLUME_PATH"`,
		`test -n "$HOME" && test -d "$HOME" && touch "$HOME/.freshet-contract" && echo home-writable`,
		`env`)
	st.Env = []executor.EnvVar{
		{Name: "GREETING", Value: "hello world"},
		{Name: "EMPTY", Value: ""},
		{Name: "DUP", Value: "first"},
		{Name: "QUOTED", Value: `it's "$HOME" \n`},
		{Name: "DUP", Value: "second"},
		{Name: executor.VolumePathEnv, Value: "/elsewhere"},
	}
	_, out := e.mustSucceed(st)
	first, rest, _ := strings.Cut(out, "\n")
	if want := `hello world||second|it's "$HOME" \n|` + e.ws.Path; first != want {
		t.Errorf("variables = %q, want %q", first, want)
	}
	if !strings.HasPrefix(rest, "home-writable\n") {
		t.Errorf("HOME is not a writable directory; output:\n%s", out)
	}
	if strings.Contains(out, runnerSecretEnv) || strings.Contains(out, "runner-token-must-not-leak") {
		t.Errorf("the runner's environment leaked into the step:\n%s", out)
	}
}

func (s *suite) testWorkingDir(t *testing.T) {
	e := s.setup(t)
	for _, tc := range []struct{ dir, want string }{
		{"", e.ws.Path},
		{".", e.ws.Path},
		{"sub/dir", e.ws.Path + "/sub/dir"},
		{"sub/dir/../other/", e.ws.Path + "/sub/other"},
		{e.ws.Path + "/abs", e.ws.Path + "/abs"},
	} {
		st := s.step("pwd", `pwd`)
		st.WorkingDir = tc.dir
		if _, out := e.mustSucceed(st); out != tc.want+"\n" {
			t.Errorf("WorkingDir %q: pwd = %q, want %q", tc.dir, out, tc.want)
		}
	}
	st := s.step("escape", `pwd`)
	st.WorkingDir = "sub/../../outside"
	res, err := e.ex.Run(context.Background(), e.ws, st, io.Discard)
	if !errors.Is(err, executor.ErrInvalidStep) {
		t.Errorf("WorkingDir %q: Run = %+v, %v; want ErrInvalidStep", st.WorkingDir, res, err)
	}
}

func (s *suite) testSharedWorkspace(t *testing.T) {
	e := s.setup(t)
	st := s.step("write", `echo from step one > shared.txt`, `echo nested > sub/file.txt`)
	st.WorkingDir = "."
	e.mustSucceed(s.step("mkdir", `mkdir -p sub`))
	e.mustSucceed(st)
	read := s.step("read", `cat "$CF_VOLUME_PATH/shared.txt" sub/file.txt`)
	if _, out := e.mustSucceed(read); out != "from step one\nnested\n" {
		t.Errorf("the second step read %q", out)
	}
}

func (s *suite) testSeparateWorkspaces(t *testing.T) {
	a, b := s.setup(t), s.setup(t)
	if a.ws.Path == b.ws.Path && a.ws.Handle == b.ws.Handle {
		t.Fatalf("two builds got the same workspace %+v", a.ws)
	}
	a.mustSucceed(s.step("write", `echo a > only-in-a`))
	if _, out := b.mustSucceed(s.step("look", `test -e only-in-a && echo visible || echo invisible`)); out != "invisible\n" {
		t.Errorf("a file of build a is %s in build b", strings.TrimSpace(out))
	}
}

// testCFExport: cf_export and direct appends to the export file reach Result.Exports and the
// file; bad arguments fail the step and export nothing.
func (s *suite) testCFExport(t *testing.T) {
	e := s.setup(t)
	if _, out := e.mustSucceed(s.step("empty", `cat "$CF_VOLUME_PATH/`+executor.ExportFile+`"; echo end`)); out != "end\n" {
		t.Errorf("a new workspace's %s holds %q, want it empty", executor.ExportFile, out)
	}
	res, _ := e.mustSucceed(s.step("export",
		`cf_export A=1 'B=two words' C=x=y`,
		`export D="it's"`,
		`cf_export D`,
		`cf_export A=3`))
	want := []executor.EnvVar{{Name: "A", Value: "3"}, {Name: "B", Value: "two words"}, {Name: "C", Value: "x=y"}, {Name: "D", Value: "it's"}}
	if !slices.Equal(res.Exports, want) {
		t.Errorf("Exports = %v, want %v", res.Exports, want)
	}
	res, out := e.mustSucceed(s.step("append",
		`echo E=5 >> "$CF_VOLUME_PATH/`+executor.ExportFile+`"`,
		`cat "$CF_VOLUME_PATH/`+executor.ExportFile+`"`))
	if want := "A=1\nB=two words\nC=x=y\nD=it's\nA=3\nE=5\n"; out != want {
		t.Errorf("%s = %q, want %q", executor.ExportFile, out, want)
	}
	if want := append(want, executor.EnvVar{Name: "E", Value: "5"}); !slices.Equal(res.Exports, want) {
		t.Errorf("Exports after a direct append = %v, want %v", res.Exports, want)
	}
	for _, bad := range []string{`cf_export`, `cf_export 9LIVES=x`, `cf_export OK=1 BAD-NAME=x`, `cf_export UNSET_VARIABLE_XYZ`,
		`cf_export --mask SECRET=x`, "cf_export 'NL=a\nb'"} {
		res, out := e.run(s.step("bad", bad, `echo not reached`))
		if res.ExitCode == 0 || strings.Contains(out, "not reached") || !strings.Contains(out, "cf_export") {
			t.Errorf("%q: result %+v, output %q; want the step to fail with a cf_export message", bad, res, out)
		}
		if slices.ContainsFunc(res.Exports, func(v executor.EnvVar) bool { return v.Name == "OK" || v.Name == "SECRET" || v.Name == "NL" }) {
			t.Errorf("%q exported something: %v", bad, res.Exports)
		}
	}
}

func (s *suite) testInvalidStep(t *testing.T) {
	e := s.setup(t)
	for name, st := range map[string]executor.Step{
		"negative timeout": {Commands: []string{"true"}, Timeout: -time.Second},
		"env name with =":  {Commands: []string{"true"}, Env: []executor.EnvVar{{Name: "A=B", Value: "x"}}},
		"empty env name":   {Commands: []string{"true"}, Env: []executor.EnvVar{{Name: "", Value: "x"}}},
		"shell with args":  {Commands: []string{"true"}, Shell: "bash -x"},
	} {
		st.Name, st.Image = "invalid", s.opts.Image
		var out Buffer
		if _, err := e.ex.Run(context.Background(), e.ws, st, &out); !errors.Is(err, executor.ErrInvalidStep) {
			t.Errorf("%s: err = %v, want ErrInvalidStep", name, err)
		}
	}
}

// killStep starts in the background (so the main process is not the only one to kill), ignores
// SIGTERM when trapTerm (so only SIGKILL ends it), ticks into a file while alive, and prints
// "started" once running.
func (s *suite) killStep(name string, trapTerm bool) executor.Step {
	var cmds []string
	if trapTerm {
		cmds = append(cmds, `trap '' TERM`)
	}
	cmds = append(cmds,
		`(while :; do echo tick >> "$CF_VOLUME_PATH/ticks-`+name+`"; sleep 0.05; done) &`,
		`sh -c 'sleep 30; echo survived' &`,
		`echo started`,
		`sleep 30`,
		`echo survived`)
	return s.step(name, cmds...)
}

// checkStopped asserts that nothing of a stopped step runs: the executor's hook sees nothing, and
// the file the step ticked into stops growing.
func (e *env) checkStopped(name string) {
	e.t.Helper()
	if running := e.running(); len(running) > 0 {
		e.t.Errorf("still running after Run returned: %v", running)
	}
	count := s2i(e, `wc -l < "$CF_VOLUME_PATH/ticks-`+name+`"`)
	time.Sleep(300 * time.Millisecond)
	if again := s2i(e, `wc -l < "$CF_VOLUME_PATH/ticks-`+name+`"`); again != count {
		e.t.Errorf("the stopped step's background loop still runs: ticks went from %d to %d", count, again)
	}
}

// s2i runs a step printing one number and returns it.
func s2i(e *env, cmd string) int {
	e.t.Helper()
	_, out := e.mustSucceed(e.s.step("count", cmd))
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		e.t.Fatalf("%s printed %q, want a number", cmd, out)
	}
	return n
}

func (s *suite) testTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	e := s.setup(t)
	st := s.killStep("timeout", true)
	st.Timeout = timeout
	start := time.Now()
	res, out := e.run(st)
	elapsed := time.Since(start)
	if !res.TimedOut || res.Canceled || res.Succeeded() {
		t.Errorf("result %+v, want TimedOut (and not Canceled, not Succeeded)", res)
	}
	if res.ExitCode == 0 {
		t.Errorf("ExitCode = 0 for a step killed at its timeout")
	}
	if max := timeout + s.opts.KillGrace + s.opts.Slack; elapsed < timeout || elapsed > max {
		t.Errorf("Run took %s, want between the timeout %s and timeout + grace + slack = %s", elapsed, timeout, max)
	}
	if !strings.Contains(out, "started") || strings.Contains(out, "survived") {
		t.Errorf("output %q: want the step to have started and not finished", out)
	}
	e.checkStopped("timeout")
}

func (s *suite) testCancel(t *testing.T) {
	e := s.setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out Buffer
	type ran struct {
		res executor.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := e.ex.Run(ctx, e.ws, s.killStep("cancel", true), &out)
		done <- ran{res, err}
	}()
	waitFor(t, s.stepBound(0), "the step to start", func() bool { return strings.Contains(out.String(), "started") })
	// The hook must see the running step, or the checks after the cancel prove nothing.
	waitFor(t, s.opts.Slack, "Leftovers to report the running step", func() bool { return len(e.running()) > 0 })
	time.Sleep(100 * time.Millisecond) // let the background loop tick
	cancel()
	canceledAt := time.Now()
	var r ran
	select {
	case r = <-done:
	case <-time.After(s.stepBound(0)):
		t.Fatalf("Run did not return within %s of the cancel", s.stepBound(0))
	}
	if elapsed, max := time.Since(canceledAt), s.opts.KillGrace+s.opts.Slack; elapsed > max {
		t.Errorf("Run returned %s after the cancel, want at most grace + slack = %s", elapsed, max)
	}
	if r.err != nil {
		t.Errorf("Run: %v, want a Result saying Canceled and no error", r.err)
	}
	if !r.res.Canceled || r.res.TimedOut || r.res.Succeeded() {
		t.Errorf("result %+v, want Canceled", r.res)
	}
	if strings.Contains(out.String(), "survived") {
		t.Errorf("output %q: the step finished", out.String())
	}
	e.checkStopped("cancel")
}

func (s *suite) testCanceledBeforeStart(t *testing.T) {
	e := s.setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out Buffer
	res, err := e.ex.Run(ctx, e.ws, s.step("never", `touch "$CF_VOLUME_PATH/ran"`), &out)
	if err != nil || !res.Canceled || res.Succeeded() {
		t.Errorf("Run with a canceled context = %+v, %v; want Canceled and no error", res, err)
	}
	if _, out := e.mustSucceed(s.step("check", `test -e ran && echo ran || echo did not run`)); out != "did not run\n" {
		t.Errorf("the step of a canceled Run %s", strings.TrimSpace(out))
	}
}

// testParallel runs steps concurrently on one workspace: each gets its own output only.
func (s *suite) testParallel(t *testing.T) {
	const n = 4
	e := s.setup(t)
	var wg sync.WaitGroup
	outs := make([]string, n)
	results := make([]executor.Result, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(2*time.Second))
	defer cancel()
	for i := range n {
		wg.Go(func() {
			var out Buffer
			st := s.step(fmt.Sprintf("parallel-%d", i),
				fmt.Sprintf(`for j in $(seq 1 200); do echo "step %d line $j"; done`, i),
				fmt.Sprintf(`echo %d > "$CF_VOLUME_PATH/parallel-%d"`, i, i),
				fmt.Sprintf(`cf_export PARALLEL_%d=%d`, i, i))
			results[i], errs[i] = e.ex.Run(ctx, e.ws, st, &out)
			outs[i] = StripNotices(out.String())
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || !results[i].Succeeded() {
			t.Errorf("step %d: %+v, %v", i, results[i], errs[i])
			continue
		}
		lines := strings.Split(strings.TrimSuffix(outs[i], "\n"), "\n")
		if len(lines) != 200 {
			t.Errorf("step %d printed %d lines, want 200", i, len(lines))
		}
		for j, l := range lines {
			if want := fmt.Sprintf("step %d line %d", i, j+1); l != want {
				t.Errorf("step %d line %d = %q, want %q (outputs mixed up?)", i, j+1, l, want)
				break
			}
		}
	}
	res, out := e.mustSucceed(s.step("gather", `cat parallel-0 parallel-1 parallel-2 parallel-3`))
	if out != "0\n1\n2\n3\n" {
		t.Errorf("files written by the parallel steps: %q", out)
	}
	for i := range n {
		if !slices.Contains(res.Exports, executor.EnvVar{Name: fmt.Sprintf("PARALLEL_%d", i), Value: strconv.Itoa(i)}) {
			t.Errorf("Exports after parallel steps = %v, want PARALLEL_%d=%d", res.Exports, i, i)
		}
	}
}

// testChatty: 100,000 lines on stdout and stderr stream through a slow writer without deadlock
// or loss.
func (s *suite) testChatty(t *testing.T) {
	const lines = 100000
	e := s.setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(30*time.Second))
	defer cancel()
	out := &slowBuffer{every: 256, pause: time.Millisecond}
	res, err := e.ex.Run(ctx, e.ws, s.step("chatty",
		fmt.Sprintf(`seq 1 %d`, lines/2),
		`sleep 0.2`,
		fmt.Sprintf(`seq %d %d >&2`, lines/2+1, lines),
		`echo done`), out)
	if err != nil || !res.Succeeded() {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	var want bytes.Buffer
	for i := 1; i <= lines; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	want.WriteString("done\n")
	got := StripNotices(out.String())
	if s.opts.UnorderedStreams != "" {
		checkStreams(t, got, lines, s.opts.UnorderedStreams)
		return
	}
	if got != want.String() {
		gl := strings.Split(got, "\n")
		t.Errorf("output has %d lines, want %d; first difference near %q", len(gl)-1, lines+1, firstDiff(got, want.String()))
	}
}

// checkStreams checks ChattyStep's output when the two streams may interleave in any way: every
// line once, stdout's (1..lines/2, then "done") and stderr's (the rest) each in order.
func checkStreams(t *testing.T, got string, lines int, why string) {
	t.Helper()
	ls := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(ls) != lines+1 {
		t.Errorf("output has %d lines, want %d (each stream in order; their interleaving is not checked: %s)", len(ls), lines+1, why)
		return
	}
	nextOut, nextErr, done := 1, lines/2+1, false
	for i, l := range ls {
		n, err := strconv.Atoi(l)
		switch {
		case l == "done" && nextOut == lines/2+1 && !done:
			done = true
		case err == nil && n == nextOut && n <= lines/2 && !done:
			nextOut++
		case err == nil && n == nextErr:
			nextErr++
		default:
			t.Errorf("line %d is %q: want stdout's %d (or done) or stderr's %d, each stream in order (%s)", i+1, l, nextOut, nextErr, why)
			return
		}
	}
}

func firstDiff(a, b string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[max(0, i-20):min(len(a), i+20)]
		}
	}
	return "(one is a prefix of the other)"
}

// testCleanup: Cleanup removes the workspace (read-only directories included) and is
// idempotent; the workspace cannot be used afterwards.
func (s *suite) testCleanup(t *testing.T) {
	ex := s.newExecutor(t)
	ctx, cancel := context.WithTimeout(context.Background(), s.stepBound(0))
	defer cancel()
	ws, err := ex.Prepare(ctx, executor.Build{ID: "contract-cleanup"})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if _, stored := s.opts.Leftovers(t, ws); len(stored) == 0 {
		t.Fatal("Leftovers reports no storage for a prepared workspace: the hook cannot see what Cleanup must remove")
	}
	var out Buffer
	res, err := ex.Run(ctx, ws, s.step("readonly",
		`mkdir -p ro/deep`, `echo x > ro/deep/file`, `chmod 0555 ro/deep ro`, `chmod 0444 ro/deep/file`), &out)
	if err != nil || !res.Succeeded() {
		t.Fatalf("Run: %+v, %v\n%s", res, err, out.String())
	}
	if err := ex.Cleanup(ctx, ws); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if running, stored := s.opts.Leftovers(t, ws); len(running)+len(stored) > 0 {
		t.Errorf("after Cleanup: running %v, stored %v; want nothing", running, stored)
	}
	if err := ex.Cleanup(ctx, ws); err != nil {
		t.Errorf("second Cleanup: %v, want nil", err)
	}
	if _, err := ex.Run(ctx, ws, s.step("after", "true"), &out); !errors.Is(err, executor.ErrNoWorkspace) {
		t.Errorf("Run after Cleanup: %v, want ErrNoWorkspace", err)
	}
}

// Buffer is an io.Writer safe for concurrent use, for reading a step's output while it runs.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// slowBuffer pauses every so many writes, like a log uploader under load.
type slowBuffer struct {
	Buffer
	every, n int
	pause    time.Duration
}

func (b *slowBuffer) Write(p []byte) (int, error) {
	if b.n++; b.n%b.every == 0 {
		time.Sleep(b.pause)
	}
	return b.Buffer.Write(p)
}

// StripNotices removes the executor's notice lines (those starting with executor.NoticePrefix)
// from output.
func StripNotices(output string) string {
	if !strings.Contains(output, executor.NoticePrefix) {
		return output
	}
	var b strings.Builder
	for line := range strings.SplitAfterSeq(output, "\n") {
		if !strings.HasPrefix(line, executor.NoticePrefix) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Notices returns the executor's notice lines in output, without the prefix.
func Notices(output string) []string {
	var notices []string
	for line := range strings.SplitSeq(output, "\n") {
		if n, ok := strings.CutPrefix(line, executor.NoticePrefix); ok {
			notices = append(notices, n)
		}
	}
	return notices
}
