// Package executor defines how the runner's build loop runs the steps of a build: the Executor
// interface, the types it exchanges and the rules every implementation keeps.
//
// A build's life on an executor is Prepare (one workspace per build), any number of Run calls
// (one per step, sequential or in parallel, all on that workspace), then Cleanup. The
// implementations are executor/local (steps as host processes) and executor/kubernetes (a pod
// per step); executor/executortest holds the contract suite both must pass. docs/executors.md
// describes the contract for users and implementers.
//
// This package is pure: no I/O, no process or cluster access. It also holds what the
// implementations must agree on so that a pipeline behaves the same on each: the shell script a
// step's commands become (Step.Script), how a working directory is resolved
// (ResolveWorkingDir), the order in which environment variables override each other (MergeEnv)
// and the cf_export helper with its file format (CFExportScript, ExportFile, ParseExports).
package executor

import (
	"context"
	"errors"
	"io"
	"time"
)

// Executor runs the steps of builds. Implementations are safe for concurrent use: several builds
// may be prepared and run at once, and Run may be called concurrently on one workspace (parallel
// steps).
type Executor interface {
	// Name identifies the executor ("local", "kubernetes"); runners advertise it and pipelines
	// select on it.
	Name() string

	// Prepare creates the build's workspace: one shared volume that every step of the build sees
	// at Workspace.Path (exported to steps as CF_VOLUME_PATH), empty except for the empty
	// ExportFile. Two builds never share a workspace. On error nothing is left behind.
	Prepare(ctx context.Context, b Build) (Workspace, error)

	// Run runs one step in ws to completion and reports how it ended.
	//
	// Output: the step's stdout and stderr are merged and written to out as they are produced,
	// in chunks of bytes (never held back until a line is complete). Executor notices (for
	// example "the image is not used") are whole lines that start with NoticePrefix. Run writes
	// to out from one goroutine at a time and never after it has returned; out should not block
	// for long, since the step cannot make progress while it does. If out returns an error, Run
	// keeps draining the step's output (discarding it) and returns the error once the step ended.
	//
	// Ending: Run returns when the step's main process has exited. Whatever the step left running
	// (background processes, daemons) is then killed, as a container's processes die with its
	// main process, and is gone when Run returns. When ctx is canceled or Step.Timeout elapses,
	// Run stops the step: SIGTERM to all of its processes, SIGKILL to what is left after the
	// executor's kill grace period (DefaultKillGrace unless configured). Run then returns within
	// that grace period plus a short, bounded delay, with Result.Canceled or Result.TimedOut
	// set, and no process of the step is left running. If ctx is already done when Run is
	// called, nothing is started and the Result says Canceled.
	//
	// Errors: a step that fails (non-zero exit, killed, timed out, a shell that does not exist)
	// is a Result, not an error. Run returns an error only when the step could not be run as
	// asked (ErrInvalidStep, ErrNoWorkspace) or for an infrastructure failure (cannot start a
	// process, the cluster API failed, out failed); the Result then holds what is known.
	Run(ctx context.Context, ws Workspace, s Step, out io.Writer) (Result, error)

	// Cleanup removes everything Prepare and Run made for ws. Call it after every Run on ws has
	// returned; step processes still found (for example left by a runner that crashed) are
	// killed first. Cleanup is idempotent: a workspace that is already gone is not an error.
	Cleanup(ctx context.Context, ws Workspace) error
}

// Build identifies the build a workspace is prepared for.
type Build struct {
	// ID is the build's ID; it names the workspace (required).
	ID string
	// Labels are attached to what the executor creates where that has labels (kubernetes pods
	// and volumes); the local executor ignores them.
	Labels map[string]string
}

// Workspace is a prepared build workspace. It is a plain value: the runner may persist it and,
// after a restart, pass it to Cleanup on a new executor of the same kind and configuration.
type Workspace struct {
	// BuildID is Build.ID of the build the workspace was prepared for.
	BuildID string
	// Path is where steps see the workspace (CF_VOLUME_PATH): a host directory for the local
	// executor, the volume's mount path inside the step containers for kubernetes.
	Path string
	// Handle is the executor's own reference to the workspace (the build directory for local,
	// the volume claim's name for kubernetes). Callers pass it back unchanged.
	Handle string
}

