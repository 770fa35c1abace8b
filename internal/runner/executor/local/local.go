// Package local is the executor that runs a build's steps as processes on the runner's own host,
// in a per-build directory. It is what `freshet up` uses. Without isolation (the default) it
// isolates nothing but the environment and the process tree, so it is meant for trusted
// pipelines; with Options.Isolation each step runs as an unprivileged user in namespaces of its
// own that hide the runner's processes, the other builds and the paths it is told to hide.
//
// Prepare makes a build directory (mode 0700) under Options.Root holding the workspace
// (CF_VOLUME_PATH), a HOME and a TMPDIR shared by the build's steps, and a bin directory with
// cf_export. Run writes the step's script there and runs it with the step's shell in a new
// process group; the step's image is not used (a notice says so). Steps start from a minimal
// environment — PATH, HOME, TMPDIR, LANG, the variables named in Options.PassEnv, then the step's
// own — never from the runner's (it holds the runner's token). Every process of a step also
// carries ProcessTagEnv, so that processes that leave the process group (setsid, daemons) are
// found and killed too. On Linux a step dies with its runner: its main process has a parent-death
// signal and a watchdog in its process group kills the group and the build's tagged processes
// when the runner dies, even by SIGKILL. Sweep, called at runner start, cleans up the build
// directories (and their processes) of runners that are gone.
//
// An isolated step (Linux only) is started through a helper, the runner's executable started
// again in new mount and PID namespaces (and a user namespace when the runner is not root):
// Root is covered but for the step's own build directory, so are Options.Hide (and, without
// root, the runner's home), /tmp, /var/tmp and /dev/shm are empty, /proc shows the step's own
// processes only, and the step runs as Options.User (as root) or as the runner's user without
// any capability (in a user namespace). New tries it once and fails with
// ErrIsolationUnavailable, saying why, when the host does not allow it. See docs/executors.md.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Name is the local executor's name.
const Name = "local"

// ProcessTagEnv is set in every step process to "<build directory name>/<step number>". The
// executor finds a step's processes by it (besides their process group) to kill them when the
// step ends, and a build's processes when the build is cleaned up.
const ProcessTagEnv = "FRESHET_PROCESS_TAG"

// The layout of a build directory.
const (
	dirPrefix    = "freshet-"  // build directories are <Root>/freshet-<build id>-<random>
	workspaceDir = "workspace" // CF_VOLUME_PATH
	homeDir      = "home"      // HOME
	tmpDir       = "tmp"       // TMPDIR
	binDir       = "bin"       // cf_export, first in PATH
	scriptsDir   = "scripts"   // the steps' scripts
	ownerFile    = "owner"     // "<pid> <start time>" of the runner process that made the directory
	passwdFile   = "passwd"    // IsolationUser, a step user without an account: the step's /etc/passwd
	groupFile    = "group"     // and its /etc/group
	maxIDInName  = 40          // how much of a build ID goes into the directory name
)

// Timing of the end of a step.
const (
	// killSettleTimeout bounds how long Run waits for SIGKILLed processes to disappear.
	killSettleTimeout = 5 * time.Second
	// sweepInterval is the pause between two scans for processes that are still alive.
	sweepInterval = 10 * time.Millisecond
	// outputDrainIdle is how long Run waits for more output once the step's processes are gone:
	// only a process that escaped both the group and the tag can still hold the output pipe.
	outputDrainIdle = time.Second
	// outputDrainMax bounds the whole drain, against such a process that keeps writing.
	outputDrainMax = 5 * time.Second
	// copyBufferSize is the size of the reads from the output pipe; each read is written to out
	// as it is.
	copyBufferSize = 32 << 10
)

// Local runs steps as host processes. Create it with New.
type Local struct {
	opts     Options
	lang     string
	passEnv  []executor.EnvVar
	sequence atomic.Uint64 // numbers the steps run, for their process tags
	// With isolation: the steps' user (IsolationNamespaces: the runner's own) and what covers
	// the host in their view.
	user   stepUser
	mounts []sandboxMount
}

// Interface guard.
var _ executor.Executor = (*Local)(nil)

