package main

import (
	"bytes"
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

// pidFile records a process ctrenv started. The start time (from /proc/PID/stat) and a
// marker expected in its command line (the instance directory) guard against pid reuse: a
// pid file whose pid now belongs to another process is stale, and ctrenv never signals it.
type pidFile struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"` // clock ticks since boot, field 22 of /proc/PID/stat
}

func readPidFile(path string) (pidFile, error) {
	var p pidFile
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return p, fmt.Errorf("pid file %s: want \"PID STARTTIME\", have %q", path, b)
	}
	if p.PID, err = strconv.Atoi(f[0]); err != nil || p.PID <= 0 {
		return p, fmt.Errorf("pid file %s: bad pid %q", path, f[0])
	}
	if p.StartTime, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return p, fmt.Errorf("pid file %s: bad start time %q", path, f[1])
	}
	return p, nil
}

func (p pidFile) String() string { return fmt.Sprintf("%d %d\n", p.PID, p.StartTime) }

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
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return procStat{state: f[0][0], startTime: st}, nil
}

// running tells whether the process p identifies (pid and start time) still runs; zombies
// do not count.
func running(p pidFile) bool {
	st, err := readProcStat(p.PID)
	return err == nil && st.state != 'Z' && st.state != 'X' && p.StartTime != 0 && st.startTime == p.StartTime
}

// ours tells whether p still runs and its command line contains marker.
func ours(p pidFile, marker string) bool {
	if !running(p) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	return err == nil && bytes.Contains(b, []byte(marker))
}

// startDaemon starts a process detached from ctrenv (own session, stdin from /dev/null,
// output appended to logPath) and records it in pidPath.
func startDaemon(bin string, args []string, env []string, logPath, pidPath string) (pidFile, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return pidFile{}, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return pidFile{}, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n==== ctrenv %s: starting %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return pidFile{}, fmt.Errorf("start %s: %w", bin, err)
	}
	p := pidFile{PID: cmd.Process.Pid}
	if st, err := readProcStat(p.PID); err == nil {
		p.StartTime = st.startTime
	}
	// Not waited for: the daemon outlives ctrenv and is reparented to init.
	_ = cmd.Process.Release()
	if err := writeFileAtomic(pidPath, []byte(p.String()), 0o644); err != nil {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
		return pidFile{}, err
	}
	return p, nil
}

// stopProcesses sends SIGTERM to each process that is still ours, waits up to grace for them
// to exit, SIGKILLs the rest and waits (bounded) until they are gone.
func stopProcesses(procs []pidFile, marker string, grace time.Duration) {
	var live []pidFile
	for _, p := range procs {
		if ours(p, marker) && syscall.Kill(p.PID, syscall.SIGTERM) == nil {
			live = append(live, p)
		}
	}
	deadline := time.Now().Add(grace)
	for len(live) > 0 && time.Now().Before(deadline) {
		time.Sleep(25 * time.Millisecond)
		live = slices.DeleteFunc(live, func(p pidFile) bool { return !running(p) })
	}
	for _, p := range live {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(live) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		live = slices.DeleteFunc(live, func(p pidFile) bool { return !running(p) })
	}
}

// processesWith lists the live processes (not zombies, not this one) whose command line
// contains marker.
func processesWith(marker string) []pidFile {
	ents, _ := os.ReadDir("/proc")
	var out []pidFile
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue
		}
		out = append(out, pidFile{PID: pid, StartTime: st.startTime})
	}
	return out
}

// describe is a process's pid and command line, for messages.
func describe(p pidFile) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	return fmt.Sprintf("%d %s", p.PID, tail(strings.ReplaceAll(string(b), "\x00", " "), 200))
}
