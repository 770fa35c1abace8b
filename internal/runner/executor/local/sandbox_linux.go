package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// An isolated step is started by a helper: the runner's own executable, started again as
// sandboxArg0 in new namespaces (mount and PID; and user, for IsolationNamespaces). The helper
// is the init process of the step's PID namespace. It covers Root, Options.Hide and the scratch
// directories, binds the step's build directory back, mounts a /proc of its own, becomes the
// step's user, and starts the step's program; then it reaps orphans until the step's process
// exits, and exits with its status (128+N for a signal). When it exits, the kernel kills every
// process left in the namespace. The runner talks to it over two pipes: the configuration
// (fd 3, JSON) and one status answer (fd 4), never through the environment or the command
// line, which the step's own variables could subvert (LD_PRELOAD in a root process) or other
// users read (/proc/<pid>/cmdline).

// sandboxArg0 is argv[0] of the sandbox helper.
const sandboxArg0 = "freshet-step-sandbox"

// The helper's file descriptors besides stdin, stdout and stderr.
const (
	sandboxConfigFD = 3
	sandboxStatusFD = 4
)

// sandboxSetupFailed is the helper's exit code when it could not set up the sandbox.
const sandboxSetupFailed = 125

// probeTimeout bounds New's trial run of the sandbox.
const probeTimeout = 20 * time.Second

func init() {
	// Every program that links this package can be the helper: the freshet binary, and test
	// binaries alike.
	if len(os.Args) == 1 && os.Args[0] == sandboxArg0 {
		os.Exit(sandboxMain())
	}
}

// sandboxAttr is how the runner starts the helper: the step's process group and parent-death
// signal, in new namespaces.
func sandboxAttr(cfg sandboxConfig) *syscall.SysProcAttr {
	attr := stepAttr()
	attr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
	if cfg.Mode == IsolationNamespaces {
		// The runner's user is root in the helper's namespace, which gives it the capabilities
		// to mount; the step gets the runner's UID back in a namespace of its own, without them.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: cfg.UID, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: cfg.GID, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return attr
}

// startSandbox starts the helper for cfg with out as its stdout and stderr and tag as its
// process tag, and waits for its status. On an error the helper has been stopped.
func startSandbox(cfg sandboxConfig, out *os.File, tag string) (*exec.Cmd, sandboxStatus, error) {
	var st sandboxStatus
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, st, fmt.Errorf("sandbox pipe: %w", err)
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return nil, st, fmt.Errorf("sandbox pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{sandboxArg0},
		Env:         []string{ProcessTagEnv + "=" + tag},
		Dir:         "/",
		Stdout:      out,
		Stderr:      out,
		ExtraFiles:  []*os.File{cfgR, stW},
		SysProcAttr: sandboxAttr(cfg),
	}
	err = cmd.Start()
	cfgR.Close()
	stW.Close()
	if err != nil {
		cfgW.Close()
		stR.Close()
		return nil, st, fmt.Errorf("start the step's sandbox: %w", err)
	}
	werr := json.NewEncoder(cfgW).Encode(cfg)
	cfgW.Close()
	// One answer, read as soon as it is written: the helper exits only when the step does.
	rerr := json.NewDecoder(io.LimitReader(stR, 64<<10)).Decode(&st)
	stR.Close()
	fail := func(err error) (*exec.Cmd, sandboxStatus, error) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, st, err
	}
	if werr != nil || rerr != nil {
		return fail(fmt.Errorf("the step's sandbox did not start: %w", errors.Join(werr, rerr)))
	}
	if st.Error != "" {
		return fail(fmt.Errorf("the step's sandbox: %s", st.Error))
	}
	return cmd, st, nil
}