// Step is one unit of work: commands run by a shell in the workspace.
type Step struct {
	// Name is the step's name, for notices and for naming what the executor creates.
	Name string
	// Image is the container image the step runs in. The local executor does not use it and
	// says so (a notice and Result.ImageIgnored).
	Image string
	// Commands are the step's shell commands. They become one script (see Script) run by Shell,
	// with `set -e`: the first command that fails ends the step with its exit code.
	Commands []string
	// Shell runs the script: a program name looked up in the step's PATH, or an absolute path.
	// Empty means DefaultShell.
	Shell string
	// EntryPoint, when set, is run instead of Shell. With Commands, the script's path is
	// appended as its last argument (so EntryPoint is the interpreter, for example
	// ["bash", "-x"]); without Commands it replaces the image's ENTRYPOINT, as Codefresh's
	// entry_point does. With neither EntryPoint nor Cmd, container executors run the image's
	// default command and the local executor returns ErrInvalidStep.
	EntryPoint []string
	// Cmd, without Commands, replaces the image's CMD (its arguments to the entry point), as
	// Codefresh's cmd does: an argument vector, not a script. Executors that run no image run
	// EntryPoint followed by Cmd. Ignored with Commands.
	Cmd []string
	// PullPolicy says when a container executor pulls Image: PullAlways, PullIfNotPresent or
	// PullNever; empty means PullAlways for an image without a tag or tagged latest, and
	// PullIfNotPresent otherwise (as Kubernetes does).
	PullPolicy string
	// Registries are the credentials a container executor pulls Image with: the one whose
	// host matches the image's registry is used.
	Registries []Registry
	// Networks are networks of service containers (ServiceRunner.StartServices) the step's
	// container joins, so that it reaches the services by name.
	Networks []string
	// WorkingDir is where the step starts: empty for the workspace root, a relative path inside
	// the workspace (created if missing), or an absolute path (used as is). See
	// ResolveWorkingDir.
	WorkingDir string
	// Env are the step's environment variables, in order: a later entry overrides an earlier one
	// with the same name. See MergeEnv for how they combine with the executor's own.
	Env []EnvVar
	// Timeout bounds the step's run time, counted from its start; 0 means no limit.
	Timeout time.Duration
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string
	Value string
}

// Result is how a step ended.
type Result struct {
	// ExitCode is the exit status of the step's main process. A process ended by signal N
	// reports 128+N, as shells and container runtimes do (137 for SIGKILL). 127 means the shell
	// or entry point was not found.
	ExitCode int
	// Duration is the time from the step's start to its end, including any kill.
	Duration time.Duration
	// TimedOut reports that the executor killed the step because Step.Timeout elapsed.
	TimedOut bool
	// Canceled reports that the executor killed the step (or did not start it) because the
	// context was canceled.
	Canceled bool
	// ImageIgnored reports that the step named an image the executor does not use.
	ImageIgnored bool
	// Exports are the variables in the workspace's ExportFile after the step ended (written by
	// this or any earlier step, see ParseExports), for the runner to add to later steps' Env.
	Exports []EnvVar
	// Message, when set, is the executor's one-line reason for the step's failure where the exit
	// code alone would not say it (an image that could not be pulled, a container killed for
	// lack of memory). It names the image. The executor also wrote it to the output as a notice.
	Message string
}

// Pull policies (Step.PullPolicy).
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"
)

// Registry is a container registry and the credentials to use with it.
type Registry struct {
	Name     string // the registry context's name, for messages
	URL      string // host[:port] and an optional path prefix
	Username string
	Password string
	CA       string // PEM certificates to trust (the engine must trust them too for its pulls)
}

// Succeeded reports whether the step ran to completion with exit code 0. A step that was killed
// has not succeeded even if it exited 0 on SIGTERM.
func (r Result) Succeeded() bool {
	return r.ExitCode == 0 && !r.TimedOut && !r.Canceled
}

const (
	// DefaultShell runs a step's commands when Step.Shell is empty.
	DefaultShell = "sh"
	// DefaultKillGrace is how long a stopped step has between SIGTERM and SIGKILL, unless the
	// executor is configured otherwise (Buildkite's agent uses 10 s too).
	DefaultKillGrace = 10 * time.Second
	// NoticePrefix starts every line an executor writes to a step's output itself.
	NoticePrefix = "[freshet] "
	// VolumePathEnv is the variable that holds the workspace path in every step. Executors set
	// it last: a step's Env cannot override it.
	VolumePathEnv = "CF_VOLUME_PATH"
	// ExitCodeNotFound is the exit code of a step whose shell or entry point does not exist.
	ExitCodeNotFound = 127
)

var (
	// ErrInvalidStep means the step cannot be run as specified (see Step.Validate); nothing was
	// started.
	ErrInvalidStep = errors.New("invalid step")
	// ErrNoWorkspace means the workspace does not exist (cleaned up, or not made by this
	// executor).
	ErrNoWorkspace = errors.New("no such workspace")
)
