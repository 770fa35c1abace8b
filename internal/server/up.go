package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/runner"
	localexec "github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/version"
)

// Ready is what a started control plane announces once it listens and its first account
// exists: where it runs, and the first admin when this start created one.
type Ready struct {
	URL  string
	Boot identity.BootstrapResult
}

// Serve runs the control plane (`freshet server`) until ctx ends, calling ready once it is
// bound and bootstrapped.
func Serve(ctx context.Context, opts Options, log *slog.Logger, ready func(Ready)) error {
	srv, err := start(ctx, opts, log, ready)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// LocalOptions are `freshet up`'s settings for its in-process runtime.
type LocalOptions struct {
	Kubeconfig string // the cluster the runtime "local" deploys to as in-cluster (default: KUBECONFIG, ~/.kube/config)
	Context    string // its kubeconfig context (default: the current one)
	Engine     engine.Options
	// InsecureLocalSteps runs the local runner's steps as the server's own user, seeing what it
	// sees (its data dir, its process): only for a server whose members may all read its data.
	// Without it the steps are isolated (local.IsolationAuto), and Up refuses to start where
	// they cannot be.
	InsecureLocalSteps bool
	// WatchClusterApps: the runtime also runs the Application and AppProject resources of
	// ClusterAppsNamespace ("default" when empty) in its cluster (docs/gitops.md).
	WatchClusterApps     bool
	ClusterAppsNamespace string
	// ClusterAppsSourceNamespaces are other namespaces whose Application resources run too,
	// each only when the app's AppProject lists it in spec.sourceNamespaces.
	ClusterAppsSourceNamespaces []string
}

// Up runs everything in one process (`freshet up`) until ctx ends: the control plane, the
// runner "local" and the runtime "local", both dialing the control plane over loopback with
// tokens kept in the data dir. The runner runs steps in their images when a container engine
// answers, and otherwise on this host, isolated from the server (see localSteps). ready is
// called as in Serve.
func Up(ctx context.Context, opts Options, local LocalOptions, log *slog.Logger, ready func(Ready)) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	steps, err := localSteps(opts.DataDir, local.InsecureLocalSteps, log)
	if err != nil {
		return err
	}
	srv, err := start(ctx, opts, log, ready)
	if err != nil {
		return err
	}
	r, rt, err := srv.localAgents(ctx, local, steps, log)
	if err != nil {
		srv.Close()
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error { return r.Run(gctx) })
	g.Go(func() error { return rt.Run(gctx) })
	return g.Wait()
}

func start(ctx context.Context, opts Options, log *slog.Logger, ready func(Ready)) (*Server, error) {
	srv, err := New(ctx, opts, log)
	if err != nil {
		return nil, err
	}
	boot, err := srv.Bootstrap(ctx)
	if err != nil {
		srv.Close()
		return nil, err
	}
	if ready != nil {
		ready(Ready{URL: srv.URL(), Boot: boot})
	}
	return srv, nil
}

// localSteps returns how `freshet up`'s runner runs steps, having tried it. Members' steps must
// not reach the server's data: they run isolated (localexec.IsolationAuto) with the data dir
// hidden, and the data dir is closed to every other user. Where that cannot be, Up refuses
// before the first start prints the admin's password, which a refusal must not waste.
func localSteps(dataDir string, insecure bool, log *slog.Logger) (localexec.Options, error) {
	dir, err := closeDataDir(dataDir, log)
	if err != nil {
		return localexec.Options{}, fmt.Errorf("local runner: %w", err)
	}
	builds := filepath.Join(dir, "builds")
	if err := os.MkdirAll(builds, 0o700); err != nil {
		return localexec.Options{}, fmt.Errorf("local runner: work dir %s: %w", builds, err)
	}
	steps := localexec.Options{Root: builds, Isolation: localexec.IsolationAuto, Hide: []string{dir}}
	if insecure {
		steps.Isolation = localexec.IsolationNone
		log.Warn("the local runner's steps run as the server's own user, not isolated: any member who can run a pipeline can read the data dir, its master key and database (--insecure-local-steps)")
	}
	_, err = localexec.New(steps)
	if errors.Is(err, localexec.ErrIsolationUnavailable) {
		return steps, fmt.Errorf("local runner: %w. freshet up does not run members' steps unisolated by default; "+
			"if every member may read this server's data (its master key, database and admin password), start it with --insecure-local-steps", err)
	}
	if err != nil {
		return steps, fmt.Errorf("local runner: %w", err)
	}
	return steps, nil
}

// localAgents builds `freshet up`'s in-process runner, running steps as localSteps said, and
// runtime.
func (s *Server) localAgents(ctx context.Context, local LocalOptions, steps localexec.Options, log *slog.Logger) (*runner.Runner, *agent.Runtime, error) {
	token, err := s.LocalRunnerToken(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("local runner: %w", err)
	}
	r, err := agent.NewRunner(agent.RunnerOptions{
		Options: runner.Options{Server: s.URL(), Token: token, Name: "local", Executor: "", Concurrency: runner.DefaultConcurrency,
			Transport: runner.TransportStream, ShutdownTimeout: s.opts.ShutdownTimeout},
		WorkDir: steps.Root,
		Local:   steps,
	}, log.With("component", "runner"))
	if err != nil {
		return nil, nil, fmt.Errorf("local runner: %w", err)
	}
	rtToken, err := s.LocalRuntimeToken(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("local runtime: %w", err)
	}
	// Its installation repository is a local one in the data dir: `freshet app create` commits there.
	rtDir := filepath.Join(s.opts.DataDir, "runtime")
	repoURL, err := host.InitLocalRepo(filepath.Join(rtDir, "installation.git"))
	if err != nil {
		return nil, nil, fmt.Errorf("local runtime: %w", err)
	}
	// It reaches what the operator's policy allows tenants' URLs to reach (the kubeconfig is
	// the operator's own and is not a tenant's URL).
	rt, err := agent.New(agent.Options{Server: s.URL(), Token: rtToken, AccessMode: "tunnel", Version: version.Version,
		Kubeconfig: local.Kubeconfig, Context: local.Context, DataDir: rtDir, InstallRepo: git.Repo{URL: repoURL}, Engine: local.Engine,
		Policy: s.policy, WatchClusterApps: local.WatchClusterApps, ClusterAppsNamespace: local.ClusterAppsNamespace,
		ClusterAppsSourceNamespaces: local.ClusterAppsSourceNamespaces},
		nil, log.With("component", "runtime"))
	if err != nil {
		return nil, nil, fmt.Errorf("local runtime: %w", err)
	}
	return r, rt, nil
}

// closeDataDir creates the data dir (mode 0700), or makes an existing one readable by its owner
// only, and returns it as an absolute path: whatever is inside is then out of reach of every
// other user, steps included.
func closeDataDir(dir string, log *slog.Logger) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data-dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data-dir %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("data-dir %s: %w", dir, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("data-dir %s has mode %04o, open to other users, and cannot be closed: %w", dir, perm, err)
		}
		log.Warn("the data dir was open to other users: made it mode 0700", "data_dir", dir, "mode", fmt.Sprintf("%04o", perm))
	}
	return dir, nil
}
