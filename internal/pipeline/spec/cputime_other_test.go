//go:build !unix

package spec

import "time"

var processStart = time.Now()

// cpuTime falls back to wall-clock time where getrusage is not available.
func cpuTime() time.Duration { return time.Since(processStart) }
