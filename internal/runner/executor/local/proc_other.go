//go:build !linux

package local

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
