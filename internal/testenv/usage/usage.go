// Package usage measures what a benchmark costs this process: wall time, CPU seconds, peak
// RSS (Linux VmHWM, reset at Start) and heap in use, printed as one "BENCH" line that make
// targets grep.
package usage

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Usage is a measurement in progress.
type Usage struct {
	wall time.Time
	cpu  time.Duration
}

// Start resets the peak RSS and starts measuring.
func Start() Usage {
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM
	return Usage{wall: time.Now(), cpu: cpuTime()}
}

// Report logs and prints what was used since Start.
func (u Usage) Report(t testing.TB, what string, extra string) {
	wall, cpu := time.Since(u.wall), cpuTime()-u.cpu
	line := fmt.Sprintf("%-44s wall %7.2fs  cpu %7.2fs  peak RSS %4d MiB  heap %4d MiB  %s", what, wall.Seconds(), cpu.Seconds(), peakRSS()>>20, heapInUse()>>20, extra)
	t.Log(line)
	fmt.Println("BENCH", line)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
