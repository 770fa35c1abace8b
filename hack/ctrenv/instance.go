package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// instance is the state directory of one registry or engine: pid files in run/, logs in
// logs/, state.json, and a lock that serialises up and down.
type instance struct {
	kind string
	name string
	dir  string
}

func openInstance(kind, name string) (instance, error) {
	dir, err := instanceDir(kind, name)
	if err != nil {
		return instance{}, err
	}
	return instance{kind: kind, name: name, dir: dir}, nil
}

func (in instance) path(elem ...string) string {
	return filepath.Join(append([]string{in.dir}, elem...)...)
}

// marker is a string in the command line of every process of this instance.
func (in instance) marker() string             { return in.dir + string(filepath.Separator) }
func (in instance) pidPath(comp string) string { return in.path("run", comp+".pid") }
func (in instance) logPath(comp string) string { return in.path("logs", comp+".log") }

// lock serialises up and down of the instance (an up in progress finishes first).
func (in instance) lock(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return lockFile(ctx, in.path("lock"))
}

// process returns the recorded process of comp if it still runs as ours; a stale pid file
// is removed.
func (in instance) process(comp string) (pidFile, bool) {
	p, err := readPidFile(in.pidPath(comp))
	if err != nil {
		return pidFile{}, false
	}
	if !ours(p, in.marker()) {
		_ = os.Remove(in.pidPath(comp))
		return pidFile{}, false
	}
	return p, true
}

// stopAll stops every process of the instance: the recorded ones first (SIGTERM, then
// SIGKILL after grace), then any other process whose command line names the instance
// directory (a pid file lost to a crash between start and record). It returns how many ran.
func (in instance) stopAll(comps []string, grace time.Duration) int {
	var procs []pidFile
	for _, c := range comps {
		if p, ok := in.process(c); ok && p.PID != os.Getpid() {
			procs = append(procs, p)
		}
	}
	stopProcesses(procs, in.marker(), grace)
	// The watchdog's command line names the instance too; it goes only when asked for.
	keep := pidFile{}
	if !slices.Contains(comps, compWatchdog) {
		keep, _ = in.process(compWatchdog)
	}
	rest := slices.DeleteFunc(processesWith(in.marker()), func(p pidFile) bool { return p == keep })
	stopProcesses(rest, in.marker(), 2*time.Second)
	for _, c := range comps {
		_ = os.Remove(in.pidPath(c))
	}
	return len(procs) + len(rest)
}

const compWatchdog = "watchdog"

// startWatchdog starts a detached `ctrenv watchdog` that runs `down --purge` for this
// instance once the process pid exits: a test binary that crashes or is killed still leaves
// nothing running. A watchdog for a previous owner is replaced.
func (in instance) startWatchdog(pid int) error {
	st, err := readProcStat(pid)
	if err != nil {
		return usageError("--down-when-exits %d: no such process", pid)
	}
	if p, ok := in.process(compWatchdog); ok {
		stopProcesses([]pidFile{p}, in.marker(), 5*time.Second)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = startDaemon(exe, []string{"watchdog", "--kind", in.kind, "--name", in.name,
		"--pid", strconv.Itoa(pid), "--pid-start", strconv.FormatUint(st.startTime, 10), "--instance-dir", in.marker()},
		os.Environ(), in.logPath(compWatchdog), in.pidPath(compWatchdog))
	return err
}

func cmdWatchdog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("watchdog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "registry or engine")
	name := fs.String("name", "", "instance name")
	pid := fs.Int("pid", 0, "process to watch")
	pidStart := fs.Uint64("pid-start", 0, "its start time (guards against pid reuse)")
	dir := fs.String("instance-dir", "", "state directory of the instance (sanity check)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	in, err := openInstance(*kind, *name)
	if err != nil {
		return err
	}
	if *dir != in.marker() {
		return fmt.Errorf("watchdog: instance dir %q does not match %q", *dir, in.marker())
	}
	owner := pidFile{PID: *pid, StartTime: *pidStart}
	for running(owner) {
		select {
		case <-ctx.Done():
			return nil // stopped by down: nothing more to do
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintf(stderr, "watchdog %s: process %d exited; stopping %s %q\n", time.Now().Format(time.RFC3339), owner.PID, in.kind, in.name)
	switch in.kind {
	case kindRegistry:
		_, err = downRegistry(context.Background(), in, true)
	case kindEngine:
		_, err = downEngine(context.Background(), in, true, io.Discard)
	default:
		err = fmt.Errorf("--kind %q: want %s or %s", in.kind, kindRegistry, kindEngine)
	}
	fmt.Fprintf(stderr, "watchdog: done, err=%v\n", err)
	return err
}

// freePort returns a port on 127.0.0.1 that nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", loopback, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree tells whether port can be bound on 127.0.0.1 now.
func portFree(port int) bool {
	if port <= 0 {
		return false
	}
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// unmountUnder lazily unmounts every mount point at or below dir, deepest first (the
// engine's storage driver leaves its own mounts there).
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	var errs []error
	for i := len(points) - 1; i >= 0; i-- { // mountinfo lists parents before children
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", points[i], err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space, and so on).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
