package local

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// process is a live process found in /proc.
type process struct {
	pid  int
	comm string
}

// findProcesses lists the live processes (zombies excluded) that are in process group pgid (when
// pgid > 0) or whose environment holds ProcessTagEnv with a value isTagged accepts (when isTagged
// is not nil). Environments are only read for processes started at or after notBefore (a start
// time as startTime returns, 0 for all): a step's processes are not older than its main
// process. Processes whose /proc entries cannot be read (other users', or gone meanwhile) are
// skipped.
func findProcesses(pgid int, isTagged func(tag string) bool, notBefore uint64) ([]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var procs []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st, ok := parseStat(stat)
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue
		}
		if pgid > 0 && st.pgrp == pgid {
			procs = append(procs, process{pid: pid, comm: st.comm})
			continue
		}
		if isTagged == nil || st.start < notBefore {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if tag, ok := lookupEnv(environ, ProcessTagEnv); ok && isTagged(tag) {
			procs = append(procs, process{pid: pid, comm: st.comm})
		}
	}
	return procs, nil
}

// startTime returns when process pid started, in clock ticks since boot, or 0 if unknown.
func startTime(pid int) uint64 {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	st, _ := parseStat(stat)
	return st.start
}

// procStat holds the fields of /proc/<pid>/stat the executor uses.
type procStat struct {
	comm  string
	state byte
	pgrp  int
	start uint64 // clock ticks since boot
}

// parseStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp ... starttime ...", where comm
// may contain spaces and parentheses and starttime is the 22nd field.
func parseStat(stat []byte) (procStat, bool) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	fields := bytes.Fields(stat[end+1:]) // fields[0] is field 3, state
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return procStat{}, false
	}
	start, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, false
	}
	return procStat{comm: string(stat[open+1 : end]), state: fields[0][0], pgrp: pgrp, start: start}, true
}

// lookupEnv finds name in a NUL-separated environment block.
func lookupEnv(environ []byte, name string) (string, bool) {
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok {
			return string(v), true
		}
	}
	return "", false
}

// stepAttr is how a step's main process starts: leading a new process group, and SIGKILLed by
// the kernel when the runner dies (the parent-death signal; its own children are the
// watchdog's).
func stepAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// watchdogScript waits; when the runner dies (its parent-death signal, SIGUSR1) it SIGKILLs
// every process tagged with the build's prefix (those that left the group) and then its own
// process group, which is the step's. It ignores SIGTERM: a step being stopped gets its grace
// period, and the watchdog dies with the group at the end of every step.
const watchdogScript = `trap '' TERM INT HUP
sweep() {
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = "$$" ] && continue
		case "$(tr '\0' '\n' < "$d/environ" 2>/dev/null)" in
		*"FRESHET_PROCESS_TAG=$FRESHET_WATCHDOG_PREFIX"*) kill -s KILL "$p" 2>/dev/null ;;
		esac
	done
}
trap 'sweep; kill -s KILL 0' USR1
while :; do sleep 3600 & wait $!; done
`

// startWatchdog starts a process in the step's process group pgid that kills the step's
// processes (the group, and those tagged with prefix) when the runner dies, even by SIGKILL.
// Run does not wait for it: it dies with the group when the step ends. It returns a function
// that reaps it.
func startWatchdog(pgid int, prefix, path string) (func(), error) {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript)
	cmd.Env = []string{"PATH=" + path, "FRESHET_WATCHDOG_PREFIX=" + prefix, "LANG=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGUSR1}
	if err := cmd.Start(); err != nil {
		return func() {}, err
	}
	return func() { _ = cmd.Wait() }, nil
}
