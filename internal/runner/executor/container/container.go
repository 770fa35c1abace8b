// Package container is the executor that runs every step in its image through the Docker
// Engine API, which Docker serves and Podman serves too (`podman system service`), so one
// implementation serves users of either engine. It speaks the plain API through
// github.com/moby/moby/client (the version negotiated with the engine): whatever an engine
// needs of its own (Podman's runtime, ulimits, trusted registries) belongs in the engine's
// configuration, not here.
//
// A build's workspace is a volume mounted at /codefresh/volume (CF_VOLUME_PATH) in every step
// container. A step is one container: its commands become a script that the step's shell runs
// (Codefresh's `commands`), or, without commands, the image runs with entry_point as its
// ENTRYPOINT and cmd as its CMD. A short sh bootstrap writes the script and cf_export into the
// container (under /codefresh/freshet, with cf_export on PATH), so any image with a POSIX sh runs
// commands. Images are pulled as the step's pull policy says, with the credentials of the
// registry whose host the image names. A step is stopped with SIGTERM and, after the kill grace,
// SIGKILL; the engine's init process (HostConfig.Init) is PID 1 so that the step's own processes
// get the signals as they would on a host. Image pull failures and OOM kills end the step with a
// one-line notice naming the image.
//
// Everything the executor makes — volumes, containers, networks — carries LabelManaged, the
// build's ID (LabelBuild), the workspace (LabelWorkspace) and the runner's name (LabelRunner):
// Cleanup removes a build's by its workspace label, Sweep what this runner's earlier runs left.
//
// It also builds and pushes images (executor.ImageBuilder, the engine's build API with a
// context read from the workspace) and runs service containers (executor.ServiceRunner). See
// docs/executors.md.
package container

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Name is the container executor's name.
const Name = "container"

// Where things are inside a step container.
const (
	// VolumePath is where the workspace volume is mounted (CF_VOLUME_PATH), as on Codefresh.
	VolumePath = "/codefresh/volume"
	// ToolsDir is where a step's script and cf_export (bin/cf_export, added to PATH) are
	// written in its container; an image whose user cannot create it gets them under $TMPDIR
	// or /tmp.
	ToolsDir   = "/codefresh/freshet"
	scriptPath = ToolsDir + "/step.sh"
	// maxScript bounds a step's script: it travels in an environment variable, which Linux
	// limits to 128 KiB.
	maxScript = 120 << 10
)

// The variables that carry a step's script and cf_export into its container; bootstrap
// removes them before the script runs.
const (
	envScript   = "FRESHET_STEP_SCRIPT"
	envCFExport = "FRESHET_CF_EXPORT"
)

// bootstrap is the sh script a commands step's container starts with: it writes the step's
// script and cf_export into the container (the engine could copy them in before the start, but
// Podman 4.3 then sometimes fails to mount the container's storage when many start at once),
// puts cf_export on PATH and runs the script with the step's shell ("$@").
const bootstrap = `d=` + ToolsDir + `
if ! mkdir -p "$d/bin" 2>/dev/null; then d="${TMPDIR:-/tmp}/.freshet-$$"; mkdir -p "$d/bin" || exit 126; fi
printf '%s' "$` + envCFExport + `" >"$d/bin/cf_export" && chmod 755 "$d/bin/cf_export" && printf '%s' "$` + envScript + `" >"$d/step.sh" || exit 126
unset ` + envCFExport + ` ` + envScript + `
PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}:$d/bin"
export PATH
exec "$@" "$d/step.sh"
`

// Labels on what the executor makes.
const (
	LabelManaged   = "dev.freshet.managed"
	LabelBuild     = "dev.freshet.build"
	LabelWorkspace = "dev.freshet.workspace"
	LabelRunner    = "dev.freshet.runner"
	LabelStep      = "dev.freshet.step"
	LabelRole      = "dev.freshet.role" // step, service, readiness, helper, network
)

const (
	namePrefix  = "freshet-"
	maxIDInName = 40
	// killSettleTimeout bounds how long Run waits for a SIGKILLed container to be reported gone.
	killSettleTimeout = 10 * time.Second
	// outputDrainMax bounds how long Run waits for the rest of the output after the container
	// exited.
	outputDrainMax = 10 * time.Second
	// apiTimeout bounds single engine calls that should be quick (create, inspect, remove).
	apiTimeout = 2 * time.Minute
)

