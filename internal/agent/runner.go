package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/executor/container"
	kubeexec "github.com/freshet-dev/freshet/internal/runner/executor/kubernetes"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/version"
)

// RunnerOptions configures `freshet runner`: the runner agent and the executor its Executor
// option names.
type RunnerOptions struct {
	runner.Options
	// WorkDir is where the local executor makes build workspaces (default: the temp dir).
	WorkDir string
	// Local configures the local executor (its Root is WorkDir).
	Local local.Options
	// Kubernetes configures the kubernetes executor.
	Kubernetes kubeexec.Options
	// Container configures the container executor (its Host: --docker-host, else DOCKER_HOST,
	// else the default Docker or Podman socket).
	Container container.Options
}

// BindFlags registers the runner's and its executors' flags.
func (o *RunnerOptions) BindFlags(fs *pflag.FlagSet) {
	o.Options.BindFlags(fs)
	fs.StringVar(&o.WorkDir, "work-dir", "", "where the local executor makes build workspaces (default: the temp dir)")
	o.Local.BindFlags(fs)
	fs.StringVar(&o.Container.Host, "docker-host", "", "the container engine for the container executor (default: DOCKER_HOST, else "+container.DefaultDockerSocket+", else "+container.DefaultPodmanSocket+")")
	o.Kubernetes.BindFlags(fs)
}

// NewRunner builds the runner agent with the executor o.Executor names; the runner sweeps what
// an earlier run of its executor left behind when it starts.
//
// Without an executor named, the runner uses the container executor when a container engine
// answers, else the local one, and says so in the log.
func NewRunner(o RunnerOptions, log *slog.Logger) (*runner.Runner, error) {
	if o.Executor == "" {
		o.Executor = chooseExecutor(o, log)
	}
	exec, err := newExecutor(o)
	if err != nil {
		return nil, err
	}
	if l, ok := exec.(*local.Local); ok {
		uid, gid := l.StepUser()
		log.Info("local executor", "isolation", l.Isolation(), "step_uid", uid, "step_gid", gid)
	}
	o.Version = version.Version
	return runner.New(o.Options, exec, nil, log)
}

func newExecutor(o RunnerOptions) (executor.Executor, error) {
	switch o.Executor {
	case "local":
		dir := o.WorkDir
		if dir == "" {
			dir = os.TempDir()
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("work-dir %s: %w", dir, err)
		}
		opts := o.Local
		opts.Root = dir
		return local.New(opts)
	case "kubernetes":
		return kubeexec.New(o.Kubernetes)
	case container.Name:
		copts := o.Container
		if copts.Runner == "" {
			copts.Runner = o.Name
		}
		ctx, cancel := context.WithTimeout(context.Background(), engineProbeTimeout)
		defer cancel()
		c, err := container.New(ctx, copts)
		if err != nil {
			return nil, fmt.Errorf("--executor container: %w (start Docker or Podman's service, set DOCKER_HOST, or choose --executor local)", err)
		}
		return c, nil
	}
	return nil, errdefs.Invalid("executor", o.Executor, "is not container, local or kubernetes")
}

// engineProbeTimeout bounds the look for a container engine at start.
const engineProbeTimeout = 10 * time.Second

// chooseExecutor is the default executor: container when an engine answers, else local.
func chooseExecutor(o RunnerOptions, log *slog.Logger) string {
	ctx, cancel := context.WithTimeout(context.Background(), engineProbeTimeout)
	defer cancel()
	host, err := container.Detect(ctx, o.Container.Host)
	if err != nil {
		if !errors.Is(err, container.ErrNoEngine) {
			log.Warn("looking for a container engine", "err", err)
		}
		log.Warn("no container engine reachable: steps run on this host with the local executor; build, push and service steps are refused (start Docker or Podman's service, or set DOCKER_HOST, for the container executor)",
			"err", err)
		return "local"
	}
	log.Info("container engine found: steps run in their images", "executor", container.Name, "engine", host)
	return container.Name
}
