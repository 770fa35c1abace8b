package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

const compWatchdog = "watchdog"

func cmdDown(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs, false)
	purge := fs.Bool("purge", false, "also remove the instance's state directory (certificates, kubeconfig, logs)")
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	in, err := openInstance(cf.name)
	if err != nil {
		return exitError{code: exitUsage, err: err}
	}
	n, err := in.down(ctx, *purge)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "devcluster [%s] down: stopped %d process(es)\n", in.name, n)
	return nil
}

// down stops every process of the instance (the watchdog included, unless it is the caller),
// and removes the etcd data, so the next up starts an empty cluster. It returns how many
// processes were running.
func (in *instance) down(ctx context.Context, purge bool) (int, error) {
	if _, err := os.Stat(in.dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // an up in progress finishes first
	defer cancel()
	unlock, err := lockFile(lctx, in.path("lock"))
	if err != nil {
		return 0, err
	}
	defer unlock()
	// The real node first: its kubelet would restart the pods that stopRealNode kills.
	if pf, err := in.running(compKubelet); err == nil {
		stopProcesses([]pidFile{pf}, in.marker(), 10*time.Second)
	}
	in.stopRealNode(ctx)
	var procs []pidFile
	for _, comp := range append(slices.Clone(allComponents), compWatchdog) {
		pf, err := in.running(comp)
		if err == nil && pf.PID != os.Getpid() {
			procs = append(procs, pf)
		}
	}
	stopProcesses(procs, in.marker(), 10*time.Second)
	n := len(procs) + in.stopOrphans()
	for _, comp := range append(slices.Clone(allComponents), compWatchdog) {
		_ = os.Remove(in.pidPath(comp))
	}
	in.cleanupRealNode()
	// The kubelet's pods go with etcd's data; containerd's image store stays (a cache).
	for _, d := range []string{"etcd-data", "run", "kubelet"} {
		if err := os.RemoveAll(in.path(d)); err != nil {
			return n, err
		}
	}
	if purge {
		unlock()
		if err := os.RemoveAll(in.dir); err != nil {
			return n, err
		}
	}
	return n, nil
}

// statusResult is what "status --json" prints.
type statusResult struct {
	Name       string         `json:"name"`
	StateDir   string         `json:"stateDir"`
	Kubeconfig string         `json:"kubeconfig"`
	Server     string         `json:"server,omitempty"`
	Running    bool           `json:"running"` // every component runs
	Components []compStatus   `json:"components"`
	Ports      map[string]int `json:"ports"`
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs, true)
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	in, err := openInstance(cf.name)
	if err != nil {
		return exitError{code: exitUsage, err: err}
	}
	res := statusResult{Name: in.name, StateDir: in.dir, Kubeconfig: in.kubeconfig(), Running: true, Ports: in.st.Ports}
	if in.st.Ports[portAPIServer] != 0 {
		res.Server = in.serverURL()
	}
	var down []string
	for _, comp := range in.components() {
		cs := in.inspect(comp)
		res.Components = append(res.Components, cs)
		if !cs.Running {
			res.Running = false
			down = append(down, comp)
		}
	}
	if cf.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "devcluster %q  state: %s\n", in.name, in.dir)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "COMPONENT\tSTATUS\tPID\tRSS\tLISTENS\tLOG")
		for _, cs := range res.Components {
			st, pid, rss := "running", strconv.Itoa(cs.PID), fmt.Sprintf("%.1f MiB", float64(cs.RSSBytes)/(1<<20))
			if !cs.Running {
				st, pid, rss = "NOT RUNNING", "-", "-"
				if cs.Stale {
					st = fmt.Sprintf("NOT RUNNING (crashed or killed; stale pid %d)", cs.PID)
				}
			}
			var ports []string
			for _, p := range cs.Ports {
				ports = append(ports, loopback+":"+strconv.Itoa(p))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cs.Name, st, pid, rss, strings.Join(ports, ","), cs.Log)
		}
		tw.Flush()
		if res.Running {
			fmt.Fprintf(stdout, "kubeconfig: %s\n", in.kubeconfig())
		}
	}
	if !res.Running {
		msg := fmt.Sprintf("not running: %s", strings.Join(down, ", "))
		if len(down) < len(in.components()) {
			msg += fmt.Sprintf(" (run `devcluster up --name %s` to restart what is missing)", in.name)
		}
		return exitError{code: exitNotRunning, err: errors.New(msg)}
	}
	return nil
}

func cmdEnv(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs, true)
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	in, err := openInstance(cf.name)
	if err != nil {
		return exitError{code: exitUsage, err: err}
	}
	if _, err := os.Stat(in.kubeconfig()); err != nil {
		fmt.Fprintf(stderr, "devcluster env: %s does not exist yet; run `devcluster up --name %s`\n", in.kubeconfig(), in.name)
	}
	if cf.json {
		return json.NewEncoder(stdout).Encode(map[string]string{"KUBECONFIG": in.kubeconfig()})
	}
	fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", shellQuote(in.kubeconfig()))
	return nil
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startWatchdog starts a detached "devcluster watchdog" that runs down --purge for this
// instance once the process pid exits: a test binary that crashes or is killed still leaves
// no cluster behind.
func (in *instance) startWatchdog(pid int) error {
	st, err := readProcStat(pid)
	if err != nil {
		return fmt.Errorf("--down-when-exits %d: no such process", pid)
	}
	if pf, err := in.running(compWatchdog); err == nil {
		stopProcesses([]pidFile{pf}, in.marker(), 5*time.Second) // replaced by one for the new owner
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = startDaemon(exe, []string{"watchdog", "--name", in.name, "--pid", strconv.Itoa(pid),
		"--pid-start", strconv.FormatUint(st.startTime, 10), "--instance-dir", in.marker()},
		in.logPath(compWatchdog), in.pidPath(compWatchdog), os.Environ())
	return err
}

func cmdWatchdog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("watchdog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs, false)
	pid := fs.Int("pid", 0, "process to watch")
	pidStart := fs.Uint64("pid-start", 0, "its start time (guards against pid reuse)")
	dir := fs.String("instance-dir", "", "state directory of the instance (sanity check)")
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	in, err := openInstance(cf.name)
	if err != nil {
		return err
	}
	if *dir != in.marker() {
		return fmt.Errorf("watchdog: instance dir %q does not match %q", *dir, in.marker())
	}
	owner := pidFile{PID: *pid, StartTime: *pidStart}
	for {
		st, err := readProcStat(owner.PID)
		if err != nil || st.state == 'Z' || st.startTime != owner.StartTime {
			break
		}
		select {
		case <-ctx.Done():
			return nil // stopped by down: nothing more to do
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintf(stderr, "watchdog %s: process %d exited; stopping instance %q\n", time.Now().Format(time.RFC3339), owner.PID, in.name)
	n, err := in.down(context.Background(), true)
	fmt.Fprintf(stderr, "watchdog: stopped %d process(es), err=%v\n", n, err)
	return err
}