// Container runs steps in containers. Create it with New.
type Container struct {
	opts     Options
	host     string
	cli      *client.Client
	sequence atomic.Uint64

	mu      sync.Mutex
	exports map[string]int64 // workspace → size of its export file after the last step
	helper  string           // the helper image's ID, once imported
}

// Interface guards.
var (
	_ executor.Executor      = (*Container)(nil)
	_ executor.ImageBuilder  = (*Container)(nil)
	_ executor.ServiceRunner = (*Container)(nil)
)

// New returns a container executor for the engine Detect finds for opts.Host; it fails with
// ErrNoEngine when none answers.
func New(ctx context.Context, opts Options) (*Container, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	host, err := Detect(ctx, opts.Host)
	if err != nil {
		return nil, err
	}
	cli, err := client.New(client.WithHost(host), client.WithHTTPRequestHook(buildQueryHook))
	if err != nil {
		return nil, fmt.Errorf("container engine %s: %w", host, err)
	}
	return &Container{opts: opts, host: host, cli: cli, exports: map[string]int64{}}, nil
}

// Name returns "container".
func (c *Container) Name() string { return Name }

// Host returns the engine's address.
func (c *Container) Host() string { return c.host }

// Close closes the connection to the engine.
func (c *Container) Close() error { return c.cli.Close() }

// labels are the labels of everything made for workspace vol of build id.
func (c *Container) labels(id, vol, role string) map[string]string {
	return map[string]string{LabelManaged: "true", LabelBuild: id, LabelWorkspace: vol, LabelRunner: c.opts.Runner, LabelRole: role}
}

// Prepare creates the build's workspace volume.
func (c *Container) Prepare(ctx context.Context, b executor.Build) (executor.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return executor.Workspace{}, err
	}
	if b.ID == "" {
		return executor.Workspace{}, fmt.Errorf("prepare workspace: %w", errdefs.Invalid("build.id", "", "is required"))
	}
	vol := namePrefix + sanitize(b.ID) + "-" + randomSuffix()
	labels := c.labels(b.ID, vol, "workspace")
	for k, v := range b.Labels {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	if _, err := c.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: labels}); err != nil {
		return executor.Workspace{}, fmt.Errorf("prepare workspace for build %s: create volume on %s: %w", b.ID, c.host, err)
	}
	return executor.Workspace{BuildID: b.ID, Path: VolumePath, Handle: vol}, nil
}

// checkWorkspace checks that ws was made by this executor and still exists.
func (c *Container) checkWorkspace(ctx context.Context, ws executor.Workspace, mustExist bool) error {
	if !strings.HasPrefix(ws.Handle, namePrefix) || ws.Path != VolumePath || strings.ContainsAny(ws.Handle, "/ ") {
		return fmt.Errorf("workspace %q (path %q): %w: not made by the container executor", ws.Handle, ws.Path, executor.ErrNoWorkspace)
	}
	if !mustExist {
		return nil
	}
	if _, err := c.cli.VolumeInspect(ctx, ws.Handle, client.VolumeInspectOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("workspace %q: %w", ws.Handle, executor.ErrNoWorkspace)
		}
		return fmt.Errorf("workspace %q: %w", ws.Handle, err)
	}
	return nil
}

// Run runs the step in a container of its image. See executor.Executor for the contract.
func (c *Container) Run(ctx context.Context, ws executor.Workspace, s executor.Step, out io.Writer) (executor.Result, error) {
	var res executor.Result
	if err := s.Validate(); err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if s.Image == "" {
		return res, fmt.Errorf("step %q: %w: %w", s.Name, executor.ErrInvalidStep, errdefs.Invalid("image", "",
			"is required: the container executor runs every step in its image"))
	}
	dir, _, err := executor.ResolveWorkingDir(ws.Path, s.WorkingDir)
	if err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if ctx.Err() != nil {
		res.Canceled = true
		return res, nil
	}
	if err := c.checkWorkspace(ctx, ws, true); err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	start := time.Now()
	res, err = c.run(ctx, ws, s, dir, "step", o)
	res.Duration = time.Since(start)
	if res.Message != "" {
		o.Notice("%s", res.Message)
	}
	if err != nil {
		return res, fmt.Errorf("step %q: %w", s.Name, err)
	}
	if o.Err() != nil {
		return res, fmt.Errorf("step %q: write output: %w", s.Name, o.Err())
	}
	return res, nil
}