// New returns a local executor. It reads the runner's LANG and the variables named in
// opts.PassEnv once, here. With isolation it resolves IsolationAuto and the step user, and runs
// a trial step in the sandbox: ErrIsolationUnavailable says why steps cannot be isolated here
// and what would allow it.
func New(opts Options) (*Local, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	fi, err := os.Stat(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: Root = %q: %w", ErrInvalidOptions, opts.Root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: Root = %q: not a directory", ErrInvalidOptions, opts.Root)
	}
	l := &Local{opts: opts, lang: os.Getenv("LANG")}
	if l.lang == "" {
		l.lang = DefaultLang
	}
	for _, name := range opts.PassEnv {
		if v, ok := os.LookupEnv(name); ok {
			l.passEnv = append(l.passEnv, executor.EnvVar{Name: name, Value: v})
		}
	}
	if err := l.isolate(); err != nil {
		return nil, err
	}
	return l, nil
}

// isolate resolves the isolation mode and the step user, and tries the sandbox.
func (l *Local) isolate() error {
	mode, euid := l.opts.Isolation, os.Geteuid()
	if mode == IsolationAuto {
		mode = IsolationNamespaces
		if euid == 0 {
			mode = IsolationUser
		}
	}
	l.opts.Isolation = mode
	if mode == IsolationNone {
		return nil
	}
	if l.opts.User != "" && mode != IsolationUser {
		return fmt.Errorf("%w: User = %q: only isolation %s runs steps as another user (isolation is %s)", ErrInvalidOptions, l.opts.User, IsolationUser, mode)
	}
	if l.opts.Root = realPath(l.opts.Root); l.opts.Root == "/" {
		return fmt.Errorf("%w: Root = %q: isolated steps cannot have the whole file system hidden from them", ErrInvalidOptions, l.opts.Root)
	}
	hide := append([]string{l.opts.Root}, l.opts.Hide...)
	switch mode {
	case IsolationUser:
		if euid != 0 {
			return fmt.Errorf("%w: isolation %s: the runner must run as root to start steps as another user (it runs as UID %d); use isolation %s",
				ErrIsolationUnavailable, mode, euid, IsolationNamespaces)
		}
		su, err := resolveUser(l.opts.User, euid)
		if err != nil {
			return err
		}
		l.user = su
		// The step's build directory is bound back at its own path: a directory on the way
		// that the step's user may not enter (root's home, mode 0700) is covered too, which
		// hides nothing the user could see, and gives the path to the build directory.
		if d := closedAncestor(l.opts.Root, su); d != "" {
			hide = append(hide, d)
		}
	case IsolationNamespaces:
		if euid == 0 {
			return fmt.Errorf("%w: isolation %s: the runner runs as root, and its steps would keep root's UID on the host's files; use isolation %s",
				ErrIsolationUnavailable, mode, IsolationUser)
		}
		l.user = stepUser{uid: euid, gid: os.Getegid()}
		// Steps have the runner's UID: what only that UID may read must be out of sight.
		if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && filepath.Clean(home) != "/" {
			hide = append(hide, home)
		}
		hide = append(hide, runtimeDirs(euid)...)
	}
	l.mounts = sandboxMounts(hide)
	return l.probe()
}

// Name returns "local".
func (l *Local) Name() string { return Name }

// Isolation returns how steps are isolated: IsolationNone, IsolationUser or
// IsolationNamespaces (IsolationAuto resolved).
func (l *Local) Isolation() Isolation { return l.opts.Isolation }

// StepUser returns the UID and GID isolated steps run as on the host (the runner's own with
// IsolationNone and IsolationNamespaces).
func (l *Local) StepUser() (uid, gid int) {
	if l.opts.Isolation == IsolationNone {
		return os.Geteuid(), os.Getegid()
	}
	return l.user.uid, l.user.gid
}

// Prepare makes the build directory and its workspace.
func (l *Local) Prepare(ctx context.Context, b executor.Build) (executor.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return executor.Workspace{}, err
	}
	if b.ID == "" {
		return executor.Workspace{}, fmt.Errorf("prepare workspace: %w", errdefs.Invalid("build.id", "", "is required"))
	}
	bd, err := os.MkdirTemp(l.opts.Root, dirPrefix+sanitize(b.ID)+"-")
	if err != nil {
		return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: %w", b.ID, err)
	}
	if err := populate(bd, owner()); err != nil {
		_ = removeAll(bd)
		return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: %w", b.ID, err)
	}
	if err := l.handOver(bd); err != nil {
		_ = removeAll(bd)
		return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: %w", b.ID, err)
	}
	return executor.Workspace{BuildID: b.ID, Path: filepath.Join(bd, workspaceDir), Handle: bd}, nil
}