// probe runs the sandbox once with /bin/sh as the step, to tell at start whether isolation
// works here.
func (l *Local) probe() error {
	cfg := l.sandboxConfig("", []string{"/bin/sh", "-c", "exit 0"}, nil, "/", false)
	cfg.Probe = true
	var out bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&out, pr); close(copied) }()
	cmd, st, err := startSandbox(cfg, pw, "probe")
	pw.Close()
	if err != nil {
		<-copied
		pr.Close()
		return fmt.Errorf("%w: isolation %s: %v; %s", ErrIsolationUnavailable, l.opts.Isolation, err, isolationHint(l.opts.Isolation))
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(probeTimeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = fmt.Errorf("no answer within %s", probeTimeout)
		<-waited
	}
	<-copied
	pr.Close()
	if err == nil && st.Exit != 0 {
		err = fmt.Errorf("exit code %d: %s", st.Exit, st.Notice)
	}
	if err != nil {
		return fmt.Errorf("%w: isolation %s: a trial step failed: %v %s", ErrIsolationUnavailable, l.opts.Isolation, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// sandboxMain is the helper (see the top of this file). It returns its exit code.
func sandboxMain() int {
	// Inherited without close-on-exec: the step must not inherit them in turn.
	syscall.CloseOnExec(sandboxConfigFD)
	syscall.CloseOnExec(sandboxStatusFD)
	status := os.NewFile(sandboxStatusFD, "status")
	answer := func(st sandboxStatus) {
		_ = json.NewEncoder(status).Encode(st)
		status.Close()
	}
	// The runner signals the step's whole process group, this helper included; it lives on
	// until the step's process ends (or SIGKILL). A signal that arrives before the step's
	// process exists stops the step before it starts.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)

	var cfg sandboxConfig
	if err := json.NewDecoder(os.NewFile(sandboxConfigFD, "config")).Decode(&cfg); err != nil {
		answer(sandboxStatus{Error: fmt.Sprintf("read the configuration: %v", err)})
		return sandboxSetupFailed
	}
	if err := setupSandbox(cfg); err != nil {
		answer(sandboxStatus{Error: err.Error()})
		return sandboxSetupFailed
	}
	if cfg.MakeDir {
		if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
			answer(sandboxStatus{Error: fmt.Sprintf("working directory: %v", err)})
			return sandboxSetupFailed
		}
	}
	select {
	case sig := <-sigs:
		code := 128 + int(sig.(syscall.Signal))
		answer(sandboxStatus{Exit: code, Notice: fmt.Sprintf("stopped (%v) before it started", sig)})
		return code
	default:
	}
	if fi, err := os.Stat(cfg.Dir); err != nil || !fi.IsDir() {
		code := executor.ExitCodeNotFound
		if errors.Is(err, fs.ErrPermission) {
			code--
		} else if err == nil {
			err = errors.New("not a directory")
		}
		answer(sandboxStatus{Exit: code, Notice: fmt.Sprintf("working directory %s: %v", cfg.Dir, err)})
		return code
	}
	prog := cfg.Argv[0]
	if !cfg.Probe {
		var err error
		if prog, err = lookPath(cfg.Argv[0], pathOfEnviron(cfg.Env), cfg.Dir); err != nil {
			code := exitCodeFor(err)
			answer(sandboxStatus{Exit: code, Notice: fmt.Sprintf("%s: %v (PATH=%s)", cfg.Argv[0], err, pathOfEnviron(cfg.Env))})
			return code
		}
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if cfg.Mode == IsolationNamespaces {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: cfg.UID, HostID: 0, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: cfg.GID, HostID: 0, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	p, err := os.StartProcess(prog, cfg.Argv, &os.ProcAttr{Dir: cfg.Dir, Env: cfg.Env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: attr})
	if err != nil {
		code := exitCodeFor(err)
		if code == 0 {
			answer(sandboxStatus{Error: fmt.Sprintf("start %s: %v", cfg.Argv[0], err)})
			return sandboxSetupFailed
		}
		answer(sandboxStatus{Exit: code, Notice: fmt.Sprintf("%s: %v", cfg.Argv[0], err)})
		return code
	}
	answer(sandboxStatus{Pid: p.Pid})
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			fmt.Fprintf(os.Stderr, "%swait for the step: %v\n", executor.NoticePrefix, err)
			return sandboxSetupFailed
		case pid != p.Pid:
			continue // an orphan of the step, reaped
		case ws.Signaled():
			return 128 + int(ws.Signal())
		default:
			return ws.ExitStatus()
		}
	}
}

// setupSandbox builds the step's view of the host (the helper runs it in its new namespaces) and
// becomes the step's user.
func setupSandbox(cfg sandboxConfig) error {
	// Nothing mounted here may reach the host's mount namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	build := -1
	if cfg.BuildDir != "" {
		fd, err := syscall.Open(cfg.BuildDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open the build directory: %w", err)
		}
		build = fd
		defer syscall.Close(fd)
	}
	for i, m := range cfg.Mounts {
		fi, err := os.Stat(m.Path)
		if errors.Is(err, fs.ErrNotExist) && slices.ContainsFunc(cfg.Mounts[:i], func(o sandboxMount) bool { return o.Scratch && within(m.Path, o.Path) }) {
			// Hidden inside a scratch directory mounted just before: there, it is an empty
			// directory too.
			if err = os.MkdirAll(m.Path, 0o755); err == nil {
				fi, err = os.Stat(m.Path)
			}
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("hide %s: %w", m.Path, err)
		case fi.IsDir():
			data := "mode=0755,size=64k"
			if m.Scratch {
				data = "mode=1777"
			}
			err = syscall.Mount("tmpfs", m.Path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, data)
		default:
			err = syscall.Mount("/dev/null", m.Path, "", syscall.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", m.Path, err)
		}
	}
	if build >= 0 {
		if err := os.MkdirAll(cfg.BuildDir, 0o755); err != nil {
			return fmt.Errorf("build directory: %w", err)
		}
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(build), cfg.BuildDir, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind the build directory: %w", err)
		}
	}
	// What hides is empty and stays so.
	for _, m := range cfg.Mounts {
		if fi, err := os.Stat(m.Path); err != nil || !fi.IsDir() || m.Scratch {
			continue
		}
		if err := syscall.Mount("", m.Path, "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.Path, err)
		}
	}
	for _, f := range [][2]string{{cfg.Passwd, "/etc/passwd"}, {cfg.Group, "/etc/group"}} {
		if f[0] == "" {
			continue
		}
		if err := syscall.Mount(f[0], f[1], "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", f[1], err)
		}
		if err := syscall.Mount("", f[1], "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", f[1], err)
		}
	}
	// The /proc of the step's PID namespace: the runner and every other process are not in it.
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if cfg.Mode == IsolationUser {
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("drop supplementary groups: %w", err)
		}
		if err := syscall.Setresgid(cfg.GID, cfg.GID, cfg.GID); err != nil {
			return fmt.Errorf("become GID %d: %w", cfg.GID, err)
		}
		if err := syscall.Setresuid(cfg.UID, cfg.UID, cfg.UID); err != nil {
			return fmt.Errorf("become UID %d: %w", cfg.UID, err)
		}
	}
	// Not dumpable: the step (with the runner's UID in IsolationNamespaces) cannot ptrace this
	// process, which holds the capabilities of its namespace, nor read its memory.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", e)
	}
	return nil
}

// pathOfEnviron returns the PATH in a KEY=VALUE environment.
func pathOfEnviron(env []string) string {
	p := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	return p
}