// run runs s in a container: pull, create, copy the tools in, attach, start, wait (stopping it
// on cancel or timeout), read the exports, remove. Failures of the step itself are in the
// Result (Message says why when the exit code cannot); the error is for the engine's.
func (c *Container) run(ctx context.Context, ws executor.Workspace, s executor.Step, dir, role string, o *executor.Output) (executor.Result, error) {
	var res executor.Result
	msg, err := c.ensureImage(ctx, s.Image, s.PullPolicy, s.Registries, o)
	if err != nil || msg != "" {
		if ctx.Err() != nil {
			res.Canceled = true
			return res, nil
		}
		res.ExitCode, res.Message = 125, msg
		return res, err
	}

	cfg := &container.Config{
		Image:      s.Image,
		WorkingDir: dir,
		Labels:     c.labels(ws.BuildID, ws.Handle, role),
	}
	cfg.Labels[LabelStep] = s.Name
	env := executor.MergeEnv(nil, s.Env, executor.EnvVar{Name: executor.VolumePathEnv, Value: ws.Path})
	if len(s.Commands) > 0 {
		// One stream for stdout and stderr, as on a host: their order is kept (the engine
		// reads two pipes, which it may interleave differently). The export file must exist
		// for the steps that read it; only a running container can write into the volume.
		script := "exec 2>&1\n" + `: >>"$` + executor.VolumePathEnv + `/` + executor.ExportFile + `" 2>/dev/null || true` + "\n" + s.Script()
		if len(script) > maxScript {
			return res, fmt.Errorf("%w: %w", executor.ErrInvalidStep, errdefs.Invalid("commands", s.Name,
				fmt.Sprintf("make a script of %d bytes; the container executor passes at most %d (put a longer script in a file in the workspace and run that)", len(script), maxScript)))
		}
		argv := s.Command(scriptPath)
		cfg.Entrypoint = []string{"sh", "-c", bootstrap, "freshet-step"}
		cfg.Cmd = argv[:len(argv)-1]
		env = append(env, executor.EnvVar{Name: envScript, Value: script}, executor.EnvVar{Name: envCFExport, Value: executor.CFExportScript})
	} else {
		cfg.Entrypoint, cfg.Cmd = s.EntryPoint, s.Cmd
	}
	cfg.Env = executor.Environ(env)
	argv := append(slices.Clone(cfg.Entrypoint), cfg.Cmd...)
	init := true
	hc := &container.HostConfig{
		Init:   &init,
		Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: ws.Handle, Target: VolumePath}},
	}
	var nc *network.NetworkingConfig
	if len(s.Networks) > 0 {
		hc.NetworkMode = container.NetworkMode(s.Networks[0])
	}
	name := fmt.Sprintf("%s-%d-%s", ws.Handle, c.sequence.Add(1), sanitizeName(s.Name))
	created, err := c.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: hc, NetworkingConfig: nc})
	if err != nil {
		if ctx.Err() != nil {
			res.Canceled = true
			return res, nil
		}
		return res, fmt.Errorf("create container of %s: %w", s.Image, err)
	}
	id := created.ID
	defer c.remove(id)
	for _, n := range s.Networks[min(1, len(s.Networks)):] {
		if _, err := c.cli.NetworkConnect(ctx, n, client.NetworkConnectOptions{Container: id}); err != nil {
			return res, fmt.Errorf("connect the step's container to network %s: %w", n, err)
		}
	}

	// The output: attached before the start, so nothing is missed. Podman 4.3 refuses some
	// attaches with 409 when many containers start at once; the container's log, followed
	// from its start, then carries the same bytes (later by the log driver's delay).
	var stream io.ReadCloser
	attach, err := c.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	switch {
	case err == nil:
		stream = attach.Conn
		defer attach.Close()
	case cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "409"):
		o.Notice("the engine refused to attach to the container (%s): its output comes from its log", oneLine(err.Error()))
	default:
		return res, fmt.Errorf("attach to the container of %s: %w", s.Image, err)
	}
	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWait()
	wait := c.cli.ContainerWait(waitCtx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})

	if ctx.Err() != nil {
		res.Canceled = true
		return res, nil
	}
	if _, err := c.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		if ctx.Err() != nil {
			res.Canceled = true
			return res, nil
		}
		if code := startFailureCode(err); code != 0 {
			res.ExitCode = code
			res.Message = fmt.Sprintf("%s in image %s: %s", firstOr(argv, "the image's command"), s.Image, oneLine(err.Error()))
			return res, nil
		}
		return res, fmt.Errorf("start the container of %s: %w", s.Image, err)
	}

	var reader io.Reader
	if stream != nil {
		reader = attach.Reader
	} else {
		logs, err := c.cli.ContainerLogs(waitCtx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
		if err != nil {
			c.stop(id, wait)
			return res, fmt.Errorf("follow the log of the container of %s: %w", s.Image, err)
		}
		stream, reader = logs, logs
		defer logs.Close()
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		w := io.Writer(o)
		_, _ = stdcopy.StdCopy(w, w, reader)
	}()

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var code int64 = -1
	var waitErr error
	select {
	case r := <-wait.Result:
		code = r.StatusCode
	case waitErr = <-wait.Error:
	case <-ctx.Done():
		res.Canceled = true
	case <-timeout:
		res.TimedOut = true
	}
	if res.Canceled || res.TimedOut {
		code, waitErr = c.stop(id, wait)
	}
	select {
	case <-copied:
	case <-time.After(outputDrainMax):
		stream.Close()
		<-copied
	}
	if waitErr != nil {
		return res, fmt.Errorf("wait for the container of %s: %w", s.Image, waitErr)
	}
	res.ExitCode = int(code)

	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	defer cancel()
	if in, err := c.cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{}); err == nil && in.Container.State != nil && in.Container.State.OOMKilled {
		res.Message = fmt.Sprintf("the container of %s was killed: out of memory", s.Image)
	}
	exports, changed, perr := c.readExports(ictx, id, ws)
	res.Exports = exports
	if perr != nil && changed {
		for _, e := range splitJoined(perr) {
			o.Notice("ignored: %v", e)
		}
	}
	return res, nil
}

