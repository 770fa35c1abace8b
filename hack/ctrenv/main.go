// Command ctrenv runs Freshet's container test environment on loopback and builds Freshet's
// own image, without Docker:
//
//   - registry: the CNCF distribution registry from Debian (docker-registry) on a free port of
//     127.0.0.1, with htpasswd auth (bcrypt) and TLS from a CA it generates per instance;
//   - test-images: small busybox-based images built in Go with go-containerregistry (no engine
//     needed), cached by content outside the clone and pushed to a registry;
//   - engine: Podman's Docker-compatible API (`podman system service`) on a unix socket, with
//     a configuration of its own (runc, cgroupfs, default ulimits, netavark, file locks, trust
//     of the registries' CAs) and all its storage in its state directory;
//   - image: the freshet image, ko-style (a static binary on a minimal base), pushed to a
//     registry and/or written as an OCI layout tarball.
//
// Usage:
//
//	ctrenv deps [--check]                                  # install the Debian packages when missing
//	ctrenv registry up|down|env|status [--name dev] [--json] [--tls=false] [--purge]
//	ctrenv test-images [--registry dev] [--json]
//	ctrenv builder-image [--registry dev]
//	ctrenv engine up|down|env|status|trust [--name dev] [--registry dev] [--json] [--purge]
//	ctrenv image [--image REF] [--registry dev] [--oci-layout FILE] [--push=false]
//	             [--platform linux/amd64,linux/arm64] [--base scratch|busybox] [--version V]
//
// Every instance (--name) has its own state directory and its own free port or socket;
// several run at once. `up` on a running instance changes nothing; `up --down-when-exits PID`
// also starts a watchdog that runs `down --purge` once PID exits (the Go test helper
// internal/testenv/containers uses it). See docs/testing.md, section "Containers".
//
// Environment:
//
//	FRESHET_CONTAINERS_STATE  instance state root (default ${XDG_STATE_HOME:-$HOME/.local/state}/freshet/containers)
//	FRESHET_CONTAINERS_CACHE  build cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/freshet/containers)
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

// Exit codes. The Go test helper tells "cannot run here" (missing packages, not root) from a
// real failure by them, without parsing text.
const (
	exitOK           = 0
	exitFailure      = 1
	exitUsage        = 2
	exitMissingTools = 3 // Debian packages are not installed (and were not installed)
	exitNotRunning   = 4 // status/env/test-images: the instance is not running
	exitNotPermitted = 5 // the engine needs root
)

const usage = `usage: ctrenv <command> [flags]

commands:
  deps          install the Debian packages the environment needs when missing (apt-get, as root)
  registry      up | down | env | status: a loopback distribution registry with htpasswd auth and TLS
  test-images   build the busybox-based test images (cached) and push them to a registry
  builder-image make freshet-test/buildah:v1 (Debian's buildah and its libraries on the busybox base) and push it
  engine        up | down | env | status | trust: Podman's Docker API service on a unix socket
  image         build the freshet image (static binary on a minimal base); push it and/or write
                an OCI layout tarball

run "ctrenv <command> -h" for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "deps":
		err = cmdDeps(ctx, rest, stdout, stderr)
	case "registry":
		err = cmdRegistry(ctx, rest, stdout, stderr)
	case "test-images":
		err = cmdTestImages(ctx, rest, stdout, stderr)
	case "builder-image":
		err = cmdBuilderImage(ctx, rest, stdout, stderr)
	case "engine":
		err = cmdEngine(ctx, rest, stdout, stderr)
	case "image":
		err = cmdImage(ctx, rest, stdout, stderr)
	case "watchdog": // internal: started by "up --down-when-exits PID"
		err = cmdWatchdog(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "ctrenv: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	if err == nil {
		return exitOK
	}
	var ec exitError
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintf(stderr, "ctrenv %s: %v\n", cmd, ec.err)
		}
		return ec.code
	}
	fmt.Fprintf(stderr, "ctrenv %s: %v\n", cmd, err)
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

func usageError(format string, args ...any) error {
	return exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}