// populate makes the subdirectories of a new build directory bd and their files; owner names
// the process that made it.
func populate(bd, owner string) error {
	if err := os.WriteFile(filepath.Join(bd, ownerFile), []byte(owner), 0o600); err != nil {
		return err
	}
	for _, d := range []string{workspaceDir, homeDir, tmpDir, binDir, scriptsDir} {
		if err := os.Mkdir(filepath.Join(bd, d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(bd, binDir, executor.CFExportCommand), []byte(executor.CFExportScript), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bd, workspaceDir, executor.ExportFile), nil, 0o600)
}

// handOver gives a new build directory to the step user of IsolationUser: its subdirectories and
// their files become the user's; the build directory itself stays the runner's (mode 0711), so
// that a step cannot touch the owner file or the passwd and group files written there for a
// user without an account.
func (l *Local) handOver(bd string) error {
	if l.opts.Isolation != IsolationUser {
		return nil
	}
	for _, d := range []string{workspaceDir, homeDir, tmpDir, binDir, scriptsDir} {
		err := filepath.WalkDir(filepath.Join(bd, d), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, l.user.uid, l.user.gid)
		})
		if err != nil {
			return err
		}
	}
	if l.user.passwd != nil {
		if err := os.WriteFile(filepath.Join(bd, passwdFile), l.user.passwd, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(bd, groupFile), l.user.group, 0o644); err != nil {
			return err
		}
	}
	return os.Chmod(bd, 0o711)
}

// sandboxConfig is what the helper needs to start a step of build directory bd ("" for the
// probe) in the sandbox.
func (l *Local) sandboxConfig(bd string, argv, env []string, dir string, makeDir bool) sandboxConfig {
	cfg := sandboxConfig{Mode: l.opts.Isolation, UID: l.user.uid, GID: l.user.gid, Mounts: l.mounts,
		BuildDir: bd, Argv: argv, Env: env, Dir: dir, MakeDir: makeDir}
	if bd != "" && l.user.passwd != nil {
		cfg.Passwd, cfg.Group = filepath.Join(bd, passwdFile), filepath.Join(bd, groupFile)
	}
	return cfg
}

// Run runs the step as a process group on the host. See executor.Executor for the contract.
func (l *Local) Run(ctx context.Context, ws executor.Workspace, s executor.Step, out io.Writer) (executor.Result, error) {
	var res executor.Result
	bd, err := l.buildDir(ws, true)
	if err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if err := s.Validate(); err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if len(s.Commands) == 0 && len(s.EntryPoint) == 0 {
		return res, fmt.Errorf("step %q: %w: %w", s.Name, executor.ErrInvalidStep, errdefs.Invalid("commands", "",
			"the local executor needs commands or an entry point: it cannot run an image's default command"))
	}
	dir, inWorkspace, err := executor.ResolveWorkingDir(ws.Path, s.WorkingDir)
	if err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	makeDir := false
	switch isolated := l.opts.Isolation != IsolationNone; {
	case inWorkspace && isolated:
		// Made by the sandbox, as the step's user: the workspace is the step's, and so are the
		// symbolic links in it.
		makeDir = true
	case inWorkspace:
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return res, fmt.Errorf("step %q: working directory: %w", s.Name, err)
		}
	case isolated:
		// Looked up in the step's view, as its user: the runner's would tell the step about
		// paths it may not see.
	default:
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return res, fmt.Errorf("step %q: %w: %w", s.Name, executor.ErrInvalidStep, errdefs.Invalid("working_directory", s.WorkingDir,
				"is not a directory on the runner's host (a path outside the workspace must exist)"))
		}
	}
	if ctx.Err() != nil {
		res.Canceled = true
		return res, nil
	}

	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	if s.Image != "" {
		res.ImageIgnored = true
		o.Notice("image %q is not used by the local executor: the step runs on the runner's host", s.Image)
	}
	exportsBefore := fileSize(filepath.Join(ws.Path, executor.ExportFile))

	script := ""
	if len(s.Commands) > 0 {
		f, err := os.CreateTemp(filepath.Join(bd, scriptsDir), "step-*.sh")
		if err != nil {
			return res, fmt.Errorf("step %q: write script: %w", s.Name, err)
		}
		script = f.Name()
		defer os.Remove(script)
		if l.opts.Isolation == IsolationUser {
			err = f.Chown(l.user.uid, l.user.gid)
		}
		if err == nil {
			_, err = f.WriteString(s.Script())
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return res, fmt.Errorf("step %q: write script: %w", s.Name, err)
		}
	}

	tag := filepath.Base(bd) + "/" + strconv.FormatUint(l.sequence.Add(1), 10)
	env := executor.MergeEnv(l.baseEnv(bd), s.Env,
		executor.EnvVar{Name: executor.VolumePathEnv, Value: ws.Path},
		executor.EnvVar{Name: ProcessTagEnv, Value: tag})
	argv := s.Command(script)

	start := time.Now()
	var runErr error
	res.ExitCode, res.TimedOut, res.Canceled, runErr = l.execute(ctx, s, argv, env, dir, makeDir, bd, tag, o)
	res.Duration = time.Since(start)

	exports, perr := l.readExports(ws.Path)
	res.Exports = exports
	if perr != nil && fileSize(filepath.Join(ws.Path, executor.ExportFile)) != exportsBefore {
		// Report bad lines in the step that changed the file, not in every later one.
		for _, e := range splitJoined(perr) {
			o.Notice("ignored: %v", e)
		}
	}
	if runErr != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, runErr)
	}
	if o.Err() != nil {
		return res, fmt.Errorf("step %q: write output: %w", s.Name, o.Err())
	}
	return res, nil
}

