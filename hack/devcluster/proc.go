package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidFile records a process devcluster started. The start time (from /proc/PID/stat) and a
// marker expected in its command line guard against pid reuse: a pid file whose process is
// gone, or whose pid now belongs to another process, is stale.
type pidFile struct {
	PID       int
	StartTime uint64 // clock ticks since boot, field 22 of /proc/PID/stat
}

func (p pidFile) String() string { return fmt.Sprintf("%d %d\n", p.PID, p.StartTime) }

func readPidFile(path string) (pidFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pidFile{}, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return pidFile{}, fmt.Errorf("pid file %s is empty", path)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return pidFile{}, fmt.Errorf("pid file %s: bad pid %q", path, f[0])
	}
	p := pidFile{PID: pid}
	if len(f) > 1 {
		p.StartTime, _ = strconv.ParseUint(f[1], 10, 64)
	}
	return p, nil
}

// procStat is what devcluster needs from /proc/PID/stat.
type procStat struct {
	state     byte
	startTime uint64
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may contain spaces: parse after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	st, err := strconv.ParseUint(f[19], 10, 64) // field 22 overall
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat starttime: %w", pid, err)
	}
	return procStat{state: f[0][0], startTime: st}, nil
}

// processAlive tells whether p is still the live process devcluster started: it exists, is
// not a zombie (an init that does not reap leaves those), has the recorded start time, and
// its command line contains marker (the instance directory).
func processAlive(p pidFile, marker string) bool {
	return notAliveReason(p, marker) == ""
}

// notAliveReason says why p is not a live process of ours, or "" if it is.
func notAliveReason(p pidFile, marker string) string {
	st, err := readProcStat(p.PID)
	switch {
	case err != nil:
		return "gone"
	case st.state == 'Z' || st.state == 'X':
		return "exited (zombie)"
	case p.StartTime == 0 || st.startTime != p.StartTime:
		return fmt.Sprintf("pid %d now belongs to another process (start time %d, recorded %d)", p.PID, st.startTime, p.StartTime)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil {
		return "gone"
	}
	if !bytes.Contains(cmdline, []byte(marker)) {
		return fmt.Sprintf("pid %d is another program: %q", p.PID, tail(strings.ReplaceAll(string(cmdline), "\x00", " "), 200))
	}
	return ""
}

// sameProcessRunning tells whether the process p identifies (pid and start time) still runs.
// Unlike processAlive it does not look at the command line, which is briefly empty while a
// process is still inside execve (the parent's Start returns as soon as the close-on-exec
// pipe closes, before the new arguments are in place) and again while it exits. Use it only
// for a process already known to be ours.
func sameProcessRunning(p pidFile) bool {
	st, err := readProcStat(p.PID)
	return err == nil && st.state != 'Z' && st.state != 'X' && p.StartTime != 0 && st.startTime == p.StartTime
}

// rssBytes is the resident set size of pid, from /proc/PID/status.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// startDaemon starts a process detached from devcluster (own session, stdin from /dev/null,
// output appended to logPath), records it in pidPath and returns its pid file.
func startDaemon(bin string, args []string, logPath, pidPath string, env []string) (pidFile, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return pidFile{}, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return pidFile{}, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n==== devcluster %s: starting %s\n", time.Now().Format(time.RFC3339), bin)
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return pidFile{}, fmt.Errorf("start %s: %w", bin, err)
	}
	p := pidFile{PID: cmd.Process.Pid}
	if st, err := readProcStat(p.PID); err == nil {
		p.StartTime = st.startTime
	}
	// Not waited for: the daemon outlives devcluster and is reparented to init.
	_ = cmd.Process.Release()
	// Start returns as soon as the child's close-on-exec pipe closes, while the kernel may still
	// be replacing its command line: until it shows bin, the process cannot be recognised as
	// ours (processAlive), so a stop right now would leave it running. Wait for the exec.
	waitExec(p, bin, execWait)
	if err := writeFileAtomic(pidPath, []byte(p.String()), 0o644); err != nil {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
		return pidFile{}, err
	}
	return p, nil
}

// execWait bounds how long startDaemon waits for a started process to show its program.
const execWait = 5 * time.Second

// waitExec waits, up to timeout, until the process p shows bin as its argv[0], or is gone.
func waitExec(p pidFile, bin string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && sameProcessRunning(p) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
		if err != nil {
			return
		}
		if argv0, _, _ := bytes.Cut(cmdline, []byte{0}); string(argv0) == bin {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// stopProcesses sends SIGTERM to every live process, waits up to grace for them to exit and
// SIGKILLs the rest. Only processes that pass processAlive are signalled, so a reused pid is
// never killed.
func stopProcesses(procs []pidFile, marker string, grace time.Duration) {
	var live []pidFile
	for _, p := range procs {
		if processAlive(p, marker) {
			if err := syscall.Kill(p.PID, syscall.SIGTERM); err == nil {
				live = append(live, p)
			}
		}
	}
	deadline := time.Now().Add(grace)
	for len(live) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		live = filterRunning(live)
	}
	for _, p := range live {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	// Wait (bounded) until the killed processes are gone (or zombies, whose sockets are
	// closed), so their ports are free.
	deadline = time.Now().Add(5 * time.Second)
	for len(live) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		live = filterRunning(live)
	}
}

func filterRunning(ps []pidFile) []pidFile {
	var out []pidFile
	for _, p := range ps {
		if sameProcessRunning(p) {
			out = append(out, p)
		}
	}
	return out
}

// errNoProcess is returned when a pid file names no live process of ours.
var errNoProcess = errors.New("process not running")

// orphans finds live processes of an instance that no pid file accounts for (a pid file was
// deleted by hand, or devcluster was killed between starting a process and recording it):
// processes whose argv[0] is one of binaries and whose command line contains marker.
func orphans(binaries []string, marker string, known map[int]bool) []pidFile {
	ents, _ := os.ReadDir("/proc")
	var out []pidFile
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || known[pid] || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		argv0, _, _ := bytes.Cut(b, []byte{0})
		if !slices.Contains(binaries, string(argv0)) {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.state == 'Z' {
			continue
		}
		out = append(out, pidFile{PID: pid, StartTime: st.startTime})
	}
	return out
}
