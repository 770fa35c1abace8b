// Command devcluster builds and runs a real Kubernetes control plane on loopback for
// Freshet's tests and for trying GitOps locally: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler (built from k8s.io/kubernetes), plus kwok,
// which fakes a Node so Pods are scheduled, become Running, and Job pods complete.
//
// Usage:
//
//	devcluster build                       # build/install binaries into the cache (once per machine)
//	devcluster up     [--name dev] [--json] # start (or repair) an instance, wait until it is ready
//	devcluster status [--name dev] [--json] # each component: running or not, pid, RSS, port
//	devcluster env    [--name dev]          # prints: export KUBECONFIG=...
//	devcluster down   [--name dev] [--purge]
//
// Several instances (--name) run at once; each has its own state directory (certificates,
// kubeconfig, etcd data, logs, pid files) and its own free ports on 127.0.0.1.
//
// Environment:
//
//	FRESHET_DEVCLUSTER_CACHE  binary cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/freshet/devcluster)
//	FRESHET_DEVCLUSTER_STATE  instance state root (default ${XDG_STATE_HOME:-$HOME/.local/state}/freshet/devcluster)
//	FRESHET_DEVCLUSTER_ETCD   etcd binary to use instead of Debian's /usr/bin/etcd
//	FRESHET_DEVCLUSTER_GO     go command used by build (default: go on PATH, then /usr/local/go/bin/go)
//
// This is a separate Go module (stdlib only), so the freshet module graph does not carry it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes. exitNoBinaries lets callers (the Go test helper) tell "not built yet" from a
// real failure without parsing text.
const (
	exitOK         = 0
	exitFailure    = 1
	exitUsage      = 2
	exitNoBinaries = 3
	exitNotRunning = 4
)

const usage = `usage: devcluster <command> [flags]

commands:
  build    build kube-apiserver, kube-controller-manager, kube-scheduler and kwok into the cache
           and install etcd (Debian etcd-server) if it is missing
  up       start an instance (or restart whatever of it is not running) and wait until ready
  down     stop an instance (--purge also removes its certificates and kubeconfig)
  status   show each component of an instance: running or not, pid, RSS, port
  env      print shell exports for an instance (export KUBECONFIG=...)

common flags:
  --name NAME   instance name (default "dev")
  --json        machine-readable output (up, status, env)

run "devcluster <command> -h" for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "build":
		err = cmdBuild(ctx, rest, stdout, stderr)
	case "up":
		err = cmdUp(ctx, rest, stdout, stderr)
	case "down":
		err = cmdDown(ctx, rest, stdout, stderr)
	case "status":
		err = cmdStatus(ctx, rest, stdout, stderr)
	case "env":
		err = cmdEnv(ctx, rest, stdout, stderr)
	case "watchdog": // internal: started by "up --down-when-exits PID"
		err = cmdWatchdog(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "devcluster: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	if err == nil {
		return exitOK
	}
	var ec exitError
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintf(stderr, "devcluster %s: %v\n", cmd, ec.err)
		}
		return ec.code
	}
	fmt.Fprintf(stderr, "devcluster %s: %v\n", cmd, err)
	return exitFailure
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e exitError) Unwrap() error { return e.err }