// execute starts argv and waits for it as described on executor.Executor.Run. It returns the exit
// code and how the step was stopped; the error is for infrastructure failures only.
func (l *Local) execute(ctx context.Context, s executor.Step, argv []string, env []executor.EnvVar, dir string, makeDir bool, bd, tag string, o *executor.Output) (code int, timedOut, canceled bool, err error) {
	var cmd *exec.Cmd
	var pr *os.File
	if l.opts.Isolation == IsolationNone {
		if cmd, pr, code, err = l.start(argv, env, dir, o); cmd == nil {
			return code, false, false, err
		}
	} else {
		var pw *os.File
		if pr, pw, err = os.Pipe(); err != nil {
			return 0, false, false, fmt.Errorf("output pipe: %w", err)
		}
		var st sandboxStatus
		cmd, st, err = startSandbox(l.sandboxConfig(bd, argv, executor.Environ(env), dir, makeDir), pw, tag)
		pw.Close()
		if err != nil {
			pr.Close()
			return 0, false, false, err
		}
		if st.Exit != 0 { // the program could not be started; the helper exits with its code
			_ = cmd.Wait()
			pr.Close()
			o.Notice("%s", st.Notice)
			return st.Exit, false, false, nil
		}
	}
	pgid := cmd.Process.Pid
	build, _, _ := strings.Cut(tag, "/")
	if reapWatchdog, err := startWatchdog(pgid, build+"/", pathOf(env)); err != nil {
		o.Notice("no watchdog for this step (it may outlive a runner that crashes): %v", err)
	} else {
		go reapWatchdog()
	}
	isStep := func(t string) bool { return t == tag }
	// The step's processes are not older than its main process (read before it can exit: it
	// cannot be reaped until Wait).
	started := startTime(pgid)

	copied := make(chan struct{})
	var d drain
	go func() {
		defer close(copied)
		copyFrom(o, pr, &d)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		canceled, waitErr = l.stop(pgid, isStep, started, waited)
	case <-timeout:
		timedOut, waitErr = l.stop(pgid, isStep, started, waited)
	}
	// The main process has exited: whatever it left behind dies with it.
	left := reap(pgid, isStep, started)

	d.start(pr)
	<-copied
	pr.Close()
	if d.cutShort.Load() {
		o.Notice("output cut short: a process outside the step's process group still holds it")
	}

	if errors.Is(waitErr, errNotExited) {
		o.Notice("%v", waitErr)
		return 128 + int(syscall.SIGKILL), timedOut, canceled, waitErr
	}
	if waitErr != nil && cmd.ProcessState == nil {
		return 0, timedOut, canceled, fmt.Errorf("wait for %s: %w", argv[0], waitErr)
	}
	code = exitCode(cmd.ProcessState)
	if len(left) > 0 {
		o.Notice("%d processes of the step survived SIGKILL: %s", len(left), describe(left))
		return code, timedOut, canceled, fmt.Errorf("%d processes survived SIGKILL: %s", len(left), describe(left))
	}
	return code, timedOut, canceled, nil
}