// stop stops a running container: SIGTERM, SIGKILL after the grace period. It returns the exit
// code the engine reports.
func (c *Container) stop(id string, wait client.ContainerWaitResult) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.KillGrace+killSettleTimeout+apiTimeout)
	defer cancel()
	_, _ = c.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGTERM"})
	grace := time.NewTimer(c.opts.KillGrace)
	defer grace.Stop()
	select {
	case r := <-wait.Result:
		return r.StatusCode, nil
	case err := <-wait.Error:
		return -1, err
	case <-grace.C:
	}
	_, _ = c.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	settle := time.NewTimer(killSettleTimeout)
	defer settle.Stop()
	select {
	case r := <-wait.Result:
		return r.StatusCode, nil
	case err := <-wait.Error:
		return -1, err
	case <-settle.C:
		return 137, fmt.Errorf("the container did not exit within %s of SIGKILL", killSettleTimeout)
	}
}

// remove removes a container and whatever still runs in it.
func (c *Container) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	_, _ = c.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
}

// readExports reads the workspace's export file through the exited container id. changed
// reports whether the file changed size since the last step of the workspace.
func (c *Container) readExports(ctx context.Context, id string, ws executor.Workspace) (vars []executor.EnvVar, changed bool, err error) {
	r, err := c.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: VolumePath + "/" + executor.ExportFile})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read %s: %w", executor.ExportFile, err)
	}
	defer r.Content.Close()
	tr := tar.NewReader(r.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", executor.ExportFile, err)
	}
	c.mu.Lock()
	changed = c.exports[ws.Handle] != h.Size
	c.exports[ws.Handle] = h.Size
	c.mu.Unlock()
	vars, err = executor.ParseExports(tr)
	return vars, changed, err
}

// Cleanup removes the workspace's containers, networks and volume.
func (c *Container) Cleanup(ctx context.Context, ws executor.Workspace) error {
	if err := c.checkWorkspace(ctx, ws, false); err != nil {
		return fmt.Errorf("clean up: %w", err)
	}
	err := c.removeLabeled(ctx, LabelWorkspace, ws.Handle)
	c.mu.Lock()
	delete(c.exports, ws.Handle)
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("clean up workspace %s: %w", ws.Handle, err)
	}
	return nil
}

