//go:build unix

package spec

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the test process has used. Time limits in tests are measured in CPU
// time, so a busy shared machine does not make them fail.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
