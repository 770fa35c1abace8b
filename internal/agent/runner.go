package agent

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runner/executor"
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
}

// BindFlags registers the runner's and its executors' flags.
func (o *RunnerOptions) BindFlags(fs *pflag.FlagSet) {
	o.Options.BindFlags(fs)
	fs.StringVar(&o.WorkDir, "work-dir", "", "where the local executor makes build workspaces (default: the temp dir)")
	o.Local.BindFlags(fs)
	o.Kubernetes.BindFlags(fs)
}

// NewRunner builds the runner agent with the executor o.Executor names; the runner sweeps what
// an earlier run of its executor left behind when it starts.
func NewRunner(o RunnerOptions, log *slog.Logger) (*runner.Runner, error) {
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
	}
	return nil, errdefs.Invalid("executor", o.Executor, "is not local or kubernetes")
}