// start starts argv as the runner's user, writing to a new pipe it returns with the process.
// A program that cannot be started is an exit code (and a notice) without a process.
func (l *Local) start(argv []string, env []executor.EnvVar, dir string, o *executor.Output) (*exec.Cmd, *os.File, int, error) {
	prog, err := lookPath(argv[0], pathOf(env), dir)
	if err != nil {
		o.Notice("%s: %v (PATH=%s)", argv[0], err, pathOf(env))
		return nil, nil, exitCodeFor(err), nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("output pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        prog,
		Args:        argv,
		Env:         executor.Environ(env),
		Dir:         dir,
		Stdout:      pw, // one pipe for both: the kernel keeps their order
		Stderr:      pw,
		SysProcAttr: stepAttr(),
	}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		if code := exitCodeFor(err); code != 0 {
			o.Notice("%s: %v", argv[0], err)
			return nil, nil, code, nil
		}
		return nil, nil, 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	return cmd, pr, 0, nil
}

// stop ends a running step: SIGTERM to all of its processes, SIGKILL after the grace period. It
// reports whether it stopped the step (false if the main process had already exited on its own)
// and returns the main process's wait result.
func (l *Local) stop(pgid int, isStep func(string) bool, started uint64, waited <-chan error) (stopped bool, waitErr error) {
	select {
	case err := <-waited:
		return false, err
	default:
	}
	signalAll(pgid, isStep, started, syscall.SIGTERM)
	grace := time.NewTimer(l.opts.KillGrace)
	defer grace.Stop()
	select {
	case err := <-waited:
		return true, err
	case <-grace.C:
	}
	signalAll(pgid, isStep, started, syscall.SIGKILL)
	settle := time.NewTimer(killSettleTimeout)
	defer settle.Stop()
	select {
	case err := <-waited:
		return true, err
	case <-settle.C:
		// Stuck in uninterruptible sleep: do not hang the build on it. The waiting goroutine
		// ends when the process does.
		return true, errNotExited
	}
}

// errNotExited is the wait result of a main process that SIGKILL did not end in time.
var errNotExited = fmt.Errorf("the main process did not exit within %s of SIGKILL", killSettleTimeout)

// signalAll sends sig to process group pgid and to every process, started at or after started,
// whose tag isStep accepts.
func signalAll(pgid int, isStep func(string) bool, started uint64, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
	procs, _ := findProcesses(0, isStep, started)
	for _, p := range procs {
		_ = syscall.Kill(p.pid, sig)
	}
}

// reap SIGKILLs process group pgid (when > 0) and the processes started at or after started whose
// tag isStep accepts until none is alive, for at most killSettleTimeout. It returns the processes
// still alive then.
//
// One empty scan is not proof: a process that has left the group (setsid) and is in the middle of
// execve shows an empty /proc/<pid>/environ for a moment, so it is neither in the group nor
// tagged. Only two empty scans in a row, sweepInterval apart, end the loop.
func reap(pgid int, isStep func(string) bool, started uint64) []process {
	deadline := time.Now().Add(killSettleTimeout)
	quiet := 0
	for {
		if pgid > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		procs, _ := findProcesses(pgid, isStep, started)
		for _, p := range procs {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		if len(procs) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 || time.Now().After(deadline) {
			return procs
		}
		time.Sleep(sweepInterval)
	}
}

// Cleanup kills the build's processes that are still running, then removes its directory.
func (l *Local) Cleanup(ctx context.Context, ws executor.Workspace) error {
	bd, err := l.buildDir(ws, false)
	if err != nil {
		return fmt.Errorf("clean up: %w", err)
	}
	if _, err := os.Lstat(bd); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	prefix := filepath.Base(bd) + "/"
	if left := reap(0, func(t string) bool { return strings.HasPrefix(t, prefix) }, 0); len(left) > 0 {
		return fmt.Errorf("clean up %s: %d processes survived SIGKILL: %s", bd, len(left), describe(left))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("clean up %s: %w", bd, err)
	}
	if err := removeAll(bd); err != nil {
		return fmt.Errorf("clean up %s: %w", bd, err)
	}
	return nil
}

// Sweep cleans up what earlier runs left under Root: every build directory whose owner — the
// runner process that prepared it — is no longer running, and every process still tagged with
// it (steps of a runner that crashed: those that left the step's process group, or all of them
// where there is no parent-death signal). Directories of live runners sharing Root are left
// alone. A runner calls it once at start, before it takes builds. It returns the build
// directories removed.
func (l *Local) Sweep(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(l.opts.Root)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", l.opts.Root, err)
	}
	var swept []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), dirPrefix) {
			continue
		}
		bd := filepath.Join(l.opts.Root, e.Name())
		if b, err := os.ReadFile(filepath.Join(bd, ownerFile)); err == nil && ownerAlive(string(b)) {
			continue
		}
		if err := l.Cleanup(ctx, executor.Workspace{Path: filepath.Join(bd, workspaceDir), Handle: bd}); err != nil {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, e.Name())
	}
	return swept, errors.Join(errs...)
}

