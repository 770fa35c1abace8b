package main

import (
	"context"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// debPkg is a Debian package and a file that shows it is installed.
type debPkg struct {
	name string
	file string
}

// The Debian packages each part needs (bookworm names; the versions this was built against are
// in docs/testing.md).
var (
	registryPkgs = []debPkg{{"docker-registry", "/usr/bin/docker-registry"}}
	imagePkgs    = []debPkg{{"busybox-static", busyboxPath}}
	// A real Prometheus for the rollouts analysis tests (internal/gitops/rollouts), which start
	// it themselves on 127.0.0.1.
	metricsPkgs = []debPkg{{"prometheus", "/usr/bin/prometheus"}}
	enginePkgs  = []debPkg{
		{"podman", "/usr/bin/podman"},
		{"runc", "/usr/sbin/runc"},
		{"conmon", "/usr/bin/conmon"},
		{"netavark", "/usr/lib/podman/netavark"},
		{"aardvark-dns", "/usr/lib/podman/aardvark-dns"},
		{"iptables", "/usr/sbin/iptables"},
		{"catatonit", catatonitPath},
	}
)

const (
	busyboxPath   = "/bin/busybox"
	catatonitPath = "/usr/bin/catatonit"
)

// installHint is how a user installs every package; part of every "missing" message.
const installHint = "install them with `make containers-deps` (apt-get, as root)"

func allPkgs() []debPkg {
	return slices.Concat(registryPkgs, imagePkgs, enginePkgs, builderPkgs, metricsPkgs)
}

func cmdDeps(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deps", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "only report what is missing (exit code 3 if anything is)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "ctrenv deps: "+format+"\n", a...) }
	t0 := time.Now()
	if err := ensurePackages(ctx, allPkgs(), !*check, logf); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Debian packages present: %s (%.1fs)\n", pkgNames(allPkgs()), time.Since(t0).Seconds())
	return nil
}

func pkgNames(pkgs []debPkg) string {
	var n []string
	for _, p := range pkgs {
		n = append(n, p.name)
	}
	return strings.Join(n, " ")
}

// missingPackages lists the packages whose file is absent (or, for busybox, not the static
// build: Debian's dynamic busybox package puts a binary at the same path).
func missingPackages(pkgs []debPkg) []debPkg {
	var out []debPkg
	for _, p := range pkgs {
		if _, err := os.Stat(p.file); err != nil {
			out = append(out, p)
			continue
		}
		if p.file == busyboxPath && !isStatic(p.file) {
			out = append(out, p)
		}
	}
	return out
}

// isStatic tells whether an ELF executable needs no dynamic loader.
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// ensurePackages installs the missing packages with apt-get when install is set and ctrenv
// runs as root; otherwise it returns an exitMissingTools error naming them.
func ensurePackages(ctx context.Context, pkgs []debPkg, install bool, logf func(string, ...any)) error {
	missing := missingPackages(pkgs)
	if len(missing) == 0 {
		return nil
	}
	names := pkgNames(missing)
	if !install {
		return exitError{code: exitMissingTools, err: fmt.Errorf("missing Debian packages: %s; %s", names, installHint)}
	}
	if os.Geteuid() != 0 {
		return exitError{code: exitMissingTools, err: fmt.Errorf("missing Debian packages: %s; install them as root: sudo apt-get install --no-install-recommends %s", names, names)}
	}
	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=120"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 1500))
		}
		return nil
	}
	t0 := time.Now()
	logf("installing Debian packages with apt-get: %s", names)
	installArgs := append([]string{"install", "-y", "-q", "--no-install-recommends"}, strings.Fields(names)...)
	if err := apt(installArgs...); err != nil {
		// Package lists may be missing or old: refresh once and retry.
		if err := apt("update", "-q"); err != nil {
			return err
		}
		if err := apt(installArgs...); err != nil {
			return err
		}
	}
	if still := missingPackages(pkgs); len(still) > 0 {
		return fmt.Errorf("after apt-get install, still missing: %s", pkgNames(still))
	}
	logf("installed %s in %.1fs", names, time.Since(t0).Seconds())
	return nil
}
