//go:build !linux

package local

import "syscall"

// process is a live process.
type process struct {
	pid  int
	comm string
}

// findProcesses cannot list processes without /proc: outside Linux, a step's processes are found
// by their process group only, which kill(-pgid) reaches without a list.
func findProcesses(pgid int, isTagged func(tag string) bool, notBefore uint64) ([]process, error) {
	return nil, nil
}

// startTime is unknown without /proc.
func startTime(pid int) uint64 { return 0 }

// stepAttr is how a step's main process starts: leading a new process group. Without a
// parent-death signal, steps of a runner that died are killed by the next runner's Sweep.
func stepAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// startWatchdog has nothing to watch with outside Linux.
func startWatchdog(pgid int, prefix, path string) (func(), error) { return func() {}, nil }