// owner identifies this process for a build directory's owner file: its PID and start time
// (PIDs are reused; the pair is not).
func owner() string {
	pid := os.Getpid()
	return fmt.Sprintf("%d %d\n", pid, startTime(pid))
}

// ownerAlive reports whether the process an owner file names still runs.
func ownerAlive(s string) bool {
	var pid int
	var start uint64
	if n, _ := fmt.Sscanf(s, "%d %d", &pid, &start); n != 2 || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false // no such process (EPERM: it exists, as another user's)
	}
	return start == 0 || startTime(pid) == start
}

// buildDir checks that ws was made by this executor and returns its build directory. With
// mustExist, a build directory that is gone is ErrNoWorkspace.
func (l *Local) buildDir(ws executor.Workspace, mustExist bool) (string, error) {
	bd := filepath.Clean(ws.Handle)
	if ws.Handle == "" || filepath.Dir(bd) != l.opts.Root || !strings.HasPrefix(filepath.Base(bd), dirPrefix) ||
		ws.Path != filepath.Join(bd, workspaceDir) {
		return "", fmt.Errorf("workspace %q (path %q): %w: not made by this local executor (root %s)", ws.Handle, ws.Path, executor.ErrNoWorkspace, l.opts.Root)
	}
	if mustExist {
		if fi, err := os.Stat(ws.Path); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("workspace %q: %w", ws.Path, executor.ErrNoWorkspace)
		}
	}
	return bd, nil
}

// baseEnv is the environment every step in build directory bd starts from.
func (l *Local) baseEnv(bd string) []executor.EnvVar {
	env := []executor.EnvVar{
		{Name: "PATH", Value: filepath.Join(bd, binDir) + string(filepath.ListSeparator) + l.opts.Path},
		{Name: "HOME", Value: filepath.Join(bd, homeDir)},
		{Name: "TMPDIR", Value: filepath.Join(bd, tmpDir)},
		{Name: "LANG", Value: l.lang},
	}
	return append(env, l.passEnv...)
}

// pathOf returns the PATH in env.
func pathOf(env []executor.EnvVar) string {
	for _, e := range env {
		if e.Name == "PATH" {
			return e.Value
		}
	}
	return ""
}

// errNotFound is reported when a step's program is not in its PATH.
var errNotFound = errors.New("not found")

// lookPath finds the program name as the step's shell would: a name with a slash is a path
// (relative to dir), any other name is searched in pathList.
func lookPath(name, pathList, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, executable(p)
	}
	for _, d := range filepath.SplitList(pathList) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errNotFound
}

func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNotFound
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fs.ErrPermission
	}
	return nil
}

// exitCodeFor maps a failure to start a program to a shell's exit code: 127 when it does not
// exist, 126 when it cannot be executed; 0 for any other error.
func exitCodeFor(err error) int {
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, fs.ErrNotExist):
		return executor.ExitCodeNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return executor.ExitCodeNotFound - 1
	}
	return 0
}

// exitCode returns the exit code of a finished process, 128+N for one ended by signal N.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// readExports parses the workspace's export file; a missing file has no exports. An isolated
// step owns its workspace, so the file is read only if it is a regular file (not a link to one
// of the runner's files, not a FIFO) of the step's user.
func (l *Local) readExports(workspace string) ([]executor.EnvVar, error) {
	name := filepath.Join(workspace, executor.ExportFile)
	flags := os.O_RDONLY
	if l.opts.Isolation != IsolationNone {
		flags |= syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(name, flags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if l.opts.Isolation != IsolationNone {
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !fi.Mode().IsRegular() || !ok || int(st.Uid) != l.user.uid {
			return nil, fmt.Errorf("%s is not a regular file of the step's user: not read", executor.ExportFile)
		}
	}
	return executor.ParseExports(f)
}

// splitJoined returns the errors joined in err (or err itself).
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// fileSize returns the size of file p, or -1 when it cannot be read.
func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// sanitize keeps the characters of a build ID that are safe in a directory name.
func sanitize(id string) string {
	b := []byte(id)
	if len(b) > maxIDInName {
		b = b[:maxIDInName]
	}
	for i, c := range b {
		if !(c == '-' || c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// removeAll removes dir like os.RemoveAll, first making read-only directories writable (a step
// may leave some, as Go's module cache does).
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func describe(procs []process) string {
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("%d (%s)", p.pid, p.comm)
	}
	return strings.Join(parts, ", ")
}
