package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/runner"
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
}

// Up runs everything in one process (`freshet up`) until ctx ends: the control plane, the
// runner "local" (the container executor when a container engine answers, else the local
// executor) and the runtime "local", both dialing the control
// plane over loopback with tokens kept in the data dir. ready is called as in Serve.
func Up(ctx context.Context, opts Options, local LocalOptions, log *slog.Logger, ready func(Ready)) error {
	srv, err := start(ctx, opts, log, ready)
	if err != nil {
		return err
	}
	r, rt, err := srv.localAgents(ctx, local, log)
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

// localAgents builds `freshet up`'s in-process runner and runtime.
func (s *Server) localAgents(ctx context.Context, local LocalOptions, log *slog.Logger) (*runner.Runner, *agent.Runtime, error) {
	token, err := s.LocalRunnerToken(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("local runner: %w", err)
	}
	r, err := agent.NewRunner(agent.RunnerOptions{
		Options: runner.Options{Server: s.URL(), Token: token, Name: "local", Executor: "", Concurrency: runner.DefaultConcurrency,
			Transport: runner.TransportStream, ShutdownTimeout: s.opts.ShutdownTimeout},
		WorkDir: filepath.Join(s.opts.DataDir, "builds"),
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
		Policy: s.policy},
		nil, log.With("component", "runtime"))
	if err != nil {
		return nil, nil, fmt.Errorf("local runtime: %w", err)
	}
	return r, rt, nil
}