// Sweep removes what earlier runs of this runner (by its name) left on the engine: containers,
// networks and volumes of builds it no longer runs. A runner calls it once at start, before it
// takes builds. It returns the workspaces removed.
func (c *Container) Sweep(ctx context.Context) ([]string, error) {
	f := client.Filters{}.Add("label", LabelRunner+"="+c.opts.Runner)
	vols, err := c.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", c.host, err)
	}
	var swept []string
	for _, v := range vols.Items {
		if v.Labels[LabelManaged] == "true" && v.Labels[LabelRunner] == c.opts.Runner {
			swept = append(swept, v.Name)
		}
	}
	if err := c.removeLabeled(ctx, LabelRunner, c.opts.Runner, LabelManaged, "true"); err != nil {
		return swept, fmt.Errorf("sweep %s: %w", c.host, err)
	}
	return swept, nil
}

// removeLabeled removes every container, then network, then volume carrying label key=value
// and, when also is set, also's key=value. (The engine is asked for one label only: Podman 4.3
// matches any, not all, of several label filters.)
func (c *Container) removeLabeled(ctx context.Context, key, value string, also ...string) error {
	f := client.Filters{}.Add("label", key+"="+value)
	match := func(labels map[string]string) bool {
		if labels[key] != value {
			return false
		}
		for i := 0; i+1 < len(also); i += 2 {
			if labels[also[i]] != also[i+1] {
				return false
			}
		}
		return true
	}
	var errs []error
	cs, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return err
	}
	for _, ct := range cs.Items {
		if !match(ct.Labels) {
			continue
		}
		if _, err := c.cli.ContainerRemove(ctx, ct.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", ct.ID[:min(12, len(ct.ID))], err))
		}
	}
	ns, err := c.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, n := range ns.Items {
		if !match(n.Labels) {
			continue
		}
		if _, err := c.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		}
	}
	vs, err := c.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, v := range vs.Items {
		if !match(v.Labels) {
			continue
		}
		if _, err := c.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists, for tests and benchmarks, the containers still running and the volumes and
// networks that still exist for workspace ws (every workspace of this runner when ws is empty).
func (c *Container) Leftovers(ctx context.Context, ws string) (running, stored []string, err error) {
	label := LabelWorkspace + "=" + ws
	if ws == "" {
		label = LabelRunner + "=" + c.opts.Runner
	}
	f := client.Filters{}.Add("label", label)
	cs, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, nil, err
	}
	for _, ct := range cs.Items {
		what := "container " + strings.Join(ct.Names, ",") + " (" + string(ct.State) + ")"
		if ct.State == container.StateRunning || ct.State == container.StateCreated || ct.State == container.StatePaused {
			running = append(running, what)
		} else {
			stored = append(stored, what)
		}
	}
	vs, err := c.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, nil, err
	}
	for _, v := range vs.Items {
		stored = append(stored, "volume "+v.Name)
	}
	ns, err := c.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, nil, err
	}
	for _, n := range ns.Items {
		stored = append(stored, "network "+n.Name)
	}
	return running, stored, nil
}

// startFailureCode maps an engine's failure to start a container's command to a shell's exit
// code: 127 when the program does not exist, 126 when it cannot be executed; 0 for any other
// error (the engine's, not the step's).
func startFailureCode(err error) int {
	msg := strings.ToLower(err.Error())
	if !strings.Contains(msg, "exec") && !strings.Contains(msg, "oci runtime") {
		return 0
	}
	switch {
	case strings.Contains(msg, "not found") || strings.Contains(msg, "no such file"):
		return executor.ExitCodeNotFound
	case strings.Contains(msg, "permission denied") || strings.Contains(msg, "exec format error"):
		return executor.ExitCodeNotFound - 1
	}
	return 0
}

func firstOr(argv []string, def string) string {
	if len(argv) > 0 {
		return argv[0]
	}
	return def
}

// oneLine returns s on one line, shortened.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// sanitize keeps the characters of an ID that are valid in a volume or container name.
func sanitize(id string) string {
	b := []byte(id)
	if len(b) > maxIDInName {
		b = b[:maxIDInName]
	}
	for i, ch := range b {
		if !(ch == '-' || ch == '_' || ch == '.' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' || b[0] == '-' || b[0] == '_' {
		b = append([]byte("x"), b...)
	}
	return string(b)
}

func sanitizeName(s string) string {
	const maxStep = 30
	if len(s) > maxStep {
		s = s[:maxStep]
	}
	return sanitize(s)
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
