package faults

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// growing reports which of files grow over the next second.
func growing(files ...string) int {
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	before := make([]int64, len(files))
	for i, f := range files {
		before[i] = size(f)
	}
	time.Sleep(time.Second)
	n := 0
	for i, f := range files {
		if size(f) > before[i] {
			n++
		}
	}
	return n
}

// workspaces lists the local executor's build directories in dir.
func workspaces(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "freshet-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Item 5: a step dies with its runner. The runner is SIGKILLed while a step runs a child
// process and a daemon that left the step's process group (setsid); none may keep running, and
// a runner started again on the same work dir removes what the dead one left before it runs
// the retried step.
func TestFaultStepsDieWithTheirRunner(t *testing.T) {
	cp := newControlPlane(t, "server", "--runner-lease-ttl", "3s")
	work := t.TempDir()
	marks := t.TempDir()
	runner, again := cp.runner("r1", work)
	ref := cp.pipeline("orphans", `version: '1.0'
steps:
  work:
    commands:
      - 'if [ -e "$MARKS/first" ]; then date +%s.%N > "$MARKS/retried"; sleep 2; exit 0; fi; touch "$MARKS/first"'
      - 'setsid sh -c "while [ ! -e $MARKS/stop ]; do echo d >> $MARKS/daemon; sleep 0.1; done" > /dev/null 2>&1 &'
      - 'sh -c "while [ ! -e $MARKS/stop ]; do echo c >> $MARKS/child; sleep 0.1; done"'
`)
	t.Cleanup(func() { os.WriteFile(filepath.Join(marks, "stop"), nil, 0o600) }) // ends orphans the runner left
	b := cp.run(ref, map[string]string{"MARKS": marks})
	child, daemon := filepath.Join(marks, "child"), filepath.Join(marks, "daemon")
	waitFor(t, 30*time.Second, "the step's child and daemon running", func() bool { return growing(child, daemon) == 2 })
	if n := len(workspaces(work)); n != 1 {
		t.Fatalf("%d workspaces while the build runs, want 1", n)
	}

	runner.kill()
	time.Sleep(time.Second)
	alive := growing(child, daemon)
	row(t, "5", "step processes (child, setsid daemon) still running 1 s after their runner was SIGKILLed", alive)

	// The runner comes back on the same work dir; the build is requeued when its lease expires
	// and runs on it again.
	runner2 := start(t, "runner r1 (again)", again[:1], again[1:]...)
	final := cp.waitFinished(45*time.Second, b.ID)[0]
	retried, _ := os.ReadFile(filepath.Join(marks, "retried"))
	retriedAt, _ := strconv.ParseFloat(strings.TrimSpace(string(retried)), 64)
	lastBeat := func(p string) float64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return float64(fi.ModTime().UnixNano()) / 1e9
	}
	overlap := time.Duration(max(lastBeat(child)-retriedAt, lastBeat(daemon)-retriedAt, 0) * float64(time.Second)) // the retry lasts 2 s
	// The runner removes a build's workspace right after reporting it: give it a moment.
	leftDirs := len(workspaces(work))
	for deadline := time.Now().Add(10 * time.Second); leftDirs > 0 && time.Now().Before(deadline); leftDirs = len(workspaces(work)) {
		time.Sleep(50 * time.Millisecond)
	}
	stillAlive := growing(child, daemon)
	row(t, "5", "seconds the dead runner's step processes overlapped the retried step", overlap)
	row(t, "5", "workspaces and step processes left once the restarted runner finished the build", leftDirs+stillAlive)
	if final.Status != "success" {
		t.Fatalf("build %s: %s\n%s\nrunner:\n%s", final.Status, final.Reason, cp.log(b.ID), runner2.out)
	}
	if alive != 0 || stillAlive != 0 || leftDirs != 0 || overlap > 0 {
		t.Fatalf("%d step processes outlived their runner, %d still run, %d workspaces left, %s of overlap", alive, stillAlive, leftDirs, overlap)
	}
}

// Item 8: `freshet up` exits within its shutdown timeout (plus a small bound) after SIGTERM,
// also while its in-process runner is in the middle of a build, and the build's step does not
// outlive it. The step runs isolated (another user, its own /tmp), so the test finds it by a
// unique argument in the process table rather than by a file it writes.
func TestFaultUpShutdownWithinTimeout(t *testing.T) {
	const timeout = 5 * time.Second
	cp := newControlPlane(t, "up", "--shutdown-timeout", timeout.String())
	nonce := fmt.Sprintf("86400.%d", time.Now().UnixNano()%1e9)
	ref := cp.pipeline("long", `version: '1.0'
steps:
  first:
    commands: ['echo first']
  long:
    commands:
      - 'echo still working; sleep `+nonce+`'
  after:
    commands: ['echo after']
`)
	b := cp.run(ref, nil)
	for deadline := time.Now().Add(30 * time.Second); len(processesWithArg(nonce)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the long step running: not within 30s; build log:\n%s", cp.log(b.ID))
		}
	}

	cp.proc.cmd.Process.Signal(syscall.SIGTERM)
	took, exited := cp.proc.waitExit(2 * time.Minute)
	row(t, "8", "seconds for freshet up to exit after SIGTERM mid-build (shutdown-timeout 5 s, "+backend()+")", took)
	if !exited {
		t.Fatalf("freshet up still running 2 minutes after SIGTERM")
	}
	// A killed process may take a moment to be reaped; one that outlived its runner stays.
	left := processesWithArg(nonce)
	for deadline := time.Now().Add(2 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = processesWithArg(nonce) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("the build's step outlived freshet up: pids %v", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if bound := timeout + 5*time.Second; took > bound {
		t.Fatalf("freshet up took %s to exit, want within the shutdown timeout %s plus a small bound", took.Round(100*time.Millisecond), timeout)
	}
}

// processesWithArg lists the live (not zombie) processes, in any user or namespace, with arg
// among their command-line arguments.
func processesWithArg(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
